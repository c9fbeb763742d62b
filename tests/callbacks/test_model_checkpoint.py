import os

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

