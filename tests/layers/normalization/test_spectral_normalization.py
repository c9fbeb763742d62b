"""SpectralNormalization and the Wrapper base class against Keras itself:
the same weights (vector_u included, copied from Keras) give the same
outputs and the same updated kernel and u, eagerly and in `fit`."""



import numpy as np
import pytest

import loopax
from loopax import layers

keras = pytest.importorskip("keras")

RTOL, ATOL = 1e-5, 1e-6


def _assert_all_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=RTOL, atol=ATOL)


def _twins(make, shape, power_iterations=1, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype("float32")
    k_layer = keras.layers.SpectralNormalization(make(keras.layers), name="sn",
                                                 power_iterations=power_iterations)
    l_layer = layers.SpectralNormalization(make(layers), name="sn",
                                           power_iterations=power_iterations)
    k_layer.build(x.shape)
    l_layer.build(x.shape)
    l_layer.set_weights(k_layer.get_weights())
    return k_layer, l_layer, x


WRAPPED = {
    "dense": (lambda L: L.Dense(5, kernel_initializer="random_normal"), (4, 3), 1),
    "conv2d-3-iterations": (lambda L: L.Conv2D(4, 3, kernel_initializer="random_normal"),
                            (2, 6, 6, 2), 3),
    "embedding": (lambda L: L.Embedding(7, 3), None, 2),
}


@pytest.mark.parametrize("make,shape,iterations", WRAPPED.values(), ids=WRAPPED.keys())
def test_training_and_inference_match_keras(make, shape, iterations):
    keras.utils.clear_session()   # Keras's auto-names restart, as loopax's do per test
    if shape is None:   # Embedding: integer inputs
        x = np.array([[1, 2, 6], [0, 3, 3]])
        k_layer = keras.layers.SpectralNormalization(make(keras.layers), name="sn",
                                                     power_iterations=iterations)
        l_layer = layers.SpectralNormalization(make(layers), name="sn",
                                               power_iterations=iterations)
        k_layer(x)
        l_layer(x)
        l_layer.set_weights(k_layer.get_weights())
    else:
        k_layer, l_layer, x = _twins(make, shape, iterations)
    assert [v.path for v in l_layer.weights] == [v.path for v in k_layer.weights]
    assert not l_layer.vector_u.trainable
    _assert_all_close([l_layer(x)], [k_layer(x)])               # inference: kernel as is
    _assert_all_close(l_layer.get_weights(), k_layer.get_weights())
    for _ in range(2):   # training: normalizes the kernel and updates u, in place
        _assert_all_close([l_layer(x, training=True)], [k_layer(x, training=True)])
        _assert_all_close(l_layer.get_weights(), k_layer.get_weights())


def test_normalized_kernel_has_spectral_norm_one():
    _, layer, x = _twins(WRAPPED["dense"][0], (4, 3), power_iterations=30)
    layer(x, training=True)
    assert np.linalg.norm(layer.kernel.numpy(), ord=2) == pytest.approx(1.0, rel=1e-4)


def test_zero_kernel_is_left_unchanged():
    layer = layers.SpectralNormalization(layers.Dense(3, kernel_initializer="zeros"))
    x = np.ones((2, 4), "float32")
    layer.build(x.shape)
    u = layer.vector_u.numpy()
    layer(x, training=True)
    np.testing.assert_array_equal(layer.kernel.numpy(), np.zeros((4, 3)))
    np.testing.assert_array_equal(layer.vector_u.numpy(), u)


def test_fit_matches_keras():
    def model_of(M):
        return M.Sequential([
            M.Input((3,)),
            M.layers.SpectralNormalization(M.layers.Dense(4, activation="tanh"),
                                           power_iterations=2),
            M.layers.Dense(2)])
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 3)).astype("float32")
    y = rng.normal(size=(16, 2)).astype("float32")
    k_model, l_model = model_of(keras), model_of(loopax)
    l_model.set_weights(k_model.get_weights())
    k_model.compile(keras.optimizers.SGD(0.1), "mse")
    l_model.compile(loopax.optimizers.SGD(0.1), "mse")
    k_loss = k_model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    l_loss = l_model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(l_loss, k_loss, rtol=1e-5)
    _assert_all_close(l_model.get_weights(), k_model.get_weights())


def test_config_round_trip_and_saving(tmp_path):
    layer = layers.SpectralNormalization(layers.Dense(3, name="inner"), power_iterations=4)
    config = layer.get_config()
    assert config["power_iterations"] == 4 and config["layer"]["class_name"] == "Dense"
    assert set(config) == set(keras.layers.SpectralNormalization(
        keras.layers.Dense(3), power_iterations=4).get_config())
    again = layers.SpectralNormalization.from_config(config)
    assert again.get_config() == config
    model = loopax.Sequential([loopax.Input((2,)), layer])
    path = str(tmp_path / "spectral.keras")
    model.save(path)
    loaded = loopax.models.load_model(path)
    x = np.ones((1, 2), "float32")
    _assert_all_close(loaded.get_weights(), model.get_weights())
    _assert_all_close([loaded(x)], [model(x)])


def test_wrapper_is_the_base_of_time_distributed_and_spectral_normalization():
    assert issubclass(layers.TimeDistributed, layers.Wrapper)
    assert issubclass(layers.SpectralNormalization, layers.Wrapper)

    class Doubler(layers.Wrapper):
        def call(self, inputs):
            return 2 * self.layer(inputs)
    wrapper = Doubler(layers.Dense(2, kernel_initializer="ones", name="dense_in_wrapper"),
                      name="doubler")
    y = wrapper(np.ones((1, 3), "float32"))
    np.testing.assert_allclose(np.asarray(y), np.full((1, 2), 6.0))
    assert [v.path for v in wrapper.weights] == ["doubler/dense_in_wrapper/kernel",
                                                "doubler/dense_in_wrapper/bias"]
    again = Doubler.from_config(wrapper.get_config())
    assert again.layer.get_config() == wrapper.layer.get_config()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="SpectralNormalization: `power_iterations` must be "
                                         "an int > 0, got 0"):
        layers.SpectralNormalization(layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="SpectralNormalization: `layer` must be a loopax "
                                         "Layer"):
        layers.SpectralNormalization("dense")
    with pytest.raises(ValueError, match="TimeDistributed: `layer` must be a loopax Layer"):
        layers.TimeDistributed(3)
    with pytest.raises(ValueError, match=r"'sn'.*Flatten 'flat' has no `kernel` nor "
                                         r"`embeddings`.*Dense"):
        layers.SpectralNormalization(layers.Flatten(name="flat"), name="sn")(
            np.ones((2, 3), "float32"))
