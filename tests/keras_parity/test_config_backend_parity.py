"""`loopax.config`, `loopax.backend`, the top-level `device`/`remat`/`KerasTensor`/
`Operation`/`SymbolicScope` and `loopax.utils.Config`, each against Keras 3 (JAX).

The debugging caps (`set_max_epochs`, `set_max_steps_per_epoch`) really cap fit(),
evaluate() and predict() as Keras's do, and `disable_interactive_logging()` really
keeps progress bars off stdout (they go to the `loopax` logger).
"""

import logging
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from keras_reference import keras

import loopax

LIBRARIES = {"keras": keras, "loopax": loopax}


class CountSteps:
    """Builds a callback of `lib` counting epochs and train/test/predict batches."""

    def __new__(cls, lib):
        class Counter(lib.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.epochs = self.train = self.test = self.predict = 0

            def on_epoch_begin(self, epoch, logs=None):
                self.epochs += 1

            def on_train_batch_begin(self, batch, logs=None):
                self.train += 1

            def on_test_batch_begin(self, batch, logs=None):
                self.test += 1

            def on_predict_batch_begin(self, batch, logs=None):
                self.predict += 1
        return Counter()


def _tiny_model(lib):
    model = lib.Sequential([lib.Input((4,)), lib.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.fixture
def caps():
    yield
    for lib in LIBRARIES.values():
        lib.config.set_max_epochs(None)
        lib.config.set_max_steps_per_epoch(None)


def _run_capped(lib, max_epochs, max_steps, validate):
    """Counts of a fit (10 batches a pass, 4 epochs), evaluate and predict under the caps,
    the predicted rows, and whether a 'Limiting' warning was given."""
    x, y = np.ones((80, 4), "float32"), np.ones((80, 1), "float32")
    model, counter = _tiny_model(lib), CountSteps(lib)
    lib.config.set_max_epochs(max_epochs)
    lib.config.set_max_steps_per_epoch(max_steps)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x, y, batch_size=8, epochs=4, verbose=0, callbacks=[counter],
                  validation_data=(x, y) if validate else None)
        train_test = (counter.epochs, counter.train, counter.test)
        model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[counter])
        rows = len(model.predict(x, batch_size=8, verbose=0, callbacks=[counter]))
    limited = any("Limiting" in str(w.message) for w in caught)
    return train_test, counter.test, counter.predict, rows, limited


@pytest.mark.parametrize("max_epochs, max_steps, validate", [
    pytest.param(2, 3, False, id="epochs2-steps3"),
    pytest.param(2, 3, True, id="epochs2-steps3-validation"),
    pytest.param(None, 5, False, id="steps5-only"),
    pytest.param(3, None, False, id="epochs3-only"),
    pytest.param(10, 50, False, id="caps-above-the-data"),
])
def test_max_epochs_and_steps_cap_fit_evaluate_predict_as_keras(caps, max_epochs, max_steps,
                                                                 validate):
    expected = _run_capped(keras, max_epochs, max_steps, validate)
    assert _run_capped(loopax, max_epochs, max_steps, validate) == expected
    assert loopax.config.max_epochs() == max_epochs
    assert loopax.config.max_steps_per_epoch() == max_steps


def test_epsilon_is_settable_as_keras_and_warns_that_builtins_keep_1e7():
    try:
        keras.config.set_epsilon(1e-5)
        with pytest.warns(UserWarning, match="built-in losses"):
            loopax.config.set_epsilon(1e-5)
        assert loopax.config.epsilon() == keras.config.epsilon() == 1e-5
        assert loopax.backend.epsilon() == 1e-5
    finally:
        keras.config.set_epsilon(1e-7)
        loopax.config.set_epsilon(1e-7)
    assert loopax.config.epsilon() == keras.config.epsilon()


def test_set_backend_accepts_jax_and_refuses_others_naming_keras():
    loopax.config.set_backend("jax")
    assert loopax.config.backend() == keras.config.backend() == "jax"
    with pytest.raises(ValueError, match="KERAS_BACKEND=torch"):
        loopax.config.set_backend("torch")


@pytest.mark.parametrize("switch", ["flash_attention", "traceback_filtering"])
def test_switches_report_what_keras_reports(switch):
    def states(lib):
        is_enabled = getattr(lib.config, f"is_{switch}_enabled")
        seen = [is_enabled()]
        getattr(lib.config, f"disable_{switch}")()
        seen.append(is_enabled())
        getattr(lib.config, f"enable_{switch}")()
        seen.append(is_enabled())
        return seen
    assert states(loopax) == states(keras)


def test_disabling_traceback_filtering_shows_jax_internal_frames():
    try:
        loopax.config.disable_traceback_filtering()
        assert jax.config.jax_traceback_filtering == "off"
    finally:
        loopax.config.enable_traceback_filtering()
    assert jax.config.jax_traceback_filtering == "auto"


def test_nnx_and_unsafe_deserialization_switches_exist_as_in_keras():
    assert loopax.config.is_nnx_enabled() is keras.config.is_nnx_enabled() is False
    assert loopax.config.enable_unsafe_deserialization() is None


@pytest.mark.parametrize("lib_name", ["keras", "loopax"])
def test_disabled_interactive_logging_sends_the_progress_bar_to_logging(lib_name, capsys,
                                                                         caplog):
    """Keras sends the finished line to absl logging (3.15.1 still writes bars to
    stdout too, how many depending on the steps' timing); loopax sends it to the
    `loopax` logger and writes nothing."""
    lib = LIBRARIES[lib_name]
    x, y = np.ones((16, 4), "float32"), np.ones((16, 1), "float32")
    model = _tiny_model(lib)
    assert lib.config.is_interactive_logging_enabled() is True
    model.fit(x, y, batch_size=8, epochs=1, verbose=1)
    assert "2/2" in capsys.readouterr().out
    try:
        lib.utils.disable_interactive_logging()
        assert lib.utils.is_interactive_logging_enabled() is False
        with caplog.at_level(logging.INFO):
            model.fit(x, y, batch_size=8, epochs=1, verbose=1)
        out = capsys.readouterr().out
    finally:
        lib.config.enable_interactive_logging()
    logger = {"keras": "absl", "loopax": "loopax"}[lib_name]
    assert any("2/2" in r.getMessage() for r in caplog.records if r.name == logger)
    if lib is loopax:
        assert out == ""


def test_get_uid_counts_as_keras_and_shares_layer_names():
    for lib in LIBRARIES.values():
        lib.backend.clear_session()
    for lib in LIBRARIES.values():
        lib.layers.Dense(2)
    seen = {name: [lib.backend.get_uid(p) for p in ("a", "a", "dense", "", "a")]
            for name, lib in LIBRARIES.items()}
    assert seen["loopax"] == seen["keras"]
    loopax.backend.clear_session()
    assert loopax.backend.get_uid("a") == 1


DTYPE_GROUPS = [("int32", "float16"), ("int8", "uint8"), ("bool", "int8"),
                ("bfloat16", "float16"), ("uint32", "int32"), ("int16",), ()]


@pytest.mark.parametrize("dtypes", DTYPE_GROUPS, ids=lambda d: "-".join(d) or "none")
def test_result_type_as_keras(dtypes):
    assert loopax.backend.result_type(*dtypes) == keras.backend.result_type(*dtypes)


@pytest.mark.parametrize("dtype", [None, int, float, bool, complex, "int", "float16",
                                   np.float16, "bfloat16", jnp.int8, "uint8"],
                         ids=["None", "py-int", "py-float", "py-bool", "py-complex", "str-int",
                              "str-float16", "np-float16", "bfloat16", "jnp-int8", "uint8"])
def test_standardize_dtype_and_dtype_kinds_as_keras(dtype):
    for module in ("backend", "utils"):
        expected = keras.backend.standardize_dtype(dtype)
        assert getattr(loopax, module).standardize_dtype(dtype) == expected
    name = keras.backend.standardize_dtype(dtype)
    assert loopax.backend.is_float_dtype(name) == keras.backend.is_float_dtype(name)
    assert loopax.backend.is_int_dtype(name) == keras.backend.is_int_dtype(name)


def test_is_keras_tensor_and_symbolic_classes_as_keras():
    for lib in LIBRARIES.values():
        x = lib.Input((3,))
        assert lib.backend.is_keras_tensor(x) and isinstance(x, lib.KerasTensor)
        assert not lib.backend.is_keras_tensor(np.ones(3))
        assert isinstance(lib.layers.Dense(2), lib.Operation)
        with lib.SymbolicScope() as scope:
            assert isinstance(scope, lib.SymbolicScope)


def test_operation_subclass_runs_like_keras():
    def build(lib):
        class AddOne(lib.Operation):
            def call(self, x):
                return x + 1.0
        return AddOne()
    x = np.arange(3.0, dtype="float32")
    np.testing.assert_allclose(np.asarray(build(loopax)(x)), np.asarray(build(keras)(x)))


def test_device_scope_places_arrays_as_keras_and_names_bad_devices():
    cpu = jax.devices("cpu")[0]
    for lib in LIBRARIES.values():
        with lib.device("cpu:0"):
            assert lib.ops.ones((2,)).devices() == {cpu}
    with loopax.device(cpu):
        assert jnp.zeros(2).devices() == {cpu}
    with pytest.raises(ValueError, match="no such device"):
        loopax.device("cpu:7")
    with pytest.raises(ValueError, match="device_name"):
        loopax.device(3)


def _costly(x):
    for _ in range(3):
        x = jnp.sin(x) * x + 0.1 * x
    return jnp.sum(x)


def test_remat_keeps_values_and_gradients_of_keras_remat():
    x = jnp.linspace(-2.0, 2.0, 12)
    ours, theirs = loopax.remat(_costly), keras.remat(_costly)
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(ours)(x), jax.grad(theirs)(x), rtol=1e-6)
    jaxpr = str(jax.make_jaxpr(jax.grad(ours))(x))
    assert "checkpoint" in jaxpr or "remat" in jaxpr


def test_remat_inside_a_layer_trains_as_keras():
    """Keras's documented example: a layer whose call runs a remat'ed function."""
    def build(lib):
        class Scaled(lib.layers.Layer):
            def __init__(self):
                super().__init__()
                self.twice = lib.remat(self.scale)

            def scale(self, x):
                return x + x * 0.1 + lib.ops.sin(x)

            def call(self, x):
                return self.twice(x)
        inputs = lib.Input((4,))
        hidden = lib.layers.Dense(4, activation="relu", kernel_initializer="ones")(inputs)
        outputs = lib.layers.Dense(1, kernel_initializer="ones")(Scaled()(hidden))
        model = lib.Model(inputs, outputs)
        model.compile(optimizer="sgd", loss="mse")
        return model
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 1)).astype("float32")
    losses = {name: build(lib).fit(x, y, batch_size=8, epochs=3, shuffle=False,
                                   verbose=0).history["loss"]
              for name, lib in LIBRARIES.items()}
    np.testing.assert_allclose(losses["loopax"], losses["keras"], rtol=1e-4)


def test_config_object_behaves_as_keras_config():
    def exercise(lib):
        config = lib.utils.Config(learning_rate=0.1, momentum=0.9)
        config.seed = 3
        config["use_ema"] = True
        seen = [config.seed, config["learning_rate"], list(config), len(config),
                "seed" in config, config.get("missing", 7), config.to_json(),
                config.as_dict(), sorted(config.items())]
        config.freeze()
        with pytest.raises(ValueError, match="frozen"):
            config.momentum = 0.5
        with pytest.raises(ValueError, match="frozen"):
            config["x"] = 1
        seen.append(config.frozen)
        config.unfreeze()
        config.pop("seed")
        with pytest.raises(AttributeError, match="Did you mean 'momentum'"):
            config.momentun
        seen.append(repr(config))
        return seen
    assert exercise(loopax) == exercise(keras)
