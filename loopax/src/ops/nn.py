"""Neural-network ops (`keras.ops.nn`): activations, convolution, pooling,
normalization, crossentropies and attention.

Layouts follow Keras: `data_format="channels_last"` (the default) means
inputs of shape `(batch, *spatial, channels)`; `"channels_first"` means
`(batch, channels, *spatial)`. Kernels are `(*kernel_size, in_channels,
out_channels)` whatever the data format.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from loopax.src import dtypes
from loopax.src.array_types import Array, ArrayLike, Axis, DTypeLike
from loopax.src.ops.utils import as_array, compiled
from loopax.src.tensor import op

_IMPORTED = set(globals())

_EPSILON = dtypes.EPSILON  # keeps probabilities off 0 and 1


# --------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------

relu = op(compiled()(jax.nn.relu))
relu6 = op(compiled()(jax.nn.relu6))
sigmoid = op(compiled()(jax.nn.sigmoid))
log_sigmoid = op(compiled()(jax.nn.log_sigmoid))
softplus = op(compiled()(jax.nn.softplus))
softsign = op(compiled()(jax.nn.soft_sign))
silu = op(compiled()(jax.nn.silu))
swish = silu
hard_sigmoid = op(compiled()(jax.nn.hard_sigmoid))
hard_silu = op(compiled()(jax.nn.hard_silu))
hard_swish = hard_silu
hard_tanh = op(compiled()(jax.nn.hard_tanh))
selu = op(compiled()(jax.nn.selu))


@op
@compiled("negative_slope")
def leaky_relu(x: ArrayLike, negative_slope: float = 0.2) -> Array:
    """Leaky ReLU: `x` for `x >= 0`, `negative_slope * x` otherwise.

    Args:
        x: Input array.
        negative_slope: The slope below zero.

    Returns:
        An array of `x`'s shape.
    """
    return jax.nn.leaky_relu(x, negative_slope=negative_slope)


@op
@compiled("alpha")
def elu(x: ArrayLike, alpha: float = 1.0) -> Array:
    """Exponential linear unit: `x` for `x > 0`, `alpha * (exp(x) - 1)` otherwise.

    Args:
        x: Input array.
        alpha: The scale of the negative part.

    Returns:
        An array of `x`'s shape.
    """
    return jax.nn.elu(x, alpha=alpha)


@op
@compiled("alpha")
def celu(x: ArrayLike, alpha: float = 1.0) -> Array:
    """Continuously differentiable ELU: `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`.

    Args:
        x: Input array.
        alpha: The scale of the negative part.

    Returns:
        An array of `x`'s shape.
    """
    return jax.nn.celu(x, alpha=alpha)


@op
@compiled("approximate")
def gelu(x: ArrayLike, approximate: bool = True) -> Array:
    """GELU; the tanh approximation by default, as in Keras.

    Args:
        x: Input array.
        approximate: Use the tanh approximation (else the exact erf form).

    Returns:
        An array of `x`'s shape.
    """
    return jax.nn.gelu(x, approximate=approximate)


@op
@compiled("axis")
def glu(x: ArrayLike, axis: Axis = -1) -> Array:
    """Gated linear unit: first half of `axis` times sigmoid of the second.

    Args:
        x: Input array.
        axis: The axis split in two halves (its size must be even).

    Returns:
        An array with `axis` halved.
    """
    a, b = jnp.split(x, 2, axis=axis)
    return a * jax.nn.sigmoid(b)


@op
@compiled()
def tanh_shrink(x: ArrayLike) -> Array:
    """`x - tanh(x)`.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape.
    """
    return x - jnp.tanh(x)


@op
@compiled("threshold")
def hard_shrink(x: ArrayLike, threshold: float = 0.5) -> Array:
    """Hard shrinkage: `x` where `abs(x) > threshold`, else 0.

    Args:
        x: Input array.
        threshold: Values with `abs(x) <= threshold` become 0.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.where(jnp.abs(x) > threshold, x, 0.0)


@op
@compiled("threshold")
def soft_shrink(x: ArrayLike, threshold: float = 0.5) -> Array:
    """Soft shrinkage: `x` moved `threshold` towards 0, and 0 within `threshold`.

    Args:
        x: Input array.
        threshold: The shrink amount.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - threshold, 0.0)


@op
@compiled()
def squareplus(x: ArrayLike, b: float = 4) -> Array:
    """Squareplus: `(x + sqrt(x**2 + b)) / 2`, a smooth ReLU.

    Args:
        x: Input array.
        b: The smoothness (>= 0).

    Returns:
        An array of `x`'s shape.
    """
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@op
@compiled()
def sparse_plus(x: ArrayLike) -> Array:
    """SparsePlus: 0 for `x <= -1`, `(x + 1)**2 / 4` on (-1, 1), `x` for `x >= 1`.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.where(x <= -1, 0.0, jnp.where(x >= 1, x, jnp.square(x + 1) / 4))


@op
@compiled("axis")
def softmax(x: ArrayLike, axis: Axis = -1) -> Array:
    """`exp(x) / sum(exp(x))` along `axis` (all axes if None).

    Args:
        x: Input array (logits).
        axis: The axis (or axes) normalized over; None uses all.

    Returns:
        Probabilities of `x`'s shape, summing to 1 along `axis`.
    """
    return jax.nn.softmax(x, axis=axis)


@op
@compiled("axis")
def log_softmax(x: ArrayLike, axis: Axis = -1) -> Array:
    """`log(softmax(x))` along `axis`, computed stably.

    Args:
        x: Input array (logits).
        axis: The axis (or axes) normalized over.

    Returns:
        An array of `x`'s shape.
    """
    return jax.nn.log_softmax(x, axis=axis)


# --------------------------------------------------------------------------
# Encodings
# --------------------------------------------------------------------------

@op
@compiled("num_classes", "axis", "dtype", "sparse")
def one_hot(x: ArrayLike, num_classes: int, axis: Axis = -1, dtype: DTypeLike = None,
            sparse: bool = False) -> Array:
    """Integer labels (...) -> one-hot (..., num_classes); out-of-range
    labels (e.g. -1) give all zeros.

    Args:
        x: Integer labels.
        num_classes: The number of classes.
        axis: Where the class axis goes.
        dtype: The output dtype (default floatx).
        sparse: Must be False: loopax has no sparse tensors.

    Returns:
        `x`'s shape plus `num_classes` at `axis`.

    Raises:
        ValueError: `sparse=True`.
    """
    _no_sparse(sparse, "one_hot")
    return jax.nn.one_hot(x, num_classes, dtype=dtypes.standardize(dtype), axis=axis)


@op
@compiled("num_classes", "axis", "dtype", "sparse")
def multi_hot(inputs: ArrayLike, num_classes: int | None = None, axis: Axis = -1,
              dtype: DTypeLike = None, sparse: bool = False) -> Array:
    """Integer labels (batch, k) -> (batch, num_classes) with 1 at each label
    (a 1-D input is one sample).

    Args:
        inputs: Integer labels `(batch, k)` or `(k,)`.
        num_classes: The number of classes (required).
        axis: Where the class axis goes.
        dtype: The output dtype (default floatx).
        sparse: Must be False: loopax has no sparse tensors.

    Returns:
        `(batch, num_classes)` (or `(num_classes,)`).

    Raises:
        ValueError: `num_classes` is None, or `sparse=True`.
    """
    _no_sparse(sparse, "multi_hot")
    inputs = as_array(inputs)
    if num_classes is None:
        raise ValueError("multi_hot: `num_classes` is required.")
    encoded = jax.nn.one_hot(inputs.astype("int32"), num_classes,
                             dtype=dtypes.standardize(dtype), axis=axis)
    return jnp.max(encoded, axis=1 if inputs.ndim > 1 else 0)


def _no_sparse(sparse, name):
    if sparse:
        raise ValueError(f"{name}: loopax has no sparse tensors; use sparse=False.")


# --------------------------------------------------------------------------
# Convolution and pooling helpers
# --------------------------------------------------------------------------

def _channels_last(data_format, name):
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{name}: data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}.")
    return data_format == "channels_last"


def _spatial(value, n, arg, name):
    """An int or a sequence -> a tuple of `n` ints (one per spatial dim)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError(f"{name}: `{arg}` must be an int or {n} ints (one per spatial "
                         f"dimension), got {value}.")
    return value


def _padding(padding, name):
    if isinstance(padding, str):
        if padding.lower() not in ("valid", "same"):
            raise ValueError(f"{name}: padding must be 'valid' or 'same', got {padding!r}.")
        return padding.upper()
    return [tuple(p) for p in padding]


def _check_rank(inputs, name, kernel=None):
    if inputs.ndim < 3:
        raise ValueError(
            f"{name}: inputs must have rank >= 3, (batch, *spatial, channels) or "
            f"(batch, channels, *spatial); got shape {inputs.shape}.")
    if kernel is not None and kernel.ndim != inputs.ndim:
        raise ValueError(
            f"{name}: inputs of shape {inputs.shape} have {inputs.ndim - 2} spatial "
            f"dimensions but kernel of shape {kernel.shape} has {kernel.ndim - 2}; "
            "the kernel must be (*kernel_size, in_channels, out_channels).")


def _dimension_numbers(n, channels_last):
    """lax's layout spec: inputs/outputs (batch, feature, *spatial) axis
    indices, kernel (out, in, *spatial) axis indices."""
    spatial = tuple(range(1, n + 1)) if channels_last else tuple(range(2, n + 2))
    features = (0, n + 1) if channels_last else (0, 1)
    kernel = (n + 1, n) + tuple(range(n))
    return lax.ConvDimensionNumbers(features + spatial, kernel, features + spatial)


def _in_channels(inputs, channels_last):
    return inputs.shape[-1] if channels_last else inputs.shape[1]


# --------------------------------------------------------------------------
# Convolution
# --------------------------------------------------------------------------

@op
@compiled("strides", "padding", "data_format", "dilation_rate")
def conv(inputs: ArrayLike, kernel: ArrayLike, strides: int | Sequence[int] | None = 1,
         padding: str = "valid", data_format: str | None = None,
         dilation_rate: int | Sequence[int] = 1) -> Array:
    """N-d convolution (cross-correlation, as in every DL framework).

    inputs: (batch, *spatial, in_channels) (channels_last);
    kernel: (*kernel_size, in_channels // groups, filters). When `in_channels`
    is a multiple of the kernel's input channels, it is a grouped convolution.

    Args:
        inputs: Array `(batch, *spatial, in_channels)` (channels_last).
        kernel: Array `(*kernel_size, in_channels // groups, filters)`.
        strides: The stride per spatial dimension (an int for all).
        padding: `"valid"` (no padding) or `"same"` (output size `ceil(in / stride)`).
        data_format: `"channels_last"` (default, `(batch, *spatial, channels)`) or
            `"channels_first"`.
        dilation_rate: The dilation per spatial dimension (an int for all).

    Returns:
        `(batch, *out_spatial, filters)`.
    """
    inputs, kernel = as_array(inputs), as_array(kernel)
    _check_rank(inputs, "conv", kernel)
    n = inputs.ndim - 2
    channels_last = _channels_last(data_format, "conv")
    in_channels = _in_channels(inputs, channels_last)
    kernel_in, filters = kernel.shape[-2], kernel.shape[-1]
    if kernel_in == 0 or in_channels % kernel_in or filters % (in_channels // kernel_in):
        raise ValueError(
            f"conv: inputs of shape {inputs.shape} "
            f"({'channels_last' if channels_last else 'channels_first'}) have "
            f"{in_channels} channels, but kernel of shape {kernel.shape} expects "
            f"{kernel_in} input channels. The kernel is (*kernel_size, in_channels, "
            "filters); in_channels must match the inputs' channel axis (or divide it "
            "for a grouped convolution).")
    return lax.conv_general_dilated(
        inputs, kernel,
        window_strides=_spatial(strides, n, "strides", "conv"),
        padding=_padding(padding, "conv"),
        rhs_dilation=_spatial(dilation_rate, n, "dilation_rate", "conv"),
        dimension_numbers=_dimension_numbers(n, channels_last),
        feature_group_count=in_channels // kernel_in)


@op
@compiled("strides", "padding", "data_format", "dilation_rate")
def depthwise_conv(inputs: ArrayLike, kernel: ArrayLike, strides: int | Sequence[int] | None = 1,
                   padding: str = "valid", data_format: str | None = None,
                   dilation_rate: int | Sequence[int] = 1) -> Array:
    """Each input channel convolved with its own `depth_multiplier` filters.

    kernel: (*kernel_size, in_channels, depth_multiplier); output channels
    are ordered `channel * depth_multiplier + m`.

    Args:
        inputs: Array `(batch, *spatial, in_channels)` (channels_last).
        kernel: Array `(*kernel_size, in_channels, depth_multiplier)`.
        strides: The stride per spatial dimension (an int for all).
        padding: `"valid"` (no padding) or `"same"` (output size `ceil(in / stride)`).
        data_format: `"channels_last"` (default, `(batch, *spatial, channels)`) or
            `"channels_first"`.
        dilation_rate: The dilation per spatial dimension (an int for all).

    Returns:
        `(batch, *out_spatial, in_channels * depth_multiplier)`.
    """
    inputs, kernel = as_array(inputs), as_array(kernel)
    _check_rank(inputs, "depthwise_conv", kernel)
    n = inputs.ndim - 2
    channels_last = _channels_last(data_format, "depthwise_conv")
    in_channels = _in_channels(inputs, channels_last)
    if kernel.shape[-2] != in_channels:
        raise ValueError(
            f"depthwise_conv: inputs of shape {inputs.shape} have {in_channels} channels "
            f"but kernel of shape {kernel.shape} has {kernel.shape[-2]}; the kernel is "
            "(*kernel_size, in_channels, depth_multiplier).")
    kernel = kernel.reshape(kernel.shape[:-2] + (1, in_channels * kernel.shape[-1]))
    return lax.conv_general_dilated(
        inputs, kernel,
        window_strides=_spatial(strides, n, "strides", "depthwise_conv"),
        padding=_padding(padding, "depthwise_conv"),
        rhs_dilation=_spatial(dilation_rate, n, "dilation_rate", "depthwise_conv"),
        dimension_numbers=_dimension_numbers(n, channels_last),
        feature_group_count=in_channels)


@op
@compiled("strides", "padding", "data_format", "dilation_rate")
def separable_conv(inputs: ArrayLike, depthwise_kernel: ArrayLike, pointwise_kernel: ArrayLike,
                   strides: int | Sequence[int] | None = 1, padding: str = "valid",
                   data_format: str | None = None, dilation_rate: int | Sequence[int] = 1) -> Array:
    """A depthwise convolution followed by a 1×…×1 pointwise convolution.

    Args:
        inputs: Array `(batch, *spatial, in_channels)` (channels_last).
        depthwise_kernel: `(*kernel_size, in_channels, depth_multiplier)`.
        pointwise_kernel: `(*ones, in_channels * depth_multiplier, filters)`.
        strides: The stride per spatial dimension (an int for all).
        padding: `"valid"` (no padding) or `"same"` (output size `ceil(in / stride)`).
        data_format: `"channels_last"` (default, `(batch, *spatial, channels)`) or
            `"channels_first"`.
        dilation_rate: The dilation per spatial dimension (an int for all).

    Returns:
        `(batch, *out_spatial, filters)`.
    """
    depthwise = depthwise_conv.__loopax_op__(
        inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv.__loopax_op__(depthwise, pointwise_kernel, 1, "valid", data_format, 1)


@op
@compiled("strides", "padding", "output_padding", "data_format", "dilation_rate")
def conv_transpose(inputs: ArrayLike, kernel: ArrayLike, strides: int | Sequence[int] | None = 1,
                   padding: str = "valid", output_padding: int | Sequence[int] | None = None,
                   data_format: str | None = None, dilation_rate: int | Sequence[int] = 1) -> Array:
    """Transposed convolution (the gradient of `conv` with respect to its input).

    kernel: (*kernel_size, filters, in_channels). With `output_padding=None`,
    "valid" gives `(in - 1) * stride + max(kernel, stride)` per spatial dim and
    "same" gives `in * stride`.

    Args:
        inputs: Array `(batch, *spatial, in_channels)` (channels_last).
        kernel: Array `(*kernel_size, filters, in_channels)`.
        strides: The stride per spatial dimension (an int for all).
        padding: `"valid"` (no padding) or `"same"` (output size `ceil(in / stride)`).
        output_padding: Extra size per spatial dimension, or None.
        data_format: `"channels_last"` (default, `(batch, *spatial, channels)`) or
            `"channels_first"`.
        dilation_rate: The dilation per spatial dimension (an int for all).

    Returns:
        `(batch, *out_spatial, filters)`.
    """
    inputs, kernel = as_array(inputs), as_array(kernel)
    _check_rank(inputs, "conv_transpose", kernel)
    n = inputs.ndim - 2
    channels_last = _channels_last(data_format, "conv_transpose")
    in_channels = _in_channels(inputs, channels_last)
    if kernel.shape[-1] != in_channels:
        raise ValueError(
            f"conv_transpose: inputs of shape {inputs.shape} have {in_channels} channels "
            f"but kernel of shape {kernel.shape} has {kernel.shape[-1]} input channels; "
            "the kernel is (*kernel_size, filters, in_channels).")
    strides = _spatial(strides, n, "strides", "conv_transpose")
    dilation = _spatial(dilation_rate, n, "dilation_rate", "conv_transpose")
    out_pad = (None,) * n if output_padding is None else _spatial(
        output_padding, n, "output_padding", "conv_transpose")
    if isinstance(padding, str):
        _padding(padding, "conv_transpose")
        padding = [
            _transpose_padding(k, s, d, padding.lower(), p)
            for k, s, d, p in zip(kernel.shape[:n], strides, dilation, out_pad)]
    return lax.conv_transpose(
        inputs, kernel, strides, padding, rhs_dilation=dilation,
        dimension_numbers=_dimension_numbers(n, channels_last), transpose_kernel=True)


def _transpose_padding(kernel_size, stride, dilation, padding, output_padding):
    """(low, high) padding of the stride-dilated input for one spatial dim."""
    k = (kernel_size - 1) * dilation + 1
    if padding == "valid":
        extra = max(k, stride) - k if output_padding is None else output_padding
        return k - 1, k - 1 + extra
    total = stride + k - 2 if output_padding is None else k + k % 2 - 2 + output_padding
    low = min(total // 2 + total % 2, k - 1)
    return low, total - low


# --------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------

def _pool(inputs, init, reducer, pool_size, strides, padding, data_format, name):
    inputs = as_array(inputs)
    _check_rank(inputs, name)
    n = inputs.ndim - 2
    channels_last = _channels_last(data_format, name)
    window = _spatial(pool_size, n, "pool_size", name)
    strides = window if strides is None else _spatial(strides, n, "strides", name)

    def full(spatial):  # a per-spatial-dim tuple -> one entry per axis
        return (1,) + spatial + (1,) if channels_last else (1, 1) + spatial

    return lax.reduce_window(inputs, init, reducer, full(window), full(strides),
                             _padding(padding, name))


@op
@compiled("pool_size", "strides", "padding", "data_format")
def max_pool(inputs: ArrayLike, pool_size: int | Sequence[int],
             strides: int | Sequence[int] | None = None, padding: str = "valid",
             data_format: str | None = None) -> Array:
    """Max over `pool_size` windows; `strides` defaults to `pool_size`.

    Args:
        inputs: Array `(batch, *spatial, channels)` (channels_last).
        pool_size: The window size per spatial dimension (an int for all).
        strides: The stride (default `pool_size`).
        padding: `"valid"` (no padding) or `"same"` (output size `ceil(in / stride)`).
        data_format: `"channels_last"` (default, `(batch, *spatial, channels)`) or
            `"channels_first"`.

    Returns:
        The pooled array.
    """
    inputs = as_array(inputs)
    dtype = inputs.dtype
    lowest = -np.inf if jnp.issubdtype(dtype, jnp.floating) else jnp.iinfo(dtype).min
    return _pool(inputs, np.array(lowest, dtype), lax.max, pool_size, strides, padding,
                 data_format, "max_pool")


@op
@compiled("pool_size", "strides", "padding", "data_format")
def average_pool(inputs: ArrayLike, pool_size: int | Sequence[int],
                 strides: int | Sequence[int] | None = None, padding: str = "valid",
                 data_format: str | None = None) -> Array:
    """Mean over `pool_size` windows. With "same" padding, edge windows
    average only the entries inside the input (padding is not counted).

    Args:
        inputs: Array `(batch, *spatial, channels)` (channels_last).
        pool_size: The window size per spatial dimension (an int for all).
        strides: The stride (default `pool_size`).
        padding: `"valid"` (no padding) or `"same"` (output size `ceil(in / stride)`).
        data_format: `"channels_last"` (default, `(batch, *spatial, channels)`) or
            `"channels_first"`.

    Returns:
        The pooled array.
    """
    zero = np.array(0, inputs.dtype)
    total = _pool(inputs, zero, lax.add, pool_size, strides, padding, data_format,
                  "average_pool")
    if isinstance(padding, str) and padding.lower() == "valid":
        n = inputs.ndim - 2
        return total / np.prod(_spatial(pool_size, n, "pool_size", "average_pool"))
    channels_last = _channels_last(data_format, "average_pool")
    spatial = inputs.shape[1:-1] if channels_last else inputs.shape[2:]
    ones = jnp.ones((1,) + spatial + (1,) if channels_last else (1, 1) + spatial, inputs.dtype)
    counts = _pool(ones, zero, lax.add, pool_size, strides, padding, data_format,
                   "average_pool")
    return total / counts


# --------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------

@op
@compiled("axes", "keepdims", "synchronized")
def moments(x: ArrayLike, axes: Any, keepdims: bool = False,
            synchronized: bool = False) -> tuple[Array, Array]:
    """(mean, variance) over `axes`, computed in float32 for half precision.

    Args:
        x: Input array.
        axes: The axes to reduce.
        keepdims: Keep the reduced axes, with size 1.
        synchronized: Accepted for Keras compatibility (one process: no effect).

    Returns:
        `(mean, variance)`, in `x`'s dtype.
    """
    axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
    x = as_array(x)
    dtype = x.dtype
    if dtype in (jnp.float16, jnp.bfloat16):
        x = x.astype("float32")
    mean = jnp.mean(x, axis=axes, keepdims=keepdims)
    variance = jnp.var(x, axis=axes, keepdims=keepdims)
    if x.dtype != dtype and jnp.issubdtype(dtype, jnp.floating):
        return mean.astype(dtype), variance.astype(dtype)
    return mean, variance


@op
@compiled("axis", "epsilon")
def batch_normalization(x: ArrayLike, mean: ArrayLike, variance: ArrayLike, axis: Axis,
                        offset: ArrayLike = None, scale: ArrayLike = None,
                        epsilon: float | None = 1e-3) -> Array:
    """`(x - mean) / sqrt(variance + epsilon) * scale + offset`, where the
    1-D statistics run along `axis` of `x`.

    Args:
        x: Input array.
        mean: 1-D mean, of `x.shape[axis]`.
        variance: 1-D variance, same size.
        axis: The feature axis of `x`.
        offset: 1-D offset (beta), or None.
        scale: 1-D scale (gamma), or None.
        epsilon: Added to the variance.

    Returns:
        The normalized array, `x`'s shape.
    """
    x = as_array(x)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]

    def along_axis(v):
        return jnp.reshape(v, shape) if jnp.ndim(v) == 1 else v

    inv = lax.rsqrt(along_axis(variance) + epsilon)
    if scale is not None:
        inv = inv * along_axis(scale)
    out = (x - along_axis(mean)) * inv
    return out if offset is None else out + along_axis(offset)


@op
@compiled("axis", "order", "epsilon")
def normalize(x: ArrayLike, axis: Axis = -1, order: int | str = 2,
              epsilon: float | None = None) -> Array:
    """`x` divided by its `order`-norm along `axis`.

    Args:
        x: Input array.
        axis: The axis.
        order: The norm's order.
        epsilon: The smallest norm divided by (default Keras's epsilon).

    Returns:
        An array of `x`'s shape.
    """
    epsilon = _EPSILON if epsilon is None else epsilon
    if order == 2:
        inv_norm = lax.rsqrt(jnp.sum(jnp.square(x), axis=axis, keepdims=True))
        return x * jnp.minimum(inv_norm, 1.0 / epsilon)
    norm = jnp.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    return x / jnp.maximum(norm, epsilon)


@op
@compiled("axis", "epsilon")
def rms_normalization(x: ArrayLike, scale: ArrayLike = 1, axis: Axis = -1,
                      epsilon: float | None = None) -> Array:
    """`x / sqrt(mean(x**2) + epsilon) * scale` along `axis`.

    Args:
        x: Input array.
        scale: The scale (scalar or of the normalized axis' size).
        axis: The normalized axis (or axes).
        epsilon: Small constant added to the variance for stability (None: Keras's default).

    Returns:
        An array of `x`'s shape.
    """
    epsilon = _EPSILON if epsilon is None else epsilon
    return x * lax.rsqrt(jnp.mean(jnp.square(x), axis=axis, keepdims=True) + epsilon) * scale


@op
@compiled("axis", "epsilon")
def layer_normalization(x: ArrayLike, gamma: ArrayLike = None, beta: ArrayLike = None,
                        axis: Axis = -1, epsilon: float | None = None) -> Array:
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta` along `axis`.

    Args:
        x: Input array.
        gamma: Scale of `x.shape[axis]` entries, or None.
        beta: Offset, or None.
        axis: The normalized axis (or axes).
        epsilon: Small constant added to the variance for stability (None: Keras's default).

    Returns:
        An array of `x`'s shape.
    """
    epsilon = 1e-3 if epsilon is None else epsilon
    mean = jnp.mean(x, axis=axis, keepdims=True)
    out = (x - mean) * lax.rsqrt(jnp.var(x, axis=axis, keepdims=True) + epsilon)
    if gamma is not None:
        out = out * gamma
    return out if beta is None else out + beta


# --------------------------------------------------------------------------
# Crossentropies (per-sample, unreduced)
# --------------------------------------------------------------------------

@op
@compiled("from_logits")
def binary_crossentropy(target: ArrayLike, output: ArrayLike, from_logits: bool = False) -> Array:
    """Elementwise `-(t log p + (1 - t) log(1 - p))`; `output` is a
    probability, or a logit with `from_logits=True`.

    Args:
        target: Targets in [0, 1].
        output: Probabilities (or logits), `target`'s shape.
        from_logits: Whether `output` holds logits rather than probabilities.

    Returns:
        Elementwise losses, the broadcast shape.
    """
    if jnp.shape(target) != jnp.shape(output):
        raise ValueError(
            "binary_crossentropy: `target` and `output` must have the same shape, got "
            f"target.shape={jnp.shape(target)} and output.shape={jnp.shape(output)}.")
    if from_logits:
        return -target * jax.nn.log_sigmoid(output) - (1 - target) * jax.nn.log_sigmoid(-output)
    output = jnp.clip(output, _EPSILON, 1 - _EPSILON)
    return -(target * jnp.log(output) + (1 - target) * jnp.log(1 - output))


def _log_probabilities(output, from_logits, axis):
    if from_logits:
        return jax.nn.log_softmax(output, axis=axis)
    output = output / jnp.sum(output, axis=axis, keepdims=True)
    return jnp.log(jnp.clip(output, _EPSILON, 1 - _EPSILON))


@op
@compiled("from_logits", "axis")
def categorical_crossentropy(target: ArrayLike, output: ArrayLike, from_logits: bool = False,
                             axis: Axis = -1) -> Array:
    """`-sum(target * log(p), axis)` for one-hot (or soft) `target`; without
    `from_logits`, `output` is renormalized to sum to 1 along `axis`.

    Args:
        target: One-hot or soft targets `(..., classes)`.
        output: Probabilities (or logits), `target`'s shape.
        from_logits: Whether `output` holds logits rather than probabilities.
        axis: The class axis.

    Returns:
        Losses, without the class axis.
    """
    if jnp.ndim(output) < 1 or jnp.shape(target) != jnp.shape(output):
        raise ValueError(
            "categorical_crossentropy: `target` and `output` must have the same shape "
            f"(..., num_classes), got target.shape={jnp.shape(target)} and "
            f"output.shape={jnp.shape(output)}. For integer labels use "
            "sparse_categorical_crossentropy.")
    return -jnp.sum(target * _log_probabilities(output, from_logits, axis), axis=axis)


@op
@compiled("from_logits", "axis")
def sparse_categorical_crossentropy(target: ArrayLike, output: ArrayLike, from_logits: bool = False,
                                    axis: Axis = -1) -> Array:
    """Crossentropy for integer `target` of shape `output.shape` without
    the class `axis` (a trailing size-1 axis is allowed).

    Args:
        target: Integer class ids.
        output: Probabilities (or logits) `(..., classes)`.
        from_logits: Whether `output` holds logits rather than probabilities.
        axis: The class axis.

    Returns:
        Losses, `target`'s shape.
    """
    target, output = as_array(target), as_array(output)
    target_shape, output_shape = jnp.shape(target), jnp.shape(output)
    if len(target_shape) == len(output_shape) and target_shape and target_shape[-1] == 1:
        target = jnp.squeeze(target, -1)
    expected = list(output_shape)
    if expected:
        del expected[axis]
    if not output_shape or list(jnp.shape(target)) != expected:
        raise ValueError(
            "sparse_categorical_crossentropy: `target` must have the shape of `output` "
            f"without its class axis ({tuple(expected)}), got target.shape={target_shape} "
            f"and output.shape={output_shape}. For one-hot targets use "
            "categorical_crossentropy.")
    num_classes = output_shape[axis]
    target = jax.nn.one_hot(target, num_classes, axis=axis, dtype=output.dtype)
    return -jnp.sum(target * _log_probabilities(output, from_logits, axis), axis=axis)


# --------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------

@op
@compiled("scale", "is_causal", "flash_attention", "attn_logits_soft_cap")
def dot_product_attention(query: ArrayLike, key: ArrayLike, value: ArrayLike,
                          bias: ArrayLike = None, mask: ArrayLike = None, scale: ArrayLike = None,
                          is_causal: bool = False, flash_attention: bool | None = None,
                          attn_logits_soft_cap: float | None = None) -> Array:
    """softmax(q·kᵀ · scale + bias) · v, per head.

    query: (batch, T, heads, head_dim); key, value: (batch, S, kv_heads,
    head_dim), where kv_heads divides heads (grouped-query attention).
    `mask` (bool, broadcastable to (batch, heads, T, S)) is True where
    attention is allowed; `is_causal` also masks keys after each query.
    `scale` defaults to 1/sqrt(head_dim).

    Args:
        query: `(batch, T, heads, head_dim)`.
        key: `(batch, S, kv_heads, head_dim)`.
        value: `(batch, S, kv_heads, head_dim)`.
        bias: Added to the logits, broadcastable to `(batch, heads, T, S)`.
        mask: Bool, broadcastable to `(batch, heads, T, S)`, True where attention is allowed.
        scale: The logits' scale (default `1 / sqrt(head_dim)`).
        is_causal: Mask keys after each query.
        flash_attention: Accepted for Keras compatibility; XLA picks the kernel.
        attn_logits_soft_cap: If given, logits become `cap * tanh(logits / cap)`.

    Returns:
        `(batch, T, heads, head_dim)`.
    """
    query, key, value = as_array(query), as_array(key), as_array(value)
    if query.ndim not in (3, 4) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ValueError(
            "dot_product_attention: query, key and value must be (batch, length, heads, "
            f"head_dim) arrays, got shapes {query.shape}, {key.shape}, {value.shape}.")
    heads, kv_heads = query.shape[-2], key.shape[-2]
    if heads % kv_heads:
        raise ValueError(
            f"dot_product_attention: query has {heads} heads, which is not a multiple of "
            f"the {kv_heads} heads of key {key.shape}.")
    if kv_heads != heads:
        key = jnp.repeat(key, heads // kv_heads, axis=-2)
        value = jnp.repeat(value, heads // kv_heads, axis=-2)
    scale = 1.0 / np.sqrt(query.shape[-1]) if scale is None else scale
    logits = jnp.einsum("...tnh,...snh->...nts", query, key).astype("float32") * scale
    if attn_logits_soft_cap is not None:
        logits = attn_logits_soft_cap * jnp.tanh(logits / attn_logits_soft_cap)
    if bias is not None:
        logits = logits + bias
    if is_causal:
        t, s = logits.shape[-2:]
        causal = jnp.tril(jnp.ones((t, s), bool))
        mask = causal if mask is None else jnp.logical_and(mask, causal)
    if mask is not None:
        logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
    weights = jax.nn.softmax(logits, axis=-1).astype(value.dtype)
    return jnp.einsum("...nts,...snh->...tnh", weights, value)


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
