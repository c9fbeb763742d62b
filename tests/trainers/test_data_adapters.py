"""Every kind of data trains the same way: arrays (on the device or batched
on the host), pandas, generators, PyDatasets; dicts and lists for several
inputs and outputs."""

import numpy as np
import pandas as pd
import pytest
from trainer_testlib import Snapshot, mlp, regression_data

import loopax as keras
from loopax.src.trainers import data_adapters
from loopax.src.trainers.data_adapters import array_data_adapter, data_adapter_utils


@pytest.fixture(scope="module")
def setup():
    keras.utils.set_random_seed(0)
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    snapshot = Snapshot(model)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    reference = model.get_weights()
    return model, snapshot, x, y, reference


def _assert_same_weights(a, b):
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_pandas_frames_train_like_arrays(setup):
    model, snapshot, x, y, reference = setup
    snapshot.restore()
    model.fit(pd.DataFrame(x), pd.Series(y[:, 0]), batch_size=16, epochs=2, verbose=0,
              shuffle=False)
    _assert_same_weights(reference, model.get_weights())


def test_generator_and_pydataset_train_like_arrays(setup):
    model, snapshot, x, y, reference = setup

    def batches():
        for _ in range(2):
            for i in range(0, 64, 16):
                yield x[i:i + 16], y[i:i + 16]

    snapshot.restore()
    history = model.fit(batches(), epochs=2, steps_per_epoch=4, verbose=0)
    assert len(history.history["loss"]) == 2
    _assert_same_weights(reference, model.get_weights())

    class Batches(keras.utils.PyDataset if hasattr(keras.utils, "PyDataset")
                  else data_adapters.PyDataset):
        def __init__(self):
            super().__init__(workers=2)
            self.epochs_ended = 0

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return x[16 * i:16 * (i + 1)], y[16 * i:16 * (i + 1)]

        def on_epoch_end(self):
            self.epochs_ended += 1

    snapshot.restore()
    dataset = Batches()
    model.fit(dataset, epochs=2, verbose=0, shuffle=False)
    assert dataset.epochs_ended == 2
    _assert_same_weights(reference, model.get_weights())


def test_arrays_too_large_for_the_device_are_batched_on_the_host(setup, monkeypatch):
    model, snapshot, x, y, _ = setup
    snapshot.restore()
    keras.utils.set_random_seed(3)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)        # shuffled, on the device
    on_device = model.get_weights()
    monkeypatch.setattr(array_data_adapter, "DEVICE_DATA_LIMIT_BYTES", 0)
    snapshot.restore()
    keras.utils.set_random_seed(3)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)        # same shuffle, from the host
    _assert_same_weights(on_device, model.get_weights())


def test_dict_inputs_and_outputs_with_per_output_losses_and_metrics():
    keras.utils.set_random_seed(0)
    a = keras.Input(shape=(2,), name="a")
    b = keras.Input(shape=(3,), name="b")
    h = keras.layers.Concatenate()([a, b])
    model = keras.Model({"a": a, "b": b},
                        {"reg": keras.layers.Dense(1, name="reg")(h),
                         "cls": keras.layers.Dense(3, activation="softmax", name="cls")(h)})
    model.compile(optimizer=keras.optimizers.SGD(0.0),
                  loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
                  loss_weights={"reg": 2.0, "cls": 0.5},
                  metrics={"cls": ["accuracy"], "reg": ["mae"]})
    rng = np.random.default_rng(0)
    x = {"a": rng.normal(size=(32, 2)).astype("float32"),
         "b": rng.normal(size=(32, 3)).astype("float32")}
    y = {"reg": rng.normal(size=(32, 1)).astype("float32"),
         "cls": rng.integers(0, 3, size=(32,)).astype("int32")}
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert set(history.history) == {"loss", "reg_loss", "cls_loss", "cls_accuracy", "reg_mae"}

    out = model.predict(x, verbose=0)
    assert set(out) == {"reg", "cls"}
    reg = np.asarray(out["reg"], np.float64)
    probs = np.asarray(out["cls"], np.float64)
    logs = history.history
    assert logs["reg_loss"][0] == pytest.approx(np.mean((reg - y["reg"]) ** 2), rel=1e-4)
    assert logs["reg_mae"][0] == pytest.approx(np.mean(np.abs(reg - y["reg"])), rel=1e-4)
    cross_entropy = -np.mean(np.log(probs[np.arange(32), y["cls"]]))
    assert logs["cls_loss"][0] == pytest.approx(cross_entropy, rel=1e-4)
    assert logs["cls_accuracy"][0] == pytest.approx(np.mean(np.argmax(probs, -1) == y["cls"]))
    assert logs["loss"][0] == pytest.approx(2.0 * logs["reg_loss"][0] + 0.5 * logs["cls_loss"][0],
                                            rel=1e-5)


def test_list_outputs_with_a_loss_list():
    inputs = keras.Input(shape=(3,))
    model = keras.Model(inputs, [keras.layers.Dense(1)(inputs), keras.layers.Dense(2)(inputs)])
    model.compile(optimizer="sgd", loss=["mse", "mae"])
    x, y = regression_data(n=32)
    y2 = np.zeros((32, 2), "float32")
    evaluation = model.evaluate(x, [y, y2], batch_size=32, verbose=0, return_dict=True)
    out = model.predict(x, verbose=0)
    mse = np.mean((np.asarray(out[0], np.float64) - y) ** 2)
    mae = np.mean(np.abs(np.asarray(out[1], np.float64)))
    assert evaluation["loss"] == pytest.approx(mse + mae, rel=1e-5)
    with pytest.raises(ValueError, match="2 output"):
        model.fit(x, y, verbose=0)


# ---- adapter units --------------------------------------------------------

def test_array_adapter_batches_and_tail():
    adapter = data_adapters.get_data_adapter(np.arange(10.0)[:, None], np.arange(10),
                                             batch_size=4)
    batches = list(adapter.get_numpy_iterator())
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert adapter.num_batches == 3 and adapter.partial_batch_size == 2
    assert batches[0][0].dtype == np.float32 and batches[0][1].dtype == np.int32


def test_array_adapter_epoch_order_is_a_seeded_permutation():
    adapter = data_adapters.get_data_adapter(np.zeros((50, 1)), np.zeros(50), batch_size=8,
                                             shuffle=True)
    a, b = adapter.epoch_order((7, 0)), adapter.epoch_order((7, 0))
    np.testing.assert_array_equal(a, b)
    assert sorted(a.tolist()) == list(range(50))
    assert not np.array_equal(a, adapter.epoch_order((7, 1)))


def test_class_weight_to_sample_weight():
    y = np.array([0, 1, 2, 1])
    np.testing.assert_allclose(
        data_adapter_utils.class_weight_to_sample_weight(y, {0: 1.0, 1: 2.0, 2: 0.5}),
        [1.0, 2.0, 0.5, 2.0])
    one_hot = np.eye(3)[y]
    np.testing.assert_allclose(
        data_adapter_utils.class_weight_to_sample_weight(one_hot, {1: 4.0}, [1, 1, 1, 0.5]),
        [1.0, 4.0, 1.0, 2.0])


def test_unpack_and_pack():
    unpack = data_adapter_utils.unpack_x_y_sample_weight
    assert unpack(1) == (1, None, None)
    assert unpack((1, 2)) == (1, 2, None)
    assert unpack([1, 2, 3]) == (1, 2, 3)
    with pytest.raises(ValueError, match="4 elements"):
        unpack((1, 2, 3, 4))


def test_tf_dataset_if_installed(setup):
    tf = pytest.importorskip("tensorflow")
    model, snapshot, x, y, reference = setup
    snapshot.restore()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    model.fit(dataset, epochs=2, verbose=0)
    _assert_same_weights(reference, model.get_weights())


def test_torch_dataloader_if_installed(setup):
    torch = pytest.importorskip("torch")
    model, snapshot, x, y, reference = setup
    snapshot.restore()
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    model.fit(torch.utils.data.DataLoader(dataset, batch_size=16), epochs=2, verbose=0)
    _assert_same_weights(reference, model.get_weights())


def test_grain_if_installed(setup):
    grain = pytest.importorskip("grain")
    model, snapshot, x, y, reference = setup
    snapshot.restore()
    dataset = grain.MapDataset.source([(x[i], y[i]) for i in range(64)]).batch(16)
    model.fit(dataset, epochs=2, verbose=0)
    _assert_same_weights(reference, model.get_weights())


def test_a_reiterable_object_is_read_afresh_each_epoch():
    class Batches:
        def __init__(self):
            self.passes = 0

        def __iter__(self):
            self.passes += 1
            for i in range(2):
                yield np.full((4, 3), i, "float32"), np.zeros((4, 1), "float32")

    source = Batches()
    adapter = data_adapters.get_data_adapter(source)
    assert isinstance(adapter, data_adapters.GeneratorDataAdapter)
    assert [len(list(adapter.get_numpy_iterator())) for _ in range(2)] == [2, 2]
    assert source.passes == 3   # one peek, two epochs


def test_an_empty_pydataset_is_named_by_its_own_class():
    """A PyDataset whose first batch is missing is refused naming the user's class (it
    used to name the adapter's internal wrapper), and one without a length is read until
    its `__getitem__` runs out."""
    class NoBatches(keras.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, index):
            raise IndexError(index)

    with pytest.raises(ValueError, match="The NoBatches given as data yielded no batch"):
        data_adapters.get_data_adapter(NoBatches())

    x = np.arange(12.0, dtype="float32").reshape(6, 2)

    class Unsized(keras.utils.PyDataset):
        def __getitem__(self, index):
            if index >= 3:
                raise IndexError(index)
            return x[2 * index:2 * index + 2], x[2 * index:2 * index + 2, :1]

    adapter = data_adapters.get_data_adapter(Unsized())
    assert adapter.num_batches is None
    batches = list(adapter.get_numpy_iterator())
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), x)
