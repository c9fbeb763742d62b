"""`tf.data.experimental.make_csv_dataset` and `CsvDataset` as the load_data/csv tutorial
uses them, on a small CSV written here; the expected values are what TensorFlow 2.21
gives for the same calls (run in a TensorFlow venv)."""

import gzip

import numpy as np
import pytest

import loopax.tf as tf

TITANIC = ('survived,sex,age,fare,town\n0,male,22,7.25,"South, hampton"\n'
           '1,female,38,71.2833,Cherbourg\n1,female,,7.925,\n1,female,35,53.1,Southampton\n'
           '0,male,35,8.05,Queenstown\n')


@pytest.fixture
def titanic(tmp_path):
    path = tmp_path / "titanic.csv"
    path.write_text(TITANIC)
    return str(path)


def _numpy(features):
    return {name: value.numpy().tolist() for name, value in features.items()}


def test_make_csv_dataset_reads_names_types_and_label_as_tensorflow(titanic):
    ds = tf.data.experimental.make_csv_dataset(titanic, batch_size=2, label_name="survived",
                                               num_epochs=1, shuffle=False)
    batches = [(_numpy(f), label.numpy().tolist(), [v.dtype for v in f.values()])
               for f, label in ds]
    assert [b[0] for b in batches] == [
        {"sex": [b"male", b"female"], "age": [22, 38],
         "fare": np.float32([7.25, 71.2833]).tolist(),
         "town": [b"South, hampton", b"Cherbourg"]},
        {"sex": [b"female", b"female"], "age": [0, 35],
         "fare": np.float32([7.925, 53.1]).tolist(), "town": [b"", b"Southampton"]},
        {"sex": [b"male"], "age": [35], "fare": np.float32([8.05]).tolist(),
         "town": [b"Queenstown"]}]
    assert [b[1] for b in batches] == [[0, 1], [1, 1], [0]]
    assert batches[0][2] == [tf.string, tf.int32, tf.float32, tf.string]
    features, _ = next(iter(ds))
    assert type(features).__name__ == "OrderedDict"
    assert list(features) == ["sex", "age", "fare", "town"]


def test_select_columns_keep_file_order_and_column_defaults_give_types(titanic):
    ds = tf.data.experimental.make_csv_dataset(
        titanic, batch_size=3, select_columns=["fare", "survived"], num_epochs=1,
        shuffle=False)
    assert [_numpy(f) for f in ds] == [
        {"survived": [0, 1, 1], "fare": np.float32([7.25, 71.2833, 7.925]).tolist()},
        {"survived": [1, 0], "fare": np.float32([53.1, 8.05]).tolist()}]
    ds = tf.data.experimental.make_csv_dataset(
        titanic, batch_size=2, select_columns=["age", "sex"],
        column_defaults=[tf.string, -1.0], num_epochs=1, shuffle=False, label_name="age")
    got = [(_numpy(f), label.numpy().tolist()) for f, label in ds]
    assert got == [({"sex": [b"male", b"female"]}, [22.0, 38.0]),
                   ({"sex": [b"female", b"female"]}, [-1.0, 35.0]),
                   ({"sex": [b"male"]}, [35.0])]


def test_num_epochs_repeats_and_none_repeats_forever_with_full_batches(titanic):
    ds = tf.data.experimental.make_csv_dataset(titanic, batch_size=2, num_epochs=2,
                                               shuffle=False)
    assert [b["survived"].numpy().tolist() for b in ds] == \
        [[0, 1], [1, 1], [0, 0], [1, 1], [1, 0]]
    ds = tf.data.experimental.make_csv_dataset(titanic, batch_size=2, shuffle=False)
    assert int(ds.cardinality()) == -1   # TensorFlow: INFINITE_CARDINALITY
    assert [tuple(b["survived"].shape) for b in ds.take(4)] == [(2,)] * 4


def test_shuffle_seed_permutes_the_records_repeatably(titanic):
    def fares(seed):
        ds = tf.data.experimental.make_csv_dataset(titanic, batch_size=5, num_epochs=1,
                                                   shuffle=True, shuffle_seed=seed)
        return next(iter(ds))["fare"].numpy().tolist()
    first = fares(1)
    # TensorFlow's batch holds the same five fares (its order is its own generator's).
    assert sorted(first) == np.float32([7.25, 7.925, 8.05, 53.1, 71.2833]).tolist()
    assert fares(1) == first
    assert any(fares(seed) != first for seed in (2, 3, 4))


def test_column_names_replace_the_header_or_name_a_headerless_file(titanic, tmp_path):
    ds = tf.data.experimental.make_csv_dataset(
        titanic, batch_size=2, num_epochs=1, shuffle=False,
        column_names=["a", "b", "c", "d", "e"])
    assert list(next(iter(ds))) == ["a", "b", "c", "d", "e"]
    assert next(iter(ds))["c"].numpy().tolist() == [22, 38]
    bare = tmp_path / "bare.csv"
    bare.write_text("1,2\n3,4\n")
    ds = tf.data.experimental.make_csv_dataset(str(bare), batch_size=2, num_epochs=1,
                                               shuffle=False, column_names=["a", "b"],
                                               header=False)
    assert _numpy(next(iter(ds))) == {"a": [1, 3], "b": [2, 4]}


def test_glob_patterns_read_every_matching_file(tmp_path):
    for i in range(3):
        (tmp_path / f"part{i}.csv").write_text(f"x\n{i}\n{i + 10}\n")
    ds = tf.data.experimental.make_csv_dataset(str(tmp_path / "part*.csv"), batch_size=6,
                                               num_epochs=1, shuffle=False)
    assert next(iter(ds))["x"].numpy().tolist() == [0, 10, 1, 11, 2, 12]


def test_bad_arguments_name_themselves(titanic, tmp_path):
    with pytest.raises(ValueError, match="label_name 'nope'"):
        tf.data.experimental.make_csv_dataset(titanic, batch_size=2, label_name="nope")
    with pytest.raises(ValueError, match="no files match file_pattern"):
        tf.data.experimental.make_csv_dataset(str(tmp_path / "none*.csv"), batch_size=2)
    with pytest.raises(ValueError, match="select_columns names 'nope'"):
        tf.data.experimental.make_csv_dataset(titanic, batch_size=2, select_columns=["nope"])
    with pytest.raises(ValueError, match="column_defaults has 1 entries for 5 columns"):
        tf.data.experimental.make_csv_dataset(titanic, batch_size=2, column_defaults=[0])
    with pytest.raises(ValueError, match="give column_names"):
        tf.data.experimental.make_csv_dataset(titanic, batch_size=2, header=False)


def test_csv_dataset_record_defaults_as_tensorflow(titanic):
    ds = tf.data.experimental.CsvDataset(
        titanic, [tf.int32, tf.string, tf.constant([0.0]), tf.float32, "x"], header=True)
    rows = [[t.numpy().tolist() if t.dtype != tf.string else t.numpy() for t in r]
            for r in ds]
    assert rows == [
        [0, b"male", 22.0, 7.25, b"South, hampton"],
        [1, b"female", 38.0, np.float32(71.2833).item(), b"Cherbourg"],
        [1, b"female", 0.0, np.float32(7.925).item(), b"x"],
        [1, b"female", 35.0, np.float32(53.1).item(), b"Southampton"],
        [0, b"male", 35.0, np.float32(8.05).item(), b"Queenstown"]]
    assert [s.dtype for s in ds.element_spec] == [tf.int32, tf.string, tf.float32,
                                                  tf.float32, tf.string]
    assert all(tuple(s.shape) == () for s in ds.element_spec)


def test_csv_dataset_select_and_exclude_columns(titanic):
    ds = tf.data.experimental.CsvDataset(titanic, [0.0, 0.0], header=True, select_cols=[2, 3])
    assert [[float(t) for t in r] for r in ds][:3] == \
        [[22.0, 7.25], [38.0, np.float32(71.2833).item()], [0.0, np.float32(7.925).item()]]
    ds = tf.data.experimental.CsvDataset(titanic, [tf.int32, tf.string], header=True,
                                         exclude_cols=[2, 3, 4])
    assert [[r[0].numpy().tolist(), r[1].numpy()] for r in ds] == \
        [[0, b"male"], [1, b"female"], [1, b"female"], [1, b"female"], [0, b"male"]]


def test_csv_dataset_without_header_quotes_delimiter_and_na_value(titanic, tmp_path):
    ds = tf.data.experimental.CsvDataset(titanic, [tf.string, tf.string, "", "", ""])
    assert [r[0].numpy() for r in ds] == [b"survived", b"0", b"1", b"1", b"1", b"0"]
    path = tmp_path / "b.csv"
    path.write_text('1;2\n3;"4""x"\n5;na\n')
    ds = tf.data.experimental.CsvDataset(str(path), [tf.int32, "d"], field_delim=";",
                                         na_value="na")
    assert [[r[0].numpy().tolist(), r[1].numpy()] for r in ds] == \
        [[1, b"2"], [3, b'4"x'], [5, b"d"]]
    twice = tf.data.experimental.CsvDataset([str(path)] * 2, [tf.int32, "d"],
                                            field_delim=";", na_value="na")
    assert len(list(twice)) == 6
    packed = tmp_path / "b.csv.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    ds = tf.data.experimental.CsvDataset(str(packed), [0, ""], field_delim=";",
                                         na_value="na", compression_type="GZIP")
    assert [r[0].numpy().tolist() for r in ds] == [1, 3, 5]


def test_csv_dataset_bad_records_raise_errors_naming_the_line(titanic, tmp_path):
    # TensorFlow: InvalidArgumentError "Field 0 is required but missing in record!".
    ds = tf.data.experimental.CsvDataset(titanic, [tf.float32, tf.float32], header=True,
                                         select_cols=[2, 3])
    with pytest.raises(ValueError, match=r"titanic.csv, line 4, field 0: the field is "
                                         r"required"):
        list(ds)
    path = tmp_path / "b.csv"
    path.write_text('1;2\n3;"4""x"\n')
    # TensorFlow: "Field 1 in record is not a valid int32: 4"x".
    with pytest.raises(ValueError, match=r"line 2, field 1: '4\"x' is not a valid int32"):
        list(tf.data.experimental.CsvDataset(str(path), [tf.int32, tf.int32],
                                             field_delim=";"))
    # TensorFlow: "Expect 1 fields but have more in record".
    with pytest.raises(ValueError, match="line 1 has 2 fields; record_defaults has 1"):
        list(tf.data.experimental.CsvDataset(str(path), [tf.int32], field_delim=";"))
    with pytest.raises(ValueError, match=r"record_defaults\[0\]: the dtype bool"):
        tf.data.experimental.CsvDataset(str(path), [tf.bool])
