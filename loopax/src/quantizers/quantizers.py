"""Quantization arithmetic (Keras's `keras.quantizers` functions).

int8/int4: symmetric abs-max quantization (`abs_max_quantize`, one scale per
slice along `axis`), asymmetric grouped quantization with a zero point
(`abs_max_quantize_grouped_with_zero_point`), and two int4 values packed per
byte (`pack_int4` / `unpack_int4`). float8: delayed scaling from an amax
history (`compute_float8_scale`, `compute_float8_amax_history`,
`quantize_and_dequantize`). `fake_quant_with_min_max_vars` is TensorFlow's
fake quantization with its straight-through gradient.

Scales follow Keras's convention: `quantized = round(x * scale)`, so
`x ~ quantized / scale`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from loopax.src import config, dtypes
from loopax.src.api_export import export
from loopax.src.tensor import unwrap


def _array(x):
    return jnp.asarray(unwrap(x.value if hasattr(x, "assign") else x))


@export("loopax.quantizers.Quantizer")
class Quantizer:
    """Base class of quantizers: `quantizer(x)` returns quantized values.

    Args:
        output_dtype: The dtype of the quantized values (default "int8").
    """

    def __init__(self, output_dtype="int8"):
        self.output_dtype = output_dtype

    def __call__(self, x):
        return x

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_config(self):
        raise NotImplementedError(f"{self} does not implement get_config()")


@export("loopax.quantizers.abs_max_quantize")
def abs_max_quantize(inputs, axis, value_range=(-127, 127), dtype="int8", epsilon=None,
                     to_numpy=False):
    """`(round(x * scale) clipped to value_range, scale)` with
    `scale = value_range[1] / (max|x| along axis + epsilon)` (kept dims).

    Args:
        inputs: The array to quantize.
        axis: The axis (or axes) the abs-max is taken over.
        value_range: `(low, high)` of the quantized values.
        dtype: The quantized values' dtype.
        epsilon: Added to the abs-max (default `loopax.config.epsilon()`).
        to_numpy: Compute on the host with NumPy (saves device memory).

    Returns:
        `(quantized, scale)`; `scale` has `inputs`' dtype and shape with `axis` kept as 1.
    """
    epsilon = config.epsilon() if epsilon is None else epsilon
    if to_numpy:
        x = np.asarray(unwrap(inputs.value if hasattr(inputs, "assign") else inputs))
        axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
        scale = np.divide(value_range[1], np.max(np.abs(x), axis=axis, keepdims=True) + epsilon)
        out = np.clip(np.round(x * scale), value_range[0], value_range[1]).astype(dtype)
        return jnp.asarray(out), jnp.asarray(scale, dtype=x.dtype)
    x = _array(inputs)
    axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    scale = value_range[1] / (jnp.max(jnp.abs(x), axis=axis, keepdims=True) + epsilon)
    scale = scale.astype(x.dtype)
    out = jnp.clip(jnp.round(x * scale), value_range[0], value_range[1])
    return out.astype(dtype), scale


@export("loopax.quantizers.abs_max_quantize_grouped_with_zero_point")
def abs_max_quantize_grouped_with_zero_point(inputs, block_size, value_range=(-8, 7),
                                             dtype="int8", epsilon=None, to_numpy=False):
    """Asymmetric quantization of a 2-D `(input_dim, output_dim)` array in groups
    of `block_size` rows: each group and column gets a scale and a zero point,
    `q = clip(round(x / scale) + zero_point)`, `x ~ (q - zero_point) * scale`.

    Args:
        inputs: A 2-D array `(input_dim, output_dim)`.
        block_size: Rows per group (the last group is zero-padded).
        value_range: `(qmin, qmax)` of the quantized values.
        dtype: The quantized values' dtype.
        epsilon: Added to each group's `max - min` (default `loopax.config.epsilon()`).
        to_numpy: Compute on the host with NumPy (Keras's `quantize()` does).

    Returns:
        `(quantized (input_dim, output_dim), scale (n_groups, output_dim),
        zero_point (n_groups, output_dim) int8)`, `n_groups = ceil(input_dim / block_size)`.
    """
    epsilon = config.epsilon() if epsilon is None else epsilon
    x = np.asarray(unwrap(inputs.value if hasattr(inputs, "assign") else inputs)) \
        if to_numpy else _array(inputs)
    xp = np if to_numpy else jnp
    if x.ndim != 2:
        raise ValueError("abs_max_quantize_grouped_with_zero_point: `inputs` must be 2-D "
                         f"(input_dim, output_dim); got shape {tuple(x.shape)}.")
    input_dim, output_dim = x.shape
    qmin, qmax = value_range
    n_groups = math.ceil(input_dim / block_size)
    padded = xp.concatenate(
        [x, xp.zeros((n_groups * block_size - input_dim, output_dim), x.dtype)], axis=0)
    groups = padded.reshape(n_groups, block_size, output_dim)
    low, high = groups.min(axis=1), groups.max(axis=1)
    if not to_numpy:
        # Keras's device path widens a constant group to [min - 1, max + 1].
        flat = low == high
        low, high = xp.where(flat, low - 1, low), xp.where(flat, high + 1, high)
    scale = (high - low + epsilon) / (qmax - qmin)
    if not to_numpy:
        scale = xp.where(scale <= 0, 1e-8, scale)
    zero = xp.clip(xp.round(-low / scale) + qmin, qmin, qmax)
    q = xp.clip(xp.round(groups / scale[:, None]) + zero[:, None], qmin, qmax)
    q = q.reshape(n_groups * block_size, output_dim)[:input_dim].astype(dtype)
    return jnp.asarray(q), jnp.asarray(scale, x.dtype), jnp.asarray(zero.astype("int8"))


def dequantize_grouped(quantized, scale, zero_point, group_index, axis=0):
    """`(quantized - zero_point) * scale`, each position along `axis` using the
    scale and zero point of its group (`group_index[i]`, as Keras's `g_idx`):
    the inverse of `abs_max_quantize_grouped_with_zero_point`. `scale` and
    `zero_point` hold one entry per group along `axis`."""
    group = jnp.asarray(group_index).astype(jnp.int32)
    scale = jnp.take(scale, group, axis=axis)
    zero = jnp.take(zero_point, group, axis=axis).astype(scale.dtype)
    return (quantized.astype(scale.dtype) - zero) * scale


@export("loopax.quantizers.AbsMaxQuantizer")
class AbsMaxQuantizer(Quantizer):
    """Abs-max quantization (`abs_max_quantize`) as a callable:
    `quantizer(x, axis=None, to_numpy=False) -> (quantized, scale)`.

    Args:
        axis: Deprecated in Keras (pass it to the call); the default axis of calls.
        value_range: `(low, high)` of the quantized values.
        epsilon: Added to the abs-max (default `loopax.config.epsilon()`).
        output_dtype: The quantized values' dtype.

    Raises:
        ValueError: an int8 `output_dtype` with `value_range` beyond [-128, 127].
    """

    def __init__(self, axis=None, value_range=(-127, 127), epsilon=None, output_dtype="int8"):
        super().__init__(output_dtype=output_dtype)
        self.axis = None if axis is None else tuple(
            (axis,) if isinstance(axis, int) else axis)
        self.value_range = value_range
        self.epsilon = config.epsilon() if epsilon is None else epsilon
        if output_dtype == "int8" and (value_range[0] < -128 or value_range[1] > 127):
            raise ValueError("AbsMaxQuantizer: output_dtype='int8' needs `value_range` within "
                             f"[-128, 127]; got value_range={value_range}.")

    def __call__(self, x, axis=None, to_numpy=False):
        axis = axis if axis is not None else (self.axis if self.axis is not None else -1)
        return abs_max_quantize(x, axis, self.value_range, self.output_dtype, self.epsilon,
                                to_numpy)

    def get_config(self):
        config_ = {"value_range": self.value_range, "epsilon": self.epsilon,
                   "output_dtype": self.output_dtype}
        if self.axis is not None:
            config_["axis"] = self.axis
        return config_


def _nudged_range(low, high, num_bits, narrow_range):
    """TensorFlow's fake-quant range nudged so that 0 is exactly representable:
    `(nudged_min, nudged_max, scale, inv_scale)`, in at least float32."""
    dtype = jnp.promote_types(low.dtype, jnp.float32)
    low, high = low.astype(dtype), high.astype(dtype)
    quant_max = (1 << num_bits) - 1
    quant_min = 1 if narrow_range else 0
    scale = (high - low) / (quant_max - quant_min)
    inv_scale = (quant_max - quant_min) / (high - low)
    zero_point = jnp.round(jnp.clip(quant_min - low / scale, quant_min, quant_max))
    return (quant_min - zero_point) * scale, (quant_max - zero_point) * scale, scale, inv_scale


@export("loopax.quantizers.fake_quant_with_min_max_vars")
def fake_quant_with_min_max_vars(inputs, min_vals, max_vals, num_bits=8, narrow_range=False,
                                 axis=None):
    """Quantizes `inputs` to `num_bits` levels within `[min_vals, max_vals]` and
    back (TensorFlow's `fake_quant_with_min_max_vars`, per channel along `axis`
    when given). Gradients pass straight through inside the range; outside it
    they go to `min_vals` / `max_vals`.

    Args:
        inputs: A float array.
        min_vals, max_vals: Scalars, or one per channel of `axis`.
        num_bits: The bit width (default 8).
        narrow_range: Quantize to `[1, 2^num_bits - 1]` instead of `[0, ...]`.
        axis: The channel axis, or None (per tensor).

    Returns:
        An array of `inputs`' shape and dtype.
    """
    x = _array(inputs)
    num_bits = int(num_bits)
    if axis is not None:
        axis = axis % x.ndim
    return _fake_quant(num_bits, bool(narrow_range), axis, x, _array(min_vals),
                       _array(max_vals))


def _fake_quant(num_bits, narrow_range, axis, x, low, high):
    @jax.custom_vjp
    def run(x, low, high):
        nudged_min, nudged_max, scale, inv_scale = _nudged_range(low, high, num_bits,
                                                                 narrow_range)
        quant_zero = jnp.floor(-nudged_min * inv_scale + 0.5)
        shifted = jnp.clip(x.astype(nudged_min.dtype), nudged_min, nudged_max) - nudged_min
        return (jnp.floor(shifted * inv_scale - quant_zero + 0.5) * scale).astype(x.dtype)

    def forward(x, low, high):
        nudged_min, nudged_max, _, _ = _nudged_range(low, high, num_bits, narrow_range)
        return run(x, low, high), (x, low, high, nudged_min, nudged_max)

    def backward(saved, upstream):
        x, low, high, nudged_min, nudged_max = saved
        inside = (x >= nudged_min) & (x <= nudged_max)
        axes = tuple(i for i in range(x.ndim) if i != axis) if axis is not None else None
        zero = jnp.zeros_like(upstream)
        grad_low = jnp.sum(jnp.where(x <= nudged_min, upstream, zero), axis=axes)
        grad_high = jnp.sum(jnp.where(x >= nudged_max, upstream, zero), axis=axes)
        return (jnp.where(inside, upstream, zero),
                grad_low.reshape(low.shape).astype(low.dtype),
                grad_high.reshape(high.shape).astype(high.dtype))

    run.defvjp(forward, backward)
    return run(x, low, high)


@export("loopax.quantizers.compute_float8_scale")
def compute_float8_scale(amax, scale, dtype_max, margin=0):
    """The next float8 scale from the history's amax (Transformer Engine's
    delayed scaling).

    Args:
        amax: The largest absolute value seen (e.g. the max of the amax history).
        scale: The current scale.
        dtype_max: The float8 dtype's largest finite value.
        margin: A power of two to keep below the top of the range.

    Returns:
        `amax / dtype_max * 2**margin`, or `scale` where `amax` is 0 or not finite.
    """
    amax, scale = _array(amax), _array(scale)
    factor = _array(dtype_max) / amax / 2 ** margin
    factor = jnp.where(amax > 0.0, factor, 1.0 / scale)
    factor = jnp.where(jnp.isfinite(amax), factor, 1.0 / scale)
    return 1.0 / factor


@export("loopax.quantizers.compute_float8_amax_history")
def compute_float8_amax_history(x, amax_history):
    """The history of absolute maxima updated with `x`'s.

    Args:
        x: The array whose `max|x|` is recorded.
        amax_history: A 1-D history.

    Returns:
        `amax_history` rolled by one, with `max|x|` at index 0.
    """
    history = _array(amax_history)
    amax = jnp.max(jnp.abs(_array(x))).astype(history.dtype)
    return jnp.roll(history, -1).at[0].set(amax)


@export("loopax.quantizers.quantize_and_dequantize")
def quantize_and_dequantize(inputs, scale, quantized_dtype, compute_dtype):
    """`inputs / scale` clipped to `quantized_dtype`'s range, cast to it and
    back, times `scale`: the float8 rounding error without float8 arithmetic.

    Args:
        inputs: A float array.
        scale: The scale (a scalar).
        quantized_dtype: "float8_e4m3fn" or "float8_e5m2" (any ml_dtypes float).
        compute_dtype: The dtype of the arithmetic and of the result.

    Returns:
        An array of `inputs`' shape in `compute_dtype`.
    """
    compute_dtype = dtypes.standardize(compute_dtype)
    limit = jnp.asarray(float(ml_dtypes.finfo(quantized_dtype).max), compute_dtype)
    scale = _array(scale).astype(compute_dtype)
    x = jnp.clip(_array(inputs) / scale, -limit, limit).astype(quantized_dtype)
    return x.astype(compute_dtype) * scale


def _check_pack_dtype(dtype):
    if dtype not in ("int8", "uint8"):
        raise ValueError(f"Expected dtype to be 'int8' or 'uint8', but got {dtype!r}.")


@export("loopax.quantizers.pack_int4")
def pack_int4(arr, axis=0, dtype="int8"):
    """Packs int4 values (in `[-8, 7]`, stored as int8) two per byte along
    `axis`: the first of each pair in the low nibble. An odd length is
    zero-padded.

    Args:
        arr: An int8 (or uint8) array of int4 values.
        axis: The axis to pack along.
        dtype: "int8" or "uint8", `arr`'s dtype and the result's.

    Returns:
        `(packed, packed_shape, orig_len)`: `orig_len` is `arr`'s length along `axis`.

    Raises:
        ValueError: `dtype` is neither; TypeError: `arr` is not of `dtype`.
    """
    _check_pack_dtype(dtype)
    x = np.asarray(unwrap(arr.value if hasattr(arr, "assign") else arr))
    if dtypes.standardize(x.dtype) != dtype:
        raise TypeError(f"Expected {dtype} tensor for packing, got "
                        f"{dtypes.standardize(x.dtype)}.")
    x = np.moveaxis(x, axis % x.ndim, 0)
    orig_len = x.shape[0]
    if orig_len % 2:
        x = np.concatenate([x, np.zeros((1,) + x.shape[1:], x.dtype)], axis=0)
    low, high = x[::2] & np.array(0x0F, dtype), x[1::2] & np.array(0x0F, dtype)
    packed = np.moveaxis((low | (high << np.array(4, dtype))).astype(dtype), 0, axis % x.ndim)
    return jnp.asarray(packed), tuple(packed.shape), orig_len


@export("loopax.quantizers.unpack_int4")
def unpack_int4(packed, orig_len, axis=0, dtype="int8"):
    """The inverse of `pack_int4`.

    Args:
        packed: An int8 or uint8 array of packed pairs.
        orig_len: The unpacked length along `axis` (`pack_int4`'s third result).
        axis: The axis that was packed.
        dtype: "int8" (values in [-8, 7]) or "uint8" (values in [0, 15]).

    Returns:
        The int4 values as `dtype`, `orig_len` long along `axis`.

    Raises:
        ValueError: `dtype` is neither; TypeError: `packed` is not int8 or uint8.
    """
    _check_pack_dtype(dtype)
    x = _array(packed)
    if dtypes.standardize(x.dtype) not in ("int8", "uint8"):
        raise TypeError(f"Expected int8 or uint8 tensor for unpacking, got {x.dtype}")
    axis = axis % x.ndim
    x = jnp.moveaxis(x, axis, 0)
    mask = jnp.asarray(0x0F, x.dtype)
    low, high = x & mask, (x >> 4) & mask
    if dtype == "int8":
        eight = jnp.asarray(8, x.dtype)
        low, high = (low ^ eight) - eight, (high ^ eight) - eight
    both = jnp.stack([low.astype(dtype), high.astype(dtype)], axis=1)
    both = both.reshape((-1,) + x.shape[1:])[:orig_len]
    return jnp.moveaxis(both, 0, axis)
