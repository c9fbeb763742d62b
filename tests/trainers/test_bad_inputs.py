"""Bad input to fit/evaluate/predict: a clear error, or a warning where Keras
code must keep running -- never a silent wrong result (issue 7)."""

import os
import threading
import warnings

import numpy as np
import pytest
from trainer_testlib import mlp, regression_data

import loopax as keras


def iterations(model):
    return int(np.asarray(model.optimizer.iterations.value))


def classifier(classes=3, loss="sparse_categorical_crossentropy"):
    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, keras.layers.Dense(classes)(inputs))
    model.compile(optimizer="sgd", loss=loss, metrics=["accuracy"])
    return model


X2 = np.random.default_rng(0).normal(size=(32, 2)).astype("float32")


# ---- 1. no loss ---------------------------------------------------------------

def test_fit_without_a_loss_raises_instead_of_training_nothing():
    # Keras 3.15 trains nothing and logs loss 0.0.
    model = mlp()
    model.compile(optimizer="sgd")
    x, y = regression_data()
    before = model.get_weights()
    with pytest.raises(ValueError, match=r"no loss to train on.*compile\(optimizer='adam', loss="):
        model.fit(x, y, verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_fit_without_a_compiled_loss_trains_on_add_loss():
    class SquaredOutput(keras.layers.Layer):
        def call(self, x):
            self.add_loss(keras.ops.mean(x ** 2))
            return x

    inputs = keras.Input(shape=(3,))
    outputs = SquaredOutput()(keras.layers.Dense(2)(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    x, _ = regression_data()
    losses = model.fit(x, epochs=2, batch_size=64, verbose=0).history["loss"]
    assert losses[1] < losses[0]


# ---- 2. steps_per_epoch beyond the arrays ---------------------------------------

def test_steps_per_epoch_beyond_the_arrays_warns_like_keras():
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.warns(UserWarning, match=r"ran out of data.*steps_per_epoch=10.*only 4 batches"):
        model.fit(x, y, batch_size=16, steps_per_epoch=10, epochs=2, verbose=0)
    expected = 8   # each epoch runs the 4 batches there are
    keras3 = _keras()
    if keras3 is not None:
        reference = keras3.Sequential([keras3.Input((3,)), keras3.layers.Dense(1)])
        reference.compile(optimizer="sgd", loss="mse")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reference.fit(x, y, batch_size=16, steps_per_epoch=10, epochs=2, verbose=0)
        assert any("ran out of data" in str(w.message) for w in caught)
        expected = int(reference.optimizer.iterations.numpy())
    assert iterations(model) == expected == 8


def _keras():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    try:
        import keras as keras3
    except ImportError:
        return None
    return keras3


# ---- 3. concurrent use from two threads ---------------------------------------

class _Blocker(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def on_epoch_begin(self, epoch, logs=None):
        self.entered.set()
        assert self.release.wait(30)


@pytest.fixture
def short_model_wait():
    before = keras.config.model_wait_timeout()
    keras.config.set_model_wait_timeout(0.2)
    yield
    keras.config.set_model_wait_timeout(before)


def _fit_in_thread(model, x, y, blocker, errors, epochs=1):
    def first_fit():
        try:
            model.fit(x, y, batch_size=16, epochs=epochs, verbose=0, callbacks=[blocker])
        except Exception as e:  # checked by the caller
            errors.append(e)
    thread = threading.Thread(target=first_fit)
    thread.start()
    return thread


def test_a_second_concurrent_fit_times_out_and_leaves_the_model_usable(tmp_path,
                                                                         short_model_wait):
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    blocker = _Blocker()
    errors = []
    thread = _fit_in_thread(model, x, y, blocker, errors)
    try:
        assert blocker.entered.wait(60)
        with pytest.raises(RuntimeError, match=r"another thread is running its fit\(\), "
                                               r"and it did not finish within 0.2 s"):
            model.fit(x, y, batch_size=16, verbose=0)
        with pytest.raises(RuntimeError, match="set_model_wait_timeout"):
            model.evaluate(x, y, verbose=0)
        with pytest.raises(RuntimeError, match="another thread"):
            model.predict(x, verbose=0)
        for save in (model.save_weights, model.save, model.load_weights):
            with pytest.raises(RuntimeError, match=r"running its fit\(\).*ModelCheckpoint"):
                save(str(tmp_path / "m.weights.safetensors"))
        assert not (tmp_path / "m.weights.safetensors").exists()
    finally:
        blocker.release.set()
        thread.join()
    assert errors == []
    assert iterations(model) == 4
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)   # usable afterwards
    assert iterations(model) == 8


def test_a_save_from_another_thread_during_fit_waits_and_saves_the_trained_model(tmp_path):
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    blocker = _Blocker()
    errors = []
    thread = _fit_in_thread(model, x, y, blocker, errors, epochs=2)
    path = str(tmp_path / "m.weights.safetensors")
    saver = threading.Thread(target=model.save_weights, args=(path,))
    try:
        assert blocker.entered.wait(60)
        saver.start()
        saver.join(0.5)
        assert saver.is_alive()            # waiting its turn, not refused
        assert not os.path.exists(path)
    finally:
        for _ in range(2):
            blocker.release.set()
        thread.join()
        saver.join(60)
    assert errors == [] and not saver.is_alive()
    assert iterations(model) == 8          # fit ran both epochs, unharmed
    saved = mlp()
    saved.load_weights(path)               # the save came after fit: its final weights
    for a, b in zip(saved.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


class _SlowConfigModel(keras.Sequential):
    """A model whose get_config (user code run by save) blocks until released."""

    entered = threading.Event()
    release = threading.Event()

    def get_config(self):
        self.entered.set()
        assert self.release.wait(30)
        return super().get_config()


def test_a_fit_from_another_thread_during_a_save_waits_for_it(tmp_path):
    x, y = regression_data()
    model = _SlowConfigModel([keras.Input((x.shape[1],)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    before = [w.copy() for w in model.get_weights()]
    errors = []

    def save():
        try:
            model.save(str(tmp_path / "m.keras"))
        except Exception as e:  # checked below
            errors.append(e)
    saver = threading.Thread(target=save)
    saver.start()
    try:
        assert model.entered.wait(60)
        fitter = threading.Thread(target=model.fit, args=(x, y),
                                  kwargs=dict(batch_size=16, epochs=1, verbose=0))
        fitter.start()
        fitter.join(0.5)
        assert fitter.is_alive() and iterations(model) == 0   # waiting for the save
    finally:
        model.release.set()
        saver.join(60)
    fitter.join(60)
    assert errors == [] and iterations(model) == 4
    saved = keras.saving.load_model(str(tmp_path / "m.keras"), compile=False,
                                    custom_objects={"_SlowConfigModel": keras.Sequential})
    for a, b in zip(saved.get_weights(), before):   # saved before fit changed anything
        np.testing.assert_array_equal(a, b)


def test_set_model_wait_timeout_refuses_a_negative_number():
    with pytest.raises(ValueError, match=r"set_model_wait_timeout\(seconds=-1\)"):
        keras.config.set_model_wait_timeout(-1)


def test_a_callback_may_predict_inside_fit():
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    shapes = []
    callback = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: shapes.append(model.predict(x[:5], verbose=0).shape))
    model.fit(x, y, epochs=2, verbose=0, callbacks=[callback])
    assert shapes == [(5, 1), (5, 1)]


# ---- 4. labels and non-finite values --------------------------------------------

@pytest.mark.parametrize("labels, match", [
    (np.full(32, 3), r"class indices in \[0, 3\).*e\.g\. 3"),
    (np.full(32, -1), r"class indices in \[0, 3\).*e\.g\. -1"),
    (np.full(32, 0.5, "float32"), "non-integer values"),
    # int64 labels int32 cannot hold: the old check ran after the cast, 2**40 trained as 0
    (np.full(32, 2**40), r"class indices in \[0, 3\).*e\.g\. 1099511627776"),
    (np.full(32, -2**40), r"class indices in \[0, 3\).*e\.g\. -1099511627776"),
    (np.full(32, 2**40, "uint64"), r"class indices in \[0, 3\).*e\.g\. 1099511627776"),
], ids=["label-too-large", "label-negative", "label-float", "label-2**40", "label--2**40",
        "label-uint64-2**40"])
def test_sparse_labels_outside_the_classes_raise(labels, match):
    model = classifier()
    before = model.get_weights()
    with pytest.raises(ValueError, match=match):
        model.fit(X2, labels, verbose=0)
    with pytest.raises(ValueError, match=match):
        model.evaluate(X2, labels, verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_sparse_labels_in_validation_data_are_checked():
    model = classifier()
    with pytest.raises(ValueError, match=r"validation data.*\[0, 3\)"):
        model.fit(X2, np.zeros(32, "int32"), validation_data=(X2, np.full(32, 7)), verbose=0)
    with pytest.raises(ValueError, match=r"\[0, 3\).*e\.g\. 1099511627776"):
        model.fit(X2, np.full(32, 2**40), validation_split=0.25, verbose=0)


def test_ignore_class_labels_are_allowed():
    model = classifier(loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=-1))
    labels = np.where(np.arange(32) % 2 == 0, 2, -1)
    history = model.fit(X2, labels, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def _with_nan(a):
    a = a.copy()
    a[3, 0] = np.nan
    return a


def test_non_finite_data_warns_by_default():
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.warns(UserWarning, match=r"`x` holds NaN or Inf values \(1 of 192\)"):
        model.fit(_with_nan(x), y, verbose=0)
    with pytest.warns(UserWarning, match="`y` holds NaN or Inf"):
        model.evaluate(x, np.full_like(y, np.inf), verbose=0)


def test_check_data_raise_and_off():
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    weights = model.get_weights()
    with pytest.raises(ValueError, match="`x` holds NaN or Inf"):
        model.fit(_with_nan(x), y, verbose=0, check_data="raise")
    for a, b in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(_with_nan(x), y, verbose=0, check_data="off")
    with pytest.raises(ValueError, match="check_data"):
        model.fit(x, y, verbose=0, check_data=True)


# ---- 5. Embedding indices --------------------------------------------------------

def test_out_of_range_embedding_input_to_fit_raises():
    model = keras.Sequential([keras.Input((4,), dtype="int32"), keras.layers.Embedding(10, 2),
                              keras.layers.Flatten(), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.arange(32).reshape(8, 4) % 11
    with pytest.raises(ValueError, match=r"Embedding layer 'embedding'.*input_dim=10.*0 to 10"):
        model.fit(x, np.zeros((8, 1)), verbose=0)


# ---- 6. arguments that train nothing ---------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(epochs=-1), r"`epochs` must be an integer >= 0, got -1"),
    (dict(epochs=2.5), "`epochs` must be an integer"),
    (dict(epochs=2, initial_epoch=3), r"`initial_epoch`=3 is past `epochs`=2"),
    (dict(initial_epoch=-1), "`initial_epoch` must be an integer >= 0"),
    (dict(steps_per_epoch=0), "`steps_per_epoch` must be a positive integer"),
    (dict(steps_per_epoch=-1), "`steps_per_epoch` must be a positive integer"),
    (dict(validation_steps=0), "`validation_steps` must be a positive integer"),
], ids=["epochs-negative", "epochs-float", "initial_epoch-past-epochs", "initial_epoch-negative",
        "steps_per_epoch-zero", "steps_per_epoch-negative", "validation_steps-zero"])
def test_fit_arguments_that_would_train_nothing(kwargs, match):
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=match):
        model.fit(x, y, verbose=0, **kwargs)


def test_initial_epoch_equal_to_epochs_warns():
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.warns(UserWarning, match="no epoch will run"):
        model.fit(x, y, epochs=2, initial_epoch=2, verbose=0)


def test_bad_steps_for_evaluate_and_predict():
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"evaluate\(\): `steps` must be a positive integer"):
        model.evaluate(x, y, steps=-1, verbose=0)
    with pytest.raises(ValueError, match=r"predict\(\): `steps` must be a positive integer"):
        model.predict(x, steps=0, verbose=0)


# ---- 10. strings -----------------------------------------------------------------

def test_string_data_gets_a_clear_error():
    model = classifier()
    words = np.array(["cat", "dog"] * 16)
    with pytest.raises(TypeError, match=r"`y` holds strings \(dtype <U3\).*StringLookup"):
        model.fit(X2, words, verbose=0)
    with pytest.raises(TypeError, match=r"`x` holds strings.*np.unique"):
        model.predict(words, verbose=0)


def test_out_of_range_ids_for_an_embedding_fed_by_a_named_input_raise():
    ids = keras.Input((3,), dtype="int32", name="ids")
    feature = keras.Input((1,), name="feature")
    embedded = keras.layers.Flatten()(keras.layers.Embedding(6, 2, name="words")(ids))
    outputs = keras.layers.Dense(1)(keras.layers.Concatenate()([embedded, feature]))
    model = keras.Model([ids, feature], outputs)
    model.compile(optimizer="sgd", loss="mse")
    x = {"ids": np.arange(24).reshape(8, 3) % 8, "feature": np.full((8, 1), 50.0)}
    with pytest.raises(ValueError, match=r"'words' has input_dim=6.*input 'ids' has indices "
                                         r"from 0 to 7"):
        model.fit(x, np.zeros((8, 1)), verbose=0)
