"""loopax.export: a model's inference function written as StableHLO and run back
from the file gives the model's own outputs, for any batch size; the
variables are the values at write time; and the errors name the fix.
(Keras's ExportArchive writes TF SavedModels, which need TensorFlow, so the
reference here is the model itself.)"""

import zipfile

import numpy as np
import pytest

pytest.importorskip("flatbuffers")

import loopax
from loopax import layers

rng = np.random.default_rng(5)
X = rng.standard_normal((7, 4)).astype("float32")


def small_model():
    inputs = loopax.Input((4,))
    h = layers.Dense(5, activation="relu")(inputs)
    h = layers.BatchNormalization()(h)
    h = layers.Dropout(0.5)(h)
    model = loopax.Model(inputs, layers.Dense(2)(h))
    model.compile("adam", "mse")
    model.fit(X, rng.standard_normal((7, 2)).astype("float32"), epochs=2, verbose=0)
    return model


def test_model_endpoint_runs_back_with_the_models_outputs_for_any_batch(tmp_path):
    model = small_model()
    archive = loopax.export.ExportArchive()
    archive.track_and_add_endpoint("serve", model)
    path = str(tmp_path / "model.export")
    archive.write_out(path, verbose=False)
    reloaded = loopax.export.load(path)
    assert reloaded.endpoints == ["serve"]
    for batch in (7, 3, 1):
        np.testing.assert_allclose(np.asarray(reloaded.serve(X[:batch])),
                                   model.predict(X[:batch], verbose=0), rtol=1e-6, atol=1e-6)


def test_custom_endpoints_with_several_inputs_outputs_and_a_collection(tmp_path):
    a, b = loopax.Input((4,)), loopax.Input((3,))
    dense = layers.Dense(2)
    merged = layers.Concatenate()([dense(a), b])
    model = loopax.Model([a, b], layers.Dense(1)(merged))
    y = rng.standard_normal((7, 3)).astype("float32")
    archive = loopax.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("scores", lambda x, z: {"score": model([x, z]), "sum": x.sum(-1)},
                         input_signature=[loopax.Input((4,)), loopax.Input((3,))])
    archive.add_endpoint("fixed", lambda inputs: model(inputs),
                         input_signature=[[np.zeros((2, 4), "float32"),
                                           np.zeros((2, 3), "float32")]])
    archive.add_variable_collection("kernels", [dense.kernel])
    path = str(tmp_path / "two.export")
    archive.write_out(path, verbose=False)
    reloaded = loopax.export.load(path)
    out = reloaded.scores(X, y)
    np.testing.assert_allclose(np.asarray(out["score"]), np.asarray(model([X, y])), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out["sum"]), X.sum(-1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(reloaded.fixed([X[:2], y[:2]])),
                               np.asarray(model([X[:2], y[:2]])), rtol=1e-6)
    np.testing.assert_array_equal(reloaded.kernels[0], np.asarray(dense.kernel.value))


def test_the_file_holds_the_values_at_write_time(tmp_path):
    model = small_model()
    archive = loopax.export.ExportArchive()
    archive.track_and_add_endpoint("serve", model)
    path = str(tmp_path / "m.export")
    archive.write_out(path, verbose=False)
    before = model.predict(X, verbose=0)
    model.set_weights([w + 1 for w in model.get_weights()])
    np.testing.assert_allclose(np.asarray(loopax.export.load(path).serve(X)), before,
                               rtol=1e-6, atol=1e-6)
    archive.write_out(path, verbose=False)   # the same endpoint, the new values
    np.testing.assert_allclose(np.asarray(loopax.export.load(path).serve(X)),
                               model.predict(X, verbose=0), rtol=1e-6, atol=1e-6)


def test_an_untracked_variable_is_named_in_the_error():
    model = small_model()
    archive = loopax.export.ExportArchive()
    with pytest.raises(ValueError, match=r"reads variable .*kernel.*archive\.track"):
        archive.add_endpoint("serve", model, input_signature=[loopax.Input((4,))])


@pytest.mark.parametrize("call, message", [
    pytest.param(lambda a: a.add_endpoint("not a name", abs, [np.zeros(2)]), "identifier",
                 id="bad-name"),
    pytest.param(lambda a: a.add_endpoint("serve", abs), "input_signature", id="no-signature"),
    pytest.param(lambda a: a.write_out("unused.export"), "add an endpoint", id="no-endpoint"),
])
def test_archive_misuse_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call(loopax.export.ExportArchive())


def test_load_refuses_a_file_that_is_not_an_export_archive(tmp_path):
    path = str(tmp_path / "other.zip")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", "{}")
    with pytest.raises(ValueError, match="not a loopax export archive"):
        loopax.export.load(path)
