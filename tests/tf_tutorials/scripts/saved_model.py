# The SavedModel guide and the Keras save_and_load tutorial, written our own way:
# a tf.Module with tf.functions (one traced by a call, one with an input_signature,
# one that assigns a Variable) and a Keras model, saved, loaded and called.
# Run under loopax.tf by tests/tf_tutorials/test_tut_saved_model.py and, where
# TensorFlow is installed, under `import tensorflow as tf` for the same numbers.
import os
import tempfile

import numpy as np

import loopax.tf as tf

tmpdir = tempfile.mkdtemp()


class CustomModule(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(1.0)

    @tf.function
    def __call__(self, x):
        return x * self.v

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def mutate(self, new_v):
        self.v.assign(new_v)


module = CustomModule()
module(tf.constant(0.0))
path = os.path.join(tmpdir, "module_no_signatures")
tf.saved_model.save(module, path)
imported = tf.saved_model.load(path)
print("call:", imported(tf.constant(3.0)).numpy())
imported.mutate(tf.constant(2.0))
print("after_mutate:", imported(tf.constant(3.0)).numpy(), imported.v.numpy())
print("original_v:", module.v.numpy())
print("no_signatures:", len(imported.signatures))

call = module.__call__.get_concrete_function(tf.TensorSpec([], tf.float32))
signatures = {"serving_default": call,
              "array_input": module.__call__.get_concrete_function(
                  tf.TensorSpec([None], tf.float32))}
path = os.path.join(tmpdir, "module_with_multiple_signatures")
tf.saved_model.save(module, path, signatures=signatures)
imported = tf.saved_model.load(path)
print("signature_keys:", " ".join(sorted(imported.signatures.keys())))
out = imported.signatures["array_input"](x=tf.constant([1.0, 2.0, 3.0]))
print("array_input:", " ".join(sorted(out)), out["output_0"].numpy())
out = imported.signatures["serving_default"](x=tf.constant(5.0))
print("serving_default:", out["output_0"].numpy())


class CustomModuleWithOutputName(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(1.5)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, x):
        return {"custom_output_name": x * self.v}


module_output = CustomModuleWithOutputName()
path = os.path.join(tmpdir, "module_with_output_name")
tf.saved_model.save(module_output, path,
                    signatures={"serving_default": module_output.__call__})
imported = tf.saved_model.load(path)
out = imported.signatures["serving_default"](x=tf.constant([2.0, 4.0]))
print("custom_output_name:", " ".join(sorted(out)), out["custom_output_name"].numpy())
print("loaded_call:", imported(tf.constant([1.0, 2.0]))["custom_output_name"].numpy())

# The Keras tutorial: a trained model saved whole, loaded back, called through its signature.
rng = np.random.default_rng(0)
x_train = rng.normal(size=(64, 8)).astype("float32")
y_train = (x_train.sum(axis=1) > 0).astype("int32")
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([
    tf.keras.layers.Input((8,)),
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dense(2),
])
model.compile(optimizer="adam",
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x_train, y_train, epochs=2, verbose=0)
path = os.path.join(tmpdir, "saved_model", "my_model")
tf.saved_model.save(model, path)
loaded = tf.saved_model.load(path)
print("keras_signatures:", " ".join(loaded.signatures.keys()))
infer = loaded.signatures["serving_default"]
out = infer(inputs=tf.constant(x_train[:5]))
print("keras_outputs:", " ".join(out))
print("keras_same:", bool(np.allclose(out["output_0"].numpy(), np.asarray(model(x_train[:5])),
                                      atol=1e-5)))

converter = tf.lite.TFLiteConverter.from_keras_model(model)
tflite_model = converter.convert()
print("tflite_bytes:", type(tflite_model).__name__)
interpreter = tf.lite.Interpreter(model_content=tflite_model)
interpreter.allocate_tensors()
input_details = interpreter.get_input_details()
output_details = interpreter.get_output_details()
print("tflite_input:", input_details[0]["shape"], input_details[0]["dtype"].__name__)
print("tflite_output:", output_details[0]["shape"])
interpreter.set_tensor(input_details[0]["index"], x_train[:1])
interpreter.invoke()
tflite_out = interpreter.get_tensor(output_details[0]["index"])
print("tflite_same:", bool(np.allclose(tflite_out, np.asarray(model(x_train[:1])), atol=1e-5)))
