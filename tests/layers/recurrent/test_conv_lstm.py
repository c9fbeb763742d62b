"""ConvLSTM1D/2D/3D against Keras itself: identical weights (copied from the
Keras layer), same inputs -> same outputs, states and gradients."""



import jax
import jax.numpy as jnp
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


# One case per rank; together they cover valid/same padding, strides,
# dilation, channels_first, go_backwards, return_sequences/return_state,
# no bias, other activations and a batch of one.
CASES = {
    "1d-valid": ("ConvLSTM1D", dict(filters=3, kernel_size=3), (2, 4, 7, 2)),
    "1d-batch-of-1-no-bias-dropout": ("ConvLSTM1D", dict(
        filters=2, kernel_size=2, use_bias=False, activation="relu",
        recurrent_activation="hard_sigmoid", return_sequences=True, dropout=0.3,
        recurrent_dropout=0.3), (1, 3, 5, 3)),   # (no dropout at inference)
    "2d-same-strides-backwards-channels-first-sequences-state": ("ConvLSTM2D", dict(
        filters=3, kernel_size=(3, 2), strides=2, padding="same", go_backwards=True,
        data_format="channels_first", return_sequences=True, return_state=True),
        (2, 4, 2, 7, 6)),
    "3d-dilation-sequences": ("ConvLSTM3D", dict(
        filters=2, kernel_size=2, dilation_rate=(1, 2, 1), return_sequences=True),
        (2, 3, 4, 5, 4, 2)),
}


@pytest.mark.parametrize("name,kwargs,shape", CASES.values(), ids=CASES.keys())
def test_matches_keras(name, kwargs, shape):
    k_layer, l_layer, x = _twins(name, kwargs, shape)
    assert [v.path for v in l_layer.weights] == [v.path for v in k_layer.weights]
    # Keras jitted: eagerly its scan and small ops compile anew on each call.
    _assert_close(l_layer(x), jax.jit(k_layer)(x))


@pytest.mark.parametrize("name,kwargs,shape", [
    ("ConvLSTM2D", dict(filters=2, kernel_size=2, dilation_rate=2, go_backwards=True,
                        data_format="channels_first"), (2, 3, 1, 6, 5))],
    ids=["2d-dilation-backwards-channels-first"])
def test_gradients_match_keras(name, kwargs, shape):
    k_layer, l_layer, x = _twins(name, kwargs, shape, seed=1)

    def grads(layer):
        others = [v.value for v in layer.non_trainable_variables]

        def loss(weights, x):
            y, _ = layer.stateless_call(weights, others, x)
            return sum(jnp.sum(jnp.sin(t)) for t in _as_list(y))
        return jax.jit(jax.grad(loss, argnums=(0, 1)))(
            [v.value for v in layer.trainable_variables], jnp.asarray(x))
    _assert_close(jax.tree_util.tree_leaves(grads(l_layer)),
                  jax.tree_util.tree_leaves(grads(k_layer)))


def test_default_data_format_follows_the_global_one_as_keras():
    """`data_format=None` is `config.image_data_format()`, read at construction."""
    for lib in (loopax, keras):
        lib.config.set_image_data_format("channels_first")
    try:
        k_layer, l_layer, x = _twins("ConvLSTM2D", dict(filters=2, kernel_size=(3, 2),
                                                        return_sequences=True), (2, 3, 2, 6, 5))
        assert l_layer.data_format == l_layer.cell.data_format == "channels_first"
        _assert_close(l_layer(x), jax.jit(k_layer)(x))   # (2, 3, 2, 4, 4)
    finally:
        for lib in (loopax, keras):
            lib.config.set_image_data_format("channels_last")


def test_initial_state_matches_keras():
    k_layer, l_layer, x = _twins("ConvLSTM2D", dict(filters=3, kernel_size=3, padding="same",
                                                    return_state=True), (2, 3, 4, 5, 2))
    rng = np.random.default_rng(3)
    init = [rng.normal(size=(2, 4, 5, 3)).astype("float32") for _ in range(2)]
    _assert_close(l_layer(x, initial_state=init), k_layer(x, initial_state=init))
    with pytest.raises(ValueError, match=r"initial_state.*\(2, 4, 5, 3\)"):
        l_layer(x, initial_state=[init[0][:, :3]] * 2)


def test_unit_forget_bias_and_config_match_keras():
    kwargs = dict(filters=3, kernel_size=(2, 3), strides=(1, 2), padding="same",
                  recurrent_dropout=0.2, seed=3, return_sequences=True, **FAST_INIT)
    k_layer, l_layer = keras.layers.ConvLSTM2D(**kwargs), layers.ConvLSTM2D(**kwargs)
    k_layer.build((2, 3, 6, 6, 2))
    l_layer.build((2, 3, 6, 6, 2))
    np.testing.assert_array_equal(np.asarray(l_layer.cell.bias.value),
                                  np.asarray(k_layer.cell.bias.value))   # [0, 1, 0, 0] blocks
    assert [v.shape for v in l_layer.weights] == [tuple(v.shape) for v in k_layer.weights]
    config = l_layer.get_config()
    assert set(config) == set(k_layer.get_config())
    assert type(k_layer).from_config(config).get_config().keys() == config.keys()
    again = layers.ConvLSTM2D.from_config(config)
    assert again.get_config() == config
    assert (again.filters, again.kernel_size, again.strides) == (3, (2, 3), (1, 2))
    assert type(layers.deserialize(layers.serialize(l_layer))) is layers.ConvLSTM2D


@pytest.mark.parametrize("make,match", [
    (lambda: layers.ConvLSTM2D(2, 3, strides=2, dilation_rate=2), "ConvLSTM2D: `strides` > 1"),
    (lambda: layers.ConvLSTM1D(2, 3, padding="causal"), "ConvLSTM1D: `padding` must be"),
    (lambda: layers.ConvLSTM3D(0, 3), "ConvLSTM3D: `filters` must be a positive int"),
    (lambda: layers.ConvLSTM2D(2, (3, 3, 3)), "ConvLSTM2D: `kernel_size` must be an int or "
                                              "a tuple of 2"),
    (lambda: layers.ConvLSTM1D(2, 3, dropout="0.1"), "`dropout` must be a number"),
], ids=["strides-and-dilation", "causal", "filters", "kernel_size", "dropout"])
def test_bad_arguments_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_inputs_are_refused_with_the_shape():
    with pytest.raises(ValueError, match=r"'clstm'.*rank 5, \(batch, timesteps, \*spatial, "
                                         r"channels\).*\(2, 3, 4, 1\)"):
        layers.ConvLSTM2D(2, 3, name="clstm")(np.zeros((2, 3, 4, 1), "float32"))
    with pytest.raises(ValueError, match=r"`kernel_size` \(5,\) is larger than.*\(3,\)"):
        layers.ConvLSTM1D(2, 5)(np.zeros((2, 3, 3, 1), "float32"))
    with pytest.raises(ValueError, match="stateful=True.*batch size"):
        layers.ConvLSTM1D(2, 3, stateful=True)(loopax.Input((3, 6, 1)))
