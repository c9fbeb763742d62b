"""Windowed max and sum pooling behind `ops.max_pool`/`ops.average_pool` and the
pooling layers.

lax's max pooling is a `reduce_window` whose gradient is a `select_and_scatter`,
which XLA:CPU runs as a slow scalar loop (52 ms for the 2x2 pool of a 26x26x32
batch of 128, against 3 ms in TensorFlow). On CPU the pool is written instead over
the window's taps (one strided slice of the padded input per window position):
the forward is their maximum, and a `custom_jvp` picks, per window, the tap the
gradient goes to by the rule XLA's `select_and_scatter` follows — scan the window
in row-major order, padding (-inf) included, keeping the current choice while it
is `>=` the next tap — so the gradient is the same to the bit, ties (ReLU zeros)
and NaNs included. When the windows tile the input (strides equal to the pool
size) the taps are a reshape, and the gradient one select and a reshape. Sum
pooling tiles the same way (a reshape and a sum, differentiated by JAX); its
overlapping windows keep `reduce_window`, whose gradient is fast already. GPU/TPU
keep lax's forms; integer inputs and explicit paddings too.
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

# Above this many taps per window the unrolled scan would grow the program more
# than select_and_scatter costs; such pools keep lax's form.
_MAX_TAPS = 64


def _geometry(shape, window, strides, padding, channels_last):
    """Per spatial axis (size, window, stride, out, pad_low, pad_high), with the
    padded extent `(out - 1) * stride + window` (a negative high pad crops the
    entries "valid" windows never reach), as XLA's SAME/VALID define them."""
    n = len(window)
    spatial = shape[1:1 + n] if channels_last else shape[2:2 + n]
    axes = []
    for size, k, s in zip(spatial, window, strides):
        if padding == "SAME":
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            low = total // 2
        else:
            out = (size - k) // s + 1
            low = 0
        high = (out - 1) * s + k - size - low
        axes.append((size, k, s, out, low, high))
    return tuple(axes)


def _use_taps(x, window, padding):
    return (jax.default_backend() == "cpu" and isinstance(padding, str)
            and jnp.issubdtype(x.dtype, jnp.floating)
            and 1 < math.prod(window) <= _MAX_TAPS)


def max_pool(x, window, strides, padding, channels_last):
    """Max over windows of `x` `(batch, *spatial, channels)` (or channels-first);
    `window`/`strides` per spatial axis, `padding` "VALID"/"SAME" or lax's pairs
    for every axis."""
    window, strides = tuple(window), tuple(strides)
    if _use_taps(x, window, padding):
        geometry = _geometry(x.shape, window, strides, padding, channels_last)
        if all(o > 0 for *_, o, _, _ in geometry):
            return _tap_max_pool(x, geometry, bool(channels_last))
    lowest = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) \
        else int(jnp.iinfo(x.dtype).min)
    # A Python-scalar init lets JAX recognise the max window (and differentiate it).
    return lax.reduce_window(x, lowest, lax.max, _full(window, channels_last),
                             _full(strides, channels_last), padding)


def sum_pool(x, window, strides, padding, channels_last):
    """Sum over windows (padding counts as 0), the same layouts as `max_pool`."""
    window, strides = tuple(window), tuple(strides)
    if window == strides and _use_taps(x, window, padding):
        geometry = _geometry(x.shape, window, strides, padding, channels_last)
        if all(o > 0 for *_, o, _, _ in geometry):
            tiles, window_axes = _tiles(_pad(x, 0.0, geometry, channels_last), geometry,
                                        channels_last)
            return jnp.sum(tiles, axis=window_axes)
    return lax.reduce_window(x, np.array(0, x.dtype), lax.add, _full(window, channels_last),
                             _full(strides, channels_last), padding)


def _full(spatial, channels_last):
    return (1,) + spatial + (1,) if channels_last else (1, 1) + spatial


def _spatial_axis(i, channels_last):
    return 1 + i if channels_last else 2 + i


def _pad(x, value, geometry, channels_last):
    config = [(0, 0, 0)] * x.ndim
    for i, (*_, low, high) in enumerate(geometry):
        config[_spatial_axis(i, channels_last)] = (low, high, 0)
    if all(c == (0, 0, 0) for c in config):
        return x
    return lax.pad(x, jnp.array(value, x.dtype), config)


def _tiles(padded, geometry, channels_last):
    """Tiled windows (stride == window) as axes: each spatial axis of the padded
    input split into (out, window); returns the array and its window axes."""
    shape, window_axes = list(padded.shape[:1 if channels_last else 2]), []
    for _, k, _, out, _, _ in geometry:
        shape += [out, k]
        window_axes.append(len(shape) - 1)
    if channels_last:
        shape.append(padded.shape[-1])
    return padded.reshape(shape), tuple(window_axes)


def _taps(padded, geometry, channels_last):
    """Each window position's strided slice of the padded input, in row-major
    window order (the order select_and_scatter scans a window in)."""
    tiled = all(k == s for _, k, s, *_ in geometry)
    if tiled:
        tiles, window_axes = _tiles(padded, geometry, channels_last)
    taps = []
    for offsets in itertools.product(*(range(k) for _, k, *_ in geometry)):
        if tiled:
            index = [slice(None)] * tiles.ndim
            for axis, o in zip(window_axes, offsets):
                index[axis] = o
            taps.append(tiles[tuple(index)])
            continue
        start, limit, step = [0] * padded.ndim, list(padded.shape), [1] * padded.ndim
        for i, (o, (_, _, s, out, _, _)) in enumerate(zip(offsets, geometry)):
            axis = _spatial_axis(i, channels_last)
            start[axis], limit[axis], step[axis] = o, o + (out - 1) * s + 1, s
        taps.append(lax.slice(padded, start, limit, step))
    return taps


def _max_forward(x, geometry, channels_last):
    padded = _pad(x, -jnp.inf, geometry, channels_last)
    if all(k == s for _, k, s, *_ in geometry):
        tiles, window_axes = _tiles(padded, geometry, channels_last)
        return jnp.max(tiles, axis=window_axes), padded
    return functools.reduce(lax.max, _taps(padded, geometry, channels_last)), padded


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _tap_max_pool(x, geometry, channels_last):
    return _max_forward(x, geometry, channels_last)[0]


@_tap_max_pool.defjvp
def _tap_max_pool_jvp(geometry, channels_last, primals, tangents):
    (x,), (t,) = primals, tangents
    y, padded = _max_forward(x, geometry, channels_last)
    taps = _taps(padded, geometry, channels_last)
    # select_and_scatter's choice: the first tap, replaced by each later tap the
    # current choice is not >= (so NaNs and the padding's -inf behave as in XLA).
    chosen, index = taps[0], jnp.zeros(taps[0].shape, np.int32)
    for k, tap in enumerate(taps[1:], 1):
        keep = chosen >= tap
        chosen, index = jnp.where(keep, chosen, tap), jnp.where(keep, index, k)
    t_padded = _pad(t, 0.0, geometry, channels_last)
    zero = jnp.zeros((), t.dtype)
    if all(k == s for _, k, s, *_ in geometry):
        # One select over the tiles: its transpose is a broadcast and a select.
        t_tiles, window_axes = _tiles(t_padded, geometry, channels_last)
        order = np.arange(len(taps)).reshape([k for _, k, *_ in geometry])
        order = np.expand_dims(order, tuple(a for a in range(t_tiles.ndim)
                                            if a not in window_axes))
        selected = jnp.expand_dims(index, window_axes) == order
        return y, jnp.sum(jnp.where(selected, t_tiles, zero), axis=window_axes)
    t_taps = _taps(t_padded, geometry, channels_last)
    t_out = functools.reduce(lax.add, [jnp.where(index == k, tap, zero)
                                       for k, tap in enumerate(t_taps)])
    return y, t_out
