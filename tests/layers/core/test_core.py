"""Core layers against NumPy / hand-written JAX references."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from layer_checks import (
    assert_trees_close,
    check_stateless_matches_stateful,
    grads_through_stateless_call,
    reference_grads,
)

import loopax
from loopax import layers
from loopax.src.naming import clear_session

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


# ---- Dense ----------------------------------------------------------------

def test_dense_output_matches_numpy():
    x = randn(3, 4)
    layer = layers.Dense(5, activation="tanh", bias_initializer="random_normal")
    out = check_stateless_matches_stateful(layer, x)
    k, b = layer.get_weights()
    np.testing.assert_allclose(out, np.tanh(x @ k + b), rtol=1e-5, atol=1e-6)
    assert k.shape == (4, 5) and b.shape == (5,)


def test_dense_applies_to_last_axis_of_rank3_input():
    x = randn(2, 3, 4)
    layer = layers.Dense(6, use_bias=False)
    out = layer(x)
    assert layer.bias is None and len(layer.weights) == 1
    np.testing.assert_allclose(out, np.einsum("btd,du->btu", x, layer.kernel.numpy()),
                               rtol=1e-5, atol=1e-6)


def test_dense_gradients_match_closed_form():
    x, g = randn(3, 4), randn(3, 2)
    layer = layers.Dense(2)
    layer(x)
    (dk, db), dx = grads_through_stateless_call(layer, x, g)
    k = layer.kernel.numpy()
    # y = x k + b: dk = xᵀ g, db = Σ_batch g, dx = g kᵀ.
    np.testing.assert_allclose(dk, x.T @ g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db, g.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, g @ k.T, rtol=1e-5, atol=1e-5)


def test_dense_gradient_through_activation_matches_reference():
    x, g = randn(3, 4), randn(3, 2)
    layer = layers.Dense(2, activation="sigmoid")
    layer(x)
    got = grads_through_stateless_call(layer, x, g)
    want = reference_grads(lambda p, x: 1 / (1 + jnp.exp(-(x @ p[0] + p[1]))),
                           [layer.kernel.value, layer.bias.value], x, g)
    assert_trees_close(got, want)


def test_dense_names_and_paths_are_keras_like():
    clear_session()
    a, b = layers.Dense(2), layers.Dense(2)
    a(randn(1, 3)), b(randn(1, 3))
    assert (a.name, b.name) == ("dense", "dense_1")
    assert [v.path for v in b.weights] == ["dense_1/kernel", "dense_1/bias"]


def test_dense_wrong_feature_size_names_layer_and_shapes():
    layer = layers.Dense(2, name="head")
    layer(randn(2, 4))
    with pytest.raises(ValueError) as err:
        layer(randn(2, 5))
    msg = str(err.value)
    assert "'head'" in msg and "(2, 5)" in msg and "4" in msg


def test_dense_rank1_input_asks_for_batch_axis():
    layer = layers.Dense(2)
    with pytest.raises(ValueError, match="rank >= 2"):
        layer(randn(4))


def test_dense_symbolic_call_shape():
    x = loopax.Input(shape=(7, 4))
    y = layers.Dense(3)(x)
    assert y.shape == (None, 7, 3)


def test_compute_output_shape_keeps_unknown_sizes():
    assert layers.Dense(3).compute_output_shape((None, 5, 4)) == (None, 5, 3)
    assert layers.Reshape((2, -1)).compute_output_shape((None, 6)) == (None, 2, 3)
    assert layers.Concatenate().compute_output_shape([(None, 4), (None, 2)]) == (None, 6)


def test_dense_unknown_activation_lists_valid_names():
    with pytest.raises(ValueError, match="relu"):
        layers.Dense(2, activation="relux")


def test_dense_constraint_and_regularizer_are_attached():
    layer = layers.Dense(2, kernel_constraint="non_neg", kernel_regularizer="l1")
    layer(randn(1, 3))
    w = np.array([[-1.0, 2.0]] * 3, "float32")
    np.testing.assert_array_equal(layer.kernel.constraint(w), np.maximum(w, 0))
    layer.kernel.assign(w)
    np.testing.assert_allclose(layer.losses[0], 0.01 * np.abs(w).sum(), rtol=1e-6)


# ---- Activation ------------------------------------------------------------

def test_activation_layer():
    x = randn(2, 3)
    np.testing.assert_allclose(layers.Activation("relu")(x), np.maximum(x, 0))
    np.testing.assert_allclose(layers.Activation(lambda t: 2 * t)(x), 2 * x)


# ---- Dropout ---------------------------------------------------------------

def test_dropout_is_identity_unless_training():
    x = randn(4, 5)
    layer = layers.Dropout(0.5, seed=1)
    np.testing.assert_array_equal(layer(x), x)
    np.testing.assert_array_equal(layer(x, training=False), x)
    state = layer.seed_generator.state.numpy().copy()
    layer(x)
    np.testing.assert_array_equal(layer.seed_generator.state.numpy(), state)


def test_dropout_training_zeroes_and_rescales():
    x = np.ones((50, 40), "float32")
    layer = layers.Dropout(0.25, seed=3)
    y = np.asarray(layer(x, training=True))
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.05
    # A second call draws a new mask.
    assert not np.array_equal(y, np.asarray(layer(x, training=True)))


def test_dropout_seed_state_is_a_non_trainable_variable_returned_by_stateless_call():
    x = np.ones((6, 8), "float32")
    layer = layers.Dropout(0.5, seed=7)
    layer.build(x.shape)
    assert layer.trainable_variables == []
    assert layer.non_trainable_variables == [layer.seed_generator.state]
    out = check_stateless_matches_stateful(layer, x, training=True)
    assert (np.asarray(out) == 0).any()
    # Same seed, same masks.
    again = layers.Dropout(0.5, seed=7)
    np.testing.assert_array_equal(again(x, training=True), out)


def test_dropout_inside_jit_through_stateless_call_advances_state():
    x = np.ones((4, 6), "float32")
    layer = layers.Dropout(0.5, seed=0)
    layer.build(x.shape)
    step = jax.jit(lambda nt, x: layer.stateless_call([], nt, x, training=True))
    nt = [layer.seed_generator.state.value]
    y1, nt = step(nt, x)
    y2, nt = step(nt, x)
    assert not np.array_equal(y1, y2)


def test_dropout_noise_shape_shares_the_mask():
    x = np.ones((3, 5, 4), "float32")
    y = np.asarray(layers.Dropout(0.5, noise_shape=(None, 1, 4), seed=2)(x, training=True))
    assert (y == y[:, :1, :]).all()


def test_dropout_rate_checked():
    with pytest.raises(ValueError, match="rate"):
        layers.Dropout(1.5)


# ---- Flatten, Reshape, Identity --------------------------------------------

def test_flatten():
    x = randn(2, 3, 4)
    np.testing.assert_array_equal(layers.Flatten()(x), x.reshape(2, 12))
    np.testing.assert_array_equal(layers.Flatten(data_format="channels_first")(x),
                                  x.transpose(0, 2, 1).reshape(2, 12))
    assert layers.Flatten()(loopax.Input(shape=(3, 4))).shape == (None, 12)


def test_reshape():
    x = randn(2, 12)
    np.testing.assert_array_equal(layers.Reshape((3, 4))(x), x.reshape(2, 3, 4))
    np.testing.assert_array_equal(layers.Reshape((-1, 2))(x), x.reshape(2, 6, 2))
    assert layers.Reshape((4, -1))(loopax.Input(shape=(12,))).shape == (None, 4, 3)
    with pytest.raises(ValueError, match="cannot reshape"):
        layers.Reshape((5,))(x)


def test_identity():
    x = randn(2, 3)
    np.testing.assert_array_equal(layers.Identity()(x), x)


def test_a_weight_too_large_for_memory_raises_before_allocating():
    # Aborted the interpreter (SIGABRT inside XLA) before the size check.
    with pytest.raises(MemoryError, match=r"Layer 'huge' \(Dense\).*'kernel' of shape "
                                          r"\(1000000, 1000000\).*4,000,000,000,000 bytes"):
        layers.Dense(10 ** 6, name="huge")(np.ones((1, 10 ** 6), "float32"))


def test_the_weight_size_check_uses_the_free_memory(monkeypatch):
    from loopax.src.utils import memory_utils
    monkeypatch.setattr(memory_utils, "available_memory_bytes", lambda device=None: 10 ** 6)
    layer = layers.Dense(4097, name="wide")
    with pytest.raises(MemoryError, match=r"'wide'.*\(4096, 4097\).*67,125,248 bytes.*"
                                          r"only 1,000,000 bytes"):
        layer.build((None, 4096))
    layers.Dense(3).build((None, 4))   # small weights are not checked


# ---- Embedding -------------------------------------------------------------

def test_embedding_lookup_and_gradient():
    ids = np.array([[0, 2, 2], [1, 0, 3]])
    layer = layers.Embedding(4, 3)
    out = check_stateless_matches_stateful(layer, ids)
    table = layer.embeddings.numpy()
    np.testing.assert_array_equal(out, table[ids])
    assert layer.embeddings.path.endswith("/embeddings")
    assert np.abs(table).max() <= 0.05  # Keras' "uniform" initializer
    g = randn(2, 3, 3)
    (dtable,) = grads_through_stateless_call(layer, ids, g, argnums=0)
    want = np.zeros((4, 3), "float32")
    np.add.at(want, ids, g)
    np.testing.assert_allclose(dtable, want, rtol=1e-6, atol=1e-6)


def test_embedding_symbolic_and_mask():
    ids = loopax.Input(shape=(5,), dtype="int32")
    assert layers.Embedding(10, 4)(ids).shape == (None, 5, 4)
    mask = layers.Embedding(10, 4, mask_zero=True).compute_mask(np.array([[0, 3]]))
    np.testing.assert_array_equal(mask, [[False, True]])


@pytest.mark.parametrize("ids", [[[0, 4]], [[-1, 2]]], ids=["index-too-large", "index-negative"])
def test_embedding_eager_out_of_range_indices_raise(ids):
    layer = layers.Embedding(4, 3, name="words")
    with pytest.raises(ValueError, match=r"Embedding layer 'words' has input_dim=4.*\[0, 4\)"):
        layer(np.array(ids))


def test_embedding_compiled_out_of_range_indices_match_keras():
    # Traced code is not checked (documented): index >= input_dim gives NaN
    # rows and -1 the last row, as Keras on JAX gives.
    layer = layers.Embedding(4, 3)
    layer.build()
    table = layer.embeddings.numpy()
    out = np.asarray(jax.jit(lambda t, i: layer.stateless_call([t], [], i)[0])(
        table, np.array([[1, 4, -1]])))
    np.testing.assert_array_equal(out[0, 0], table[1])
    np.testing.assert_array_equal(out[0, 2], table[-1])
    assert np.isnan(out[0, 1]).all()
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    reference = keras.layers.Embedding(4, 3)
    reference.build()
    reference.set_weights([table])
    want = np.asarray(jax.jit(lambda i: reference(i))(np.array([[1, 4, -1]])))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(out[~np.isnan(out)], want[~np.isnan(want)])


# ---- ActivityRegularization -------------------------------------------------

def test_activity_regularization_adds_loss():
    x = randn(2, 3)
    layer = layers.ActivityRegularization(l1=0.1, l2=0.5)
    out, _, losses = layer.stateless_call([], [], x, return_losses=True)
    np.testing.assert_array_equal(out, x)
    want = (0.1 * np.abs(x).sum() + 0.5 * np.square(x).sum()) / 2  # per batch sample
    np.testing.assert_allclose(sum(losses), want, rtol=1e-5)
    layer(x)
    np.testing.assert_allclose(sum(layer.losses), want, rtol=1e-5)
