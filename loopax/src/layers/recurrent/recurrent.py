"""Recurrent layers: `RNN` over a cell, `SimpleRNN`, `LSTM`, `GRU`, their
cells, `StackedRNNCells`, `Bidirectional` and `TimeDistributed`, numerically
as Keras 3.

A cell computes one timestep: `cell(inputs_t, states) -> (output_t,
new_states)`, with `inputs_t` of shape `(batch, features)` and `states` a list
of `(batch, size)` arrays, one per entry of `cell.state_size`. `RNN` runs it
over the time axis of `(batch, timesteps, features)` inputs with `lax.scan`
(a Python loop only with `unroll=True`).

The built-in cells split a step in two: `project_inputs` (the input kernel,
applied to all timesteps at once, outside the scan, as one large matmul) and
`step` (the recurrent part, inside the scan). The result is the same as
calling the cell step by step; only the time differs.

Masks: a `(batch, timesteps)` boolean mask (from `Embedding(mask_zero=True)`,
`Masking`, or `mask=`) makes masked timesteps keep the previous states and
repeat the previous output (zeros with `zero_output_for_mask=True`), as Keras.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from loopax.src import activations, constraints, initializers, random, regularizers, serialization
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import positive_int
from loopax.src.layers.layer import Layer
from loopax.src.module import _snake_case
from loopax.src.naming import name_scope
from loopax.src.state import Variable
from loopax.src.tensor import unwrap

# ---------------------------------------------------------------------------
# Cells
# ---------------------------------------------------------------------------


def _masked_matmul(x, kernel, masks):
    """`x @ kernel`, where column block j of `kernel` sees `x * masks[j]`.

    `x`: `(..., batch, d)`; `kernel`: `(d, k * units)`; `masks`: None or
    `(k, batch, d)` (k = 1: one mask for all blocks). This is Keras's dropout
    with a separate mask per gate, as one contraction.
    """
    if masks is None:
        return jnp.matmul(x, kernel)
    k = masks.shape[0]
    if k == 1:
        return jnp.matmul(x * masks[0], kernel)
    d, n = kernel.shape
    blocks = jnp.einsum("...kd,dku->...ku", x[..., None, :] * jnp.swapaxes(masks, 0, 1),
                        kernel.reshape(d, k, n // k))
    return blocks.reshape(blocks.shape[:-2] + (n,))


class _BuiltinCell(Layer):
    """What SimpleRNNCell, LSTMCell and GRUCell share: arguments, weights,
    dropout masks and the split of a step into `project_inputs` + `step`.

    Dropout (training only) uses one mask per sequence, the same at every
    timestep, drawn from the cell's `seed_generator`: `dropout` on the inputs,
    `recurrent_dropout` on the previous output. With `recurrent_dropout`,
    each gate gets its own masks (Keras's `implementation=1`).
    """

    gates = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        kwargs.pop("implementation", None)   # Keras's choice of kernel layout: one here
        super().__init__(**kwargs)
        self.units = positive_int(units, "units", type(self).__name__)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        for rate, arg in ((dropout, "dropout"), (recurrent_dropout, "recurrent_dropout")):
            if not isinstance(rate, (int, float)) or isinstance(rate, bool):
                raise ValueError(f"{type(self).__name__}: `{arg}` must be a number in "
                                 f"[0, 1], got {rate!r}.")
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        self.seed_generator = random.SeedGenerator(seed)
        self._fixed_dropout_masks = None
        self.output_size = self.units

    def _add_kernels(self, input_dim, bias_shape, bias_initializer):
        if input_dim is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the feature axis of the "
                             "input must be known to build the kernel.")
        n = self.gates * self.units
        self.kernel = self.add_weight((input_dim, n), self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            (self.units, n), self.recurrent_initializer, name="recurrent_kernel",
            regularizer=self.recurrent_regularizer, constraint=self.recurrent_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(bias_shape, bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    # ---- dropout ---------------------------------------------------------
    def _mask_count(self):
        return self.gates if self.recurrent_dropout > 0 else 1

    def draw_dropout_masks(self, batch_size, input_dim, training):
        """`(input_masks, recurrent_masks)` for one sequence, each None or
        `(k, batch, dim)` keep-masks scaled by 1 / (1 - rate)."""
        def draw(rate, dim):
            if not training or not 0.0 < rate < 1.0:
                return None
            ones = jnp.ones((self._mask_count(), batch_size, dim), self.dtype)
            return random.dropout(ones, rate, seed=self.seed_generator)
        return draw(self.dropout, input_dim), draw(self.recurrent_dropout, self.units)

    def _dropout_masks(self, inputs, training):
        if self._fixed_dropout_masks is not None:   # set by RNN for a whole sequence
            return self._fixed_dropout_masks
        return self.draw_dropout_masks(inputs.shape[0], inputs.shape[-1], training)

    def call(self, inputs, states, training=False):
        """One timestep: `inputs` `(batch, features)`, `states` a list of
        `(batch, units)` -> `(output, new_states)`."""
        inputs = unwrap(inputs)
        states = [unwrap(s) for s in (states if isinstance(states, (list, tuple)) else [states])]
        input_masks, recurrent_masks = self._dropout_masks(inputs, training)
        return self.step(self.project_inputs(inputs, input_masks), states, recurrent_masks)

    def get_initial_state(self, batch_size=None):
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [jnp.zeros((batch_size, s), self.dtype) for s in sizes]

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


@export("loopax.layers.SimpleRNNCell")
class SimpleRNNCell(_BuiltinCell):
    """`h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)`; output
    and state are `h`, `(batch, units)`.

    Called on one timestep `(batch, features)` and its states; wrap it in `RNN` to
    run it over a sequence.

    Args:
        units: The output (and state) size, a positive int.
        activation: The output activation (default `"tanh"`).
        use_bias: Whether to add a bias (default True).
        kernel_initializer: Initializer of `kernel` `(features, units)` (default
            `"glorot_uniform"`).
        recurrent_initializer: Initializer of `recurrent_kernel` `(units, units)`
            (default `"orthogonal"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        recurrent_constraint: Constraint on `recurrent_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.
        dropout: The input dropout rate in [0, 1] (training only; default 0).
        recurrent_dropout: The dropout rate on the previous output (default 0).
        seed: The dropout seed, an int or None.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `units` is not a positive int, or a dropout rate is not a number.
    """

    row_wise = True

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.state_size = self.units

    def _mask_count(self):
        return 1

    def build(self, input_shape):
        self._add_kernels(input_shape[-1], (self.units,), self.bias_initializer)

    def project_inputs(self, inputs, input_masks=None):
        """`(..., batch, features)` -> `(..., batch, units)` (bias included)."""
        y = _masked_matmul(inputs, self.kernel.value, input_masks)
        return y + self.bias.value if self.use_bias else y

    def step(self, projected, states, recurrent_masks=None):
        h = states[0]
        if recurrent_masks is not None:
            h = h * recurrent_masks[0]
        output = self.activation(projected + jnp.matmul(h, self.recurrent_kernel.value))
        return output, [output]


@export("loopax.layers.LSTMCell")
class LSTMCell(_BuiltinCell):
    """Long short-term memory, gates in Keras's order (input, forget, cell,
    output): kernels `(features, 4 * units)` and `(units, 4 * units)`, bias
    `(4 * units,)`. States `[h, c]`; the output is `h`. Other arguments as
    `SimpleRNNCell`.

    Args:
        recurrent_activation: for the gates (default sigmoid).
        unit_forget_bias: initialize the forget gate's bias to 1.
    """

    row_wise = True

    gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias
        self.state_size = [self.units, self.units]

    def build(self, input_shape):
        bias_initializer = self.bias_initializer
        if self.unit_forget_bias:
            base, units = self.bias_initializer, self.units

            def bias_initializer(shape, dtype=None):
                # Joined on the host: on the device, two programs compiled per layer size.
                inputs, cells = (np.asarray(base((n,), dtype)) for n in (units, 2 * units))
                return np.concatenate([inputs, np.ones((units,), inputs.dtype), cells])
        self._add_kernels(input_shape[-1], (4 * self.units,), bias_initializer)

    def project_inputs(self, inputs, input_masks=None):
        """`(..., batch, features)` -> `(..., batch, 4 * units)` (bias included)."""
        z = _masked_matmul(inputs, self.kernel.value, input_masks)
        return z + self.bias.value if self.use_bias else z

    def step(self, projected, states, recurrent_masks=None):
        h, c = states[0], states[1]
        z = projected + _masked_matmul(h, self.recurrent_kernel.value, recurrent_masks)
        z_i, z_f, z_c, z_o = jnp.split(z, 4, axis=-1)
        i = self.recurrent_activation(z_i)
        f = self.recurrent_activation(z_f)
        c = f * c + i * self.activation(z_c)
        o = self.recurrent_activation(z_o)
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


@export("loopax.layers.GRUCell")
class GRUCell(_BuiltinCell):
    """Gated recurrent unit, gates in Keras's order (update z, reset r,
    candidate h): kernels `(features, 3 * units)`, `(units, 3 * units)`.

    Args:
        reset_after: apply the reset gate after the recurrent matmul (the
            cuDNN variant, Keras's default; bias `(2, 3 * units)`: input and
            recurrent biases) or before it (bias `(3 * units,)`).
        recurrent_activation: for the gates (default sigmoid).
    """

    row_wise = True

    gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 reset_after=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after
        self.state_size = self.units

    def build(self, input_shape):
        shape = (2, 3 * self.units) if self.reset_after else (3 * self.units,)
        self._add_kernels(input_shape[-1], shape, self.bias_initializer)

    def _biases(self):
        if not self.use_bias:
            return None, None
        bias = self.bias.value
        return (bias[0], bias[1]) if self.reset_after else (bias, None)

    def project_inputs(self, inputs, input_masks=None):
        """`(..., batch, features)` -> `(..., batch, 3 * units)` (input bias included)."""
        x = _masked_matmul(inputs, self.kernel.value, input_masks)
        input_bias, _ = self._biases()
        return x if input_bias is None else x + input_bias

    def step(self, projected, states, recurrent_masks=None):
        h = states[0]
        u = self.units
        kernel = self.recurrent_kernel.value
        _, recurrent_bias = self._biases()
        x_z, x_r, x_h = jnp.split(projected, 3, axis=-1)
        masks = recurrent_masks
        if self.reset_after:
            inner = _masked_matmul(h, kernel, masks)
            if recurrent_bias is not None:
                inner = inner + recurrent_bias
            r_z, r_r, r_h = jnp.split(inner, 3, axis=-1)
        else:
            gate_masks = None if masks is None else masks[:2] if masks.shape[0] > 1 else masks
            r_z, r_r = jnp.split(_masked_matmul(h, kernel[:, :2 * u], gate_masks), 2, axis=-1)
        z = self.recurrent_activation(x_z + r_z)
        r = self.recurrent_activation(x_r + r_r)
        if self.reset_after:
            candidate = self.activation(x_h + r * r_h)
        else:
            h_masked = h if masks is None else h * masks[-1]
            candidate = self.activation(x_h + jnp.matmul(r * h_masked, kernel[:, 2 * u:]))
        h = z * h + (1 - z) * candidate
        return h, [h]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}


@export("loopax.layers.StackedRNNCells")
class StackedRNNCells(Layer):
    """Cells run one after another within each timestep: cell i's output is
    cell i+1's input. `state_size` lists each cell's `state_size`; the
    output is the last cell's output.

    Args:
        cells: A list of RNN cells (layers with `call(inputs, states)` and
            `state_size`).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: an entry of `cells` is not an RNN cell.
    """

    row_wise = True

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        for cell in cells:
            _check_cell(cell, "StackedRNNCells")
        self.cells = list(cells)

    @property
    def state_size(self):
        return [c.state_size for c in self.cells]

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    def get_initial_state(self, batch_size=None):
        return [_initial_state(cell, batch_size, self.dtype) for cell in self.cells]

    def build(self, input_shape):
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                cell.build(input_shape)
                cell.built = True
            input_shape = (input_shape[0], _output_size(cell))
        self.built = True

    def call(self, inputs, states, training=False):
        new_states = []
        for cell, cell_states in zip(self.cells, states):
            nested = isinstance(cell_states, (list, tuple))
            inputs, cell_states = _call_cell(cell, inputs, list(cell_states) if nested
                                             else [cell_states], training)
            new_states.append(cell_states if nested else cell_states[0])
        return inputs, new_states

    def get_config(self):
        return {**super().get_config(),
                "cells": [serialization.serialize(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cells = [serialization.deserialize(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


def _check_cell(cell, owner):
    if not callable(getattr(cell, "call", None)):
        raise ValueError(f"{owner}: the cell must have a `call(inputs, states)` method; "
                         f"got {cell!r:.80}.")
    state_size = getattr(cell, "state_size", None)
    sizes = jax.tree_util.tree_leaves(state_size)
    if state_size is None or not sizes or not all(
            isinstance(s, (int, np.integer)) and s > 0 for s in sizes):
        raise ValueError(
            f"{owner}: the cell {type(cell).__name__} must have a `state_size` attribute: "
            "a positive int, or a list of them (one per state tensor, e.g. "
            f"[units, units] for an LSTM); got state_size={state_size!r}. Set "
            "`self.state_size` in the cell's __init__.")


def _output_size(cell):
    size = getattr(cell, "output_size", None)
    if size is not None:
        return size
    state_size = cell.state_size
    return jax.tree_util.tree_leaves(state_size)[0]


def _initial_state(cell, batch_size, dtype):
    """Zeros in the structure of `cell.state_size` (or the cell's own
    `get_initial_state`)."""
    if callable(getattr(cell, "get_initial_state", None)):
        return cell.get_initial_state(batch_size=batch_size)
    return jax.tree_util.tree_map(lambda s: jnp.zeros((batch_size, s), dtype),
                                  cell.state_size)


def _call_cell(cell, inputs, states, training):
    """`cell(inputs, states)` -> `(output, list of new states)`."""
    if isinstance(cell, Layer):
        kwargs = {"training": training} if cell._call_takes_training else {}
        output, new_states = cell(inputs, states, **kwargs)
    else:
        output, new_states = cell.call(inputs, states)
    if not isinstance(new_states, (list, tuple)):
        new_states = [new_states]
    return output, list(new_states)


def _fix_dropout_masks(cell, batch_size, input_dim, training, fixed):
    """Draws each built-in cell's dropout masks once for a whole sequence
    (as Keras does): recorded in `fixed` so the caller clears them after."""
    if isinstance(cell, _BuiltinCell):
        cell._fixed_dropout_masks = cell.draw_dropout_masks(batch_size, input_dim, training)
        fixed.append(cell)
    elif isinstance(cell, StackedRNNCells):
        for c in cell.cells:
            _fix_dropout_masks(c, batch_size, input_dim, training, fixed)
            input_dim = _output_size(c)


# ---------------------------------------------------------------------------
# The time loop
# ---------------------------------------------------------------------------

def _expand_to(mask_t, x):
    """`(batch,)` mask -> broadcastable against `x` `(batch, ...)`."""
    return mask_t.reshape(mask_t.shape + (1,) * (x.ndim - 1))


def _time_loop(step, xs, states, mask, *, go_backwards, unroll, zero_output_for_mask,
               return_sequences, previous_output):
    """Runs `step(x_t, states) -> (output_t, new_states)` over the leading
    (time) axis of `xs`.

    Returns `(last_output, outputs or None, final_states)`; `outputs` is
    time-major, in processing order (reversed with `go_backwards`, as Keras).
    Where `mask` `(time, batch)` is False the states stay and the output is
    `previous_output(states)` (zeros with `zero_output_for_mask`).
    """
    first_x = jax.tree_util.tree_map(lambda x: x[0], xs)
    out_struct = jax.eval_shape(lambda x, s: step(x, s)[0], first_x, states)
    last0 = jnp.zeros(out_struct.shape, out_struct.dtype)

    def body(carry, inputs):
        states, last = carry
        x_t, m_t = inputs
        output, new_states = step(x_t, states)
        if m_t is not None:
            held = jnp.zeros_like(output) if zero_output_for_mask else previous_output(states)
            output = jnp.where(_expand_to(m_t, output), output, held)
            new_states = jax.tree_util.tree_map(
                lambda new, old: jnp.where(_expand_to(m_t, new), new, old), new_states, states)
        if return_sequences:
            return (new_states, last), output
        return (new_states, output), None

    if unroll:
        steps = jax.tree_util.tree_leaves(xs)[0].shape[0]
        order = range(steps - 1, -1, -1) if go_backwards else range(steps)
        carry, outputs = (states, last0), []
        for t in order:
            x_t = jax.tree_util.tree_map(lambda x: x[t], xs)
            carry, y = body(carry, (x_t, None if mask is None else mask[t]))
            outputs.append(y)
        (states, last) = carry
        if return_sequences:
            outputs = jnp.stack(outputs)
            return outputs[-1], outputs, states
        return last, None, states

    (states, last), outputs = lax.scan(body, (states, last0), (xs, mask),
                                       reverse=go_backwards)
    if return_sequences:
        if go_backwards:
            outputs = jnp.flip(outputs, axis=0)
        return outputs[-1], outputs, states
    return last, None, states


def _is_variable(x):
    return isinstance(x, Variable)


def _state_variables(states):
    """The Variables of a stateful RNN's (possibly nested) `states`."""
    return jax.tree_util.tree_leaves(states, is_leaf=_is_variable)


@export("loopax.layers.RNN")
class RNN(Layer):
    """Runs a cell over the time axis.

    Args:
        cell: an RNN cell (a layer with `call(inputs, states)` and
            `state_size`), or a list of cells (stacked, `StackedRNNCells`).
        return_sequences: return the output of every timestep
            `(batch, timesteps, units)` instead of the last `(batch, units)`.
        return_state: also return the final states: `[output, *states]`.
        go_backwards: process the sequence in reverse (the returned sequence
            is in processing order, as Keras).
        stateful: keep the final states of a batch as the initial states of
            the next (fixed batch size); `reset_states()` zeroes them.
        unroll: unroll the time loop in Python (short sequences only).
        zero_output_for_mask: masked timesteps output zeros instead of
            repeating the previous output.

    Call arguments: `sequences` `(batch, timesteps, features)`,
    `initial_state` (list of arrays, one per state), `mask`
    `(batch, timesteps)` booleans, `training`.
    """

    def __init__(self, cell, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False,
                 zero_output_for_mask=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        _check_cell(cell, f"{type(self).__name__}")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.unroll = unroll
        self.zero_output_for_mask = zero_output_for_mask
        self.supports_masking = True
        self.states = None

    @property
    def state_size(self) -> list:
        size = self.cell.state_size
        return list(size) if isinstance(size, (list, tuple)) else [size]

    # ---- build -------------------------------------------------------------
    def _check_sequences_shape(self, shape):
        if len(shape) < 3:
            raise ValueError(
                f"{type(self).__name__} layer {self.name!r} expects inputs of shape "
                f"(batch, timesteps, features), but got shape {tuple(shape)}. Add a time "
                "axis (e.g. x[:, None, :] for one step, or a Reshape layer before it).")

    def build(self, sequences_shape, initial_state_shape=None):
        self._check_sequences_shape(sequences_shape)
        step_shape = (sequences_shape[0],) + tuple(sequences_shape[2:])
        if isinstance(self.cell, Layer) and not self.cell.built:
            with name_scope(self.name, caller=self):  # weight paths as Keras: lstm/lstm_cell/kernel
                self.cell.build(step_shape)
            self.cell.built = True
        if self.stateful:
            batch_size = sequences_shape[0]
            if batch_size is None:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r}: `stateful=True` needs a fixed "
                    f"batch size; got inputs of shape {tuple(sequences_shape)}. Give the "
                    "Input a batch_size= (or batch_shape=).")
            with name_scope(self.name, caller=self):
                self.states = jax.tree_util.tree_map(
                    lambda value: Variable(value, trainable=False, name="rnn_state"),
                    self.get_initial_state(batch_size))
            for v in _state_variables(self.states):
                # Carried between calls (stateless calls and fit() thread it),
                # but not a weight: Keras's get_weights() leaves RNN states out.
                v.is_seed_state = True
        self.built = True

    def get_initial_state(self, batch_size):
        """Zeros for every state: a list, one entry per `state_size` entry."""
        state = _initial_state(self.cell, batch_size, self.dtype)
        return list(state) if isinstance(state, (list, tuple)) else [state]

    def reset_states(self):
        """Zeroes the states of a stateful RNN."""
        self.reset_state()

    def reset_state(self):
        for v in _state_variables(self.states):
            v.assign(jnp.zeros_like(v.value))

    # ---- call --------------------------------------------------------------
    def _standardize_initial_state(self, initial_state, batch_size):
        """`initial_state` in the structure of `state_size`, shapes checked."""
        want = self.get_initial_state(batch_size) if not self.stateful else \
            jax.tree_util.tree_map(lambda v: v.value, self.states, is_leaf=_is_variable)
        want_leaves, treedef = jax.tree_util.tree_flatten(want)
        given = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
        given = jax.tree_util.tree_leaves([unwrap(s) for s in jax.tree_util.tree_leaves(given)])
        want_shapes = [tuple(w.shape) for w in want_leaves]
        got_shapes = [tuple(np.shape(g)) for g in given]
        if len(given) != len(want_leaves) or any(
                g[1:] != w[1:] or (g and g[0] != w[0] and not self.stateful)
                for g, w in zip(got_shapes, want_shapes)):
            raise ValueError(
                f"{type(self).__name__} layer {self.name!r}: `initial_state` must be "
                f"{len(want_leaves)} array(s) of shapes {want_shapes} (one per state of "
                f"the cell, state_size={self.cell.state_size}); got {len(given)} of shapes "
                f"{got_shapes}.")
        given = [jnp.asarray(g, self.dtype) for g in given]
        return jax.tree_util.tree_unflatten(treedef, given)

    def _previous_output(self, states):
        """What a masked timestep outputs: the previous output, which for
        the built-in cells is the first state (of the last stacked cell)."""
        last = states[-1] if isinstance(self.cell, StackedRNNCells) else states
        return jax.tree_util.tree_leaves(last)[0]

    def call(self, sequences, initial_state=None, mask=None, training=False):
        sequences = unwrap(sequences)
        self._check_sequences_shape(sequences.shape)
        batch_size, timesteps = sequences.shape[0], sequences.shape[1]
        if self.stateful and initial_state is None:
            states = jax.tree_util.tree_map(lambda v: v.value, self.states,
                                            is_leaf=_is_variable)
        elif initial_state is not None:
            states = self._standardize_initial_state(initial_state, batch_size)
        else:
            states = self.get_initial_state(batch_size)
        if mask is not None:
            mask = jnp.asarray(unwrap(jax.tree_util.tree_leaves(mask)[0])).astype(bool)
            if mask.shape != (batch_size, timesteps):
                raise ValueError(
                    f"{type(self).__name__} layer {self.name!r}: the mask must have shape "
                    f"(batch, timesteps) = {(batch_size, timesteps)}; got {mask.shape}.")
            mask = mask.T
        time_major = jnp.swapaxes(sequences, 0, 1)

        fixed = []
        try:
            if isinstance(self.cell, _BuiltinCell):
                cell = self.cell
                input_masks, recurrent_masks = cell.draw_dropout_masks(
                    batch_size, sequences.shape[-1], training)
                xs = cell.project_inputs(time_major, input_masks)

                def step(x_t, states):
                    return cell.step(x_t, states, recurrent_masks)
            else:
                _fix_dropout_masks(self.cell, batch_size, sequences.shape[-1], training, fixed)
                xs = time_major

                def step(x_t, states):
                    return _call_cell(self.cell, x_t, states, training)
            last, outputs, states = _time_loop(
                step, xs, list(states), mask, go_backwards=self.go_backwards,
                unroll=self.unroll, zero_output_for_mask=self.zero_output_for_mask,
                return_sequences=self.return_sequences, previous_output=self._previous_output)
        finally:
            for cell in fixed:
                cell._fixed_dropout_masks = None
        if self.stateful:
            for var, value in zip(_state_variables(self.states),
                                  jax.tree_util.tree_leaves(states)):
                var.assign(value)
        output = jnp.swapaxes(outputs, 0, 1) if self.return_sequences else last
        if self.return_state:
            return (output, *states)
        return output

    def compute_mask(self, inputs, mask=None):
        if mask is not None:
            mask = jax.tree_util.tree_leaves(mask)[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(jax.tree_util.tree_leaves(self.state_size))
        return output_mask

    # ---- config ------------------------------------------------------------
    def _rnn_config(self):
        return {"return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "zero_output_for_mask": self.zero_output_for_mask}

    def get_config(self):
        return {**super().get_config(), **self._rnn_config(),
                "cell": serialization.serialize(self.cell)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cell = serialization.deserialize(config.pop("cell"), custom_objects)
        return cls(cell, **config)


_CELL_ARGS = ("activation", "use_bias", "kernel_initializer", "recurrent_initializer",
              "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
              "bias_regularizer", "kernel_constraint", "recurrent_constraint",
              "bias_constraint", "dropout", "recurrent_dropout", "seed")


class _BuiltinRNN(RNN):
    """An RNN layer over its own built-in cell, configured by flat arguments."""

    cell_class = None
    cell_only_args = ()

    def __init__(self, units, *, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, zero_output_for_mask=False,
                 activity_regularizer=None, name=None, trainable=True, dtype=None,
                 input_shape=None, input_dim=None, batch_input_shape=None, batch_size=None,
                 use_cudnn="auto", **cell_kwargs):
        cell_name = f"{_snake(type(self).__name__)}_cell"
        cell = self.cell_class(units, name=cell_name, dtype=dtype, trainable=trainable,
                               **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         zero_output_for_mask=zero_output_for_mask,
                         activity_regularizer=activity_regularizer, name=name,
                         trainable=trainable, dtype=dtype, input_shape=input_shape,
                         input_dim=input_dim, batch_input_shape=batch_input_shape,
                         batch_size=batch_size)

    def __getattr__(self, name):
        # units, activation, dropout, ... read through to the cell, as in Keras.
        if name in ("units",) + _CELL_ARGS + type(self).cell_only_args:
            return getattr(self.__dict__["cell"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_config(self):
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        base = Layer.get_config(self)
        return {**base, **cell_config, **self._rnn_config(),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


def _snake(name):
    return _snake_case(name)


@export("loopax.layers.SimpleRNN")
class SimpleRNN(_BuiltinRNN):
    """A fully connected RNN: `RNN(SimpleRNNCell(units, ...))`; arguments as
    `SimpleRNNCell` and `RNN`.

    Input shape: `(batch, timesteps, features)` (float); an optional
    `(batch, timesteps)` boolean mask. Output shape: `(batch, units)`, or
    `(batch, timesteps, units)` with `return_sequences=True`.

    Args:
        units: The output (and state) size, a positive int.
        return_sequences: Return every timestep's output `(batch, timesteps, units)`
            instead of the last `(batch, units)` (default False).
        return_state: Also return the final states (default False).
        go_backwards: Process the sequence in reverse (default False).
        stateful: Carry the final states to the next batch (default False).
        unroll: Unroll the time loop in Python (default False).
        zero_output_for_mask: Masked timesteps output zeros (default False).
        activity_regularizer: Regularizer of the output, or None.
        use_cudnn: Accepted for Keras compatibility; no effect.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        activation: The output activation (default `"tanh"`).
        use_bias: Whether to add a bias (default True).
        kernel_initializer: Initializer of `kernel` `(features, units)` (default
            `"glorot_uniform"`).
        recurrent_initializer: Initializer of `recurrent_kernel` `(units, units)`
            (default `"orthogonal"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        recurrent_constraint: Constraint on `recurrent_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.
        dropout: The input dropout rate in [0, 1] (training only; default 0).
        recurrent_dropout: The dropout rate on the previous output (default 0).
        seed: The dropout seed, an int or None.

    Raises:
        ValueError: a bad cell argument (see `SimpleRNNCell`).
    """

    row_wise = True

    cell_class = SimpleRNNCell


@export("loopax.layers.LSTM")
class LSTM(_BuiltinRNN):
    """Long short-term memory: `RNN(LSTMCell(units, ...))`; arguments as
    `LSTMCell` and `RNN`. `return_state=True` returns `[output, h, c]`.

    Input shape: `(batch, timesteps, features)` (float); an optional
    `(batch, timesteps)` boolean mask. Output shape: `(batch, units)`, or
    `(batch, timesteps, units)` with `return_sequences=True`.

    Args:
        units: The output (and state) size, a positive int.
        return_sequences: Return every timestep's output `(batch, timesteps, units)`
            instead of the last `(batch, units)` (default False).
        return_state: Also return the final states (default False).
        go_backwards: Process the sequence in reverse (default False).
        stateful: Carry the final states to the next batch (default False).
        unroll: Unroll the time loop in Python (default False).
        zero_output_for_mask: Masked timesteps output zeros (default False).
        activity_regularizer: Regularizer of the output, or None.
        use_cudnn: Accepted for Keras compatibility; no effect.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        activation: The output activation (default `"tanh"`).
        recurrent_activation: The gates' activation (default `"sigmoid"`).
        use_bias: Whether to add a bias (default True).
        unit_forget_bias: Start the forget gate's bias at 1 (default True).
        kernel_initializer: Initializer of `kernel` `(features, 4 * units)` (default
            `"glorot_uniform"`).
        recurrent_initializer: Initializer of `recurrent_kernel` `(units, 4 * units)`
            (default `"orthogonal"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        recurrent_constraint: Constraint on `recurrent_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.
        dropout: The input dropout rate in [0, 1] (training only; default 0).
        recurrent_dropout: The dropout rate on the previous output (default 0).
        seed: The dropout seed, an int or None.

    Raises:
        ValueError: a bad cell argument (see `LSTMCell`).
    """

    row_wise = True

    cell_class = LSTMCell
    cell_only_args = ("recurrent_activation", "unit_forget_bias")


@export("loopax.layers.GRU")
class GRU(_BuiltinRNN):
    """Gated recurrent unit: `RNN(GRUCell(units, ...))`; arguments as
    `GRUCell` (`reset_after=True` by default, as Keras) and `RNN`.

    Input shape: `(batch, timesteps, features)` (float); an optional
    `(batch, timesteps)` boolean mask. Output shape: `(batch, units)`, or
    `(batch, timesteps, units)` with `return_sequences=True`.

    Args:
        units: The output (and state) size, a positive int.
        return_sequences: Return every timestep's output `(batch, timesteps, units)`
            instead of the last `(batch, units)` (default False).
        return_state: Also return the final states (default False).
        go_backwards: Process the sequence in reverse (default False).
        stateful: Carry the final states to the next batch (default False).
        unroll: Unroll the time loop in Python (default False).
        zero_output_for_mask: Masked timesteps output zeros (default False).
        activity_regularizer: Regularizer of the output, or None.
        use_cudnn: Accepted for Keras compatibility; no effect.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Keyword Args:
        activation: The output activation (default `"tanh"`).
        recurrent_activation: The gates' activation (default `"sigmoid"`).
        use_bias: Whether to add a bias (default True).
        reset_after: Apply the reset gate after the recurrent matmul (default True).
        kernel_initializer: Initializer of `kernel` `(features, 3 * units)` (default
            `"glorot_uniform"`).
        recurrent_initializer: Initializer of `recurrent_kernel` `(units, 3 * units)`
            (default `"orthogonal"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        kernel_constraint: Constraint on `kernel`, or None.
        recurrent_constraint: Constraint on `recurrent_kernel`, or None.
        bias_constraint: Constraint on `bias`, or None.
        dropout: The input dropout rate in [0, 1] (training only; default 0).
        recurrent_dropout: The dropout rate on the previous output (default 0).
        seed: The dropout seed, an int or None.

    Raises:
        ValueError: a bad cell argument (see `GRUCell`).
    """

    row_wise = True

    cell_class = GRUCell
    cell_only_args = ("recurrent_activation", "reset_after")


# ---------------------------------------------------------------------------
# Wrappers
# ---------------------------------------------------------------------------
