"""Bad input gets a clear error naming the fix; faults keep the trained weights."""

import numpy as np
import pytest
from trainer_testlib import Snapshot, mlp, regression_data

import loopax as keras


@pytest.fixture(scope="module")
def compiled():
    keras.utils.set_random_seed(0)
    model = mlp()
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    x, y = regression_data()
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    return model, Snapshot(model), x, y


def test_fit_and_evaluate_before_compile():
    model = mlp()
    x, y = regression_data()
    with pytest.raises(ValueError, match=r"compile\(\)"):
        model.fit(x, y, verbose=0)
    with pytest.raises(ValueError, match=r"compile\(\)"):
        model.evaluate(x, y, verbose=0)


def test_x_and_y_of_different_lengths(compiled):
    model, _, x, y = compiled
    with pytest.raises(ValueError, match=r"same number of samples.*x has 64.*y has 60"):
        model.fit(x, y[:60], verbose=0)


@pytest.mark.parametrize("batch_size", [0, -3, 2.5])
def test_bad_batch_size(compiled, batch_size):
    model, _, x, y = compiled
    with pytest.raises(ValueError, match="batch_size.*positive integer"):
        model.fit(x, y, batch_size=batch_size, verbose=0)


def test_empty_dataset(compiled):
    model, _, x, y = compiled
    with pytest.raises(ValueError, match="empty"):
        model.fit(x[:0], y[:0], verbose=0)
    with pytest.raises(ValueError, match="empty"):
        model.fit((b for b in []), verbose=0)


def test_validation_split_with_a_generator(compiled):
    model, _, x, y = compiled
    gen = ((x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16))
    with pytest.raises(ValueError, match="validation_split.*validation_data="):
        model.fit(gen, validation_split=0.2, verbose=0)


def test_targets_that_cannot_match_the_output(compiled):
    """(Targets that only broadcast against the output train as in Keras, with a
    warning: tests/keras_parity/test_loss_broadcast_parity.py.)"""
    model, _, x, _ = compiled
    with pytest.raises(ValueError,
                       match=r"Output 'dense_\d+'.*\(16, 1\).*target y.*\(16, 5, 3\)"):
        model.evaluate(x, np.zeros((64, 5, 3), "float32"), batch_size=16, verbose=0)


def test_categorical_loss_with_integer_labels_suggests_the_sparse_loss():
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, keras.layers.Dense(4)(inputs))
    model.compile(loss="categorical_crossentropy")
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        model.evaluate(np.zeros((8, 3)), np.zeros((8,), "int32"), verbose=0)


def test_unknown_dict_input_keys():
    a = keras.Input(shape=(2,), name="a")
    b = keras.Input(shape=(2,), name="b")
    model = keras.Model({"a": a, "b": b}, keras.layers.Dense(1)(keras.layers.Concatenate()([a, b])))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"unknown.*'c'"):
        model.fit({"a": np.zeros((8, 2)), "c": np.zeros((8, 2))}, np.zeros((8, 1)), verbose=0)


def test_train_step_returning_the_wrong_structure():
    class Bad(keras.Model):
        def train_step(self, state, data):
            trainable, non_trainable, optimizer_vars, metric_vars = state
            return {"loss": 0.0}, (trainable, non_trainable)

    inputs = keras.Input(shape=(3,))
    model = Bad(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    x, y = regression_data()
    with pytest.raises(ValueError, match=r"train_step returned a state.*expected 4 groups.*"
                                         r"trainable_variables.*optimizer_variables"):
        model.fit(x, y, verbose=0)

    class NoTuple(keras.Model):
        def train_step(self, state, data):
            return {"loss": 0.0}

    model = NoTuple(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"must return `\(logs, state\)`"):
        model.fit(x, y, verbose=0)


def test_train_step_returning_the_loss_instead_of_a_logs_dict():
    class ReturnsLoss(keras.Model):  # TF style: `return loss` would report an untouched 0.0
        def train_step(self, data):
            x, y = data
            with keras.GradientTape() as tape:
                loss = self.compute_loss(y=y, y_pred=self(x, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return loss

    inputs = keras.Input(shape=(3,))
    model = ReturnsLoss(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    x, y = regression_data()
    with pytest.raises(TypeError, match=r"train_step returned logs that are an array of "
                                        r"shape \(\); logs must be a dict"):
        model.fit(x, y, verbose=0)


def test_loss_that_is_not_a_scalar():
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss=keras.losses.MeanSquaredError(reduction=None))
    x, y = regression_data()
    with pytest.raises(ValueError, match=r"not a scalar.*shape \(32,\)"):
        model.fit(x, y, verbose=0)


def test_exception_in_a_callback_keeps_the_weights_trained_so_far(compiled):
    model, snapshot, x, y = compiled

    class Boom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                raise RuntimeError("boom")

    snapshot.restore()
    model.steps_per_execution = 1
    with pytest.raises(RuntimeError, match="boom"):
        model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False, callbacks=[Boom()])
    model.steps_per_execution = "auto"
    interrupted = model.get_weights()
    snapshot.restore()
    model.fit(x[:48], y[:48], batch_size=16, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(interrupted, model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_exception_in_the_data_keeps_the_weights_trained_so_far(compiled):
    model, snapshot, x, y = compiled

    def batches():
        for i in range(3):
            yield x[16 * i:16 * (i + 1)], y[16 * i:16 * (i + 1)]
        raise OSError("disk gone")

    snapshot.restore()
    model.steps_per_execution = 1
    with pytest.raises(OSError, match="disk gone"):
        model.fit(batches(), epochs=1, verbose=0)
    interrupted = model.get_weights()
    snapshot.restore()
    model.fit(x[:48], y[:48], batch_size=16, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(interrupted, model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    model.steps_per_execution = "auto"


def test_nan_loss_with_terminate_on_nan_stops_training(compiled, capsys):
    model, snapshot, x, y = compiled
    snapshot.restore()
    bad_y = y.copy()
    bad_y[20] = np.nan
    model.steps_per_execution = 1
    with pytest.warns(UserWarning, match="`y` holds NaN or Inf values"):   # data_checks
        history = model.fit(x, bad_y, batch_size=16, epochs=5, verbose=0, shuffle=False,
                            callbacks=[keras.callbacks.TerminateOnNaN()])
    model.steps_per_execution = "auto"
    assert len(history.history["loss"]) == 1
    assert np.isnan(history.history["loss"][0])
    assert "Invalid loss, terminating training" in capsys.readouterr().out


def test_misspelled_loss_or_metric_name_fails_at_compile():
    import loopax
    model = loopax.Sequential([loopax.Input(shape=(3,)), loopax.layers.Dense(1)])
    with pytest.raises(ValueError, match="Unknown loss 'msee'. Did you mean 'mse'"):
        model.compile(optimizer="sgd", loss="msee")
    with pytest.raises(ValueError, match="maee"):
        model.compile(optimizer="sgd", loss="mse", metrics=["accuracy", "maee"])
    model.compile(optimizer="sgd", loss={"dense": "mse"}, metrics=["acc", "mae"])  # valid


def _raising_in_epoch_2():
    """A model whose loss runs a host callback that raises at the 2nd step of the 2nd
    epoch (4 steps an epoch), and the switch that stops it."""
    import jax

    calls = [0]

    def boom(_):
        calls[0] += 1
        if calls[0] == 6:
            raise RuntimeError("a host callback in the loss raised")

    def loss(y, p):
        jax.debug.callback(boom, p)
        return keras.ops.mean((y - p) ** 2)

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss=loss)
    return model, lambda: calls.__setitem__(0, -10**9)


def test_a_step_that_raises_inside_the_program_names_the_lost_state_and_the_fix(tmp_path):
    """The compiled call consumed its donated state, so the Variables have no value (Keras
    3.15.1 then fails with "Array has been deleted" at the next fit). loopax says why, on
    the error and at the next use; rerun with the BackupAndRestore that was saving, fit
    ends with the weights of a run that never failed."""
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = x[:, :2] * 2.0
    model, stop = _raising_in_epoch_2()
    with pytest.raises(Exception, match="host callback") as raised:
        model.fit(x, y, batch_size=4, epochs=3, verbose=0)
    assert any("BackupAndRestore" in note for note in raised.value.__notes__)
    stop()
    with pytest.raises(ValueError, match=r"sequential/dense/kernel.*have no value.*Backup"):
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)

    model, stop = _raising_in_epoch_2()
    backup = keras.callbacks.BackupAndRestore(str(tmp_path))
    with pytest.raises(Exception, match="host callback"):
        model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[backup])
    stop()
    model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[backup])

    never_failed, stop = _raising_in_epoch_2()
    stop()
    never_failed.fit(x, y, batch_size=4, epochs=3, verbose=0)
    for ours, expected in zip(model.get_weights(), never_failed.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, expected)
