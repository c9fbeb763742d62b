"""Recurrent layers against Keras itself: identical weights (copied from the
Keras layer), same inputs and masks -> same outputs, states and gradients."""

import contextlib
import inspect
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import layers

keras = pytest.importorskip("keras")

RTOL, ATOL = 1e-5, 1e-6
BATCH, STEPS, FEATURES, UNITS = 3, 5, 4, 6


def _data(seed=0, batch=BATCH):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, STEPS, FEATURES)).astype("float32")
    # Padding at the end, a fully real row, and a row that starts masked.
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 0]], bool)[:batch]
    return x, mask


def _as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _assert_close(got, want):
    got, want = _as_list(got), _as_list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=RTOL, atol=ATOL)


@contextlib.contextmanager
def _keras_weights_as_zeros():
    """Keras layers built inside get every weight as zeros: their values are then
    copied in from loopax's twin, and Keras's random initializers would compile
    their kernels for every new shape (about a second each) for nothing."""
    add_weight = keras.Layer.add_weight

    def zeros_weight(self, *args, **kwargs):
        weight = inspect.signature(add_weight).bind(self, *args, **kwargs)
        weight.arguments["initializer"] = "zeros"
        return add_weight(*weight.args, **weight.kwargs)

    with mock.patch.object(keras.Layer, "add_weight", zeros_weight):
        yield


def _twins(make, x):
    """(keras layer, loopax layer) made by `make(module)`, both built on x,
    the Keras one holding loopax's initial weights."""
    l_layer = make(layers)
    l_layer.build(x.shape)
    with _keras_weights_as_zeros():
        k_layer = make(keras.layers)
        k_layer.build(x.shape)
    k_layer.set_weights(l_layer.get_weights())
    return k_layer, l_layer


def _grads_keras(layer, x, mask, kwargs):
    # Both libraries' gradients under jit: one program per case (eager grad compiles
    # one per op; the gradient test time halves); the compared numbers are the same.
    weights = [v.value for v in layer.trainable_variables]
    others = [v.value for v in layer.non_trainable_variables]

    def loss(weights, x):
        y, _ = layer.stateless_call(weights, others, x, mask=mask, **kwargs)
        return sum(jnp.sum(jnp.sin(t)) for t in _as_list(y))
    return jax.jit(jax.grad(loss, argnums=(0, 1)))(weights, jnp.asarray(x))


def _grads_loopax(layer, x, mask, kwargs):
    weights = [v.value for v in layer.trainable_variables]
    others = [v.value for v in layer.non_trainable_variables]

    def loss(weights, x):
        y, _ = layer.stateless_call(weights, others, x, mask=mask, **kwargs)
        return sum(jnp.sum(jnp.sin(t)) for t in _as_list(y))
    return jax.jit(jax.grad(loss, argnums=(0, 1)))(weights, jnp.asarray(x))


LAYERS = [
    pytest.param(lambda L, **kw: L.SimpleRNN(UNITS, **kw), id="SimpleRNN"),
    pytest.param(lambda L, **kw: L.LSTM(UNITS, **kw), id="LSTM"),
    pytest.param(lambda L, **kw: L.GRU(UNITS, **kw), id="GRU"),
    pytest.param(lambda L, **kw: L.GRU(UNITS, reset_after=False, **kw), id="GRU-reset_before"),
]

OPTIONS = [
    pytest.param({}, id="last"),
    pytest.param({"return_sequences": True}, id="sequences"),
    pytest.param({"return_state": True}, id="state"),
    pytest.param({"go_backwards": True, "return_sequences": True, "return_state": True},
                 id="backwards"),
    pytest.param({"unroll": True, "return_sequences": True}, id="unroll"),
    pytest.param({"use_bias": False, "activation": "relu"}, id="nobias-relu"),
    pytest.param({"zero_output_for_mask": True, "return_sequences": True}, id="zero_output"),
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("make", LAYERS)
def test_matches_keras(make, options):
    x, mask = _data()
    k_layer, l_layer = _twins(lambda L: make(L, **options), x)
    _assert_close(l_layer(x), k_layer(x))
    _assert_close(l_layer(x, mask=mask), k_layer(x, mask=mask))


@pytest.mark.parametrize("options", [
    pytest.param({}, id="last"),
    pytest.param({"go_backwards": True, "return_sequences": True}, id="backwards"),
])
@pytest.mark.parametrize("make", LAYERS)
def test_gradients_match_keras(make, options):
    x, mask = _data(1)
    k_layer, l_layer = _twins(lambda L: make(L, **options), x)
    k_grads = _grads_keras(k_layer, x, mask, {})
    l_grads = _grads_loopax(l_layer, x, mask, {})
    _assert_close(jax.tree_util.tree_leaves(l_grads), jax.tree_util.tree_leaves(k_grads))


@pytest.mark.parametrize("make", LAYERS)
def test_initial_state_matches_keras(make):
    x, mask = _data(2)
    k_layer, l_layer = _twins(lambda L: make(L, return_state=True), x)
    n_states = len(k_layer.cell.state_size) if isinstance(k_layer.cell.state_size, list) else 1
    rng = np.random.default_rng(3)
    init = [rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(n_states)]
    _assert_close(l_layer(x, initial_state=init, mask=mask),
                  k_layer(x, initial_state=init, mask=mask))


def test_lstm_unit_forget_bias_and_weight_layout_match_keras():
    x, _ = _data()
    k_layer, l_layer = keras.layers.LSTM(UNITS), layers.LSTM(UNITS)
    k_layer.build(x.shape)
    l_layer.build(x.shape)
    assert [v.shape for v in l_layer.weights] == [tuple(v.shape) for v in k_layer.weights]
    np.testing.assert_array_equal(np.asarray(l_layer.cell.bias.value),
                                  np.asarray(k_layer.cell.bias.value))   # [0, 1, 0, 0] blocks
    gru = layers.GRU(UNITS)
    gru.build(x.shape)
    assert gru.cell.bias.shape == (2, 3 * UNITS)


@pytest.mark.parametrize("make", LAYERS)
def test_stateful_carries_states_between_calls_and_resets(make):
    x, _ = _data(4)
    k_layer, l_layer = _twins(lambda L: make(L, stateful=True, return_sequences=True), x)
    assert len(l_layer.get_weights()) == len(k_layer.get_weights())   # states are not weights
    first = l_layer(x)
    _assert_close(first, k_layer(x))
    second = l_layer(x)
    _assert_close(second, k_layer(x))
    assert not np.allclose(np.asarray(first), np.asarray(second))
    l_layer.reset_states()
    k_layer.reset_states()
    after_reset = l_layer(x)
    _assert_close(after_reset, k_layer(x))
    _assert_close(after_reset, first)


def test_stateful_state_is_carried_by_stateless_calls():
    x, _ = _data(5)
    layer = layers.LSTM(UNITS, stateful=True)
    layer.build(x.shape)
    trainable = [v.value for v in layer.trainable_variables]
    states = [v.value for v in layer.non_trainable_variables]
    step = jax.jit(lambda t, s, x: layer.stateless_call(t, s, x))
    y1, states = step(trainable, states, x)
    y2, states = step(trainable, states, x)
    eager1, eager2 = layer(x), layer(x)
    _assert_close([y1, y2], [eager1, eager2])


# ---- dropout ----------------------------------------------------------------

def test_dropout_only_in_training_and_seeded():
    x, _ = _data(6)
    k_layer, l_layer = _twins(
        lambda L: L.LSTM(UNITS, dropout=0.5, recurrent_dropout=0.3, seed=7), x)
    inference = l_layer(x)
    _assert_close(inference, k_layer(x))    # no dropout outside training
    trained = l_layer(x, training=True)
    assert not np.allclose(np.asarray(trained), np.asarray(inference))
    again = layers.LSTM(UNITS, dropout=0.5, recurrent_dropout=0.3, seed=7)
    again.build(x.shape)
    again.set_weights(l_layer.get_weights())
    _assert_close(again(x, training=True), trained)   # the seed fixes the masks


@pytest.mark.parametrize("unroll", [False, True], ids=["scan", "unroll"])
def test_dropout_mask_is_the_same_at_every_timestep(unroll):
    # Linear SimpleRNN without recurrence: each step's output is
    # (x_t * keep_mask) @ kernel; with equal x_t, equal outputs iff the mask
    # is the same at every step (as Keras: one mask per sequence).
    layer = layers.SimpleRNN(8, activation=None, use_bias=False, dropout=0.5, seed=1,
                             recurrent_initializer="zeros", return_sequences=True,
                             unroll=unroll)
    x = np.ones((4, STEPS, 16), "float32")
    y = np.asarray(layer(x, training=True))
    np.testing.assert_allclose(y, np.broadcast_to(y[:, :1], y.shape), rtol=1e-6)
    assert not np.allclose(y, np.asarray(layer(x)))


def test_dropout_trains_in_fit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, STEPS, FEATURES)).astype("float32")
    y = x.sum(axis=(1, 2))[:, None]
    model = loopax.Sequential([loopax.Input((STEPS, FEATURES)),
                               layers.GRU(8, dropout=0.2, recurrent_dropout=0.2, seed=0),
                               layers.Dense(1)])
    model.compile(optimizer=loopax.optimizers.Adam(0.02), loss="mse")
    history = model.fit(x, y, epochs=8, batch_size=8, verbose=0).history["loss"]
    assert history[-1] < history[0]


# ---- RNN over user cells, stacked cells -------------------------------------

def _minimal_cell_class(base, ops):
    class MinimalRNNCell(base):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.state_size = units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units),
                                          initializer="uniform", name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units),
                                                    initializer="uniform",
                                                    name="recurrent_kernel")

        def call(self, inputs, states):
            output = ops.matmul(inputs, self.kernel) + ops.matmul(states[0],
                                                                   self.recurrent_kernel)
            return output, [output]
    return MinimalRNNCell


CELLS = [
    pytest.param(lambda L: _minimal_cell_class(L.Layer, _ops(L))(UNITS), id="user_cell"),
    pytest.param(lambda L: L.LSTMCell(UNITS), id="LSTMCell"),
    pytest.param(lambda L: [L.LSTMCell(UNITS), L.GRUCell(3)], id="stacked_list"),
    pytest.param(lambda L: L.StackedRNNCells([L.GRUCell(UNITS), L.SimpleRNNCell(3),
                                              L.LSTMCell(2)]), id="StackedRNNCells"),
]


def _ops(L):
    return keras.ops if L is keras.layers else loopax.ops


@pytest.mark.parametrize("options", [
    pytest.param({"return_sequences": True}, id="sequences"),
    pytest.param({"return_state": True, "go_backwards": True}, id="state-backwards"),
])
@pytest.mark.parametrize("cell", CELLS)
def test_rnn_over_cells_matches_keras(cell, options):
    x, mask = _data(7)
    k_layer, l_layer = _twins(lambda L: L.RNN(cell(L), **options), x)
    k_out, l_out = k_layer(x, mask=mask), l_layer(x, mask=mask)
    _assert_close(jax.tree_util.tree_leaves(l_out), jax.tree_util.tree_leaves(k_out))
    # An eager call returns Tensors (leaves here) where Keras returns jax.Arrays.
    assert jax.tree_util.tree_structure(
        l_out, is_leaf=lambda t: isinstance(t, loopax.Tensor)) == jax.tree_util.tree_structure(
        jax.tree_util.tree_map(np.asarray, k_out))


def test_cell_called_alone_matches_keras():
    x, _ = _data(8)
    step = x[:, 0]
    h = np.random.default_rng(9).normal(size=(BATCH, UNITS)).astype("float32")
    for make in (lambda L: L.LSTMCell(UNITS), lambda L: L.GRUCell(UNITS),
                 lambda L: L.SimpleRNNCell(UNITS)):
        k_cell, l_cell = _twins(make, step)
        states = [h, h] if isinstance(k_cell.state_size, list) else [h]
        k_out, k_states = k_cell(step, states)
        l_out, l_states = l_cell(step, states)
        _assert_close([l_out, *l_states], [k_out, *k_states])


# ---- Bidirectional, TimeDistributed -----------------------------------------

@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
@pytest.mark.parametrize("rnn", [
    pytest.param(lambda L: L.LSTM(UNITS, return_sequences=True), id="LSTM-sequences"),
    pytest.param(lambda L: L.GRU(UNITS, return_state=True), id="GRU-state"),
])
def test_bidirectional_matches_keras(rnn, merge_mode):
    x, mask = _data(10)
    k_layer, l_layer = _twins(lambda L: L.Bidirectional(rnn(L), merge_mode=merge_mode), x)
    paths = [w.path.split("/") for w in l_layer.weights]   # as Keras's paths
    assert [p[1].split("_")[0] for p in paths] == ["forward"] * 3 + ["backward"] * 3
    assert {p[2] for p in paths} == {k_layer.forward_layer.cell.name}
    _assert_close(jax.tree_util.tree_leaves(l_layer(x, mask=mask)),
                  jax.tree_util.tree_leaves(k_layer(x, mask=mask)))


def test_bidirectional_gradients_match_keras():
    x, mask = _data(11)
    k_layer, l_layer = _twins(lambda L: L.Bidirectional(L.LSTM(UNITS, return_sequences=True)), x)
    _assert_close(jax.tree_util.tree_leaves(_grads_loopax(l_layer, x, mask, {})),
                  jax.tree_util.tree_leaves(_grads_keras(k_layer, x, mask, {})))


@pytest.mark.parametrize("inner", [
    pytest.param(lambda L: L.Dense(3, activation="tanh"), id="Dense"),
    pytest.param(lambda L: L.BatchNormalization(), id="BatchNormalization"),
])
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_time_distributed_matches_keras(inner, training):
    x, _ = _data(12)
    k_layer, l_layer = _twins(lambda L: L.TimeDistributed(inner(L)), x)
    _assert_close(l_layer(x, training=training), k_layer(x, training=training))
    _assert_close(l_layer.get_weights(), k_layer.get_weights())   # moving statistics too


# ---- functional models, jit, config -----------------------------------------

def test_functional_stack_under_jit_matches_keras():
    def build(lib):
        inputs = lib.Input((STEPS, FEATURES))
        h = lib.layers.Masking(0.0)(inputs)
        h = lib.layers.Bidirectional(lib.layers.GRU(4, return_sequences=True))(h)
        h = lib.layers.LSTM(3, return_sequences=True)(h)
        h = lib.layers.TimeDistributed(lib.layers.Dense(2))(h)
        return lib.Model(inputs, h)
    x, mask = _data(13)
    x[~mask] = 0.0
    l_model = build(loopax)
    with _keras_weights_as_zeros():
        k_model = build(keras)
    k_model.set_weights(l_model.get_weights())
    _assert_close(jax.jit(lambda x: l_model(x))(x), k_model(x))


@pytest.mark.parametrize("make", [
    pytest.param(lambda L: L.LSTM(UNITS, dropout=0.1, return_sequences=True, go_backwards=True,
                                  kernel_regularizer="l2", recurrent_constraint="non_neg"),
                 id="LSTM"),
    pytest.param(lambda L: L.GRU(UNITS, reset_after=False, recurrent_activation="hard_sigmoid",
                                 stateful=True, unroll=True), id="GRU"),
    pytest.param(lambda L: L.SimpleRNN(UNITS, use_bias=False, return_state=True), id="SimpleRNN"),
    pytest.param(lambda L: L.RNN([L.LSTMCell(2), L.GRUCell(3)], return_sequences=True),
                 id="RNN-stacked"),
    pytest.param(lambda L: L.Bidirectional(L.LSTM(UNITS), merge_mode="sum"), id="Bidirectional"),
    pytest.param(lambda L: L.TimeDistributed(L.Dense(3)), id="TimeDistributed"),
])
def test_config_round_trip_and_keys_match_keras(make):
    l_layer, k_layer = make(layers), make(keras.layers)
    config = l_layer.get_config()
    assert set(config) >= set(k_layer.get_config())
    if not any(key in config for key in ("cell", "layer")):
        # Keras reads flat configs; nested layer entries would need Keras's
        # "module" key, which loopax's serializer does not write.
        keras_copy = type(k_layer).from_config(config)
        assert keras_copy.get_config().keys() == k_layer.get_config().keys()
    again = type(l_layer).from_config(config)
    assert again.get_config() == config
    x, _ = _data(14)
    l_layer.build(x.shape)
    again.build(x.shape)
    again.set_weights(l_layer.get_weights())
    _assert_close(jax.tree_util.tree_leaves(again(x)), jax.tree_util.tree_leaves(l_layer(x)))


def test_model_with_lstm_saves_and_loads(tmp_path):
    model = loopax.Sequential([loopax.Input((STEPS, FEATURES)),
                               layers.Bidirectional(layers.LSTM(4, return_sequences=True)),
                               layers.GRU(3), layers.Dense(1)])
    x, _ = _data(15)
    path = str(tmp_path / "rnn.keras")
    model.save(path)
    loaded = loopax.models.load_model(path)
    _assert_close(loaded(x), model(x))


# ---- errors -------------------------------------------------------------------

def test_two_dimensional_input_is_refused_with_the_shape():
    with pytest.raises(ValueError, match=r"'my_lstm'.*\(batch, timesteps, features\).*\(3, 4\)"):
        layers.LSTM(2, name="my_lstm")(np.zeros((3, 4), "float32"))
    with pytest.raises(ValueError, match=r"'my_gru'.*\(batch, timesteps, features\)"):
        layers.GRU(2, name="my_gru")(loopax.Input((4,)))


def test_initial_state_of_wrong_count_or_shape_is_refused():
    x, _ = _data()
    layer = layers.LSTM(UNITS, name="lstm_init")
    with pytest.raises(ValueError, match=r"'lstm_init'.*2 array\(s\).*got 1"):
        layer(x, initial_state=[np.zeros((BATCH, UNITS), "float32")])
    with pytest.raises(ValueError, match=r"'lstm_init'.*\(3, 6\).*\(3, 5\)"):
        layer(x, initial_state=[np.zeros((BATCH, 5), "float32")] * 2)


def test_cell_without_state_size_is_refused():
    class NoState(layers.Layer):
        def call(self, inputs, states):
            return inputs, states
    with pytest.raises(ValueError, match="NoState must have a `state_size`"):
        layers.RNN(NoState())
    with pytest.raises(ValueError, match="state_size"):
        layers.StackedRNNCells([layers.LSTMCell(2), NoState()])


def test_bad_merge_mode_and_stateful_without_batch_size_are_refused():
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="stateful=True.*batch size"):
        layers.LSTM(2, stateful=True)(loopax.Input((STEPS, FEATURES)))


def test_unit_forget_bias_keeps_the_bias_initializer_and_dtype():
    """The forget gate's block is ones; the other three blocks are the bias
    initializer's draws in Keras's order (the input gate's, then the cell's and the
    output gate's in one draw), in the layer's dtype."""
    layer = layers.LSTM(UNITS, bias_initializer=loopax.initializers.RandomNormal(seed=3),
                        dtype="float16")
    layer.build((2, 5, 3))
    bias = np.asarray(layer.cell.bias.value)
    base = loopax.initializers.RandomNormal(seed=3)
    expected = np.concatenate([np.asarray(base((UNITS,), "float16")), np.ones(UNITS),
                               np.asarray(base((2 * UNITS,), "float16"))])
    assert bias.dtype == np.float16 and np.all(bias[UNITS:2 * UNITS] == 1)
    np.testing.assert_array_equal(bias, expected.astype(np.float16))


def test_the_forget_gate_bias_is_joined_without_a_compiled_program(count_compiles):
    """On the device it compiled a `broadcast_in_dim` and a `concatenate` for each new
    layer size (0.04 s of an LSTM script's first build)."""
    with count_compiles() as compiled:
        layers.LSTM(13).build((2, 5, 3))   # a size no other test builds
    assert not [name for name in compiled if "concatenate" in name or "broadcast" in name]
