"""ConvLSTM layers' sequence machinery (stateful states, masks, dropout,
fit, Bidirectional) against Keras, with weights copied from the Keras layer."""



import jax
import numpy as np
import pytest

import loopax
from loopax import layers

keras = pytest.importorskip("keras")

RTOL, ATOL = 1e-5, 1e-6


def _as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _assert_close(got, want):
    got, want = _as_list(got), _as_list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=RTOL, atol=ATOL)


# Weights are drawn with NumPy and copied in: building with Keras's default
# initializers would compile JAX's random kernels for every shape (slow).
FAST_INIT = {"kernel_initializer": "zeros", "recurrent_initializer": "zeros"}


def _twins(name, kwargs, shape, seed=0):
    """(keras layer, loopax layer, x): both built, holding the same random weights."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype("float32")
    kwargs = {**FAST_INIT, "name": "clstm", **kwargs}
    k_layer, l_layer = getattr(keras.layers, name)(**kwargs), getattr(layers, name)(**kwargs)
    k_layer.build(x.shape)
    l_layer.build(x.shape)
    weights = [0.3 * rng.normal(size=w.shape).astype("float32") for w in k_layer.get_weights()]
    k_layer.set_weights(weights)
    l_layer.set_weights(weights)
    return k_layer, l_layer, x


def test_stateful_carries_states_and_resets_like_keras():
    k_layer, l_layer, x = _twins("ConvLSTM1D", dict(filters=3, kernel_size=3, stateful=True,
                                                    return_sequences=True), (2, 4, 7, 2))
    assert len(l_layer.get_weights()) == len(k_layer.get_weights())   # states: not weights
    first = l_layer(x)
    _assert_close(first, k_layer(x))
    second = l_layer(x)
    _assert_close(second, k_layer(x))
    assert not np.allclose(np.asarray(first), np.asarray(second))
    l_layer.reset_states()
    k_layer.reset_states()
    _assert_close(l_layer(x), k_layer(x))


@pytest.mark.parametrize("go_backwards", [False, True], ids=["forwards", "backwards"])
def test_mask_holds_states_and_outputs(go_backwards):
    # Keras 3.15's ConvLSTM fails on a mask (its RNN broadcasts the mask as
    # 2-D), so the reference is Keras on the unmasked prefix of the sequence.
    kwargs = dict(filters=3, kernel_size=3, return_sequences=True, return_state=True)
    k_layer, l_layer, x = _twins("ConvLSTM1D", kwargs, (2, 4, 7, 2))
    mask = np.array([[True, True, False, False], [True] * 4])
    y, h, c = l_layer(x, mask=mask)
    keras_call = jax.jit(k_layer)   # eagerly, Keras's scan compiles anew on each call
    _assert_close([y[1], h[1], c[1]], [t[1] for t in keras_call(x)])
    if go_backwards:
        return
    y_prefix, h_prefix, c_prefix = keras_call(x[:1, :2])
    _assert_close([y[0, :2], h[0], c[0]], [y_prefix[0], h_prefix[0], c_prefix[0]])
    _assert_close([y[0, 2], y[0, 3]], [y_prefix[0, 1], y_prefix[0, 1]])   # held output


def test_dropout_is_seeded_per_gate_and_only_in_training():
    kwargs = dict(filters=3, kernel_size=3, dropout=0.5, recurrent_dropout=0.5, seed=7)
    _, l_layer, x = _twins("ConvLSTM1D", kwargs, (2, 4, 7, 2))
    trained = l_layer(x, training=True)
    assert not np.allclose(np.asarray(trained), np.asarray(l_layer(x)))
    again = layers.ConvLSTM1D(**FAST_INIT, **kwargs)
    again.build(x.shape)
    again.set_weights(l_layer.get_weights())
    _assert_close(again(x, training=True), trained)
    input_masks, recurrent_masks = l_layer.cell.draw_dropout_masks(2, None, training=True)
    assert input_masks.shape == (4, 2, 7, 2) and recurrent_masks.shape == (4, 2, 5, 3)
    assert not np.array_equal(np.asarray(input_masks[0]), np.asarray(input_masks[1]))
    assert set(np.unique(np.asarray(input_masks))) <= {0.0, 2.0}


def test_fit_with_dropout_and_saving(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3, 6, 1)).astype("float32")
    y = x.mean(axis=(1, 2))
    model = loopax.Sequential([
        loopax.Input((3, 6, 1)),
        layers.ConvLSTM1D(2, 3, padding="same", dropout=0.1, recurrent_dropout=0.1, seed=0,
                          **FAST_INIT),
        layers.GlobalAveragePooling1D(), layers.Dense(1)])
    model.compile("adam", "mse")
    history = model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    path = str(tmp_path / "conv_lstm.keras")
    model.save(path)
    _assert_close(loopax.models.load_model(path)(x), model(x))


def test_bidirectional_conv_lstm_matches_keras():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 5, 2)).astype("float32")
    make = lambda L: L.Bidirectional(L.ConvLSTM1D(2, 3, return_sequences=True, **FAST_INIT))
    k_layer, l_layer = make(keras.layers), make(layers)
    k_layer.build(x.shape)
    l_layer.build(x.shape)
    l_layer.set_weights(k_layer.get_weights())
    _assert_close(l_layer(x), jax.jit(k_layer)(x))
