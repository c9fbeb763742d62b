"""Argument checks shared by the layers."""

from __future__ import annotations

import numpy as np

from loopax.src.config import image_data_format


def positive_int(value, name, owner):
    """`value` as an int, or a ValueError naming the argument."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
        return int(value)
    raise ValueError(f"{owner}: `{name}` must be a positive int, got {value!r}.")


def standardize_tuple(value, n, name, owner):
    """`3` -> `(3, 3)` for n=2; a sequence of n positive ints passes through."""
    values = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != n or not all(isinstance(v, (int, np.integer)) and v > 0 for v in values):
        raise ValueError(f"{owner}: `{name}` must be an int or a tuple of {n} positive ints, "
                         f"got {value!r}.")
    return tuple(int(v) for v in values)


def standardize_data_format(data_format):
    """`data_format` lower-cased; None is `loopax.config.image_data_format()`."""
    data_format = (data_format or image_data_format()).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("`data_format` must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}.")
    return data_format


def standardize_padding(padding, owner, allow_causal=False):
    padding = str(padding).lower()
    allowed = ("valid", "same", "causal") if allow_causal else ("valid", "same")
    if padding not in allowed:
        raise ValueError(f"{owner}: `padding` must be one of {allowed}, got {padding!r}.")
    return padding


def dimension_numbers(rank, data_format):
    """lax.conv dimension numbers, e.g. ("NHWC", "HWIO", "NHWC")."""
    spatial = "DHW"[3 - rank:]
    io = ("N" + spatial + "C") if data_format == "channels_last" else ("NC" + spatial)
    return io, spatial + "IO", io


def check_window_fits(layer, input_shape, spatial_sizes, window, dilation, padding,
                      what="kernel_size"):
    """With "valid" padding, a window (dilated) larger than the input would
    give an empty output: a ValueError naming the layer and both shapes."""
    if padding != "valid":
        return
    effective = tuple((w - 1) * d + 1 for w, d in zip(window, dilation))
    if any(n is not None and e > n for n, e in zip(spatial_sizes, effective)):
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r}: `{what}` {tuple(window)}"
            f"{' (dilated: ' + str(effective) + ')' if effective != tuple(window) else ''} "
            f"is larger than the input's spatial size {tuple(spatial_sizes)} (input shape "
            f"{tuple(input_shape)}) with padding='valid'. Use padding='same', a smaller "
            f"`{what}`, or a larger input.")


def window_output_length(size, window, stride, dilation, padding):
    """The output size along one axis of a windowed op (convolution, pooling):
    "valid" keeps the positions where the (dilated) window fits, "same" and
    "causal" give ceil(size / stride). None (unknown) stays None."""
    if size is None:
        return None
    if padding != "valid":
        return (size - 1) // stride + 1
    length = (size - (window - 1) * dilation - 1) // stride + 1
    if length <= 0:
        raise ValueError(f"A window of {window} (dilation {dilation}) does not fit an axis "
                         f"of size {size} with padding='valid'.")
    return length


def spatial_axes_of(rank, data_format):
    """The spatial axes of a rank-`rank + 2` input: 1..rank for channels_last,
    2..rank+1 for channels_first."""
    first = 1 if data_format == "channels_last" else 2
    return tuple(range(first, first + rank))


def windowed_output_shape(layer, input_shape, window, strides, dilation, padding,
                          data_format, channels=None):
    """The shape `layer`'s convolution or pooling over the spatial axes gives for
    `input_shape`; `channels` (if given) replaces the channel size."""
    shape = list(input_shape)
    rank = len(window)
    owner = f"{type(layer).__name__} {layer.name!r}"
    if len(shape) != rank + 2:
        raise ValueError(f"{owner} expects an input of rank {rank + 2}, got shape "
                         f"{tuple(shape)}.")
    for i, axis in enumerate(spatial_axes_of(rank, data_format)):
        try:
            shape[axis] = window_output_length(shape[axis], window[i], strides[i],
                                               dilation[i], padding)
        except ValueError as e:
            raise ValueError(f"{owner}: {e} Input shape {tuple(input_shape)}.") from None
    if channels is not None:
        shape[-1 if data_format == "channels_last" else 1] = channels
    return tuple(shape)
