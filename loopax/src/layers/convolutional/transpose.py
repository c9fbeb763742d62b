"""Transposed convolutions: Conv1DTranspose, Conv2DTranspose, Conv3DTranspose.

The gradient of a strided convolution, used to upsample (decoders, VAEs).
Input `(batch, *spatial, in_channels)` (channels-last); the kernel has
Keras' shape `(*kernel_size, filters, in_channels)`, the bias `(filters,)`.
Output size per spatial axis (k' = (k - 1) · dilation + 1):

- "valid": `n · stride + max(k' - stride, 0)`
- "same":  `n · stride`
- with `output_padding` p: `(n - 1) · stride + k' - 2 · pad + p`, where
  pad is 0 ("valid") or `k' // 2` ("same").
"""

from __future__ import annotations

from loopax.src import activations, constraints, initializers, regularizers, serialization
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import (
    positive_int,
    standardize_data_format,
    standardize_padding,
    standardize_tuple,
)
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.ops.transposed_conv import transposed_conv
from loopax.src.tensor import unwrap


def transpose_padding(kernel, stride, dilation, padding, output_padding):
    """(low, high) padding of the stride-dilated input for `lax.conv_transpose`
    that gives the Keras output size documented in the module docstring."""
    effective = (kernel - 1) * dilation + 1
    if padding == "valid":
        extra = max(effective, stride) - effective if output_padding is None else output_padding
        return effective - 1, effective - 1 + extra
    # "same": the total padding makes the output n · stride (or the
    # output_padding size); the low side gets the larger half, capped.
    total = (stride + effective - 2 if output_padding is None
             else effective + effective % 2 - 2 + output_padding)
    low = min((total + 1) // 2, effective - 1)
    return low, total - low


class BaseConvTranspose(Layer):
    """N-D transposed convolution, plus bias and activation.

    Args:
        rank: number of spatial axes.
        filters: output channels.
        kernel_size, strides, dilation_rate: an int or one per spatial axis.
        padding: "valid" or "same".
        output_padding: None, or an int / one per axis (< stride) adding
            that many rows at the end of each output axis.
    """

    row_wise = True

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        owner = type(self).__name__
        self.rank = rank
        self.filters = positive_int(filters, "filters", owner)
        self.kernel_size = standardize_tuple(kernel_size, rank, "kernel_size", owner)
        self.strides = standardize_tuple(strides, rank, "strides", owner)
        self.dilation_rate = standardize_tuple(dilation_rate, rank, "dilation_rate", owner)
        self.padding = standardize_padding(padding, owner)
        self.output_padding = None
        if output_padding is not None:
            values = (output_padding,) * rank if isinstance(output_padding, int) \
                else tuple(output_padding)
            if len(values) != rank or any(not isinstance(p, int) or p < 0 for p in values) \
                    or any(p >= s for p, s in zip(values, self.strides)):
                raise ValueError(f"{owner}: `output_padding` must be None, an int or {rank} "
                                 f"non-negative ints, each smaller than its stride "
                                 f"{self.strides}; got {output_padding!r}.")
            self.output_padding = values
        self.data_format = standardize_data_format(data_format)
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
        owner = f"{type(self).__name__} {self.name!r}"
        if len(input_shape) != self.rank + 2:
            raise ValueError(f"Input to layer {self.name!r} ({type(self).__name__}) has shape "
                             f"{tuple(input_shape)}, but the layer expects rank "
                             f"{self.rank + 2} (batch, spatial..., channels).")
        in_channels = input_shape[self._channel_axis]
        if in_channels is None:
            raise ValueError(f"{owner}: the channel axis of the input must be known; got "
                             f"input shape {tuple(input_shape)}.")
        self.kernel = self.add_weight(self.kernel_size + (self.filters, in_channels),
                                      self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight((self.filters,), self.bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: in_channels})
        self.built = True

    def call(self, inputs):
        x = unwrap(inputs)
        kernel = self.kernel.value
        if x.dtype != kernel.dtype:
            x = x.astype(kernel.dtype)
        output_padding = self.output_padding or (None,) * self.rank
        padding = [transpose_padding(k, s, d, self.padding, p) for k, s, d, p in zip(
            self.kernel_size, self.strides, self.dilation_rate, output_padding)]
        y = transposed_conv(x, kernel, self.strides, padding, self.dilation_rate,
                            self.data_format == "channels_last")
        if self.use_bias:
            bias = self.bias.value
            if self.data_format == "channels_first":
                bias = bias.reshape((self.filters,) + (1,) * self.rank)
            y = y + bias
        return self.activation(y)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "output_padding": self.output_padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


@export("loopax.layers.Conv1DTranspose", "loopax.layers.Convolution1DTranspose")
class Conv1DTranspose(BaseConvTranspose):
    """`(batch, steps, channels)` -> `(batch, new_steps, filters)`.

    The gradient of a strided convolution, used to upsample. `kernel` has shape
    `(*kernel_size, filters, in_channels)`, `bias` `(filters,)`. Each new size is
    `n · stride + max(k' - stride, 0)` with `"valid"` padding and `n · stride` with
    `"same"` (`k' = (k - 1) · dilation + 1`); with `output_padding` p it is
    `(n - 1) · stride + k' - 2 · pad + p`, pad being 0 ("valid") or `k' // 2` ("same").

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The window size, an int.
        strides: The upsampling step, an int (default 1).
        padding: `"valid"` (the default) or `"same"`.
        output_padding: None (the default), or an int, each smaller than its
            stride: extra rows at the end of each output axis.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int (default 1).
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
        ValueError: a malformed argument, or (at build) an input of the wrong rank or
            with unknown channels.
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True, **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, output_padding,
                         data_format, dilation_rate, activation, use_bias, **kwargs)


@export("loopax.layers.Conv2DTranspose", "loopax.layers.Convolution2DTranspose")
class Conv2DTranspose(BaseConvTranspose):
    """`(batch, h, w, channels)` -> `(batch, new_h, new_w, filters)`.

    The gradient of a strided convolution, used to upsample. `kernel` has shape
    `(*kernel_size, filters, in_channels)`, `bias` `(filters,)`. Each new size is
    `n · stride + max(k' - stride, 0)` with `"valid"` padding and `n · stride` with
    `"same"` (`k' = (k - 1) · dilation + 1`); with `output_padding` p it is
    `(n - 1) · stride + k' - 2 · pad + p`, pad being 0 ("valid") or `k' // 2` ("same").

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The window size, an int or a tuple of 2 ints.
        strides: The upsampling step, an int or a tuple of 2 ints (default 1).
        padding: `"valid"` (the default) or `"same"`.
        output_padding: None (the default), or an int or a tuple of 2 ints, each smaller than its
            stride: extra rows at the end of each output axis.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int or a tuple of 2 ints (default 1).
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
        ValueError: a malformed argument, or (at build) an input of the wrong rank or
            with unknown channels.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), activation=None,
                 use_bias=True, **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, output_padding,
                         data_format, dilation_rate, activation, use_bias, **kwargs)


@export("loopax.layers.Conv3DTranspose", "loopax.layers.Convolution3DTranspose")
class Conv3DTranspose(BaseConvTranspose):
    """`(batch, d, h, w, channels)` -> `(batch, d', h', w', filters)`.

    The gradient of a strided convolution, used to upsample. `kernel` has shape
    `(*kernel_size, filters, in_channels)`, `bias` `(filters,)`. Each new size is
    `n · stride + max(k' - stride, 0)` with `"valid"` padding and `n · stride` with
    `"same"` (`k' = (k - 1) · dilation + 1`); with `output_padding` p it is
    `(n - 1) · stride + k' - 2 · pad + p`, pad being 0 ("valid") or `k' // 2` ("same").

    Args:
        filters: The number of output channels, a positive int.
        kernel_size: The window size, an int or a tuple of 3 ints.
        strides: The upsampling step, an int or a tuple of 3 ints (default 1).
        padding: `"valid"` (the default) or `"same"`.
        output_padding: None (the default), or an int or a tuple of 3 ints, each smaller than its
            stride: extra rows at the end of each output axis.
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        dilation_rate: The kernel's dilation, an int or a tuple of 3 ints (default 1).
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
        ValueError: a malformed argument, or (at build) an input of the wrong rank or
            with unknown channels.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1, 1),
                 activation=None, use_bias=True, **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, output_padding,
                         data_format, dilation_rate, activation, use_bias, **kwargs)


# Keras' long aliases.
Convolution1DTranspose, Convolution2DTranspose = Conv1DTranspose, Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose
serialization.register_builtins("layer", {"Convolution1DTranspose": Conv1DTranspose,
                                         "Convolution2DTranspose": Conv2DTranspose,
                                         "Convolution3DTranspose": Conv3DTranspose})
