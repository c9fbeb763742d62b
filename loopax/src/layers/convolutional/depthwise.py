"""Depthwise and depthwise-separable convolutions: DepthwiseConv1D/2D,
SeparableConv1D/2D.

A depthwise convolution filters each input channel on its own with
`depth_multiplier` kernels (one `lax.conv_general_dilated` with
`feature_group_count = in_channels`): the depthwise kernel has shape
`(*kernel_size, in_channels, depth_multiplier)` (Keras names it `kernel` in
DepthwiseConv and `depthwise_kernel` in SeparableConv) and output channel
`c · depth_multiplier + m` comes from input channel c. A separable
convolution follows it with a 1x1 `pointwise_kernel`
`(1, ..., in_channels · depth_multiplier, filters)`.
"""

from __future__ import annotations

from jax import lax

from loopax.src import activations, constraints, initializers, regularizers, serialization
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import (
    check_window_fits,
    dimension_numbers,
    positive_int,
    standardize_data_format,
    standardize_padding,
    standardize_tuple,
    windowed_output_shape,
)
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.symbolic import closed_form_output_shape
from loopax.src.tensor import unwrap


class _DepthwiseBase(Layer):
    """Shared arguments, build checks and the depthwise step."""

    def __init__(self, rank, kernel_size, strides, padding, data_format, dilation_rate,
                 depth_multiplier, activation, use_bias, depthwise_initializer,
                 bias_initializer, depthwise_regularizer, bias_regularizer,
                 activity_regularizer, depthwise_constraint, bias_constraint, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        owner = type(self).__name__
        self.rank = rank
        self.depth_multiplier = positive_int(depth_multiplier, "depth_multiplier", owner)
        self.kernel_size = standardize_tuple(kernel_size, rank, "kernel_size", owner)
        self.strides = standardize_tuple(strides, rank, "strides", owner)
        self.dilation_rate = standardize_tuple(dilation_rate, rank, "dilation_rate", owner)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{owner}: `strides` > 1 together with `dilation_rate` > 1 is not "
                             f"supported (got strides={self.strides}, "
                             f"dilation_rate={self.dilation_rate}).")
        self.padding = standardize_padding(padding, owner)
        self.data_format = standardize_data_format(data_format)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def _windowed(self, input_shape, channels):
        """`input_shape` after the depthwise window, with `channels` channels."""
        shape = windowed_output_shape(self, input_shape, self.kernel_size, self.strides,
                                      self.dilation_rate, self.padding, self.data_format)
        shape = list(shape)
        shape[self._channel_axis] = channels
        return tuple(shape)

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def _spatial(self, shape):
        return tuple(shape[1:-1]) if self.data_format == "channels_last" else tuple(shape[2:])

    def _build_depthwise(self, input_shape, name):
        """Checks the input and creates the depthwise kernel (attribute and
        weight `name`); returns in_channels."""
        if len(input_shape) != self.rank + 2:
            raise ValueError(f"Input to layer {self.name!r} ({type(self).__name__}) has shape "
                             f"{tuple(input_shape)}, but the layer expects rank "
                             f"{self.rank + 2} (batch, spatial..., channels).")
        in_channels = input_shape[self._channel_axis]
        if in_channels is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the channel axis of the "
                             f"input must be known; got input shape {tuple(input_shape)}.")
        check_window_fits(self, input_shape, self._spatial(input_shape), self.kernel_size,
                          self.dilation_rate, self.padding)
        setattr(self, name, self.add_weight(
            self.kernel_size + (in_channels, self.depth_multiplier), self.depthwise_initializer,
            name=name, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint))
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: in_channels})
        return in_channels

    def _add_bias(self, y, size):
        if not self.use_bias:
            return y
        bias = self.bias.value
        if self.data_format == "channels_first":
            bias = bias.reshape((size,) + (1,) * self.rank)
        return y + bias

    def _depthwise(self, x, kernel):
        if x.dtype != kernel.dtype:
            x = x.astype(kernel.dtype)
        in_channels = kernel.shape[-2]
        kernel = kernel.reshape(self.kernel_size + (1, in_channels * self.depth_multiplier))
        return lax.conv_general_dilated(
            x, kernel, window_strides=self.strides, padding=self.padding.upper(),
            rhs_dilation=self.dilation_rate,
            dimension_numbers=dimension_numbers(self.rank, self.data_format),
            feature_group_count=in_channels)

    def _common_config(self):
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "depthwise_regularizer": regularizers.serialize(self.depthwise_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "depthwise_constraint": constraints.serialize(self.depthwise_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


@closed_form_output_shape
class BaseDepthwiseConv(_DepthwiseBase):
    """Depthwise convolution plus bias `(in_channels · depth_multiplier,)` and activation."""

    row_wise = True

    def __init__(self, rank, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(rank, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)

    def build(self, input_shape):
        in_channels = self._build_depthwise(input_shape, "kernel")
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight((in_channels * self.depth_multiplier,),
                                        self.bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        y = self._depthwise(unwrap(inputs), self.kernel.value)
        return self.activation(self._add_bias(y, y.shape[self._channel_axis]))

    def compute_output_shape(self, input_shape):
        """The spatial sizes as a convolution's; channels `in_channels · depth_multiplier`."""
        channels = input_shape[self._channel_axis]
        return self._windowed(input_shape, None if channels is None
                              else channels * self.depth_multiplier)

    def get_config(self):
        return self._common_config()


@closed_form_output_shape
class BaseSeparableConv(_DepthwiseBase):
    """Depthwise convolution, then a 1x1 convolution to `filters`, plus bias
    `(filters,)` and activation."""

    row_wise = True

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, depth_multiplier=1, activation=None,
                 use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, pointwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(rank, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)
        self.filters = positive_int(filters, "filters", type(self).__name__)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def build(self, input_shape):
        in_channels = self._build_depthwise(input_shape, "depthwise_kernel")
        self.pointwise_kernel = self.add_weight(
            (1,) * self.rank + (in_channels * self.depth_multiplier, self.filters),
            self.pointwise_initializer, name="pointwise_kernel",
            regularizer=self.pointwise_regularizer, constraint=self.pointwise_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight((self.filters,), self.bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        y = self._depthwise(unwrap(inputs), self.depthwise_kernel.value)
        y = lax.conv_general_dilated(
            y, self.pointwise_kernel.value, window_strides=(1,) * self.rank, padding="VALID",
            dimension_numbers=dimension_numbers(self.rank, self.data_format))
        return self.activation(self._add_bias(y, self.filters))

    def compute_output_shape(self, input_shape):
        """The spatial sizes as a convolution's; channels `filters`."""
        return self._windowed(input_shape, self.filters)

    def get_config(self):
        return {**self._common_config(), "filters": self.filters,
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
                "pointwise_regularizer": regularizers.serialize(self.pointwise_regularizer),
                "pointwise_constraint": constraints.serialize(self.pointwise_constraint)}


@export("loopax.layers.DepthwiseConv1D")
class DepthwiseConv1D(BaseDepthwiseConv):
    """`(batch, steps, channels)` -> `(batch, new_steps, channels · depth_multiplier)`.

    Filters each input channel on its own with `depth_multiplier` kernels: `kernel`
    has shape `(*kernel_size, in_channels, depth_multiplier)`, `bias`
    `(in_channels · depth_multiplier,)`; output channel `c · depth_multiplier + m`
    comes from input channel c.

    Args:
        kernel_size: The window size, an int.
        strides: The step of the window, an int (default 1).
        padding: `"valid"` (the default) or `"same"`.
        depth_multiplier: Output channels per input channel (default 1).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int (default 1); not with
            strides > 1.
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add a bias (default True).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        depthwise_initializer: Initializer of `kernel` (default `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        depthwise_regularizer: Regularizer of `kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        depthwise_constraint: Constraint on `kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.

    Raises:
        ValueError: a malformed or conflicting argument, or (at build) an input of the
            wrong rank, unknown channels, or a window larger than the input with
            `"valid"` padding.
    """

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True, **kwargs):
        super().__init__(1, kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, **kwargs)


@export("loopax.layers.DepthwiseConv2D")
class DepthwiseConv2D(BaseDepthwiseConv):
    """`(batch, h, w, channels)` -> `(batch, h', w', channels · depth_multiplier)`.

    Filters each input channel on its own with `depth_multiplier` kernels: `kernel`
    has shape `(*kernel_size, in_channels, depth_multiplier)`, `bias`
    `(in_channels · depth_multiplier,)`; output channel `c · depth_multiplier + m`
    comes from input channel c.

    Args:
        kernel_size: The window size, an int or a tuple of 2 ints.
        strides: The step of the window, an int or a tuple of 2 ints (default 1).
        padding: `"valid"` (the default) or `"same"`.
        depth_multiplier: Output channels per input channel (default 1).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int or a tuple of 2 ints (default 1); not with
            strides > 1.
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add a bias (default True).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        depthwise_initializer: Initializer of `kernel` (default `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        depthwise_regularizer: Regularizer of `kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        depthwise_constraint: Constraint on `kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.

    Raises:
        ValueError: a malformed or conflicting argument, or (at build) an input of the
            wrong rank, unknown channels, or a window larger than the input with
            `"valid"` padding.
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 **kwargs):
        super().__init__(2, kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, **kwargs)


@export("loopax.layers.SeparableConv1D", "loopax.layers.SeparableConvolution1D")
class SeparableConv1D(BaseSeparableConv):
    """`(batch, steps, channels)` -> `(batch, new_steps, filters)`.

    A depthwise convolution (`depthwise_kernel`
    `(*kernel_size, in_channels, depth_multiplier)`), then a 1x1 convolution to
    `filters` channels (`pointwise_kernel` `(1, ..., in_channels · depth_multiplier,
    filters)`), plus `bias` `(filters,)`: fewer weights than a full convolution.

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The depthwise window size, an int.
        strides: The step of the window, an int (default 1).
        padding: `"valid"` (the default) or `"same"`.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int (default 1); not with
            strides > 1.
        depth_multiplier: Depthwise output channels per input channel (default 1).
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add a bias (default True).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        depthwise_initializer: Initializer of `depthwise_kernel` (default `"glorot_uniform"`).
        pointwise_initializer: Initializer of `pointwise_kernel` (default
            `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        depthwise_regularizer: Regularizer of `depthwise_kernel`, or None.
        pointwise_regularizer: Regularizer of `pointwise_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        depthwise_constraint: Constraint on `depthwise_kernel`, or None.
        pointwise_constraint: Constraint on `pointwise_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.

    Raises:
        ValueError: a malformed or conflicting argument, or (at build) an input of the
            wrong rank, unknown channels, or a window larger than the input with
            `"valid"` padding.
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, depth_multiplier, activation, use_bias, **kwargs)


@export("loopax.layers.SeparableConv2D", "loopax.layers.SeparableConvolution2D")
class SeparableConv2D(BaseSeparableConv):
    """`(batch, h, w, channels)` -> `(batch, h', w', filters)`.

    A depthwise convolution (`depthwise_kernel`
    `(*kernel_size, in_channels, depth_multiplier)`), then a 1x1 convolution to
    `filters` channels (`pointwise_kernel` `(1, ..., in_channels · depth_multiplier,
    filters)`), plus `bias` `(filters,)`: fewer weights than a full convolution.

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The depthwise window size, an int or a tuple of 2 ints.
        strides: The step of the window, an int or a tuple of 2 ints (default 1).
        padding: `"valid"` (the default) or `"same"`.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int or a tuple of 2 ints (default 1); not with
            strides > 1.
        depth_multiplier: Depthwise output channels per input channel (default 1).
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add a bias (default True).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        depthwise_initializer: Initializer of `depthwise_kernel` (default `"glorot_uniform"`).
        pointwise_initializer: Initializer of `pointwise_kernel` (default
            `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        depthwise_regularizer: Regularizer of `depthwise_kernel`, or None.
        pointwise_regularizer: Regularizer of `pointwise_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        depthwise_constraint: Constraint on `depthwise_kernel`, or None.
        pointwise_constraint: Constraint on `pointwise_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.

    Raises:
        ValueError: a malformed or conflicting argument, or (at build) an input of the
            wrong rank, unknown channels, or a window larger than the input with
            `"valid"` padding.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1), depth_multiplier=1, activation=None,
                 use_bias=True, **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, depth_multiplier, activation, use_bias, **kwargs)


# Keras' long aliases.
SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D
serialization.register_builtins("layer", {"SeparableConvolution1D": SeparableConv1D,
                                         "SeparableConvolution2D": SeparableConv2D})
