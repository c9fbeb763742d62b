"""tf.saved_model.save/load and tf.lite on loopax.export
(loopax/src/tf_compat/saved_model.py, lite.py): what is saved, what loading
restores, and the errors for what is not loopax's format. Expected values are
closed forms of the saved functions (x * v, a Dense layer's x @ W + b)."""

from __future__ import annotations

import numpy as np
import pytest

import loopax.tf as tf


class _Scaler(tf.Module):
    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(2.0)
        self.offset = tf.Variable([1.0, -1.0], trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def apply(self, x):
        if tf.reduce_sum(x) > 0:          # autograph: saved as a lax.cond
            return x * self.scale + self.offset
        return x - self.offset

    @tf.function
    def untraced(self, x):
        return x


def test_variables_and_functions_are_restored_for_any_batch_size(tmp_path):
    module = _Scaler()
    tf.saved_model.save(module, str(tmp_path / "m"))
    module.scale.assign(100.0)                            # after saving: not in the files
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert float(loaded.scale.numpy()) == 2.0
    np.testing.assert_array_equal(loaded.offset.numpy(), [1.0, -1.0])
    assert [v.trainable for v in loaded.variables] == [True, False]
    assert len(loaded.trainable_variables) == 1
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    np.testing.assert_allclose(loaded.apply(x).numpy(), x * 2.0 + [1.0, -1.0])
    np.testing.assert_allclose(loaded.apply(-x[:1]).numpy(), -x[:1] - [1.0, -1.0])
    assert not hasattr(loaded, "untraced")                # never called, no signature
    with pytest.raises(TypeError, match="not callable"):
        loaded(x)


def test_a_call_outside_the_saved_signatures_names_them(tmp_path):
    tf.saved_model.save(_Scaler(), str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    with pytest.raises(ValueError, match=r"Could not find matching.*apply.*\(None, 2\)"):
        loaded.apply(np.ones((2, 3), np.float32))


def test_nothing_to_save_but_variables_says_what_to_add(tmp_path):
    # TensorFlow saves such a Module's variables (the modules guide does): so does loopax.
    class Plain(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(1.0)

    with pytest.warns(UserWarning, match="input_signature"):
        tf.saved_model.save(Plain(), str(tmp_path / "m"))
    with pytest.raises(TypeError, match="tf.Module or a Keras model"):
        tf.saved_model.save(object(), str(tmp_path / "m"))


def test_loading_a_tensorflow_savedmodel_says_it_is_not_loopax_format(tmp_path):
    (tmp_path / "tf_model").mkdir()
    (tmp_path / "tf_model" / "saved_model.pb").write_bytes(b"\x08\x01")
    with pytest.raises(ValueError, match=r"TensorFlow SavedModel.*does not read TensorFlow"):
        tf.saved_model.load(str(tmp_path / "tf_model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a directory that loopax.tf.saved_model.save"):
        tf.saved_model.load(str(tmp_path / "empty"))


def test_a_damaged_manifest_is_refused(tmp_path):
    tf.saved_model.save(_Scaler(), str(tmp_path / "m"))
    (tmp_path / "m" / "saved_model.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="not a directory that loopax"):
        tf.saved_model.load(str(tmp_path / "m"))
    (tmp_path / "m" / "saved_model.json").write_text("[[[[" * 200)
    with pytest.raises(ValueError, match="saved_model.json"):
        tf.saved_model.load(str(tmp_path / "m"))


def _dense_model():
    model = tf.keras.Sequential([tf.keras.layers.Input((3,)), tf.keras.layers.Dense(2)])
    kernel, bias = model.layers[0].kernel, model.layers[0].bias
    kernel.assign(np.arange(6, dtype=np.float32).reshape(3, 2))
    bias.assign(np.array([0.5, -0.5], np.float32))
    return model


def test_a_keras_model_gets_serve_and_serving_default(tmp_path):
    tf.saved_model.save(_dense_model(), str(tmp_path / "k"))
    loaded = tf.saved_model.load(str(tmp_path / "k"))
    x = np.array([[1.0, 2.0, 3.0]] * 4, np.float32)
    want = x @ np.arange(6, dtype=np.float32).reshape(3, 2) + [0.5, -0.5]
    np.testing.assert_allclose(loaded.serve(x).numpy(), want)
    out = loaded.signatures["serving_default"](inputs=x)
    assert list(out) == ["output_0"]
    np.testing.assert_allclose(out["output_0"].numpy(), want)


def test_tflite_round_trip_and_its_errors():
    content = tf.lite.TFLiteConverter.from_keras_model(_dense_model()).convert()
    interpreter = tf.lite.Interpreter(model_content=content)
    details = interpreter.get_input_details()[0]
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        interpreter.set_tensor(details["index"], np.ones((1, 3), np.float32))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="Dimension mismatch"):
        interpreter.set_tensor(details["index"], np.ones((2, 3), np.float32))
    interpreter.set_tensor(details["index"], np.array([[1.0, 0.0, 2.0]], np.float32))
    interpreter.invoke()
    out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    np.testing.assert_allclose(out, [[0 + 8 + 0.5, 1 + 10 - 0.5]])
    flatbuffer = b"\x1c\x00\x00\x00TFL3" + b"\x00" * 32
    with pytest.raises(ValueError, match="TensorFlow Lite flatbuffer.*tflite_runtime"):
        tf.lite.Interpreter(model_content=flatbuffer)
    with pytest.raises(NotImplementedError, match="from_keras_model"):
        tf.lite.TFLiteConverter.from_saved_model("somewhere")


def test_a_spec_of_unknown_rank_takes_the_rank_the_function_was_called_with(tmp_path):
    class Doubler(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(2.0)

        @tf.function
        def __call__(self, x):
            return x * self.v

    module = Doubler()
    module(tf.constant([1.0, 2.0, 3.0]))      # rank 1, as the guide calls it before saving
    call = module.__call__.get_concrete_function(tf.TensorSpec(None, tf.float32))
    tf.saved_model.save(module, str(tmp_path / "m"), signatures=call)
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded.signatures["serving_default"](x=[4.0, 5.0, 6.0])[
        "output_0"].numpy(), [8.0, 10.0, 12.0])
    untraced = Doubler()
    with pytest.raises(ValueError, match=r"unknown rank.*tf.TensorSpec\(\[None\]"):
        tf.saved_model.save(untraced, str(tmp_path / "u"), signatures=untraced.__call__
                            .get_concrete_function(tf.TensorSpec(None, tf.float32)))


def test_tflite_signature_runner_takes_any_batch_size():
    interpreter = tf.lite.Interpreter(
        model_content=tf.lite.TFLiteConverter.from_keras_model(_dense_model()).convert())
    signatures = interpreter.get_signature_list()
    assert list(signatures) == ["serving_default"]
    assert signatures["serving_default"]["outputs"] == ["output_0"]
    runner = interpreter.get_signature_runner("serving_default")
    assert list(runner.get_output_details()) == ["output_0"]
    x = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]], np.float32)
    name = signatures["serving_default"]["inputs"][0]
    out = runner(**{name: x})["output_0"]
    want = x @ np.arange(6, dtype=np.float32).reshape(3, 2) + [0.5, -0.5]
    np.testing.assert_allclose(out, want)
    np.testing.assert_allclose(runner(keras_tensor_15=x[:1])["output_0"], want[:1])
