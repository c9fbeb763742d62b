"""Adaptive pooling layers: max or mean pooling to a fixed spatial size, 1-D, 2-D and 3-D.

The windows follow from the input's size (see `ops.adaptive_max_pool`): output
entry `i` of an axis of `n` entries pools input entries `floor(i * n / out)` to
`ceil((i + 1) * n / out) - 1`, so one layer takes inputs of any spatial size.
"""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.ops.nn import adaptive_average_pool, adaptive_max_pool
from loopax.src.tensor import unwrap


def _output_size(value, rank, owner):
    """An int or a sequence of `rank` ints -> a tuple of `rank` positive ints."""
    is_int = lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool)
    if is_int(value):
        value = (value,) * rank
    elif not (isinstance(value, (tuple, list)) and all(is_int(v) for v in value)):
        raise TypeError(f"{owner}: `output_size` must be an int or a tuple of {rank} ints, "
                        f"got {value!r} of type {type(value).__name__}.")
    if len(value) != rank or any(v <= 0 for v in value):
        raise ValueError(f"{owner}: `output_size` must be a positive int or a tuple of {rank} "
                         f"positive ints (one per spatial dimension), got {tuple(value)}.")
    return tuple(int(v) for v in value)


class BaseAdaptivePooling(Layer):
    """Max or mean pooling of `(batch, *spatial, channels)` to
    `(batch, *output_size, channels)` (channels-first alike)."""

    row_wise = True

    def __init__(self, rank, reduction, output_size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.reduction = reduction
        self.output_size = _output_size(output_size, rank, type(self).__name__)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)
        self.built = True  # no weights

    def call(self, inputs):
        x = unwrap(inputs)
        if self.reduction == "max":
            return adaptive_max_pool(x, self.output_size, self.data_format)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(self.compute_dtype)
        return adaptive_average_pool(x, self.output_size, self.data_format)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if self.data_format == "channels_last":
            return (input_shape[0], *self.output_size, input_shape[-1])
        return input_shape[:2] + self.output_size

    def get_config(self):
        return {**super().get_config(), "output_size": self.output_size,
                "data_format": self.data_format}


@export("loopax.layers.AdaptiveMaxPooling1D")
class AdaptiveMaxPooling1D(BaseAdaptivePooling):
    """Max over windows sized to give a fixed output: `(batch, steps, channels)` ->
    `(batch, out_steps, channels)`, whatever the input's spatial size.

    Output entry `i` of a spatial axis of `n` entries is the max of input entries
    `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`. Output dtype = input dtype.

    Args:
        output_size: The output's spatial size: an int (the same for every spatial
            dimension) or a tuple of 1 ints.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        TypeError: `output_size` is not an int or a tuple of ints.
        ValueError: `output_size` has the wrong length or a size < 1, or `data_format`
            is neither layout.
    """

    def __init__(self, output_size: int | Sequence[int], data_format: str | None = None,
                 **kwargs):
        super().__init__(1, "max", output_size, data_format, **kwargs)


@export("loopax.layers.AdaptiveMaxPooling2D")
class AdaptiveMaxPooling2D(BaseAdaptivePooling):
    """Max over windows sized to give a fixed output: `(batch, h, w, channels)` ->
    `(batch, out_h, out_w, channels)`, whatever the input's spatial size.

    Output entry `i` of a spatial axis of `n` entries is the max of input entries
    `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`. Output dtype = input dtype.

    Args:
        output_size: The output's spatial size: an int (the same for every spatial
            dimension) or a tuple of 2 ints.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        TypeError: `output_size` is not an int or a tuple of ints.
        ValueError: `output_size` has the wrong length or a size < 1, or `data_format`
            is neither layout.
    """

    def __init__(self, output_size: int | Sequence[int], data_format: str | None = None,
                 **kwargs):
        super().__init__(2, "max", output_size, data_format, **kwargs)


@export("loopax.layers.AdaptiveMaxPooling3D")
class AdaptiveMaxPooling3D(BaseAdaptivePooling):
    """Max over windows sized to give a fixed output: `(batch, d, h, w, channels)` ->
    `(batch, out_d, out_h, out_w, channels)`, whatever the input's spatial size.

    Output entry `i` of a spatial axis of `n` entries is the max of input entries
    `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`. Output dtype = input dtype.

    Args:
        output_size: The output's spatial size: an int (the same for every spatial
            dimension) or a tuple of 3 ints.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        TypeError: `output_size` is not an int or a tuple of ints.
        ValueError: `output_size` has the wrong length or a size < 1, or `data_format`
            is neither layout.
    """

    def __init__(self, output_size: int | Sequence[int], data_format: str | None = None,
                 **kwargs):
        super().__init__(3, "max", output_size, data_format, **kwargs)


@export("loopax.layers.AdaptiveAveragePooling1D")
class AdaptiveAveragePooling1D(BaseAdaptivePooling):
    """Mean over windows sized to give a fixed output: `(batch, steps, channels)` ->
    `(batch, out_steps, channels)`, whatever the input's spatial size.

    Output entry `i` of a spatial axis of `n` entries is the mean of input entries
    `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`. Output dtype = input dtype
    when floating, else the layer's compute dtype.

    Args:
        output_size: The output's spatial size: an int (the same for every spatial
            dimension) or a tuple of 1 ints.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        TypeError: `output_size` is not an int or a tuple of ints.
        ValueError: `output_size` has the wrong length or a size < 1, or `data_format`
            is neither layout.
    """

    def __init__(self, output_size: int | Sequence[int], data_format: str | None = None,
                 **kwargs):
        super().__init__(1, "average", output_size, data_format, **kwargs)


@export("loopax.layers.AdaptiveAveragePooling2D")
class AdaptiveAveragePooling2D(BaseAdaptivePooling):
    """Mean over windows sized to give a fixed output: `(batch, h, w, channels)` ->
    `(batch, out_h, out_w, channels)`, whatever the input's spatial size.

    Output entry `i` of a spatial axis of `n` entries is the mean of input entries
    `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`. Output dtype = input dtype
    when floating, else the layer's compute dtype.

    Args:
        output_size: The output's spatial size: an int (the same for every spatial
            dimension) or a tuple of 2 ints.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        TypeError: `output_size` is not an int or a tuple of ints.
        ValueError: `output_size` has the wrong length or a size < 1, or `data_format`
            is neither layout.
    """

    def __init__(self, output_size: int | Sequence[int], data_format: str | None = None,
                 **kwargs):
        super().__init__(2, "average", output_size, data_format, **kwargs)


@export("loopax.layers.AdaptiveAveragePooling3D")
class AdaptiveAveragePooling3D(BaseAdaptivePooling):
    """Mean over windows sized to give a fixed output: `(batch, d, h, w, channels)` ->
    `(batch, out_d, out_h, out_w, channels)`, whatever the input's spatial size.

    Output entry `i` of a spatial axis of `n` entries is the mean of input entries
    `floor(i * n / out)` to `ceil((i + 1) * n / out) - 1`. Output dtype = input dtype
    when floating, else the layer's compute dtype.

    Args:
        output_size: The output's spatial size: an int (the same for every spatial
            dimension) or a tuple of 3 ints.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        TypeError: `output_size` is not an int or a tuple of ints.
        ValueError: `output_size` has the wrong length or a size < 1, or `data_format`
            is neither layout.
    """

    def __init__(self, output_size: int | Sequence[int], data_format: str | None = None,
                 **kwargs):
        super().__init__(3, "average", output_size, data_format, **kwargs)
