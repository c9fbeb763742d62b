import os

import pytest

from loopax.callbacks import CallbackList, ModelCheckpoint


def test_saves_every_epoch_and_best_only(fake_model, drive, tmp_path):
    pattern = str(tmp_path / "ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5")
    values = [{"val_loss": v} for v in (0.5, 0.7, 0.25, 0.3)]
    callbacks = CallbackList([ModelCheckpoint(pattern, save_weights_only=True)], model=fake_model,
                             epochs=4, steps=1, verbose=0)
    drive(callbacks, fake_model, values, steps=1)
    assert [os.path.basename(p) for p in fake_model.saved] == [
        "ckpt-01-0.50.weights.h5", "ckpt-02-0.70.weights.h5", "ckpt-03-0.25.weights.h5",
        "ckpt-04-0.30.weights.h5"]
    fake_model.saved.clear()
    callbacks = CallbackList([ModelCheckpoint(pattern, save_weights_only=True,
                                              save_best_only=True)],
                             model=fake_model, epochs=4, steps=1, verbose=0)
    drive(callbacks, fake_model, values, steps=1)
    assert [os.path.basename(p) for p in fake_model.saved] == [
        "ckpt-01-0.50.weights.h5", "ckpt-03-0.25.weights.h5"]


def test_save_freq_in_steps(fake_model, drive, tmp_path):
    callbacks = CallbackList([ModelCheckpoint(str(tmp_path / "s{epoch}-{batch}.weights.h5"),
                                              save_weights_only=True, save_freq=4)],
                             model=fake_model, epochs=2, steps=6, verbose=0)
    drive(callbacks, fake_model, [{"loss": 1.0}] * 2, steps=6, per_execution=2)
    # Executions end at global steps 2, 4, 6, 8, 10, 12.
    assert [os.path.basename(p) for p in fake_model.saved] == [
        "s1-4.weights.h5", "s2-2.weights.h5", "s2-6.weights.h5"]



def test_save_freq_counts_steps_as_keras_under_any_executions(fake_model, drive, tmp_path):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    for per_execution in (1, 2, 3, 4):
        theirs = keras.callbacks.ModelCheckpoint(str(tmp_path / "x.weights.h5"), save_freq=5,
                                                 save_weights_only=True)
        expected = []
        for epoch in range(3):
            for first in range(0, 7, per_execution):
                last = min(first + per_execution, 7) - 1
                if theirs._should_save_on_batch(last):
                    expected.append(f"s{epoch + 1}-{last + 1}.weights.h5")
        fake_model.saved.clear()
        callbacks = CallbackList([ModelCheckpoint(str(tmp_path / "s{epoch}-{batch}.weights.h5"),
                                                  save_weights_only=True, save_freq=5)],
                                 model=fake_model, epochs=3, steps=7, verbose=0)
        drive(callbacks, fake_model, [{"loss": 1.0}] * 3, steps=7, per_execution=per_execution)
        assert [os.path.basename(p) for p in fake_model.saved] == expected
        if per_execution == 1:   # global steps 5, 10, 15, 20 of 3 epochs of 7
            assert expected == ["s1-5.weights.h5", "s2-3.weights.h5", "s3-1.weights.h5",
                                "s3-6.weights.h5"]


def test_a_misspelt_filepath_key_names_the_available_keys(fake_model, drive, tmp_path):
    callbacks = CallbackList([ModelCheckpoint(str(tmp_path / "ckpt-{epoc}.weights.h5"),
                                              save_weights_only=True)],
                             model=fake_model, epochs=1, steps=1, verbose=0)
    with pytest.raises(KeyError, match=r"\{epoc\}.*\['batch', 'epoch', 'val_loss'\]"):
        drive(callbacks, fake_model, [{"val_loss": 0.5}], steps=1)


@pytest.mark.parametrize("mode, threshold", [("min", 0.4), ("max", 0.6)])
def test_initial_value_threshold_saves_like_keras(fake_model, tmp_path, mode, threshold):
    keras_callbacks = pytest.importorskip("keras.callbacks")
    values = [0.5, 0.35, 0.7, 0.3, 0.65]
    pattern = str(tmp_path / "{epoch}.weights.h5")

    class KerasModel:   # what Keras's ModelCheckpoint touches
        saved = []

        def save_weights(self, path, overwrite=True):
            self.saved.append(path)

    reference = keras_callbacks.ModelCheckpoint(pattern, monitor="val_loss", mode=mode,
                                                save_best_only=True, save_weights_only=True,
                                                initial_value_threshold=threshold)
    reference.set_model(KerasModel())
    ours = CallbackList([ModelCheckpoint(pattern, monitor="val_loss", mode=mode,
                                         save_best_only=True, save_weights_only=True,
                                         initial_value_threshold=threshold)],
                        model=fake_model, epochs=len(values), steps=1, verbose=0)
    ours.on_train_begin()
    for epoch, value in enumerate(values):
        reference.on_epoch_end(epoch, {"val_loss": value})
        ours.on_epoch_end(epoch, {"val_loss": value})
    assert fake_model.saved == KerasModel.saved
    assert fake_model.saved   # something beat the threshold
