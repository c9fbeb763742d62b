"""The tensorflow.org distributed-training tutorials ("Custom training with
tf.distribute.Strategy" and "Distributed training with Keras"), written the way
they are, on small synthetic data: `main(tf)` runs them with a TensorFlow
module (`loopax.tf`, or TensorFlow itself) and returns the numbers they print.

    python tests/tf_tutorials/distribute_tutorials.py [ordered|shuffled]   # loopax.tf
    /work/tfvenv/bin/python tests/tf_tutorials/distribute_tutorials.py tf ordered

prints a line "RESULTS {json}": the numbers of each data order run.
Differences from the tutorials: data are arrays of a small shape instead of
Fashion-MNIST/MNIST; weights are set from a fixed NumPy generator (TF's and
loopax's initializers draw different numbers); the global batch is 32 however
many replicas there are (so one device and eight give the same numbers);
`reset_state()` replaces Keras 2's `reset_states()` (TF 2.21's Keras has no
`reset_states` either); "ordered" leaves out the shuffle (TF's and loopax's
shuffles draw different orders), "shuffled" keeps it.
"""

import json
import os
import sys
import tempfile

import numpy as np


def fixed_weights(model, seed=0):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.uniform(-0.3, 0.3, size=w.shape).astype("float32") if w.ndim > 1
                       else np.full(w.shape, 0.01, "float32") for w in model.get_weights()])


def main(tf, shuffle=True, strategy=None):
    """The tutorials' numbers; `strategy` (default `tf.distribute.MirroredStrategy()`)."""
    out = {}
    tf.random.set_seed(7)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(160, 10, 10)).astype("uint8")
    labels = (images[:, :5].mean(axis=(1, 2)) > images[:, 5:].mean(axis=(1, 2))).astype(
        "int64") + 2 * (images[:, :, :5].mean(axis=(1, 2)) > 127.5)
    train_images, train_labels = images[:128], labels[:128]
    test_images, test_labels = images[128:], labels[128:]
    train_images = train_images[..., None] / np.float32(255)
    test_images = test_images[..., None] / np.float32(255)

    strategy = strategy or tf.distribute.MirroredStrategy()
    out["replicas"] = strategy.num_replicas_in_sync
    BUFFER_SIZE = len(train_images)
    BATCH_SIZE_PER_REPLICA = 32 // strategy.num_replicas_in_sync
    GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
    EPOCHS = 3

    train_dataset = tf.data.Dataset.from_tensor_slices((train_images, train_labels))
    if shuffle:
        train_dataset = train_dataset.shuffle(BUFFER_SIZE)
    train_dataset = train_dataset.batch(GLOBAL_BATCH_SIZE)
    test_dataset = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(
        GLOBAL_BATCH_SIZE)
    train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
    test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset)

    def create_model():
        regularizer = tf.keras.regularizers.L2(1e-3)
        model = tf.keras.Sequential([
            tf.keras.Input((10, 10, 1)),
            tf.keras.layers.Conv2D(4, 3, activation="relu", kernel_regularizer=regularizer),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(8, activation="relu", kernel_regularizer=regularizer),
            tf.keras.layers.Dense(4, kernel_regularizer=regularizer)])
        fixed_weights(model)
        return model

    checkpoint_dir = tempfile.mkdtemp()
    checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")

    with strategy.scope():
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

        def compute_loss(labels, predictions, model_losses):
            per_example_loss = loss_object(labels, predictions)
            loss = tf.nn.compute_average_loss(per_example_loss)
            if model_losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
            return loss

    with strategy.scope():
        test_loss = tf.keras.metrics.Mean(name="test_loss")
        train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
        test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")

    with strategy.scope():
        model = create_model()
        optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
        checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)

    def train_step(inputs):
        images, labels = inputs
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = compute_loss(labels, predictions, model.losses)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_accuracy.update_state(labels, predictions)
        return loss

    def test_step(inputs):
        images, labels = inputs
        predictions = model(images, training=False)
        t_loss = loss_object(labels, predictions)
        test_loss.update_state(t_loss)
        test_accuracy.update_state(labels, predictions)

    @tf.function
    def distributed_train_step(dataset_inputs):
        per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)

    @tf.function
    def distributed_test_step(dataset_inputs):
        return strategy.run(test_step, args=(dataset_inputs,))

    out["custom"] = []
    for epoch in range(EPOCHS):
        total_loss = 0.0
        num_batches = 0
        for x in train_dist_dataset:
            total_loss += distributed_train_step(x)
            num_batches += 1
        train_loss = total_loss / num_batches
        for x in test_dist_dataset:
            distributed_test_step(x)
        if epoch % 2 == 0:
            checkpoint.save(checkpoint_prefix)
        template = "Epoch {}, Loss: {}, Accuracy: {}, Test Loss: {}, Test Accuracy: {}"
        print(template.format(epoch + 1, train_loss, train_accuracy.result() * 100,
                              test_loss.result(), test_accuracy.result() * 100))
        out["custom"].append([float(train_loss), float(train_accuracy.result()),
                              float(test_loss.result()), float(test_accuracy.result())])
        test_loss.reset_state()
        train_accuracy.reset_state()
        test_accuracy.reset_state()

    # A loop over the dataset inside tf.function.
    @tf.function
    def distributed_train_epoch(dataset):
        total_loss = 0.0
        num_batches = 0
        for x in dataset:
            per_replica_losses = strategy.run(train_step, args=(x,))
            total_loss += strategy.reduce(
                tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)
            num_batches += 1
        return total_loss / tf.cast(num_batches, dtype=tf.float32)

    out["epoch_function"] = []
    for epoch in range(2):
        train_loss = distributed_train_epoch(train_dist_dataset)
        print("Epoch {}, Loss: {}, Accuracy: {}".format(epoch + 1, train_loss,
                                                       train_accuracy.result() * 100))
        out["epoch_function"].append([float(train_loss), float(train_accuracy.result())])
        train_accuracy.reset_state()

    # Where the arrays are (loopax only): batches split over the replicas,
    # Variables replicated.
    first = getattr(next(iter(train_dist_dataset))[0], "_loopax_value", None)
    if first is not None:
        kernel = model.layers[0].kernel.value
        out["layout"] = [len(first.sharding.device_set), first.sharding.is_fully_replicated,
                         len(kernel.sharding.device_set), kernel.sharding.is_fully_replicated]

    # Restore the checkpoint into a model made without the strategy.
    eval_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="eval_accuracy")
    new_model = create_model()
    new_optimizer = tf.keras.optimizers.Adam()
    test_dataset = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(
        GLOBAL_BATCH_SIZE)

    @tf.function
    def eval_step(images, labels):
        predictions = new_model(images, training=False)
        eval_accuracy(labels, predictions)

    checkpoint = tf.train.Checkpoint(optimizer=new_optimizer, model=new_model)
    checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir))
    for images, labels in test_dataset:
        eval_step(images, labels)
    print("Accuracy after restoring the saved model without strategy: {}".format(
        eval_accuracy.result() * 100))
    out["restored_accuracy"] = float(eval_accuracy.result())

    # Iterating with iter() and next().
    out["iterated"] = []
    for _ in range(2):
        total_loss = 0.0
        num_batches = 0
        train_iter = iter(train_dist_dataset)
        for _ in range(3):
            total_loss += distributed_train_step(next(train_iter))
            num_batches += 1
        average_train_loss = total_loss / num_batches
        print("Epoch {}, Loss: {}, Accuracy: {}".format(epoch + 1, average_train_loss,
                                                       train_accuracy.result() * 100))
        out["iterated"].append([float(average_train_loss), float(train_accuracy.result())])
        train_accuracy.reset_state()

    # Per-replica datasets from a function (InputContext).
    def dataset_fn(input_context):
        batch_size = input_context.get_per_replica_batch_size(GLOBAL_BATCH_SIZE)
        d = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(batch_size)
        return d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)

    per_replica_dataset = strategy.distribute_datasets_from_function(dataset_fn)
    for x in per_replica_dataset:
        distributed_test_step(x)
    out["from_function"] = [float(test_loss.result()), float(test_accuracy.result())]
    test_loss.reset_state()
    test_accuracy.reset_state()

    # Distributed training with Keras: compile in the scope, fit outside it.
    with strategy.scope():
        keras_model = create_model()
        keras_model.compile(
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            optimizer=tf.keras.optimizers.Adam(learning_rate=0.01), metrics=["accuracy"])

    def decay(epoch):
        return 1e-2 if epoch < 1 else 1e-3

    class PrintLR(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            print("\nLearning rate for epoch {} is {}".format(
                epoch + 1, keras_model.optimizer.learning_rate.numpy()))

    callbacks = [tf.keras.callbacks.LearningRateScheduler(decay), PrintLR()]
    history = keras_model.fit(train_dataset, epochs=2, callbacks=callbacks, verbose=0)
    out["fit"] = [float(v) for v in history.history["loss"] + history.history["accuracy"]]
    eval_loss, eval_acc = keras_model.evaluate(test_dataset, verbose=0)
    print("Eval loss: {}, Eval accuracy: {}".format(eval_loss, eval_acc))
    out["evaluate"] = [float(eval_loss), float(eval_acc)]
    path = os.path.join(checkpoint_dir, "my_model.keras")
    keras_model.save(path)
    with strategy.scope():
        replicated_model = tf.keras.models.load_model(path)
        replicated_model.compile(
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            optimizer=tf.keras.optimizers.Adam(), metrics=["accuracy"])
        eval_loss, eval_acc = replicated_model.evaluate(test_dataset, verbose=0)
        out["replicated_evaluate"] = [float(eval_loss), float(eval_acc)]
        # fit inside the scope too
        history = replicated_model.fit(train_dataset, epochs=1, verbose=0)
        out["fit_in_scope"] = [float(v) for v in history.history["loss"]]
    return out


if __name__ == "__main__":
    if "tf" in sys.argv[1:]:
        import tensorflow as tf_module
    else:
        import loopax.tf as tf_module
    modes = [m for m in ("ordered", "shuffled") if m in sys.argv[1:]] or ["ordered", "shuffled"]
    results = {mode: main(tf_module, shuffle=mode == "shuffled") for mode in modes}
    print("RESULTS " + json.dumps(results))
