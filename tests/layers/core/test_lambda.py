"""Lambda against Keras 3.15's (models with the same weights and functions
written once for both libraries), in Sequential, functional and subclassed
models, fit(), jax.jit and GradientTape; and its saving rule: the config names
the function, never holds code, and loading an unknown function is a clear
error."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("the Keras reference runs on its JAX backend", allow_module_level=True)

import loopax  # noqa: E402
from loopax import layers, ops  # noqa: E402
from loopax.saving import load_model, register_keras_serializable  # noqa: E402

rng = np.random.default_rng(8)
X = rng.standard_normal((4, 3)).astype("float32")
TOKENS = np.array([[3, 4, 0, 0], [1, 2, 3, 0]])


def same_weights(theirs, ours):
    weights = [rng.standard_normal(w.shape).astype("float32") for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)


def scaled_softplus(lib):
    def fn(x, scale=1.0):
        return scale * lib.ops.softplus(x)
    return fn


def sequential(lib):
    return lib.Sequential([lib.Input((3,)), lib.layers.Dense(5),
                           lib.layers.Lambda(scaled_softplus(lib), arguments={"scale": 2.5}),
                           lib.layers.Lambda(lambda x: x[:, :2] * x[:, 2:4]),
                           lib.layers.Dense(2)])


def functional(lib):
    """Two inputs into one Lambda; a declared output_shape; a mask passed on."""
    a, b = lib.Input((3,)), lib.Input((3,))
    joined = lib.layers.Lambda(lambda t: lib.ops.concatenate([t[0], t[0] * t[1]], axis=-1),
                               output_shape=(6,))([a, b])
    ids = lib.Input((4,), dtype="int32")
    embedded = lib.layers.Embedding(6, 3, mask_zero=True)(ids)
    kept = lib.layers.Lambda(lambda x: x * 2.0, mask=lambda inputs, mask: mask)(embedded)
    dropped = lib.layers.Lambda(lambda x: x * 2.0)(embedded)      # no mask: it is dropped
    pooled = [lib.layers.GlobalAveragePooling1D()(t) for t in (kept, dropped)]
    return lib.Model([a, b, ids], lib.layers.Concatenate()([lib.layers.Dense(2)(joined),
                                                            *pooled]))


@pytest.mark.parametrize("build, inputs", [
    (sequential, [X]),
    (functional, [X, X[::-1], TOKENS[[0, 1, 0, 1]]]),
], ids=["sequential", "functional-two_inputs-output_shape-masks"])
def test_models_match_keras(build, inputs):
    theirs, ours = build(keras), build(loopax)
    same_weights(theirs, ours)
    args = inputs[0] if len(inputs) == 1 else inputs
    expected = np.asarray(theirs(args))
    np.testing.assert_allclose(ours(args), expected, rtol=1e-5, atol=1e-6)
    assert [t.shape for t in jax.tree_util.tree_leaves(ours.outputs)] == \
        [tuple(t.shape) for t in theirs.outputs]


def test_mask_and_training_reach_the_function_as_in_keras():
    def fn(lib):
        def masked_sum(x, mask=None, training=None):
            weights = lib.ops.cast(mask, "float32")[..., None]
            return lib.ops.sum(x * weights, axis=1) * (2.0 if training else 1.0)
        return masked_sum
    outputs = []
    for lib in (keras, loopax):
        embedding = lib.layers.Embedding(6, 3, mask_zero=True)
        embedding.build((None, 4))
        embedding.set_weights([np.arange(18, dtype="float32").reshape(6, 3)])
        layer = lib.layers.Lambda(fn(lib))
        x = embedding(TOKENS)
        outputs.append([np.asarray(layer(x, training=t)) for t in (False, True)])
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-6)


def test_one_fit_step_matches_keras():
    models = [sequential(keras), sequential(loopax)]
    same_weights(*models)
    y = rng.standard_normal((4, 2)).astype("float32")
    for lib, model in zip((keras, loopax), models):
        model.compile(lib.optimizers.SGD(0.1), "mse")
        model.fit(X, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    for theirs, ours in zip(*(m.get_weights() for m in models)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_jit_tape_and_subclassed_model():
    layer = layers.Lambda(lambda x, power=2: x ** power, arguments={"power": 3})
    np.testing.assert_allclose(jax.jit(layer)(X), X ** 3, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(layer(x)))(X), 3 * X ** 2, rtol=1e-5)

    class Scaled(loopax.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2, kernel_initializer="ones")
            self.square = layers.Lambda(ops.square)

        def call(self, x):
            return self.square(self.dense(x))

    model = Scaled()
    with loopax.GradientTape() as tape:
        loss = ops.sum(model(X))
    kernel_grad, bias_grad = tape.gradient(loss, model.trainable_variables)
    h = X.sum(axis=1, keepdims=True)                                   # each unit's output
    np.testing.assert_allclose(kernel_grad, X.T @ (2 * np.repeat(h, 2, axis=1)), rtol=1e-5)
    np.testing.assert_allclose(bias_grad, np.full(2, 2 * h.sum()), rtol=1e-5)


def test_output_shape_declared_checked_or_standing_in():
    x = loopax.Input((4, 3))
    assert layers.Lambda(lambda t: t[:, 0], output_shape=(3,))(x).shape == (None, 3)
    assert layers.Lambda(lambda t: t[:, 0], output_shape=lambda s: (s[0], s[2]))(x).shape == \
        (None, 3)
    two = layers.Lambda(lambda t: [t, t[..., :1]], output_shape=[(4, 3), (4, 1)])(x)
    assert [t.shape for t in two] == [(None, 4, 3), (None, 4, 1)]
    for output_shape in [(3,), (4, 3)]:
        keras_shape = keras.layers.Lambda(lambda t: t, output_shape=output_shape) \
            .compute_output_shape((None, 4, 3))
        assert layers.Lambda(lambda t: t, output_shape=output_shape) \
            .compute_output_shape((None, 4, 3)) == tuple(keras_shape)
    with pytest.raises(ValueError, match=r"output_shape \(5,\) gives output shape\(s\) "
                                         r"\[\(None, 5\)\], but the function returns"):
        layers.Lambda(lambda t: t[:, 0], output_shape=(5,))(x)

    def host_only(t):     # NumPy on values: cannot be traced on shapes
        return np.asarray(t)[:, 0]
    assert layers.Lambda(host_only, output_shape=(3,))(x).shape == (None, 3)
    with pytest.raises(TypeError, match="give the Lambda its `output_shape`"):
        layers.Lambda(host_only)(x)


@register_keras_serializable(package="lambda_test")
def halve(x):
    return x / 2


@register_keras_serializable(package="lambda_test")
def keep_mask(inputs, mask):
    return mask


def double(x):
    return 2 * x


def shift(x, offset):
    return x + offset


def square(x):        # a user function named like loopax.ops.square
    return x * x + 1


def test_configs_name_functions_and_never_hold_code():
    configs = {
        "registered": layers.Lambda(halve).get_config()["function"],
        "op": layers.Lambda(ops.square).get_config()["function"],
        "activation": layers.Lambda(loopax.activations.gelu).get_config()["function"],
        "def": layers.Lambda(double).get_config()["function"],
        "lambda": layers.Lambda(lambda x: x).get_config()["function"],
    }
    assert configs == {
        "registered": {"class_name": "function", "config": "lambda_test>halve"},
        "op": {"class_name": "function", "config": "square", "module": "loopax.ops"},
        "activation": {"class_name": "function", "config": "gelu",
                       "module": "loopax.activations"},
        "def": {"class_name": "function", "config": "double", "module": __name__},
        "lambda": {"class_name": "function", "config": "<lambda>", "module": __name__},
    }
    keras_config = keras.layers.Lambda(lambda x: x).get_config()["function"]
    assert keras_config["class_name"] == "__lambda__" and "code" in keras_config["config"]


def test_registered_and_builtin_functions_round_trip(tmp_path):
    model = loopax.Sequential([
        loopax.Input((4,)), layers.Embedding(6, 3, mask_zero=True),
        layers.Lambda(halve, mask=keep_mask, output_shape=halve_shape,
                      arguments={}),
        layers.Lambda(ops.clip, arguments={"x_min": np.array([0.0, -1.0, 0.5]), "x_max": 4.0}),
        layers.Lambda(loopax.activations.gelu, mask=np.ones((2, 4), bool)),
        layers.GlobalAveragePooling1D()])
    config = model.get_config()
    assert "__lambda__" not in json.dumps(config)
    model.save(tmp_path / "lambdas.keras")
    loaded = load_model(tmp_path / "lambdas.keras")
    assert loaded.layers[1].function is halve and loaded.layers[1].mask is keep_mask
    assert loaded.layers[2].function is ops.clip
    assert loaded.get_config() == config
    np.testing.assert_allclose(loaded(TOKENS), model(TOKENS), rtol=1e-6)


@register_keras_serializable(package="lambda_test")
def halve_shape(input_shape):
    return input_shape


@pytest.mark.parametrize("function, match", [
    (double, r"Lambda layer 'lambda': cannot load its function 'double' \(from module "
             r"'test_lambda'\).*custom_objects=\{'double': double\}.*register_keras_serializable"),
    (square, r"cannot load its function 'square'"),          # not silently loopax.ops.square
    (lambda x: x, r"Lambda layer 'lambda': its function is a Python lambda.*"
                  r"custom_objects=\{'<lambda>': function\}"),
], ids=["def", "def_named_like_an_op", "lambda"])
def test_unknown_functions_save_but_do_not_load(tmp_path, function, match):
    model = loopax.Sequential([loopax.Input((3,)), layers.Lambda(function)])
    model.save(tmp_path / "m.keras")
    with pytest.raises(ValueError, match=match):
        load_model(tmp_path / "m.keras")
    name = function.__name__
    loaded = load_model(tmp_path / "m.keras", custom_objects={name: function})
    np.testing.assert_allclose(loaded(X), function(X), rtol=1e-6)


def test_bytecode_in_a_loopax_config_is_refused():
    config = layers.Lambda(halve).get_config()
    config["function"] = keras.layers.Lambda(lambda x: x).get_config()["function"]
    with pytest.raises(ValueError, match="Lambda layer 'lambda'.*Python bytecode.*never runs"):
        layers.Lambda.from_config(config)
    with pytest.raises(ValueError, match="Python bytecode.*never runs code from a file, "
                                         "whatever safe_mode says"):
        layers.deserialize(keras.layers.serialize(keras.layers.Lambda(lambda x: x)))


def test_keras_files_with_lambdas(tmp_path):
    @keras.saving.register_keras_serializable(package="lambda_test")
    def halve(x):
        return x / 2

    keras_model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4),
                                    keras.layers.Lambda(halve),
                                    keras.layers.Lambda(keras.activations.gelu),
                                    keras.layers.Lambda(shift, arguments={
                                        "offset": np.arange(4, dtype="float32")}),
                                    keras.layers.Lambda(double)])
    keras_model.save(tmp_path / "named.keras")
    with pytest.raises(ValueError, match=r"the Lambda layer's function 'double' is not a "
                                         r"loopax activation: pass it as custom_objects=\{"
                                         r"'double': function\}"):
        load_model(tmp_path / "named.keras")
    model = load_model(tmp_path / "named.keras",
                       custom_objects={"double": double, "shift": shift})
    np.testing.assert_allclose(model(X), keras_model(X), rtol=1e-5, atol=1e-6)

    keras.Sequential([keras.Input((3,)), keras.layers.Lambda(lambda x: x + 1)]).save(
        tmp_path / "bytecode.keras")
    with pytest.raises(ValueError, match=r"a Lambda layer holds Python bytecode.*safe_mode.*"
                                         r"custom_objects=\{'Lambda': YourLayer\}"):
        load_model(tmp_path / "bytecode.keras", safe_mode=False)


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="`function` must be callable"):
        layers.Lambda("relu")
    with pytest.raises(TypeError, match="`arguments` must be a dict"):
        layers.Lambda(double, arguments=[2])
    with pytest.raises(TypeError, match="`output_shape` must be a shape tuple"):
        layers.Lambda(double, output_shape="(3,)")
