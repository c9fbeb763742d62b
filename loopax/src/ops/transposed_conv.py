"""The transposed convolution behind `ops.conv_transpose` and the Conv*Transpose layers.

Forward and input gradient are `lax.conv_transpose` on every backend. The kernel
gradient differs by backend: lax's form is a convolution with a stride-dilated
window, which XLA:CPU runs on a slow generic loop (25 s for one 14→28, 128→128,
4×4, stride-2 layer at batch 64, against 0.4 s for the input gradient). On CPU the
kernel's tangent is written instead as one matmul of the inputs with every tap of the
kernel, each tap's result placed by a strided pad; its transpose (the kernel
gradient) is then strided slices of the output gradient and one matmul. Same numbers
to float32 rounding; forward mode and higher derivatives keep working
(a `custom_jvp`, not a `custom_vjp`). GPU/TPU keep lax's form.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero


def transposed_conv(x, kernel, strides, padding, dilation, channels_last):
    """Transposed convolution of `x` `(batch, *spatial, in)` (or channels-first)
    with a Keras kernel `(*kernel_size, filters, in)`; `padding` is (low, high) per
    spatial axis of the stride-dilated input, as `lax.conv_transpose` takes it."""
    geometry = (tuple(strides), tuple(tuple(p) for p in padding), tuple(dilation),
                bool(channels_last))
    if jax.default_backend() == "cpu":
        return _cpu_transposed_conv(x, kernel, geometry)
    return _lax_transposed_conv(x, kernel, *geometry)


def _dimension_numbers(n, channels_last):
    spatial = tuple(range(1, n + 1)) if channels_last else tuple(range(2, n + 2))
    features = (0, n + 1) if channels_last else (0, 1)
    kernel = (n + 1, n) + tuple(range(n))
    return lax.ConvDimensionNumbers(features + spatial, kernel, features + spatial)


def _lax_transposed_conv(x, kernel, strides, padding, dilation, channels_last):
    return lax.conv_transpose(
        x, kernel, strides, padding, rhs_dilation=dilation,
        dimension_numbers=_dimension_numbers(x.ndim - 2, channels_last),
        transpose_kernel=True)


def _tap_transposed_conv(x, kernel, strides, padding, dilation, channels_last):
    """The same transposed convolution as one matmul and a strided pad per kernel
    tap: linear in `kernel`, and its transpose is the fast kernel gradient."""
    if not channels_last:
        x = jnp.moveaxis(x, 1, -1)
    n = x.ndim - 2
    kernel_size = kernel.shape[:n]
    filters, in_channels = kernel.shape[n], kernel.shape[n + 1]
    taps = int(np.prod(kernel_size))
    per_tap = jnp.moveaxis(kernel.reshape(taps, filters, in_channels), -1, 0)
    products = x @ per_tap.reshape(in_channels, taps * filters)     # (b, *spatial, taps*f)
    zero = jnp.zeros((), products.dtype)
    y = None
    for part, tap in zip(jnp.split(products, taps, axis=-1), np.ndindex(*kernel_size)):
        placed = lax.pad(part, zero, [(0, 0, 0)] + _tap_placement(
            tap, kernel_size, x.shape[1:-1], strides, padding, dilation) + [(0, 0, 0)])
        y = placed if y is None else y + placed
    return y if channels_last else jnp.moveaxis(y, -1, 1)


def _tap_placement(tap, kernel_size, sizes, strides, padding, dilation):
    """(low, high, interior) padding per spatial axis that puts input position i's
    product with kernel tap j at output position i·stride + low − (k − 1 − j)·dilation
    (cropping what falls outside the output)."""
    config = []
    for j, k, size, s, (low, high), d in zip(tap, kernel_size, sizes, strides, padding,
                                             dilation):
        out = (size - 1) * s + 1 + low + high - (k - 1) * d
        start = low - (k - 1 - j) * d
        config.append((start, out - start - (size - 1) * s - 1, s - 1))
    return config


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _cpu_transposed_conv(x, kernel, geometry):
    return _lax_transposed_conv(x, kernel, *geometry)


def _cpu_transposed_conv_jvp(geometry, primals, tangents):
    x, kernel = primals
    x_dot, kernel_dot = tangents
    y = _lax_transposed_conv(x, kernel, *geometry)
    terms = []
    if not isinstance(x_dot, SymbolicZero):
        terms.append(_lax_transposed_conv(x_dot, kernel, *geometry))
    if not isinstance(kernel_dot, SymbolicZero):
        terms.append(_tap_transposed_conv(x, kernel_dot, *geometry))
    if not terms:
        return y, jnp.zeros_like(y)
    return y, functools.reduce(jnp.add, terms)


_cpu_transposed_conv.defjvp(_cpu_transposed_conv_jvp, symbolic_zeros=True)
