"""layers.Pipeline against Keras's: a preprocessing chain on arrays and inside
a model, `training` and masks passed on, get_config round trips both ways."""



import numpy as np
import pytest

import loopax
from loopax import layers

keras = pytest.importorskip("keras")

IMAGES = np.random.default_rng(0).uniform(0, 255, (4, 8, 10, 3)).astype("float32")


def _chain(lib):
    """Rescaling -> Normalization (adapted on the rescaled images) -> CenterCrop."""
    normalization = lib.layers.Normalization()
    normalization.adapt(IMAGES / 255.0)
    return lib.layers.Pipeline([lib.layers.Rescaling(1 / 255.0), normalization,
                                lib.layers.CenterCrop(4, 6)], name="prep")


def test_chain_on_arrays_matches_keras():
    ours, theirs = _chain(loopax), _chain(keras)
    assert [w.path for w in ours.weights] == [w.path for w in theirs.weights]
    assert [type(layer).__name__ for layer in ours.layers] == \
        ["Rescaling", "Normalization", "CenterCrop"]
    want = np.asarray(theirs(IMAGES))
    np.testing.assert_allclose(np.asarray(ours(IMAGES)), want, rtol=1e-5, atol=1e-5)
    assert ours.compute_output_shape((None, 8, 10, 3)) == (None, 4, 6, 3)
    # Inputs are not cast: each layer casts its own (Rescaling makes uint8 float32).
    pixels = IMAGES.astype("uint8")
    assert ours(pixels).dtype == theirs(pixels).dtype == "float32"
    np.testing.assert_allclose(np.asarray(ours(pixels)), np.asarray(theirs(pixels)),
                               rtol=1e-5, atol=1e-5)


def _model(lib, pipeline):
    inputs = lib.Input((8, 10, 3))
    outputs = lib.layers.Dense(2)(lib.layers.Flatten()(pipeline(inputs)))
    return lib.Model(inputs, outputs)


def test_in_a_model_matches_keras_and_trains_around_the_frozen_statistics():
    ours, theirs = _model(loopax, _chain(loopax)), _model(keras, _chain(keras))
    ours.set_weights([np.asarray(w.value) for w in theirs.weights])
    np.testing.assert_allclose(ours.predict(IMAGES, verbose=0),
                               theirs.predict(IMAGES, verbose=0), rtol=1e-5, atol=1e-5)
    statistics = [w.numpy().copy() for w in ours.layers[1].weights]
    ours.compile("sgd", "mse")
    ours.fit(IMAGES, np.zeros((4, 2), "float32"), epochs=1, verbose=0)
    for before, after in zip(statistics, ours.layers[1].weights):
        np.testing.assert_array_equal(before, after.numpy())


def test_training_defaults_to_true_and_is_passed_on():
    flips = IMAGES[:, :, ::-1]
    for lib in (loopax, keras):
        pipeline = lib.layers.Pipeline([lib.layers.RandomFlip("horizontal", seed=1)])
        out = np.asarray(pipeline(IMAGES))                  # random flips act
        flipped = [np.array_equal(o, f) for o, f in zip(out, flips)]
        kept = [np.array_equal(o, x) for o, x in zip(out, IMAGES)]
        assert all(a != b for a, b in zip(flipped, kept)), lib.__name__
        np.testing.assert_array_equal(np.asarray(pipeline(IMAGES, training=False)), IMAGES)
    model = _model(loopax, layers.Pipeline([layers.RandomFlip("horizontal", seed=1)]))
    dense = model.layers[-1]
    expected = IMAGES.reshape(4, -1) @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(model.predict(IMAGES, verbose=0), expected, rtol=1e-4, atol=1e-4)


def test_a_mask_is_passed_on_as_in_keras():
    steps = np.random.default_rng(1).normal(size=(2, 5, 3)).astype("float32")
    steps[0, 3:] = 0.0   # padding: masked by Masking, left out of the mean
    ours, theirs = (lib.layers.Pipeline([lib.layers.Masking(0.0),
                                         lib.layers.GlobalAveragePooling1D()])
                    for lib in (loopax, keras))
    np.testing.assert_allclose(np.asarray(ours(steps)), np.asarray(theirs(steps)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ours(steps))[0], steps[0, :3].mean(0), rtol=1e-6)


def test_config_round_trips_and_reads_keras_config():
    ours, theirs = _chain(loopax), _chain(keras)
    ours(IMAGES)   # built: its serialized form carries the build shape
    config = ours.get_config()
    assert set(config) == set(theirs.get_config()) == {"name", "layers"}
    again = layers.Pipeline.from_config(config)
    assert again.get_config() == config and again.name == "prep"
    copy = layers.deserialize(layers.serialize(ours))
    copy.set_weights(ours.get_weights())
    np.testing.assert_array_equal(np.asarray(copy(IMAGES)), np.asarray(ours(IMAGES)))
    from_keras = layers.deserialize(keras.layers.serialize(theirs))
    assert [type(layer) for layer in from_keras.layers] == [type(layer) for layer in ours.layers]
    from_keras.build((None, 8, 10, 3))
    from_keras.set_weights([np.asarray(w.value) for w in theirs.weights])
    np.testing.assert_allclose(np.asarray(from_keras(IMAGES)), np.asarray(theirs(IMAGES)),
                               rtol=1e-5, atol=1e-5)


def test_an_empty_pipeline_is_the_identity():
    np.testing.assert_array_equal(np.asarray(layers.Pipeline([])(IMAGES)), IMAGES)


@pytest.mark.parametrize("make,error,match", [
    (lambda: layers.Pipeline(layers.Rescaling(2.0)), TypeError,
     "Pipeline: `layers` must be a list of loopax layers, got <Rescaling"),
    (lambda: layers.Pipeline([layers.Rescaling(2.0), 3]), TypeError, "list of loopax layers"),
    (lambda: layers.Pipeline.from_config({"layers": 3}), ValueError,
     "Pipeline.from_config: `layers` must be a list of serialized layers, got 3"),
], ids=["a-layer-not-a-list", "not-a-layer", "config-without-a-list"])
def test_bad_arguments_are_refused(make, error, match):
    with pytest.raises(error, match=match):
        make()



def test_build_builds_every_layer_on_the_shape_before_it():
    """As documented (Keras's Pipeline.build leaves them to their first call): also
    the layers whose `compute_output_shape` is a closed form, which builds nothing."""
    pipeline = loopax.layers.Pipeline([loopax.layers.Rescaling(0.5),
                                       loopax.layers.Reshape((2, 2)), loopax.layers.Dense(3)])
    pipeline.build((None, 4))
    assert all(layer.built for layer in pipeline.layers)
    assert [w.shape for w in pipeline.weights] == [(2, 3), (3,)]
