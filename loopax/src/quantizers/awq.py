"""AWQ: activation-aware 4-bit weight quantization (Keras 3's scheme).

`model.quantize("awq", config=AWQConfig(...))` calibrates the Dense and
EinsumDense layers of the structure's blocks in turn
(`loopax.src.models.calibration`); for each layer:

1. the largest absolute calibration input of each input channel is
   recorded (`ActivationMaxima`, `x_max`, values below 1e-8 taken as 1);
2. for each exponent `r = i / num_grid_points`, the channel scales
   `s = max(x_max^r, 1e-4)`, divided by `sqrt(max(s) * min(s))`, multiply the
   `(out, in)` kernel's columns; the scaled kernel is rounded to its 4-bit
   grids (per output channel, or in groups of `group_size` input columns) and
   divided back; the scales with the least `mean((W - W_q)^2 * x_max^2)` win
   (`search_scales`, ties: the smaller exponent);
3. the kernel times the winning scales is stored on its grids, with the scales
   (`awq_scales`); calls divide the dequantized kernel's rows by them.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.quantizers import gptq
from loopax.src.quantizers.quantizers import pack_int4
from loopax.src.tensor import unwrap

BITS = 4


class ActivationMaxima:
    """The largest `|x|` of each of the `rows` input channels seen so far: `(rows,)`."""

    def __init__(self, rows):
        self.rows = rows
        self.maxima = jnp.zeros((rows,), jnp.float32)

    def update(self, inputs):
        x = jnp.reshape(jnp.asarray(inputs), (-1, self.rows)).astype(jnp.float32)
        if x.shape[0] == 0:
            raise ValueError("AWQ: a calibration batch has no rows.")
        self.maxima = jnp.maximum(self.maxima, jnp.max(jnp.abs(x), axis=0))


def grouped_grids(weights, group_size):
    """`(scale, zero uint8, maxq)` of `(out, in)` `weights`, one grid per row
    (`group_size` -1 or at least `in`) or per row and group of `group_size`
    columns (`(out, n_groups)`, the last group padded with zeros)."""
    out, n_in = weights.shape
    if group_size == -1 or group_size >= n_in:
        low, high = jnp.min(weights, axis=1, keepdims=True), jnp.max(weights, axis=1,
                                                                     keepdims=True)
    else:
        groups = gptq.group_count(n_in, group_size)
        padded = jnp.pad(weights, ((0, 0), (0, groups * group_size - n_in)))
        grouped = padded.reshape(out, groups, group_size)
        low, high = jnp.min(grouped, axis=2), jnp.max(grouped, axis=2)
    return gptq.grid_from_range(low, high, BITS)


def _column_groups(n_in, group_size):
    if group_size == -1:
        return jnp.zeros((n_in,), jnp.int32)
    return jnp.arange(n_in, dtype=jnp.int32) // group_size


def _round_trip(weights, group_size):
    """`(quantized, scale, zero)` of `weights` on their grids (`grouped_grids`)."""
    scale, zero, maxq = grouped_grids(weights, group_size)
    groups = _column_groups(weights.shape[1], group_size)
    quantized = gptq.quantize_to_grid(weights, jnp.take(scale, groups, axis=1),
                                      jnp.take(zero, groups, axis=1), maxq)
    return quantized, scale, zero


def search_scales(weights, activation_maxima, num_grid_points=20, group_size=-1):
    """AWQ's channel scales `(in,)` for `(out, in)` `weights` (see the module doc).

    The grid points run as one loop (`fori_loop`): written out, each point is a
    copy of the round trip in the compiled program (test_awq's three layers:
    4.3 s to compile written out, 0.8 s as a loop, -O0 on a loaded machine)."""
    weights = jnp.asarray(weights)
    x_max = jnp.asarray(activation_maxima).astype(jnp.float32)
    x_max = jnp.where(x_max < 1e-8, jnp.ones_like(x_max), x_max)
    groups = _column_groups(weights.shape[1], group_size)
    ratios = jnp.asarray([i / num_grid_points for i in range(num_grid_points + 1)],
                         jnp.float32)

    def loss_of(i):
        scales = jnp.where(i == 0, jnp.ones_like(x_max), jnp.power(x_max, ratios[i]))
        scales = jnp.maximum(scales, 1e-4)
        scales = scales / jnp.maximum(jnp.sqrt(jnp.max(scales) * jnp.min(scales)), 1e-8)
        quantized, scale, zero = _round_trip(weights * scales, group_size)
        dequantized = gptq.dequantize_kernel(quantized, scale, zero, groups)
        return jnp.mean(jnp.square(weights - dequantized / scales) * jnp.square(x_max)), scales

    def keep_the_best(i, best):
        loss, scales = loss_of(i)
        better = loss < best[0]   # strictly: a tie keeps the smaller exponent
        return jnp.where(better, loss, best[0]), jnp.where(better, scales, best[1])

    return jax.lax.fori_loop(1, num_grid_points + 1, keep_the_best, loss_of(0))[1]


@functools.partial(jax.jit, static_argnames=("num_grid_points", "group_size"))
def quantize_matrix(weights, activation_maxima, *, num_grid_points=20, group_size=-1):
    """AWQ on one `(out, in)` matrix: `(quantized (out, in), scale (out, n_groups),
    zero (out, n_groups) uint8, awq_scales (in,), g_idx (in,) float32)`, as one
    compiled program per shape and settings (op by op, the search compiles
    one program per grid point's exponent)."""
    weights = jnp.asarray(weights)
    awq_scales = search_scales(weights, activation_maxima, num_grid_points, group_size)
    quantized, scale, zero = _round_trip(weights * awq_scales, group_size)
    group_index = _column_groups(weights.shape[1], group_size).astype(jnp.float32)
    return quantized, scale, zero, awq_scales, group_index


def quantize_layer(layer, maxima, config):
    """Runs AWQ on `layer`'s float kernel with its `ActivationMaxima` and
    writes its quantized weights (the float kernel is dropped)."""
    kernel = jnp.asarray(unwrap(layer.kernel.value))
    rows, columns = gptq.matrix_shape(kernel.shape)
    quantized, scale, zero, awq_scales, group_index = quantize_matrix(
        jnp.reshape(kernel, (rows, columns)).T, maxima.maxima,
        num_grid_points=config.num_grid_points, group_size=config.group_size)
    packed = pack_int4(np.asarray(quantized).astype(np.uint8), axis=0, dtype="uint8")[0]
    layer.finish_calibration({"quantized_kernel": packed, "kernel_scale": scale,
                              "kernel_zero": zero, "awq_scales": awq_scales,
                              "g_idx": group_index})
