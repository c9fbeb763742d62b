# The ideas of TensorFlow's "tf.data: Build TensorFlow input pipelines" guide:
# from_tensor_slices of tuples and dicts, batch, shuffle, map, take/skip/repeat,
# zip, range, and a pipeline fed straight to Keras fit/evaluate/predict.
import numpy as np

import loopax.tf as tf

features = np.arange(10, dtype=np.float32).reshape(10, 1) / 10.0
labels = 3.0 * features + 1.0

dataset = tf.data.Dataset.from_tensor_slices((features, labels))
print("cardinality:", int(dataset.cardinality()), len(dataset))
print("batched:", [int(x.shape[0]) for x, _ in dataset.batch(4)])
print("dropped:", [int(x.shape[0]) for x, _ in dataset.batch(4, drop_remainder=True)])
print("mapped:", [float(v[0]) for v in dataset.map(lambda x, y: y - 3.0 * x).take(3)])
print("range:", [int(v) for v in tf.data.Dataset.range(2, 12, 3)])
print("skip_repeat:", [int(v) for v in tf.data.Dataset.range(4).skip(2).repeat(3)])
zipped = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(10, 20)))
print("zipped:", [int(a) * 100 + int(b) for a, b in zipped])
records = tf.data.Dataset.from_tensor_slices({"x": features[:, 0], "id": np.arange(10)})
print("dict_batch:", [float(tf.reduce_sum(b["x"])) for b in records.batch(5)])
print("filtered:", [int(v) for v in tf.data.Dataset.range(10).filter(lambda v: v % 3 == 0)])

shuffled = [int(v) for v in tf.data.Dataset.range(20).shuffle(20, seed=4)]
print("shuffle_sorted:", sorted(shuffled))
print("shuffle_moved:", int(shuffled != list(range(20))))
print("shuffle_buffer_1:", [int(v) for v in tf.data.Dataset.range(6).shuffle(1)])
epochs = tf.data.Dataset.range(20).shuffle(20, seed=4)
first, second = [int(v) for v in epochs], [int(v) for v in epochs]
print("reshuffled:", int(first != second), int(sorted(first) == sorted(second)))

model = tf.keras.Sequential([
    tf.keras.Input(shape=(1,)),
    tf.keras.layers.Dense(1, kernel_initializer="zeros", bias_initializer="zeros")])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1), loss="mse")
train = dataset.batch(4, drop_remainder=True).cache().prefetch(tf.data.AUTOTUNE)
history = model.fit(train, epochs=3, verbose=0)
print("fit_loss:", history.history["loss"])
print("fit_weights:", model.layers[0].kernel.numpy().ravel(), model.layers[0].bias.numpy())
print("evaluate:", model.evaluate(dataset.batch(5), verbose=0))
print("predict_shape:", model.predict(dataset.map(lambda x, y: x).batch(3), verbose=0).shape)
steps = model.fit(dataset.batch(5).repeat(), steps_per_epoch=3, epochs=1, verbose=0)
print("repeat_steps:", len(steps.history["loss"]))
