"""Convolutional LSTMs (Shi et al., 2015): ConvLSTM1D, ConvLSTM2D, ConvLSTM3D.

An LSTM whose matrix products are convolutions: over inputs
`(batch, timesteps, *spatial, channels)` (channels-last) the states `h`, `c`
are feature maps `(batch, *spatial', filters)`, and one step is

    z = conv(x_t, kernel, strides, padding, dilation) + bias
        + conv(h, recurrent_kernel, stride 1, "same")
    i, f, g, o = split(z, 4, channel axis)        (Keras's gate order)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g);  h = sigmoid(o) * tanh(c)

The cell is a built-in cell of `recurrent.py`: the input convolution runs
on all timesteps at once (timesteps folded into the batch), outside the
`lax.scan` of `RNN`, which runs the recurrent convolution. Masks, stateful
states, `go_backwards` and dropout (one mask per gate, drawn once per
sequence) are the RNN's, as for `LSTM`.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from loopax.src import activations, constraints, initializers, random, regularizers
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import (
    check_window_fits,
    dimension_numbers,
    positive_int,
    standardize_data_format,
    standardize_padding,
    standardize_tuple,
)
from loopax.src.layers.recurrent.recurrent import RNN, _BuiltinCell


def _conv_output_size(size, kernel, stride, dilation, padding):
    if padding == "same":
        return -(-size // stride)
    return (size - (kernel - 1) * dilation - 1) // stride + 1


class ConvLSTMCell(_BuiltinCell):
    """One step of a ConvLSTM over `(batch, *spatial, channels)` inputs (see
    the module doc). Kernels `(*kernel_size, channels, 4 * filters)` and
    `(*kernel_size, filters, 4 * filters)`, bias `(4 * filters,)`, as Keras.
    """

    gates = 4

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, activation="tanh",
                 recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        owner = kwargs.pop("owner", type(self).__name__)
        filters = positive_int(filters, "filters", owner)
        super().__init__(filters, activation=activation, **kwargs)
        self.rank = rank
        self.filters = filters
        self.kernel_size = standardize_tuple(kernel_size, rank, "kernel_size", owner)
        self.strides = standardize_tuple(strides, rank, "strides", owner)
        self.dilation_rate = standardize_tuple(dilation_rate, rank, "dilation_rate", owner)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{owner}: `strides` > 1 together with `dilation_rate` > 1 is not "
                             f"supported (got strides={self.strides}, "
                             f"dilation_rate={self.dilation_rate}).")
        self.padding = standardize_padding(padding, owner)
        self.data_format = standardize_data_format(data_format)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias
        self.state_size = [filters, filters]   # channels of h and c

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else -(self.rank + 1)

    def build(self, input_shape):
        channels_last = self.data_format == "channels_last"
        spatial = tuple(input_shape[1:-1] if channels_last else input_shape[2:])
        channels = input_shape[-1] if channels_last else input_shape[1]
        if len(input_shape) != self.rank + 2 or None in spatial or channels is None:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: each timestep must have a known shape "
                f"(batch, {'*spatial, channels' if channels_last else 'channels, *spatial'}) "
                f"with {self.rank} spatial axes; got {tuple(input_shape)}.")
        check_window_fits(self, input_shape, spatial, self.kernel_size, self.dilation_rate,
                          self.padding)
        out_spatial = tuple(_conv_output_size(n, k, s, d, self.padding) for n, k, s, d in zip(
            spatial, self.kernel_size, self.strides, self.dilation_rate))
        self._input_step_shape = tuple(input_shape[1:])
        self._state_step_shape = (out_spatial + (self.filters,) if channels_last
                                  else (self.filters,) + out_spatial)
        n = 4 * self.filters
        self.kernel = self.add_weight(self.kernel_size + (channels, n), self.kernel_initializer,
                                      name="kernel", regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            self.kernel_size + (self.filters, n), self.recurrent_initializer,
            name="recurrent_kernel", regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        self.bias = None
        if self.use_bias:
            bias_initializer = self.bias_initializer
            if self.unit_forget_bias:
                base, f = self.bias_initializer, self.filters

                def bias_initializer(shape, dtype=None):
                    return jnp.concatenate([base((f,), dtype), jnp.ones((f,), dtype),
                                            base((2 * f,), dtype)])
            self.bias = self.add_weight((n,), bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    # ---- dropout: masks of the full input / state shape, one per gate -------
    def _mask_count(self):
        return 4

    def draw_dropout_masks(self, batch_size, input_dim, training):
        """`(input_masks, recurrent_masks)`: None or `(4, batch, *step shape)`
        keep-masks scaled by 1 / (1 - rate) (`input_dim` is not needed)."""
        def draw(rate, shape):
            if not training or not 0.0 < rate < 1.0:
                return None
            ones = jnp.ones((4, batch_size) + shape, self.dtype)
            return random.dropout(ones, rate, seed=self.seed_generator)
        return (draw(self.dropout, self._input_step_shape),
                draw(self.recurrent_dropout, self._state_step_shape))

    # ---- the two halves of a step -----------------------------------------
    def _conv(self, x, kernel, strides, padding, dilation):
        """N-D convolution of `x` `(..., batch, *step shape)`: leading axes
        (time) are folded into the batch."""
        lead = x.shape[:x.ndim - self.rank - 1]
        y = lax.conv_general_dilated(
            x.reshape((-1,) + x.shape[len(lead):]), kernel, window_strides=strides,
            padding=padding.upper(), rhs_dilation=dilation,
            dimension_numbers=dimension_numbers(self.rank, self.data_format))
        return y.reshape(lead + y.shape[1:])

    def _gate_convs(self, x, kernel, masks, strides, padding, dilation):
        """`conv(x, kernel)`; with dropout, gate k's quarter of the kernel
        sees `x * masks[k]`."""
        if masks is None:
            return self._conv(x, kernel, strides, padding, dilation)
        kernels = jnp.split(kernel, 4, axis=-1)
        return jnp.concatenate(
            [self._conv(x * m, k, strides, padding, dilation) for m, k in zip(masks, kernels)],
            axis=self._channel_axis)

    def project_inputs(self, inputs, input_masks=None):
        """`(..., batch, *input step shape)` -> `(..., batch, *state shape with
        4 * filters channels)`: the input convolution plus bias."""
        z = self._gate_convs(inputs, self.kernel.value, input_masks, self.strides,
                             self.padding, self.dilation_rate)
        if not self.use_bias:
            return z
        bias = self.bias.value
        if self.data_format == "channels_first":
            bias = bias.reshape((-1,) + (1,) * self.rank)
        return z + bias

    def step(self, projected, states, recurrent_masks=None):
        h, c = states[0], states[1]
        ones = (1,) * self.rank
        z = projected + self._gate_convs(h, self.recurrent_kernel.value, recurrent_masks,
                                         ones, "same", ones)
        z_i, z_f, z_c, z_o = jnp.split(z, 4, axis=self._channel_axis)
        i = self.recurrent_activation(z_i)
        f = self.recurrent_activation(z_f)
        c = f * c + i * self.activation(z_c)
        o = self.recurrent_activation(z_o)
        h = o * self.activation(c)
        return h, [h, c]

    def get_initial_state(self, batch_size=None):
        shape = (batch_size,) + self._state_step_shape
        return [jnp.zeros(shape, self.dtype), jnp.zeros(shape, self.dtype)]

    def get_config(self):
        config = super().get_config()
        config.pop("units")
        return {**config, "rank": self.rank, "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


_CELL_ARGS = ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
              "activation", "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "unit_forget_bias",
              "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
              "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout",
              "recurrent_dropout", "seed")


class _ConvLSTM(RNN):
    """`RNN(ConvLSTMCell(rank, ...))` configured by flat arguments (Keras's
    `ConvLSTM`); the cell's arguments read through as attributes."""

    rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, **kwargs):
        cell = ConvLSTMCell(
            self.rank, filters, kernel_size, strides=strides, padding=padding,
            data_format=data_format, dilation_rate=dilation_rate, activation=activation,
            recurrent_activation=recurrent_activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
            kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint,
            dropout=dropout, recurrent_dropout=recurrent_dropout, seed=seed,
            name="conv_lstm_cell", dtype=kwargs.get("dtype"), owner=type(self).__name__)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful,
                         activity_regularizer=activity_regularizer, **kwargs)

    def __getattr__(self, name):
        if name in _CELL_ARGS:
            return getattr(self.__dict__["cell"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_sequences_shape(self, shape):
        if len(shape) != self.rank + 3:
            layout = ("*spatial, channels" if self.cell.data_format == "channels_last"
                      else "channels, *spatial")
            raise ValueError(
                f"{type(self).__name__} layer {self.name!r} expects inputs of rank "
                f"{self.rank + 3}, (batch, timesteps, {layout}) with {self.rank} spatial "
                f"axes; got shape {tuple(shape)}.")

    def get_config(self):
        cell = self.cell
        config = RNN.get_config(self)
        config.pop("cell")
        return {**config, "filters": cell.filters, "kernel_size": cell.kernel_size,
                "strides": cell.strides, "padding": cell.padding,
                "data_format": cell.data_format, "dilation_rate": cell.dilation_rate,
                "activation": activations.serialize(cell.activation),
                "recurrent_activation": activations.serialize(cell.recurrent_activation),
                "use_bias": cell.use_bias,
                "kernel_initializer": initializers.serialize(cell.kernel_initializer),
                "recurrent_initializer": initializers.serialize(cell.recurrent_initializer),
                "bias_initializer": initializers.serialize(cell.bias_initializer),
                "unit_forget_bias": cell.unit_forget_bias,
                "kernel_regularizer": regularizers.serialize(cell.kernel_regularizer),
                "recurrent_regularizer": regularizers.serialize(cell.recurrent_regularizer),
                "bias_regularizer": regularizers.serialize(cell.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(cell.kernel_constraint),
                "recurrent_constraint": constraints.serialize(cell.recurrent_constraint),
                "bias_constraint": constraints.serialize(cell.bias_constraint),
                "dropout": cell.dropout, "recurrent_dropout": cell.recurrent_dropout,
                "seed": cell.seed}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


@export("loopax.layers.ConvLSTM1D")
class ConvLSTM1D(_ConvLSTM):
    """1-D convolutional LSTM: an LSTM whose input and recurrent
    transformations are convolutions, with feature-map states.

    Input shape: `(batch, timesteps, steps, channels)` with
    `data_format="channels_last"`, or `(batch, timesteps, channels, steps)` with
    `"channels_first"`; an optional `(batch, timesteps)` boolean mask.
    Output shape: `(batch, new_steps, filters)`, or `(batch, filters, new_steps)`
    channels-first; with `return_sequences=True` the same with a `timesteps`
    axis after `batch`. Each new size is `ceil(size / stride)` with
    `"same"` padding, else `(size - (kernel - 1) * dilation - 1) // stride + 1`.
    With `return_state=True` the layer returns `[output, h, c]`, the final
    states having the shape of the last timestep's output.

    Args:
        filters: The number of output channels (of `h` and `c`), a positive int.
        kernel_size: The convolution window, an int or a 1-tuple.
        strides: The input convolution's strides, an int or a 1-tuple
            (default 1; > 1 cannot be combined with `dilation_rate` > 1).
        padding: `"valid"` (default) or `"same"`, for the input convolution;
            the recurrent one is always `"same"` with stride 1.
        data_format: `"channels_last"` or `"channels_first"` (None:
            `"channels_last"`).
        dilation_rate: The input convolution's dilation, an int or a
            1-tuple (default 1).
        activation: The cell and output activation (default `"tanh"`).
        recurrent_activation: The gates' activation (default `"sigmoid"`).
        use_bias: Whether to add a bias (default True).
        kernel_initializer: Initializer of `kernel`
            `(*kernel_size, channels, 4 * filters)` (default `"glorot_uniform"`).
        recurrent_initializer: Initializer of `recurrent_kernel`
            `(*kernel_size, filters, 4 * filters)` (default `"orthogonal"`).
        bias_initializer: Initializer of `bias` `(4 * filters,)` (default `"zeros"`).
        unit_forget_bias: Start the forget gate's bias at 1 (default True).
        kernel_regularizer: Regularizer of `kernel`, or None.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        recurrent_constraint: Constraint on `recurrent_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.
        dropout: The input dropout rate in [0, 1] (training only; one mask per
            gate and sequence; default 0).
        recurrent_dropout: The dropout rate on `h` (default 0).
        seed: The dropout seed, an int or None.
        return_sequences: Return every timestep's output instead of the last
            (default False).
        return_state: Also return the final states `h` and `c` (default False).
        go_backwards: Process the sequence in reverse (default False).
        stateful: Carry the final states to the next batch (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a bad argument, inputs not of rank 4, or the spatial size
            unknown or too small for the kernel with `padding="valid"`.
    """

    rank = 1


@export("loopax.layers.ConvLSTM2D")
class ConvLSTM2D(_ConvLSTM):
    """2-D convolutional LSTM: an LSTM whose input and recurrent
    transformations are convolutions, with feature-map states.

    Input shape: `(batch, timesteps, rows, cols, channels)` with
    `data_format="channels_last"`, or `(batch, timesteps, channels, rows, cols)` with
    `"channels_first"`; an optional `(batch, timesteps)` boolean mask.
    Output shape: `(batch, new_rows, new_cols, filters)`, or `(batch, filters, new_rows, new_cols)`
    channels-first; with `return_sequences=True` the same with a `timesteps`
    axis after `batch`. Each new size is `ceil(size / stride)` with
    `"same"` padding, else `(size - (kernel - 1) * dilation - 1) // stride + 1`.
    With `return_state=True` the layer returns `[output, h, c]`, the final
    states having the shape of the last timestep's output.

    Args:
        filters: The number of output channels (of `h` and `c`), a positive int.
        kernel_size: The convolution window, an int or a 2-tuple.
        strides: The input convolution's strides, an int or a 2-tuple
            (default 1; > 1 cannot be combined with `dilation_rate` > 1).
        padding: `"valid"` (default) or `"same"`, for the input convolution;
            the recurrent one is always `"same"` with stride 1.
        data_format: `"channels_last"` or `"channels_first"` (None:
            `"channels_last"`).
        dilation_rate: The input convolution's dilation, an int or a
            2-tuple (default 1).
        activation: The cell and output activation (default `"tanh"`).
        recurrent_activation: The gates' activation (default `"sigmoid"`).
        use_bias: Whether to add a bias (default True).
        kernel_initializer: Initializer of `kernel`
            `(*kernel_size, channels, 4 * filters)` (default `"glorot_uniform"`).
        recurrent_initializer: Initializer of `recurrent_kernel`
            `(*kernel_size, filters, 4 * filters)` (default `"orthogonal"`).
        bias_initializer: Initializer of `bias` `(4 * filters,)` (default `"zeros"`).
        unit_forget_bias: Start the forget gate's bias at 1 (default True).
        kernel_regularizer: Regularizer of `kernel`, or None.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        recurrent_constraint: Constraint on `recurrent_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.
        dropout: The input dropout rate in [0, 1] (training only; one mask per
            gate and sequence; default 0).
        recurrent_dropout: The dropout rate on `h` (default 0).
        seed: The dropout seed, an int or None.
        return_sequences: Return every timestep's output instead of the last
            (default False).
        return_state: Also return the final states `h` and `c` (default False).
        go_backwards: Process the sequence in reverse (default False).
        stateful: Carry the final states to the next batch (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a bad argument, inputs not of rank 5, or the spatial sizes
            unknown or too small for the kernel with `padding="valid"`.
    """

    rank = 2


@export("loopax.layers.ConvLSTM3D")
class ConvLSTM3D(_ConvLSTM):
    """3-D convolutional LSTM: an LSTM whose input and recurrent
    transformations are convolutions, with feature-map states.

    Input shape: `(batch, timesteps, d1, d2, d3, channels)` with
    `data_format="channels_last"`, or `(batch, timesteps, channels, d1, d2, d3)` with
    `"channels_first"`; an optional `(batch, timesteps)` boolean mask.
    Output shape: `(batch, new_d1, new_d2, new_d3, filters)`, or
    `(batch, filters, new_d1, new_d2, new_d3)` channels-first; with
    `return_sequences=True` the same with a `timesteps` axis after `batch`. Each new
    size is `ceil(size / stride)` with `"same"` padding, else
    `(size - (kernel - 1) * dilation - 1) // stride + 1`.
    With `return_state=True` the layer returns `[output, h, c]`, the final
    states having the shape of the last timestep's output.

    Args:
        filters: The number of output channels (of `h` and `c`), a positive int.
        kernel_size: The convolution window, an int or a 3-tuple.
        strides: The input convolution's strides, an int or a 3-tuple
            (default 1; > 1 cannot be combined with `dilation_rate` > 1).
        padding: `"valid"` (default) or `"same"`, for the input convolution;
            the recurrent one is always `"same"` with stride 1.
        data_format: `"channels_last"` or `"channels_first"` (None:
            `"channels_last"`).
        dilation_rate: The input convolution's dilation, an int or a
            3-tuple (default 1).
        activation: The cell and output activation (default `"tanh"`).
        recurrent_activation: The gates' activation (default `"sigmoid"`).
        use_bias: Whether to add a bias (default True).
        kernel_initializer: Initializer of `kernel`
            `(*kernel_size, channels, 4 * filters)` (default `"glorot_uniform"`).
        recurrent_initializer: Initializer of `recurrent_kernel`
            `(*kernel_size, filters, 4 * filters)` (default `"orthogonal"`).
        bias_initializer: Initializer of `bias` `(4 * filters,)` (default `"zeros"`).
        unit_forget_bias: Start the forget gate's bias at 1 (default True).
        kernel_regularizer: Regularizer of `kernel`, or None.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        recurrent_constraint: Constraint on `recurrent_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.
        dropout: The input dropout rate in [0, 1] (training only; one mask per
            gate and sequence; default 0).
        recurrent_dropout: The dropout rate on `h` (default 0).
        seed: The dropout seed, an int or None.
        return_sequences: Return every timestep's output instead of the last
            (default False).
        return_state: Also return the final states `h` and `c` (default False).
        go_backwards: Process the sequence in reverse (default False).
        stateful: Carry the final states to the next batch (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a bad argument, inputs not of rank 6, or the spatial sizes
            unknown or too small for the kernel with `padding="valid"`.
    """

    rank = 3
