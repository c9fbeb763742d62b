"""Files loopax wrote before compiled metrics took Keras's variable paths still load.

The files in tests/data/old_metric_paths/ were written by loopax at commit d357d17, when
`compile(metrics=["mae"])` made `mae/total` (Keras and loopax now say
`mean_absolute_error/total`) and a two-output model's loss trackers were `a_loss/total`
(now `compile_loss/a_loss/total`). A model with such metrics is loaded from each file by
today's code: it must predict what the old model predicted, evaluate to the same metrics,
and a `BackupAndRestore` backup (which holds the metrics' state) must resume.

Regenerate (only when the old format itself is to be replaced) with
`python tests/saving/test_old_metric_paths_files.py write tests/data/old_metric_paths`.
"""

import os
import shutil
import sys

import numpy as np

import loopax as keras
import loopax.tf as tf

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "data", "old_metric_paths")
X = np.linspace(-1.0, 1.0, 6 * 4, dtype="float32").reshape(6, 4)
Y = (np.arange(6) % 2).astype("float32").reshape(6, 1)
METRICS = {"a": ["mae", "accuracy", "AUC"], "b": ["mse", "R2Score"]}


def build():
    """Two outputs, so the model has per-output loss trackers, and metrics from strings."""
    keras.utils.clear_session()
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,), name="x")
    hidden = keras.layers.Dense(5, activation="relu", name="hidden")(inputs)
    first = keras.layers.Dense(1, activation="sigmoid", name="a")(hidden)
    second = keras.layers.Dense(1, name="b")(hidden)
    model = keras.Model(inputs, [first, second], name="two_heads")
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=["binary_crossentropy", "mse"],
                  metrics=METRICS)
    return model


def evaluated(model):
    return model.evaluate(X, [Y, Y], batch_size=6, verbose=0, return_dict=True)


def write(directory):
    """Writes the .keras, .weights.h5, tf.train.Checkpoint and backup files."""
    os.makedirs(directory, exist_ok=True)
    model = build()
    backup = keras.callbacks.BackupAndRestore(os.path.join(directory, "backup"),
                                              delete_checkpoint=False)
    model.fit(X, [Y, Y], batch_size=3, epochs=2, verbose=0, callbacks=[backup])
    logs = evaluated(model)
    np.savez(os.path.join(directory, "expected.npz"),
             predictions=np.concatenate(model.predict(X, verbose=0), axis=-1),
             log_names=np.array(sorted(logs)), log_values=np.array([logs[k] for k in sorted(logs)]),
             metric_paths=np.array([v.path for v in model.metrics_variables]))
    model.save(os.path.join(directory, "model.keras"))
    model.save_weights(os.path.join(directory, "model.weights.h5"))
    tf.train.Checkpoint(model=model, optimizer=model.optimizer).write(
        os.path.join(directory, "model_ckpt"))


def expected():
    with np.load(os.path.join(DATA, "expected.npz")) as data:
        return {key: data[key] for key in data.files}


def assert_same_model(model):
    want = expected()
    predictions = np.concatenate(model.predict(X, verbose=0), axis=-1)
    np.testing.assert_allclose(predictions, want["predictions"], rtol=1e-6, atol=1e-6)
    logs = evaluated(model)
    assert sorted(logs) == list(want["log_names"])
    np.testing.assert_allclose([logs[k] for k in sorted(logs)], want["log_values"], rtol=1e-5)


def test_the_files_hold_the_old_paths():
    """The fixture is what it claims: written with the paths loopax no longer makes."""
    old = list(expected()["metric_paths"])
    assert "mae/total" in old and "a_loss/total" in old
    model = build()
    evaluated(model)
    new = [v.path for v in model.metrics_variables]
    assert "mean_absolute_error/total" in new and "compile_loss/a_loss/total" in new
    assert len(new) == len(old)


def test_old_keras_file_loads():
    assert_same_model(keras.models.load_model(os.path.join(DATA, "model.keras")))


def test_old_weights_file_loads():
    model = build()
    model.load_weights(os.path.join(DATA, "model.weights.h5"))
    assert_same_model(model)


def test_old_checkpoint_restores():
    model = build()
    model.optimizer.build(model.trainable_variables)
    status = tf.train.Checkpoint(model=model, optimizer=model.optimizer).restore(
        os.path.join(DATA, "model_ckpt"))
    status.assert_consumed()
    assert_same_model(model)


def test_old_backup_resumes(tmp_path):
    """The backup of the finished 2-epoch run: a 3-epoch fit resumes at epoch 2 (one
    epoch run), from the old weights."""
    folder = tmp_path / "backup"
    shutil.copytree(os.path.join(DATA, "backup"), folder)
    model = build()
    epochs, seen = [], []

    def record(epoch, logs):
        epochs.append(epoch)
        seen.append(np.concatenate(model.predict(X, verbose=0), axis=-1))

    model.fit(X, [Y, Y], batch_size=3, epochs=3, verbose=0, callbacks=[
        keras.callbacks.BackupAndRestore(str(folder)),
        keras.callbacks.LambdaCallback(on_epoch_begin=record)])
    assert epochs == [2]
    np.testing.assert_allclose(seen[0], expected()["predictions"], rtol=1e-6, atol=1e-6)


if __name__ == "__main__" and sys.argv[1:2] == ["write"]:
    write(sys.argv[2])
