"""save_weights / load_weights: safetensors, structural keys, clear mismatches."""

import io
import tempfile

import numpy as np
import pytest
import safetensors.numpy
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import loopax
from loopax.layers import BatchNormalization, Dense
from loopax.models import Model, Sequential
from loopax.src.saving.weights_file import SafetensorsLayout

X = np.random.default_rng(3).normal(size=(4, 6)).astype(np.float32)


def make_model(hidden=5):
    inputs = loopax.Input(shape=(6,))
    x = Dense(hidden, activation="relu")(inputs)
    x = BatchNormalization()(x)
    return Model(inputs, Dense(3)(x))


def perturb(model):
    model.set_weights([w + np.random.default_rng(i).normal(size=w.shape).astype(w.dtype)
                       for i, w in enumerate(model.get_weights())])


def test_round_trip_into_a_fresh_instance_gives_identical_predictions(tmp_path):
    model = make_model()
    perturb(model)   # non-trivial BN moving statistics too
    path = tmp_path / "model.weights.safetensors"
    model.save_weights(path)
    fresh = make_model()   # its layers got other automatic names (dense_2, ...)
    assert fresh.layers[1].name != model.layers[1].name
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh(X), model(X))
    keys = sorted(safetensors.numpy.load_file(str(path)))
    assert keys == sorted(["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias",
                           "batch_normalization/gamma", "batch_normalization/beta",
                           "batch_normalization/moving_mean",
                           "batch_normalization/moving_variance"])


def test_key_order_in_the_file_does_not_matter(tmp_path):
    model = make_model()
    path = tmp_path / "w.safetensors"
    model.save_weights(path)
    arrays = safetensors.numpy.load_file(str(path))
    shuffled = {k: arrays[k] + 1 for k in reversed(sorted(arrays))}
    safetensors.numpy.save_file(shuffled, str(path))
    model.load_weights(path)
    np.testing.assert_array_equal(model.get_layer(index=1).kernel.numpy(),
                                  arrays["dense/kernel"] + 1)


def test_mismatch_lists_missing_unexpected_and_mis_shaped_keys(tmp_path):
    model = make_model()
    path = tmp_path / "w.safetensors"
    model.save_weights(path)
    arrays = safetensors.numpy.load_file(str(path))
    del arrays["dense_1/bias"]
    arrays["extra/kernel"] = np.zeros(2, np.float32)
    arrays["dense/kernel"] = np.zeros((6, 9), np.float32)
    safetensors.numpy.save_file(arrays, str(path))
    before = model.get_weights()
    with pytest.raises(ValueError) as e:
        model.load_weights(path)
    message = str(e.value)
    assert "missing from the file: ['dense_1/bias']" in message
    assert "in the file but not in the model: ['extra/kernel']" in message
    assert "dense/kernel: file (6, 9), model (6, 5)" in message
    for got, want in zip(model.get_weights(), before):   # nothing half-loaded
        np.testing.assert_array_equal(got, want)
    with pytest.warns(UserWarning, match="matching weights"):
        model.load_weights(path, skip_mismatch=True)
    np.testing.assert_array_equal(model.get_layer(index=3).kernel.numpy(),
                                  arrays["dense_1/kernel"])


def test_seed_003_checkpoint_name_without_extension(tmp_path):
    class Linear(Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.w = loopax.Variable(5.0)
            self.b = loopax.Variable(0.0)

        def call(self, x):
            return self.w * x + self.b

    model = Linear()
    model.w.assign(3.25)
    model.b.assign(-1.5)
    model.save_weights(str(tmp_path / "my_checkpoint"))
    other = Linear()
    other.load_weights(str(tmp_path / "my_checkpoint"))
    assert (float(other.w), float(other.b)) == (3.25, -1.5)


def test_h5_names_get_safetensors_content_and_real_hdf5_is_refused(tmp_path):
    model = make_model()
    model.save_weights(tmp_path / "model.weights.h5")
    assert sorted(safetensors.numpy.load_file(str(tmp_path / "model.weights.h5")))
    model.load_weights(tmp_path / "model.weights.h5")
    fake = tmp_path / "keras.weights.h5"
    fake.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    with pytest.raises(ValueError, match="HDF5"):
        model.load_weights(fake)


def test_bfloat16_weights_round_trip(tmp_path):
    model = Sequential([loopax.Input(shape=(6,)), Dense(3, dtype="bfloat16")])
    perturb(model)
    model.save_weights(tmp_path / "bf16.safetensors")
    other = Sequential([loopax.Input(shape=(6,)), Dense(3, dtype="bfloat16")])
    other.load_weights(tmp_path / "bf16.safetensors")
    assert str(other.weights[0].dtype) == "bfloat16"
    for got, want in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_unbuilt_model_gets_a_build_hint(tmp_path):
    model = make_model()
    model.save_weights(tmp_path / "w.safetensors")
    with pytest.raises(ValueError, match="build it first"):
        Sequential([Dense(5)]).load_weights(tmp_path / "w.safetensors")
    with pytest.raises(FileExistsError):
        model.save_weights(tmp_path / "w.safetensors", overwrite=False)


# ---- the streamed safetensors writer -----------------------------------------
_SAVED_DTYPES = [np.float32, np.float16, np.float64, np.int8, np.int32, np.int64, np.uint8,
                 np.bool_, ">f4", ">i4"]


@st.composite
def array_dicts(draw):
    names = draw(st.lists(st.text("abcz/_0", min_size=1, max_size=6), max_size=5, unique=True))
    return {name: draw(hnp.arrays(st.sampled_from(_SAVED_DTYPES),
                                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                   max_side=4)))
            for name in names}


def written(layout):
    stream = io.BytesIO()
    layout.write(stream)
    return stream.getvalue()


@settings(max_examples=60, deadline=None)
@given(array_dicts(), st.dictionaries(st.text("abc", min_size=1, max_size=3),
                                      st.text(max_size=5), max_size=2))
def test_the_streamed_file_is_what_the_safetensors_library_reads(arrays, metadata):
    layout = SafetensorsLayout(arrays, metadata)
    data = written(layout)
    assert len(data) == layout.nbytes
    loaded = safetensors.numpy.load(data)
    assert sorted(loaded) == sorted(arrays)
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype.newbyteorder("=")
        np.testing.assert_array_equal(loaded[name], array)
    with tempfile.NamedTemporaryFile(suffix=".safetensors") as f:
        f.write(data)
        f.flush()
        with safetensors.safe_open(f.name, "np") as opened:
            assert (opened.metadata() or {}) == metadata


def test_bfloat16_weights_stream_as_the_library_writes_them():
    import ml_dtypes
    arrays = {"w": np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)}
    data = written(SafetensorsLayout(arrays, {}))
    assert data == safetensors.numpy.save(arrays)
