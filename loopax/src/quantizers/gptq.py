"""GPTQ: post-training quantization with error feedback (Keras 3's scheme).

`model.quantize("gptq", config=GPTQConfig(...))` calibrates the Dense and
EinsumDense layers of the structure's blocks in turn
(`loopax.src.models.calibration`); for each layer:

1. its Hessian is the running mean of `2 x^T x` over the rows of its
   calibration inputs (`HessianEstimate`), damped and inverted (`damped_inverse`);
2. its kernel, as an `(out, in)` matrix, is quantized column by column
   (`quantize_matrix`): a column is rounded to its group's grid, and its
   error, divided by the inverse Hessian's diagonal entry, is subtracted from
   the later columns times the inverse Hessian's row (within a block of 128
   columns at once, then from the columns after the block in one product).

Quantized values are unsigned (`[0, 2^bits - 1]` with a zero point); a layer
stores them as `(out, in)` uint8 (4 bits packed two per byte along `out`),
`kernel_scale`/`kernel_zero` as `(out, n_groups)` and `g_idx` (each input row's
group, as a float: `row / group_size`, truncated when used).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.quantizers.quantizers import pack_int4, unpack_int4
from loopax.src.tensor import unwrap

BLOCK_COLUMNS = 128   # columns whose errors are fed forward one by one (Keras's blocksize)


# ---- the quantization grid ---------------------------------------------------
def grid_from_range(low, high, bits, symmetric=False):
    """`(scale, zero uint8, maxq)` of the grid `[0, 2^bits - 1]` spanning
    `[low, high]` (elementwise; a flat range is widened by 1 each way)."""
    if symmetric:
        bound = jnp.maximum(jnp.abs(low), high)
        low, high = jnp.where(low < 0, -bound, low), bound
    flat = low == high
    low, high = jnp.where(flat, low - 1, low), jnp.where(flat, high + 1, high)
    maxq = jnp.asarray(2 ** bits - 1, low.dtype)
    scale = (high - low) / maxq
    scale = jnp.where(scale <= 0, 1e-8, scale)
    if symmetric:
        zero = jnp.full_like(scale, (maxq + 1) / 2)
    else:
        zero = jnp.round(-low / scale)
    return scale, zero.astype(jnp.uint8), maxq


def grid_parameters(weights, bits, symmetric=False, per_channel=True):
    """The grid of one group: `(scale (out, 1), zero (out, 1) uint8, maxq)`.

    Args:
        weights: `(out, columns)` float: the group's columns.
        bits: Bits per value; the grid is `[0, 2^bits - 1]`.
        symmetric: Center the range on 0 (zero point `2^(bits - 1)`).
        per_channel: One scale per row; False: one for the whole group.
    """
    weights = jnp.asarray(weights)
    axis = 1 if per_channel else None
    scale, zero, maxq = grid_from_range(jnp.min(weights, axis=axis),
                                        jnp.max(weights, axis=axis), bits, symmetric)
    out = weights.shape[0]
    scale = jnp.broadcast_to(jnp.reshape(scale, (-1, 1)), (out, 1))
    zero = jnp.broadcast_to(jnp.reshape(zero, (-1, 1)), (out, 1))
    return scale, zero, maxq


def quantize_to_grid(weights, scale, zero, maxq):
    """`clip(round(weights / scale + zero), 0, maxq)` (float; a zero scale counts as 1e-8)."""
    scale = jnp.where(scale == 0, jnp.asarray(1e-8, scale.dtype), scale)
    return jnp.clip(jnp.round(weights / scale + zero.astype(scale.dtype)), 0, maxq)


def dequantize_from_grid(quantized, scale, zero):
    """`scale * (quantized - zero)`."""
    return scale * (quantized - zero.astype(scale.dtype))


def dequantize_kernel(quantized, scale, zero, group_index):
    """The float `(out, in)` matrix a layer's `(out, in)` grid values stand for:
    each input column uses the scale and zero point of group `int(g_idx[i])`."""
    groups = jnp.asarray(group_index).astype(jnp.int32)
    scale = jnp.take(scale, groups, axis=-1)
    zero = jnp.take(zero, groups, axis=-1).astype(scale.dtype)
    return (quantized.astype(scale.dtype) - zero) * scale


# ---- the per-layer solver ----------------------------------------------------
@jax.jit
def _quantize_block(weights, inv_hessian, scale, zero, maxq):
    """Quantizes the columns of one block in order, each column's error fed
    into the columns after it: `(quantized (out, n) int32, errors (out, n))`.
    `scale`/`zero` give each column's grid, `(out, n)`."""
    n = weights.shape[1]
    later = jnp.arange(n)

    def column(i, carry):
        weights, quantized, errors = carry
        w, s, z = weights[:, i, None], scale[:, i, None], zero[:, i, None]
        q = quantize_to_grid(w, s, z, maxq)
        error = (w - dequantize_from_grid(q, s, z))[:, 0] / inv_hessian[i, i]
        row = jnp.where(later > i, inv_hessian[i], 0.0)
        weights = weights - error[:, None] * row[None, :]
        quantized = quantized.at[:, i].set(q[:, 0].astype(jnp.int32))
        errors = errors.at[:, i].set(error)
        return weights, quantized, errors

    start = (weights, jnp.zeros(weights.shape, jnp.int32), jnp.zeros_like(weights))
    _, quantized, errors = jax.lax.fori_loop(0, n, column, start)
    return quantized, errors


def _activation_order(metric):
    """Columns by decreasing `metric` (ties: the earlier column first)."""
    n = metric.shape[0]
    metric = jnp.where(jnp.isfinite(metric), metric.astype(jnp.float32), 0.0)
    jitter = jnp.arange(n, dtype=jnp.int32).astype(jnp.float32) / jnp.float32(n)
    return jnp.argsort(-(metric + jitter * 1e-12))


@functools.partial(jax.jit, static_argnames=(
    "bits", "group_size", "symmetric", "per_channel", "activation_order", "block_columns"))
def quantize_matrix(weights, inv_hessian, *, bits, group_size=-1, symmetric=False,
                    per_channel=True, activation_order=False, order_metric=None,
                    block_columns=BLOCK_COLUMNS):
    """GPTQ on one `(out, in)` matrix (one compiled program per shape and
    settings: its per-group slices, run op by op, compiled one program each).

    Args:
        weights: `(out, in)` float, a kernel transposed.
        inv_hessian: `(in, in)` inverse of the damped Hessian.
        bits, symmetric, per_channel: The grid (see `grid_parameters`).
        group_size: Input columns per grid; -1: one grid for all.
        activation_order: Quantize columns by decreasing `order_metric`.
        order_metric: `(in,)`, e.g. the Hessian's diagonal.
        block_columns: Columns whose errors are fed forward one at a time.

    Returns:
        `(quantized (out, in) int32, scale (out, n_groups), zero (out, n_groups)
        uint8, g_idx (in,) float32)`, columns in their original order; the
        groups are counted in the quantization order.
    """
    weights, inv_hessian = jnp.asarray(weights), jnp.asarray(inv_hessian)
    n_in = weights.shape[1]
    if activation_order:
        order = _activation_order(order_metric)
        weights = jnp.take(weights, order, axis=1)
        inv_hessian = jnp.take(jnp.take(inv_hessian, order, axis=0), order, axis=1)
    group = n_in if group_size == -1 else group_size
    scales, zeros, column_scale, column_zero, maxq = [], [], [], [], None
    quantized = []
    for start in range(0, n_in, block_columns):
        end = min(start + block_columns, n_in)
        # Each group's grid comes from the columns as they stand when the block
        # its first column lies in begins.
        for first in range(-(-start // group) * group, end, group):
            scale, zero, maxq = grid_parameters(weights[:, first:min(first + group, n_in)],
                                                bits, symmetric, per_channel)
            scales.append(scale)
            zeros.append(zero)
        groups = np.arange(start, end) // group
        column_scale = jnp.concatenate([scales[g] for g in groups], axis=1)
        column_zero = jnp.concatenate([zeros[g] for g in groups], axis=1)
        block_quantized, errors = _quantize_block(
            weights[:, start:end], inv_hessian[start:end, start:end], column_scale,
            column_zero, maxq)
        quantized.append(block_quantized)
        if end < n_in:
            weights = jnp.concatenate(
                [weights[:, :end], weights[:, end:] - errors @ inv_hessian[start:end, end:]],
                axis=1)
    quantized = jnp.concatenate(quantized, axis=1)
    group_index = (jnp.arange(n_in, dtype=jnp.int32).astype(jnp.float32)
                   / jnp.float32(group))
    if activation_order:
        back = jnp.argsort(order)
        group_index = jnp.take(group_index, back)
        quantized = jnp.take(quantized, back, axis=1)
    return (quantized, jnp.concatenate(scales, axis=1), jnp.concatenate(zeros, axis=1),
            group_index)


def damped_inverse(hessian, damping):
    """The inverse of `hessian` with dead inputs (zero diagonal) given a 1 and
    `damping * mean(diagonal)` added to the diagonal: `(inverse, damped diagonal)`."""
    diagonal = jnp.diagonal(hessian)
    dead = diagonal == 0.0
    diagonal = jnp.where(dead, 1.0, diagonal)
    diagonal = diagonal + damping * jnp.mean(diagonal)
    damped = hessian - jnp.diag(jnp.diagonal(hessian)) + jnp.diag(diagonal)
    return jnp.linalg.inv(damped), diagonal


class HessianEstimate:
    """The running mean of `2 x^T x` over the rows `x` (each `(rows,)`) of a
    layer's calibration inputs: `(rows, rows)` float32."""

    def __init__(self, rows):
        self.rows = rows
        self.hessian = jnp.zeros((rows, rows), jnp.float32)
        self.count = 0

    def update(self, inputs):
        x = jnp.reshape(jnp.asarray(inputs), (-1, self.rows)).astype(jnp.float32)
        if x.shape[0] == 0:
            raise ValueError("GPTQ: a calibration batch has no rows.")
        total = self.count + x.shape[0]
        self.hessian = _running_mean_step(self.hessian, x, jnp.float32(self.count),
                                          jnp.float32(total))
        self.count = total


@jax.jit
def _running_mean_step(hessian, x, count, total):
    """`hessian` (the mean over `count` rows) updated with the rows of `x`
    (`total` rows in all), as one compiled program per input shape."""
    gram = x.T @ x
    gram = (gram + gram.T) / 2.0
    return hessian * (count / total) + (jnp.float32(2.0) / total) * gram


# ---- layers --------------------------------------------------------------------
def matrix_shape(kernel_shape):
    """`(rows, columns)` of the 2-D matrix GPTQ sees for a kernel: a 3-D
    EinsumDense kernel `(in, heads, head_dim)` is `(in, heads * head_dim)`,
    `(heads, head_dim, out)` is `(heads * head_dim, out)` (the largest axis
    tells which)."""
    shape = tuple(kernel_shape)
    if len(shape) == 2:
        return shape
    if len(shape) != 3:
        raise ValueError(f"GPTQ: kernels of rank 2 or 3 can be quantized; got kernel shape "
                         f"{shape}.")
    if shape.index(max(shape)) == 0:
        return shape[0], shape[1] * shape[2]
    return shape[0] * shape[1], shape[2]


def group_count(rows, group_size):
    return 1 if group_size == -1 else math.ceil(rows / group_size)


@functools.partial(jax.jit, static_argnames=(
    "bits", "group_size", "symmetric", "per_channel", "activation_order"))
def _solve_kernel(kernel, hessian, damping, *, bits, group_size, symmetric, per_channel,
                  activation_order):
    """`quantize_matrix` of a kernel (any rank `matrix_shape` takes) with its
    damped inverse Hessian, as one compiled program per layer shape."""
    rows, columns = matrix_shape(kernel.shape)
    inverse, diagonal = damped_inverse(hessian, damping)
    return quantize_matrix(
        jnp.reshape(kernel, (rows, columns)).T, inverse, bits=bits, group_size=group_size,
        symmetric=symmetric, per_channel=per_channel, activation_order=activation_order,
        order_metric=diagonal)


def quantize_layer(layer, estimate, config):
    """Runs GPTQ on `layer`'s float kernel with the Hessian `estimate`
    (a `HessianEstimate`) and writes its quantized weights (the float kernel
    is dropped)."""
    quantized, scale, zero, group_index = _solve_kernel(
        jnp.asarray(unwrap(layer.kernel.value)), estimate.hessian, config.hessian_damping,
        bits=config.weight_bits, group_size=config.group_size, symmetric=config.symmetric,
        per_channel=config.per_channel, activation_order=config.activation_order)
    quantized = np.asarray(quantized).astype(np.uint8)
    if config.weight_bits == 4:
        quantized = pack_int4(quantized, axis=0, dtype="uint8")[0]
    layer.finish_calibration({"quantized_kernel": quantized, "kernel_scale": scale,
                              "kernel_zero": zero, "g_idx": group_index})


def dequantized_kernel(layer, columns, weight_bits):
    """A calibrated layer's float kernel `(rows, columns)` from its stored grid values."""
    quantized = layer.quantized_kernel.value
    if weight_bits == 4:
        quantized = unpack_int4(quantized, columns, axis=0, dtype="uint8")
    return dequantize_kernel(quantized, layer.kernel_scale.value, layer.kernel_zero.value,
                             layer.g_idx.value).T
