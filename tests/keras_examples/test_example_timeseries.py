"""Timeseries forecasting as in keras.io's timeseries_weather_forecasting,
shrunk: normalized multivariate series, windows from
`keras.preprocessing.timeseries_dataset_from_array` (with `sampling_rate`,
targets `future` steps ahead), `dataset.take(1)` to size the Input, an LSTM,
EarlyStopping and ModelCheckpoint on `val_loss`; compared with Keras.

Keras's `timeseries_dataset_from_array` builds a `tf.data.Dataset` and needs
TensorFlow, which the test environment does not have: Keras's run gets the
same windows from a NumPy stand-in (a `keras.utils.PyDataset`) written from
Keras's documented rule, and loopax's windows are checked against it first.
Keras's fit reorders a PyDataset's batches unless told `shuffle=False` (never a
tf.data.Dataset's), so the script says `shuffle=False`; that loopax's fit keeps
its dataset's order by itself, as Keras's keeps a tf.data.Dataset's, is tested
on its own.
"""

import functools
from unittest import mock

import numpy as np
from twins import assert_same_results, falls, keras, run_twins

import loopax

STEP, PAST, FUTURE = 2, 8, 2
SEQUENCE_LENGTH = PAST // STEP


class NumpyWindows(keras.utils.PyDataset):
    """Keras's documented windows: window `i` is `data[i], data[i + sampling_rate],
    …` (`sequence_length` samples) with target `targets[i]`, for the `i` whose
    window fits in `data` and that have a target; in batches of `batch_size`."""

    def __init__(self, data, targets, sequence_length, sampling_rate=1, batch_size=128):
        super().__init__()
        data, targets = np.asarray(data), np.asarray(targets)
        count = min(len(data) - (sequence_length - 1) * sampling_rate, len(targets))
        offsets = np.arange(sequence_length) * sampling_rate
        self.x = data[np.arange(count)[:, None] + offsets]
        self.y = targets[:count]
        self.batch_size = batch_size

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index):
        batch = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[batch], self.y[batch]

    def take(self, count):
        return [self[i] for i in range(count)]


def weather(rng, n):
    """(n, 3) float32 features: two noisy daily cycles and a slow trend."""
    t = np.arange(n, dtype="float32")
    return np.stack([np.sin(2 * np.pi * t / 24), np.cos(2 * np.pi * t / 24) * 3 + 10,
                     t / n], axis=1) + 0.1 * rng.standard_normal((n, 3)).astype("float32")


def forecasting_script(keras, same_weights, directory):
    features = weather(np.random.default_rng(13), 200)
    train_split = 120

    def normalize(data, train_split):
        data_mean = data[:train_split].mean(axis=0)
        data_std = data[:train_split].std(axis=0)
        return (data - data_mean) / data_std

    features = normalize(features, train_split).astype("float32")
    train_data, val_data = features[:train_split], features[train_split:]
    start = PAST + FUTURE
    x_train = train_data
    y_train = features[start:start + train_split, 1:2]
    dataset_train = keras.preprocessing.timeseries_dataset_from_array(
        x_train, y_train, sequence_length=SEQUENCE_LENGTH, sampling_rate=STEP, batch_size=32)
    x_end = len(val_data) - PAST - FUTURE
    x_val = val_data[:x_end]
    y_val = features[train_split + PAST + FUTURE:, 1:2]
    dataset_val = keras.preprocessing.timeseries_dataset_from_array(
        x_val, y_val, sequence_length=SEQUENCE_LENGTH, sampling_rate=STEP, batch_size=32)

    for batch in dataset_train.take(1):
        inputs, targets = batch
    inputs = keras.layers.Input(shape=(inputs.shape[1], inputs.shape[2]))
    lstm_out = keras.layers.LSTM(8)(inputs)
    outputs = keras.layers.Dense(1)(lstm_out)
    model = same_weights(keras.Model(inputs=inputs, outputs=outputs))
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")

    path_checkpoint = str(directory / f"model_checkpoint_{keras.__name__}.weights.h5")
    es_callback = keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0, patience=5)
    modelckpt_callback = keras.callbacks.ModelCheckpoint(
        monitor="val_loss", filepath=path_checkpoint, verbose=0, save_weights_only=True,
        save_best_only=True)
    history = model.fit(dataset_train, epochs=3, validation_data=dataset_val, verbose=0,
                        callbacks=[es_callback, modelckpt_callback], shuffle=False)
    x, _ = dataset_val.take(1)[0] if isinstance(dataset_val, NumpyWindows) else \
        next(iter(dataset_val.take(1)))
    return {"history": history.history, "forecast": model.predict(x[:5], verbose=0)}


def test_loopax_windows_follow_keras_documented_rule():
    rng = np.random.default_rng(14)
    data, targets = rng.standard_normal((50, 3)), rng.standard_normal((45, 1))
    ours = loopax.preprocessing.timeseries_dataset_from_array(
        data, targets, sequence_length=4, sampling_rate=3, batch_size=8)
    expected = NumpyWindows(data, targets, sequence_length=4, sampling_rate=3, batch_size=8)
    ours = list(ours)
    assert len(ours) == len(expected)
    for (x, y), (x_expected, y_expected) in zip(ours, expected.take(len(expected))):
        # Iterating gives Tensors (`.numpy()`, as Keras's tf.data); float64 data comes
        # back float32, loopax's float (as tf.constant of float64 NumPy in loopax.tf).
        assert x.numpy().dtype == np.float32 and x.shape == x_expected.shape
        np.testing.assert_array_equal(x.numpy(), x_expected.astype(np.float32))
        np.testing.assert_array_equal(y.numpy(), y_expected.astype(np.float32))


def test_fit_keeps_the_dataset_order_as_keras_keeps_a_tf_data_dataset():
    """Keras's fit ignores `shuffle` for the tf.data.Dataset its utility returns
    (the windows stay in order): loopax's default fit trains as with shuffle=False."""
    rng = np.random.default_rng(15)
    data, targets = rng.standard_normal((100, 2)), rng.standard_normal((100, 1))
    losses = []
    for shuffle in (True, False):
        dataset = loopax.utils.timeseries_dataset_from_array(data, targets, sequence_length=3,
                                                             batch_size=16)
        inputs = loopax.Input((3, 2))
        model = loopax.Model(inputs, loopax.layers.Dense(1)(loopax.layers.Flatten()(inputs)))
        model.set_weights([np.full((6, 1), 0.1, "float32"), np.zeros(1, "float32")])
        model.compile(optimizer="sgd", loss="mse")
        losses.append(model.fit(dataset, epochs=2, shuffle=shuffle, verbose=0).history["loss"])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-6)


def test_timeseries_forecasting_lstm_matches_keras(tmp_path):
    script = functools.partial(forecasting_script, directory=tmp_path)
    with mock.patch.object(keras.preprocessing, "timeseries_dataset_from_array", NumpyWindows):
        ours, theirs = run_twins(script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
