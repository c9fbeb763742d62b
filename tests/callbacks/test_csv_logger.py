from loopax.callbacks import CallbackList, CSVLogger


def test_rows_sorted_by_name_and_append_keeps_one_header(fake_model, drive, tmp_path):
    path = tmp_path / "logs" / "run.csv"
    logs = [{"loss": 0.5, "acc": 0.25}, {"loss": 0.125, "acc": 0.75}]
    for append in (False, True):
        callbacks = CallbackList([CSVLogger(path, append=append)], model=fake_model,
                                 epochs=2, steps=1, verbose=0)
        drive(callbacks, fake_model, logs, steps=1)
    assert path.read_text().splitlines() == [
        "epoch,acc,loss", "0,0.25,0.5", "1,0.75,0.125", "0,0.25,0.5", "1,0.75,0.125"]


def test_separator_missing_values_and_arrays(fake_model, drive, tmp_path):
    path = tmp_path / "run.tsv"
    fake_model.metrics_names = ["loss", "val_loss"]
    callbacks = CallbackList([CSVLogger(str(path), separator="\t")], model=fake_model,
                             epochs=2, steps=1, verbose=0)
    drive(callbacks, fake_model, [{"loss": 1.0, "per_class": [1, 2]},
                                  {"loss": 2.0, "val_loss": 3.0, "per_class": [3, 4]}], steps=1)
    assert path.read_text().splitlines() == [
        "epoch\tloss\tper_class\tval_loss",
        '0\t1.0\t"""[1, 2]"""\tNA',
        '1\t2.0\t"""[3, 4]"""\t3.0']
