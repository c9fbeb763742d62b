"""OrbaxCheckpoint: the same steps saved as Keras 3.15.1's callback, and loaded back exactly."""

import os

import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")
pytest.importorskip("orbax.checkpoint")

X = np.random.default_rng(0).random((16, 3), dtype=np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32)
SCORES = [3.0, 1.0, 2.0, 0.5, 0.7]   # a scripted monitored quantity, one per epoch


def _model(lib, steps_per_execution=1):
    model = lib.Sequential([lib.Input((3,)), lib.layers.Dense(2), lib.layers.Dense(1)])
    model.compile(lib.optimizers.Adam(0.01), "mse", steps_per_execution=steps_per_execution)
    return model


def _steps(directory):
    return sorted(int(name) for name in os.listdir(directory) if name.isdigit())


def _fit_saving(lib, directory, epochs, fits=1, steps_per_execution=1, **kwargs):
    """Steps the callback of `lib` keeps after `fits` fits of `epochs` epochs (4 steps each)."""
    model = _model(lib, steps_per_execution)
    score = lib.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: logs.update(score=SCORES[epoch]))
    checkpoint = lib.callbacks.OrbaxCheckpoint(str(directory), **kwargs)
    for _ in range(fits):
        model.fit(X, Y, batch_size=4, epochs=epochs, verbose=0, shuffle=False,
                  callbacks=[score, checkpoint])
    checkpoint.wait_until_finished()
    return _steps(directory)


VARIANTS = {
    "epoch-keep1": dict(epochs=3),
    "every3-keep2": dict(epochs=3, save_freq=3, max_to_keep=2),
    "every4-two-fits-keep-all": dict(epochs=2, fits=2, save_freq=4, max_to_keep=None),
    "every3-steps-per-execution2": dict(epochs=2, save_freq=3, max_to_keep=None,
                                        steps_per_execution=2),
    "every1-sync-keep3": dict(epochs=1, save_freq=1, max_to_keep=3, save_on_background=False),
    "best-min-keep-all": dict(epochs=5, monitor="score", save_best_only=True, mode="min",
                              max_to_keep=None),
    "best-max-threshold": dict(epochs=5, monitor="score", save_best_only=True, mode="max",
                               initial_value_threshold=2.5, max_to_keep=None),
    "best-min-keep1-weights-only": dict(epochs=5, monitor="score", save_best_only=True,
                                        mode="min", save_weights_only=True),
}


@pytest.mark.parametrize("variant", VARIANTS, ids=list(VARIANTS))
def test_saves_the_steps_keras_saves(tmp_path, variant):
    kwargs = VARIANTS[variant]
    theirs = _fit_saving(keras, tmp_path / "keras", **kwargs)
    ours = _fit_saving(loopax, tmp_path / "loopax", **kwargs)
    assert ours == theirs and ours


def test_max_to_keep_zero_keeps_nothing_as_keras_and_warns(tmp_path):
    assert _fit_saving(keras, tmp_path / "keras", epochs=2, max_to_keep=0) == []
    with pytest.warns(UserWarning, match="max_to_keep=0 keeps no checkpoint"):
        assert _fit_saving(loopax, tmp_path / "loopax", epochs=2, max_to_keep=0) == []


def _weights_and_slots(model):
    return [np.asarray(w) for w in model.get_weights()] + [
        np.asarray(v.value) for v in model.optimizer.variables]


@pytest.mark.parametrize("loader", ["load_weights", "load_model"])
def test_checkpoint_loads_back_and_training_continues_exactly(tmp_path, loader):
    trained = _model(loopax)
    trained.fit(X, Y, batch_size=4, epochs=2, verbose=0, shuffle=False,
                callbacks=[loopax.callbacks.OrbaxCheckpoint(str(tmp_path))])
    if loader == "load_weights":
        restored = _model(loopax)
        restored.load_weights(str(tmp_path))
    else:
        restored = loopax.saving.load_model(str(tmp_path))
    for ours, expected in zip(_weights_and_slots(restored), _weights_and_slots(trained),
                              strict=True):
        np.testing.assert_array_equal(ours, expected)
    assert int(restored.optimizer.iterations.value) == 8
    for model in (trained, restored):
        model.fit(X, Y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    for ours, expected in zip(restored.get_weights(), trained.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, expected)


def test_a_step_folder_loads_that_step(tmp_path):
    model = _model(loopax)
    after_epoch = []
    record = loopax.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: after_epoch.append(model.get_weights()))
    model.fit(X, Y, batch_size=4, epochs=3, verbose=0, shuffle=False, callbacks=[
        record, loopax.callbacks.OrbaxCheckpoint(str(tmp_path), max_to_keep=None)])
    restored = _model(loopax)
    restored.load_weights(str(tmp_path / "1"))
    for ours, expected in zip(restored.get_weights(), after_epoch[1], strict=True):
        np.testing.assert_array_equal(ours, expected)


def test_weights_only_checkpoint_refuses_load_model(tmp_path):
    _model(loopax).fit(X, Y, batch_size=4, epochs=1, verbose=0, callbacks=[
        loopax.callbacks.OrbaxCheckpoint(str(tmp_path), save_weights_only=True)])
    with pytest.raises(ValueError, match="save_weights_only=True"):
        loopax.saving.load_model(str(tmp_path))


def test_keras_checkpoint_is_refused_naming_the_difference(tmp_path):
    _fit_saving(keras, tmp_path, epochs=1)
    with pytest.raises(ValueError, match="Keras's OrbaxCheckpoint"):
        _model(loopax).load_weights(str(tmp_path))


def test_a_folder_without_checkpoints_is_refused_and_left_alone(tmp_path):
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="without numbered checkpoints"):
        _model(loopax).load_weights(str(tmp_path))
    assert os.listdir(tmp_path) == ["notes.txt"]


@pytest.mark.parametrize("save_freq", ["batch", 2.5], ids=["batch", "float"])
def test_bad_save_freq_raises_as_keras(tmp_path, save_freq):
    with pytest.raises(ValueError, match="save_freq"):
        keras.callbacks.OrbaxCheckpoint(str(tmp_path / "keras"), save_freq=save_freq)
    with pytest.raises(ValueError, match="save_freq"):
        loopax.callbacks.OrbaxCheckpoint(str(tmp_path / "loopax"), save_freq=save_freq)
