"""Neural-network ops (`keras.ops.nn`): activations, convolution, pooling,
normalization, crossentropies and attention.

Layouts follow Keras: `data_format="channels_last"` (the default, unless
`loopax.config.set_image_data_format` changed it) means
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
from loopax.src.api_export import export
from loopax.src.array_types import Array, ArrayLike, Axis, DTypeLike
from loopax.src.config import image_data_format
from loopax.src.ops import window_pool
from loopax.src.ops.transposed_conv import transposed_conv
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


@export("loopax.activations.leaky_relu")
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


@export("loopax.activations.elu")
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


@export("loopax.activations.celu")
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


@export("loopax.activations.glu")
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


@export("loopax.activations.tanh_shrink")
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


@export("loopax.activations.hard_shrink")
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


@export("loopax.activations.soft_shrink")
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


@export("loopax.activations.squareplus")
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


@export("loopax.activations.sparse_plus")
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


@export("loopax.activations.softmax")
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


@export("loopax.activations.log_softmax")
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
    data_format = data_format or image_data_format()
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
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.
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
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.
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
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.
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
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.
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
    return transposed_conv(inputs, kernel, strides, padding, dilation, channels_last)


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

def _pool(pool, inputs, pool_size, strides, padding, data_format, name):
    """`pool` (window_pool's max_pool or sum_pool) over the spatial axes."""
    inputs = as_array(inputs)
    _check_rank(inputs, name)
    n = inputs.ndim - 2
    channels_last = _channels_last(data_format, name)
    window = _spatial(pool_size, n, "pool_size", name)
    strides = window if strides is None else _spatial(strides, n, "strides", name)
    return pool(inputs, window, strides, _padding(padding, name), channels_last)


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
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.

    Returns:
        The pooled array.
    """
    return _pool(window_pool.max_pool, inputs, pool_size, strides, padding, data_format,
                 "max_pool")


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
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.

    Returns:
        The pooled array.
    """
    total = _pool(window_pool.sum_pool, inputs, pool_size, strides, padding, data_format,
                  "average_pool")
    if isinstance(padding, str) and padding.lower() == "valid":
        n = inputs.ndim - 2
        return total / np.prod(_spatial(pool_size, n, "pool_size", "average_pool"))
    channels_last = _channels_last(data_format, "average_pool")
    spatial = inputs.shape[1:-1] if channels_last else inputs.shape[2:]
    ones = jnp.ones((1,) + spatial + (1,) if channels_last else (1, 1) + spatial, inputs.dtype)
    counts = _pool(window_pool.sum_pool, ones, pool_size, strides, padding, data_format,
                   "average_pool")
    return total / counts


def _adaptive_windows(size: int, output_size: int) -> list[tuple[int, int]]:
    """The `[start, end)` windows adaptive pooling reduces `size` entries over:
    window `i` is `[floor(i * size / out), ceil((i + 1) * size / out))`, as in
    Keras and PyTorch. Windows overlap where `out` does not divide `size`, and
    repeat entries where `out > size`; every one holds `k` or `k + 1` entries,
    `k = ceil(size / out)`."""
    return [(i * size // output_size, -(-(i + 1) * size // output_size))
            for i in range(output_size)]


def _adaptive_pool_axis(x, axis, output_size, reduce):
    """`x` with axis `axis` pooled to `output_size` entries: the entries of each
    window are gathered into a new axis `axis + 1` of length `k` (the longest
    window), which `reduce(gathered, axis + 1, valid)` reduces; a shorter window
    repeats its last entry, and `valid` (`(output_size, k)`) marks the real ones."""
    windows = _adaptive_windows(x.shape[axis], output_size)
    k = max(end - start for start, end in windows)
    offsets = np.arange(k)
    index = np.array([np.minimum(start + offsets, end - 1) for start, end in windows])
    valid = np.array([start + offsets < end for start, end in windows])
    return reduce(jnp.take(x, index, axis=axis), axis + 1, valid)


def _adaptive_pool(inputs, output_size, data_format, reduce, name):
    inputs = as_array(inputs)
    if not 3 <= inputs.ndim <= 5:
        raise ValueError(
            f"{name}: inputs must have 1 to 3 spatial dimensions, (batch, *spatial, "
            f"channels) or (batch, channels, *spatial); got shape {inputs.shape}.")
    n = inputs.ndim - 2
    sizes = (output_size,) * n if isinstance(output_size, (int, np.integer)) \
        else tuple(output_size)
    if len(sizes) != n or not all(isinstance(s, (int, np.integer)) and s > 0 for s in sizes):
        raise ValueError(f"{name}: `output_size` must be a positive int or {n} positive ints "
                         f"(one per spatial dimension of inputs {inputs.shape}), got "
                         f"{output_size!r}.")
    first = 1 if _channels_last(data_format, name) else 2
    for axis, size in enumerate(sizes, first):
        inputs = _adaptive_pool_axis(inputs, axis, int(size), reduce)
    return inputs


def _window_max(gathered, axis, valid):
    return jnp.max(gathered, axis=axis)   # repeated entries change no max


def _window_mean(gathered, axis, valid):
    valid = valid.reshape(valid.shape + (1,) * (gathered.ndim - axis - 1))
    total = jnp.sum(jnp.where(valid, gathered, 0), axis=axis)
    return total / valid.sum(axis=1).astype(gathered.dtype)


@op
@compiled("output_size", "data_format")
def adaptive_max_pool(inputs: ArrayLike, output_size: int | Sequence[int],
                      data_format: str | None = None) -> Array:
    """Max pooling to a fixed spatial size, whatever the input's size.

    Output entry `i` of a spatial axis of `n` entries is the max over input
    entries `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`;
    axes are pooled one after the other.

    Args:
        inputs: Array `(batch, *spatial, channels)` (channels_last) with 1 to 3
            spatial dimensions.
        output_size: The output's spatial size: an int (for every spatial
            dimension) or one int per spatial dimension.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.

    Returns:
        `(batch, *output_size, channels)` (channels_last), `inputs`' dtype.

    Raises:
        ValueError: `inputs` has not 1 to 3 spatial dimensions, or `output_size` is not
            positive ints, one per spatial dimension.
    """
    return _adaptive_pool(inputs, output_size, data_format, _window_max, "adaptive_max_pool")


@op
@compiled("output_size", "data_format")
def adaptive_average_pool(inputs: ArrayLike, output_size: int | Sequence[int],
                          data_format: str | None = None) -> Array:
    """Average pooling to a fixed spatial size, whatever the input's size.

    Output entry `i` of a spatial axis of `n` entries is the mean of input
    entries `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`;
    axes are pooled one after the other.

    Args:
        inputs: Array `(batch, *spatial, channels)` (channels_last) with 1 to 3
            spatial dimensions.
        output_size: The output's spatial size: an int (for every spatial
            dimension) or one int per spatial dimension.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"`; None (the default) is `loopax.config.image_data_format()`.

    Returns:
        `(batch, *output_size, channels)` (channels_last): `inputs`' dtype when
        floating, else float32.

    Raises:
        ValueError: `inputs` has not 1 to 3 spatial dimensions, or `output_size` is not
            positive ints, one per spatial dimension.
    """
    inputs = as_array(inputs)
    if not jnp.issubdtype(inputs.dtype, jnp.floating):
        inputs = inputs.astype("float32")
    return _adaptive_pool(inputs, output_size, data_format, _window_mean,
                          "adaptive_average_pool")


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


# --------------------------------------------------------------------------
# More activations, image re-layout, PSNR
# --------------------------------------------------------------------------

@export("loopax.activations.threshold")
@op
@compiled()
def threshold(x, threshold, default_value):
    """`x` where `x > threshold`, else `default_value`, elementwise.

    Args:
        x: Input array.
        threshold: The value `x` must exceed to be kept.
        default_value: The value of the other entries.

    Returns:
        An array of `x`'s shape (dtype promoted with `default_value`'s).
    """
    return jnp.where(x > threshold, x, default_value)


@export("loopax.activations.sparse_sigmoid")
@op
@compiled()
def sparse_sigmoid(x):
    """A piecewise-linear sigmoid: 0 below -1, 1 above 1, `(x + 1) / 2` between.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape with values in [0, 1] (integers become float).
    """
    return jnp.clip((as_array(x) + 1) / 2, 0, 1)


@export("loopax.activations.sparsemax")
@op
@compiled("axis")
def sparsemax(x, axis=-1):
    """Sparsemax: the Euclidean projection of `x` onto the probability
    simplex along `axis` (like softmax, but exact zeros are common).

    Args:
        x: Input logits, a float array.
        axis: The axis to normalize along.

    Returns:
        An array of `x`'s shape; along `axis` the entries are >= 0 and sum
        to 1.
    """
    x = as_array(x)
    ranked = -jnp.sort(-x, axis=axis)
    cumulative = jnp.cumsum(ranked, axis=axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    k = jnp.arange(1, x.shape[axis] + 1, dtype=x.dtype).reshape(shape)
    in_support = 1 + k * ranked > cumulative
    size = jnp.sum(in_support, axis=axis, keepdims=True)
    tau = (jnp.sum(jnp.where(in_support, ranked, 0), axis=axis, keepdims=True) - 1) / size
    return jnp.maximum(x - tau, 0)


def _check_block_layout(x, block_size, data_format, name):
    if jnp.ndim(x) != 4:
        raise ValueError(f"{name}: `x` must be 4-D (batch, height, width, channels) or "
                         f"channels_first, got shape {jnp.shape(x)}.")
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{name}: data_format must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}.")
    if block_size < 1:
        raise ValueError(f"{name}: block_size must be a positive int, got {block_size}.")


@op
@compiled("block_size", "data_format")
def depth_to_space(x, block_size, data_format="channels_last"):
    """Moves channel blocks into space: `(n, h, w, c)` becomes
    `(n, h * b, w * b, c / b**2)` (the layout of Keras/TF's DepthToSpace).

    Args:
        x: A 4-D image batch, `(n, h, w, c)` channels-last or `(n, c, h, w)`
            channels-first; `c` a multiple of `block_size ** 2`.
        block_size: `b`, the side of each spatial block (an int >= 1).
        data_format: `"channels_last"` or `"channels_first"`.

    Returns:
        `(n, h * b, w * b, c / b**2)`, or `(n, c / b**2, h * b, w * b)`
        channels-first; `x`'s dtype.

    Raises:
        ValueError: `x` not 4-D, bad `data_format`, or channels not a
            multiple of `block_size ** 2`.
    """
    _check_block_layout(x, block_size, data_format, "depth_to_space")
    b = block_size
    channels_last = data_format == "channels_last"
    n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if channels_last else x.shape
    if c % (b * b):
        raise ValueError(f"depth_to_space: channels ({c}) must be a multiple of "
                         f"block_size**2 ({b * b}).")
    if channels_last:  # depth index = (row_in_block * b + col_in_block) * c' + channel
        x = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
        return x.reshape(n, h * b, w * b, c // (b * b))
    # channels_first: depth index = (channel * b + row_in_block) * b + col_in_block
    x = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return x.reshape(n, c // (b * b), h * b, w * b)


@op
@compiled("block_size", "data_format")
def space_to_depth(x, block_size, data_format="channels_last"):
    """The inverse of `depth_to_space`: `(n, h, w, c)` becomes
    `(n, h / b, w / b, c * b**2)`.

    Args:
        x: A 4-D image batch, `(n, h, w, c)` channels-last or `(n, c, h, w)`
            channels-first; `h` and `w` multiples of `block_size`.
        block_size: `b`, the side of each spatial block (an int >= 1).
        data_format: `"channels_last"` or `"channels_first"`.

    Returns:
        `(n, h / b, w / b, c * b**2)`, or `(n, c * b**2, h / b, w / b)`
        channels-first; `x`'s dtype.

    Raises:
        ValueError: `x` not 4-D, bad `data_format`, or height/width not
            multiples of `block_size`.
    """
    _check_block_layout(x, block_size, data_format, "space_to_depth")
    b = block_size
    channels_last = data_format == "channels_last"
    n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if channels_last else x.shape
    if h % b or w % b:
        raise ValueError(f"space_to_depth: height and width ({h}, {w}) must be multiples of "
                         f"block_size ({b}).")
    if channels_last:
        x = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
        return x.reshape(n, h // b, w // b, c * b * b)
    x = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 1, 3, 5, 2, 4)
    return x.reshape(n, c * b * b, h // b, w // b)


@op
@compiled()
def psnr(x1, x2, max_val):
    """Peak signal-to-noise ratio in dB: `20 log10(max_val) - 10 log10(mse)`,
    with the mean squared error over all entries.

    Args:
        x1: The first image (batch), a float array.
        x2: The second, of `x1`'s shape.
        max_val: The largest possible pixel value (e.g. 1.0 or 255).

    Returns:
        A scalar of `x2`'s dtype (inf when the images are equal).

    Raises:
        ValueError: `x1` and `x2` have different shapes.
    """
    if jnp.shape(x1) != jnp.shape(x2):
        raise ValueError(f"psnr: `x1` {jnp.shape(x1)} and `x2` {jnp.shape(x2)} must have "
                         "the same shape.")
    x2 = as_array(x2)
    mse = jnp.mean(jnp.square(x1 - x2))
    return 20 * jnp.log10(jnp.asarray(max_val, x2.dtype)) - 10 * jnp.log10(mse)


# --------------------------------------------------------------------------
# CTC (connectionist temporal classification)
# --------------------------------------------------------------------------

_CTC_LOG_ZERO = -1e5  # log-probability of an impossible alignment state (as Keras)


def _ctc_check(name, target=None, output=None):
    if target is not None and jnp.ndim(target) != 2:
        raise ValueError(f"{name}: `target` must be (batch, max_label_length) integer labels, "
                         f"got shape {jnp.shape(target)}.")
    if output is not None and jnp.ndim(output) != 3:
        raise ValueError(f"{name}: `output` must be (batch, max_time, num_classes) logits, "
                         f"got shape {jnp.shape(output)}.")


@op
@compiled("mask_index")
def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """CTC loss: `-log p(target | output)` summed over every alignment.

    The forward (alpha) recursion over the label interleaved with blanks,
    in log space, one `lax.scan` step per time step (differentiable, jit-able).

    Args:
        target: `(batch, max_label_length)` integer labels; entries past
            `target_length` are ignored.
        output: `(batch, max_time, num_classes)` logits (log-softmax is
            applied here); time steps past `output_length` are ignored.
        target_length: `(batch,)` label lengths.
        output_length: `(batch,)` output lengths.
        mask_index: the blank class.

    Returns:
        `(batch,)` losses, float32 (float64 for float64 logits). An
        impossible alignment (labels too long for the output) gives a large
        finite loss (about 1e5) instead of infinity.

    Raises:
        ValueError: `target` is not 2-D or `output` not 3-D.
    """
    _ctc_check("ctc_loss", target, output)
    output = as_array(output)
    dtype = jnp.promote_types(output.dtype, jnp.float32)
    log_probs = jax.nn.log_softmax(output.astype(dtype), axis=-1)
    target = jnp.asarray(target).astype("int32")
    target_length = jnp.asarray(target_length).astype("int32")
    output_length = jnp.asarray(output_length).astype("int32")
    batch, max_time, _ = log_probs.shape
    states = 2 * target.shape[1] + 1

    # The extended label: blank, l0, blank, l1, ..., blank.
    extended = jnp.full((batch, states), mask_index, "int32").at[:, 1::2].set(target)
    two_back = jnp.pad(extended, ((0, 0), (2, 0)), constant_values=mask_index)[:, :states]
    can_skip = (extended != mask_index) & (extended != two_back)  # l_{k-1} -> l_k over a blank
    emit = jnp.take_along_axis(log_probs, jnp.broadcast_to(
        extended[:, None, :], (batch, max_time, states)), axis=2)  # (batch, time, states)
    active = jnp.arange(max_time)[None, :] < output_length[:, None]

    def shift(alpha, by):
        return jnp.pad(alpha, ((0, 0), (by, 0)), constant_values=_CTC_LOG_ZERO)[:, :states]

    def step(alpha, inputs):
        emit_t, active_t = inputs
        prior = jnp.logaddexp(alpha, shift(alpha, 1))
        prior = jnp.logaddexp(prior, jnp.where(can_skip, shift(alpha, 2), _CTC_LOG_ZERO))
        return jnp.where(active_t[:, None], prior + emit_t, alpha), None

    # A virtual start one step before t = 0 (log 1 in state 0).
    start = jnp.full((batch, states), _CTC_LOG_ZERO, dtype).at[:, 0].set(0.0)
    alpha, _ = lax.scan(step, start, (jnp.swapaxes(emit, 0, 1), active.T))
    last = jnp.take_along_axis(alpha, 2 * target_length[:, None], axis=1)[:, 0]
    before_last = jnp.take_along_axis(
        alpha, jnp.maximum(2 * target_length - 1, 0)[:, None], axis=1)[:, 0]
    before_last = jnp.where(target_length > 0, before_last, _CTC_LOG_ZERO)
    return -jnp.logaddexp(last, before_last)


@op
@compiled("strategy", "beam_width", "top_paths", "merge_repeated", "mask_index")
def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1,
               merge_repeated=True, mask_index=0):
    """Decodes CTC outputs into label sequences.

    Args:
        inputs: `(batch, max_time, num_classes)` logits.
        sequence_lengths: `(batch,)` lengths; later time steps are ignored.
        strategy: "greedy" (the best class per step) or "beam_search"
            (prefix beam search over log-softmax probabilities).
        beam_width: the beam size of "beam_search".
        top_paths: how many best sequences "beam_search" returns.
        merge_repeated: "greedy" only: merge repeats not separated by a blank.
        mask_index: the blank class (None: the last class).

    Returns:
        `(decoded, scores)`. "greedy": int32 `(1, batch, max_time)` labels
        (blanks removed, padded with -1) and `(batch, 1)` scores, minus the
        sum of the chosen logits. "beam_search": int32
        `(top_paths, batch, max_time)` and `(batch, top_paths)` log
        probabilities, best first.

    Raises:
        ValueError: unknown `strategy`, or `inputs` not 3-D.
    """
    _ctc_check("ctc_decode", output=inputs)
    inputs = as_array(inputs)
    inputs = inputs.astype(jnp.promote_types(inputs.dtype, jnp.float32))
    lengths = jnp.asarray(sequence_lengths).astype("int32")
    blank = inputs.shape[-1] - 1 if mask_index is None else mask_index
    if strategy == "greedy":
        return _ctc_greedy(inputs, lengths, merge_repeated, blank)
    if strategy == "beam_search":
        paths, scores = jax.vmap(lambda x, n: _ctc_beam_search(
            jax.nn.log_softmax(x, axis=-1), n, beam_width, top_paths, blank))(inputs, lengths)
        return jnp.swapaxes(paths, 0, 1), scores
    raise ValueError(f"ctc_decode: strategy={strategy!r} is not supported; use 'greedy' or "
                     "'beam_search'.")


def _ctc_greedy(inputs, lengths, merge_repeated, blank):
    max_time = inputs.shape[1]
    best = jnp.argmax(inputs, axis=-1).astype("int32")
    padding = jnp.arange(max_time)[None, :] >= lengths[:, None]
    best = jnp.where(padding, blank, best)
    scores = jnp.where(padding, 0.0, jnp.max(inputs, axis=-1))
    if merge_repeated:
        repeat = jnp.pad(best[:, 1:] == best[:, :-1], ((0, 0), (1, 0)))
        best = jnp.where(repeat, blank, best)
    dropped = best == blank
    labels = jnp.where(dropped, -1, best)
    # Kept labels first, in order; dropped ones (now -1) after them.
    labels = jnp.take_along_axis(labels, jnp.argsort(dropped, axis=-1, stable=True), axis=-1)
    return labels[None], -jnp.sum(scores, axis=1, keepdims=True)


def _ctc_beam_search(log_probs, length, beam_width, top_paths, blank):
    """Prefix beam search for one sequence `(time, classes)` of log-probabilities.

    Each beam is a label prefix with two scores: the log-probability of the
    alignments so far that produce it and end in a blank (`p_blank`) or in
    its last label (`p_label`). Returns `(top_paths, time)` labels (-1
    padded) and their `(top_paths,)` log-probabilities.
    """
    max_time, classes = log_probs.shape
    width = beam_width
    steps = jnp.arange(max_time)

    # Time step 0: one beam per class among the `width` most likely.
    first = min(classes, width)
    first_scores, first_class = lax.top_k(log_probs[0], first)
    first_blank = first_class == blank
    prefixes = jnp.full((width, max_time), -1, "int32").at[:first, 0].set(
        jnp.where(first_blank, -1, first_class))
    lengths = jnp.zeros((width,), "int32").at[:first].set(jnp.where(first_blank, 0, 1))
    none = jnp.full((width,), -jnp.inf, log_probs.dtype)
    p_blank = none.at[:first].set(jnp.where(first_blank, first_scores, -jnp.inf))
    p_label = none.at[:first].set(jnp.where(first_blank, -jnp.inf, first_scores))

    def step(beams, inputs):
        prefixes, lengths, p_blank, p_label = beams
        log_p, active = inputs
        total = jnp.logaddexp(p_blank, p_label)
        has_last = lengths > 0
        last = jnp.where(has_last, prefixes[jnp.arange(width), jnp.maximum(lengths - 1, 0)], -1)

        # Same prefix: a blank, or the last label repeated without a blank.
        stay_blank = total + log_p[blank]
        stay_label = p_label + jnp.where(has_last, log_p[jnp.maximum(last, 0)], -jnp.inf)
        # Prefix + c: a repeat of the last label needs a blank in between.
        before = jnp.where(jnp.arange(classes)[None, :] == last[:, None],
                           p_blank[:, None], total[:, None])
        grow = (before + log_p[None, :]).at[:, blank].set(-jnp.inf)  # (width, classes)

        # A grown prefix that is already a beam joins that beam's scores.
        parent = jnp.where(steps[None, :] == (lengths - 1)[:, None], -1, prefixes)
        same = (jnp.all(parent[:, None, :] == prefixes[None, :, :], axis=-1)
                & (lengths[:, None] == lengths[None, :] + 1)
                & has_last[:, None] & (total > -jnp.inf)[:, None])  # same[beam, source]
        joining = jnp.where(same, grow[:, jnp.maximum(last, 0)].T, -jnp.inf)
        stay_label = jnp.logaddexp(stay_label, jax.nn.logsumexp(joining, axis=1))
        joined = jnp.any(same[:, :, None] & (jnp.arange(classes) == last[:, None, None]),
                         axis=0)
        grow = jnp.where(joined, -jnp.inf, grow)

        scores = jnp.concatenate([jnp.logaddexp(stay_blank, stay_label), grow.ravel()])
        _, pick = lax.top_k(scores, width)
        grown = pick >= width
        source = jnp.where(grown, (pick - width) // classes, pick)
        label = (pick - width) % classes
        new_lengths = lengths[source]
        new_prefixes = jnp.where(grown[:, None] & (steps[None, :] == new_lengths[:, None]),
                                 label[:, None], prefixes[source])
        new = (new_prefixes, new_lengths + grown,
               jnp.where(grown, -jnp.inf, stay_blank[source]),
               jnp.where(grown, grow.ravel()[jnp.maximum(pick - width, 0)], stay_label[source]))
        return jax.tree_util.tree_map(lambda n, o: jnp.where(active, n, o), new, beams), None

    beams = (prefixes, lengths, p_blank, p_label)
    (prefixes, _, p_blank, p_label), _ = lax.scan(
        step, beams, (log_probs[1:], steps[1:] < length))
    scores, best = lax.top_k(jnp.logaddexp(p_blank, p_label), top_paths)
    paths = jnp.where((scores > -jnp.inf)[:, None], prefixes[best], -1)
    return paths, scores


@op
@compiled()
def polar(abs_: ArrayLike, angle: ArrayLike) -> Array:
    """Complex numbers from magnitudes and angles.

    Args:
        abs_: Magnitudes.
        angle: Angles in radians (broadcast against `abs_`).

    Returns:
        `abs_ * exp(i angle)`, complex.
    """
    abs_, angle = as_array(abs_), as_array(angle)
    return lax.complex(abs_ * jnp.cos(angle), abs_ * jnp.sin(angle))


def _pairs(owner, **values):
    pairs = []
    for name, value in values.items():
        pair = (value, value) if isinstance(value, int) else tuple(value)
        if len(pair) != 2 or not all(isinstance(v, int) and v >= 0 for v in pair):
            raise ValueError(f"{owner}: `{name}` must be an int or two ints >= 0, got {value!r}.")
        pairs.append(pair)
    return pairs


@op
@compiled("kernel_size", "dilation", "padding", "stride")
def unfold(x: ArrayLike, kernel_size, dilation=1, padding=0, stride=1) -> Array:
    """Sliding blocks of channels-first images, as `torch.nn.Unfold`.

    Args:
        x: Images `(n, c, h, w)`.
        kernel_size: Block size, an int or `(kh, kw)`.
        dilation: Spacing of a block's entries, an int or a pair.
        padding: Zeros added on each side, an int or a pair.
        stride: Step between blocks, an int or a pair.

    Returns:
        `(n, c * kh * kw, blocks)`, entries ordered (channel, kernel row,
        kernel column), blocks row by row.
    """
    x = as_array(x)
    if x.ndim != 4:
        raise ValueError(f"unfold: `x` must be (batch, channels, height, width), got shape "
                         f"{tuple(x.shape)}.")
    kernel, dilation, padding, stride = _pairs("unfold", kernel_size=kernel_size,
                                               dilation=dilation, padding=padding,
                                               stride=stride)
    blocks = lax.conv_general_dilated_patches(
        x, kernel, stride, [(p, p) for p in padding], rhs_dilation=dilation,
        precision=lax.Precision.HIGHEST)
    return blocks.reshape(blocks.shape[:2] + (-1,))


@op
@compiled("output_size", "kernel_size", "dilation", "padding", "stride")
def fold(x: ArrayLike, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Array:
    """Sums sliding blocks back into images, as `torch.nn.Fold` (the adjoint of
    `unfold`: overlapping entries add up).

    Args:
        x: Blocks `(n, c * kh * kw, blocks)`, as `unfold` makes them.
        output_size: The images' `(h, w)` (or an int).
        kernel_size: Block size, an int or `(kh, kw)`.
        dilation: Spacing of a block's entries, an int or a pair.
        padding: Zeros `unfold` added on each side (cut off here).
        stride: Step between blocks, an int or a pair.

    Returns:
        Images `(n, c, h, w)`.
    """
    x = as_array(x)
    (kh, kw), (oh, ow) = _pairs("fold", kernel_size=kernel_size, output_size=output_size)
    if x.ndim != 3 or x.shape[1] % (kh * kw):
        raise ValueError(f"fold: `x` must be (batch, channels * {kh} * {kw}, blocks), got "
                         f"shape {tuple(x.shape)}.")
    images = jax.ShapeDtypeStruct((x.shape[0], x.shape[1] // (kh * kw), oh, ow), x.dtype)
    unfold_images = lambda images: unfold(images, kernel_size, dilation, padding, stride)
    expected = jax.eval_shape(unfold_images, images).shape
    if expected != x.shape:
        raise ValueError(f"fold: blocks of shape {tuple(x.shape)} do not match "
                         f"output_size={output_size}, kernel_size={kernel_size}, which give "
                         f"{expected}.")
    _, transpose = jax.vjp(unfold_images, jnp.zeros(images.shape, images.dtype))
    return transpose(x)[0]


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
