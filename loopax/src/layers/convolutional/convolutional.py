"""Convolution layers: Conv1D, Conv2D, Conv3D.

Channels-last input `(batch, *spatial, in_channels)` (or channels-first
`(batch, in_channels, *spatial)`); the kernel has shape
`(*kernel_size, in_channels // groups, filters)`, the bias `(filters,)`.
"""

from __future__ import annotations

import numpy as np
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
from loopax.src.ops.conv_input import computed_once
from loopax.src.tensor import unwrap


@closed_form_output_shape
class BaseConv(Layer):
    """N-D convolution (cross-correlation, as in Keras), plus bias and activation.

    Args:
        rank: number of spatial axes.
        filters: output channels.
        kernel_size, strides, dilation_rate: an int or one per spatial axis.
        padding: "valid", "same" (output size ceil(in / stride)) or, for
            Conv1D, "causal" (left padding only).
        groups: split input channels into groups convolved separately.
    """

    row_wise = True

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        owner = type(self).__name__
        self.rank = rank
        filters = positive_int(filters, "filters", owner)
        if not isinstance(groups, (int, np.integer)) or groups <= 0 or filters % groups:
            raise ValueError(f"{owner}: `groups` ({groups!r}) must be a positive int that "
                             f"divides `filters` ({filters}).")
        self.filters, self.groups = filters, groups
        self.kernel_size = standardize_tuple(kernel_size, rank, "kernel_size", owner)
        self.strides = standardize_tuple(strides, rank, "strides", owner)
        self.dilation_rate = standardize_tuple(dilation_rate, rank, "dilation_rate", owner)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{owner}: `strides` > 1 together with `dilation_rate` > 1 is not "
                             f"supported (got strides={self.strides}, "
                             f"dilation_rate={self.dilation_rate}).")
        self.padding = standardize_padding(padding, owner, allow_causal=rank == 1)
        self.data_format = standardize_data_format(data_format)
        if self.padding == "causal" and self.data_format == "channels_first":
            raise ValueError(f"{owner}: causal padding needs data_format='channels_last'.")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def build(self, input_shape):
        if len(input_shape) != self.rank + 2:
            raise ValueError(
                f"Input to layer {self.name!r} ({type(self).__name__}) has shape "
                f"{tuple(input_shape)}, but the layer expects rank {self.rank + 2} "
                f"(batch, {'spatial..., ' if self.data_format == 'channels_last' else ''}"
                f"channels{'' if self.data_format == 'channels_last' else ', spatial...'}).")
        in_channels = input_shape[self._channel_axis]
        if in_channels is None or in_channels % self.groups:
            raise ValueError(f"{type(self).__name__} {self.name!r}: input channels "
                             f"({in_channels}) must be known and divisible by groups "
                             f"({self.groups}); input shape {tuple(input_shape)}.")
        spatial = input_shape[1:-1] if self.data_format == "channels_last" else input_shape[2:]
        check_window_fits(self, input_shape, spatial, self.kernel_size, self.dilation_rate,
                          self.padding)
        kernel_shape = self.kernel_size + (in_channels // self.groups, self.filters)
        self.kernel = self.add_weight(kernel_shape, self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight((self.filters,), self.bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: in_channels})
        self.built = True

    def convolution_op(self, inputs, kernel):
        """The convolution alone, of `inputs` with `kernel` (no bias, no activation),
        with this layer's strides, padding, dilation and data format; subclasses
        override it to change the operation (as Keras's `convolution_op`)."""
        x, kernel = unwrap(inputs), unwrap(kernel)
        if x.dtype != kernel.dtype:
            x = x.astype(kernel.dtype)
        if self.padding == "causal":
            left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
            padding = [(left, 0)]
        else:
            padding = self.padding.upper()
        return lax.conv_general_dilated(
            computed_once(x, kernel), kernel, window_strides=self.strides, padding=padding,
            rhs_dilation=self.dilation_rate,
            dimension_numbers=dimension_numbers(self.rank, self.data_format),
            feature_group_count=self.groups)

    def call(self, inputs):
        y = unwrap(self.convolution_op(inputs, self.kernel))
        if self.use_bias:
            bias = self.bias.value
            if self.data_format == "channels_first":
                bias = bias.reshape((self.filters,) + (1,) * self.rank)
            y = y + bias
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        """`(batch, *spatial, channels)` -> `(batch, *out_spatial, filters)` (channels
        first when so built); "valid" sizes shrink by the dilated kernel, "same" and
        "causal" ones become ceil(size / stride); None stays None."""
        return windowed_output_shape(self, input_shape, self.kernel_size, self.strides,
                                     self.dilation_rate, self.padding, self.data_format,
                                     channels=self.filters)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


@export("loopax.layers.Conv1D", "loopax.layers.Convolution1D")
class Conv1D(BaseConv):
    """1-D convolution: `(batch, steps, channels)` -> `(batch, new_steps, filters)`.

    Cross-correlation, as in Keras. `kernel` has shape
    `(*kernel_size, in_channels // groups, filters)`, `bias` `(filters,)`. With
    `"valid"` padding each new size is `floor((n - k') / stride) + 1`, where
    `k' = (k - 1) · dilation + 1`.

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The window size, an int.
        strides: The step of the window, an int (default 1).
        padding: `"valid"` (no padding, the default), `"same"` (output size
            `ceil(n / stride)`) or `"causal"` (left padding only, so step t sees no later
            step; channels-last only).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int (default 1); a
            dilation > 1 cannot be combined with strides > 1.
        groups: Split the input channels into this many groups convolved separately;
            must divide `filters` and the input channels (default 1).
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add a bias (default True).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        kernel_initializer: Initializer of `kernel` (default `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.

    Raises:
        ValueError: a malformed or conflicting argument, or (at build) an input of the
            wrong rank, unknown or indivisible channels, or a window larger than the
            input with `"valid"` padding.
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True, **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, groups, activation, use_bias, **kwargs)


@export("loopax.layers.Conv2D", "loopax.layers.Convolution2D")
class Conv2D(BaseConv):
    """2-D convolution: `(batch, h, w, channels)` -> `(batch, new_h, new_w, filters)`.

    Cross-correlation, as in Keras. `kernel` has shape
    `(*kernel_size, in_channels // groups, filters)`, `bias` `(filters,)`. With
    `"valid"` padding each new size is `floor((n - k') / stride) + 1`, where
    `k' = (k - 1) · dilation + 1`.

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The window size, an int or a tuple of 2 ints.
        strides: The step of the window, an int or a tuple of 2 ints (default 1).
        padding: `"valid"` (no padding, the default) or `"same"` (output size
            `ceil(n / stride)`).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int or a tuple of 2 ints (default 1); a
            dilation > 1 cannot be combined with strides > 1.
        groups: Split the input channels into this many groups convolved separately;
            must divide `filters` and the input channels (default 1).
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add a bias (default True).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        kernel_initializer: Initializer of `kernel` (default `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.

    Raises:
        ValueError: a malformed or conflicting argument, or (at build) an input of the
            wrong rank, unknown or indivisible channels, or a window larger than the
            input with `"valid"` padding.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1), groups=1, activation=None,
                 use_bias=True, **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, groups, activation, use_bias, **kwargs)


@export("loopax.layers.Conv3D", "loopax.layers.Convolution3D")
class Conv3D(BaseConv):
    """3-D convolution: `(batch, d, h, w, channels)` -> `(batch, d', h', w', filters)`.

    Cross-correlation, as in Keras. `kernel` has shape
    `(*kernel_size, in_channels // groups, filters)`, `bias` `(filters,)`. With
    `"valid"` padding each new size is `floor((n - k') / stride) + 1`, where
    `k' = (k - 1) · dilation + 1`.

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The window size, an int or a tuple of 3 ints.
        strides: The step of the window, an int or a tuple of 3 ints (default 1).
        padding: `"valid"` (no padding, the default) or `"same"` (output size
            `ceil(n / stride)`).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int or a tuple of 3 ints (default 1); a
            dilation > 1 cannot be combined with strides > 1.
        groups: Split the input channels into this many groups convolved separately;
            must divide `filters` and the input channels (default 1).
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add a bias (default True).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        kernel_initializer: Initializer of `kernel` (default `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.

    Raises:
        ValueError: a malformed or conflicting argument, or (at build) an input of the
            wrong rank, unknown or indivisible channels, or a window larger than the
            input with `"valid"` padding.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, groups, activation, use_bias, **kwargs)


# Keras' long aliases.
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
serialization.register_builtins(
    "layer", {"Convolution1D": Conv1D, "Convolution2D": Conv2D, "Convolution3D": Conv3D})
