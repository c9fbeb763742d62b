"""Attention-based multiple-instance learning as in keras.io's
attention_mil_classification, shrunk: a bag of instances as one Input each
through shared Dense layers, a gated MILAttentionLayer with its own
regularized weights and a softmax over the instances, `class_weight`, a
ModelCheckpoint keeping the best weights (`.weights.h5`) that are loaded back;
compared with Keras."""

import functools

import numpy as np
from twins import assert_same_results, falls, run_twins

BAG_SIZE, FEATURES = 3, 4


def bags(rng, n):
    """`BAG_SIZE` arrays (n, FEATURES) and bag labels: a bag is positive when
    one of its instances is shifted far from the others."""
    instances = rng.standard_normal((BAG_SIZE, n, FEATURES)).astype("float32")
    labels = (rng.random(n) < 0.3).astype("int32")  # unbalanced: class_weight
    which = rng.integers(0, BAG_SIZE, n)
    instances[which[labels == 1], np.flatnonzero(labels)] += 3.0
    return list(instances), labels


def mil_script(keras, same_weights, directory):
    layers, ops = keras.layers, keras.ops
    train_data, train_labels = bags(np.random.default_rng(11), 48)
    val_data, val_labels = bags(np.random.default_rng(12), 16)

    class MILAttentionLayer(layers.Layer):
        def __init__(self, weight_params_dim, kernel_initializer="glorot_uniform",
                     kernel_regularizer=None, use_gated=False, **kwargs):
            super().__init__(**kwargs)
            self.weight_params_dim = weight_params_dim
            self.use_gated = use_gated
            self.v_init = keras.initializers.get(kernel_initializer)
            self.w_init = keras.initializers.get(kernel_initializer)
            self.u_init = keras.initializers.get(kernel_initializer)
            self.v_regularizer = keras.regularizers.get(kernel_regularizer)
            self.w_regularizer = keras.regularizers.get(kernel_regularizer)
            self.u_regularizer = keras.regularizers.get(kernel_regularizer)

        def build(self, input_shape):
            input_dim = input_shape[0][1]
            self.v_weight_params = self.add_weight(
                shape=(input_dim, self.weight_params_dim), initializer=self.v_init, name="v",
                regularizer=self.v_regularizer, trainable=True)
            self.w_weight_params = self.add_weight(
                shape=(self.weight_params_dim, 1), initializer=self.w_init, name="w",
                regularizer=self.w_regularizer, trainable=True)
            if self.use_gated:
                self.u_weight_params = self.add_weight(
                    shape=(input_dim, self.weight_params_dim), initializer=self.u_init,
                    name="u", regularizer=self.u_regularizer, trainable=True)
            else:
                self.u_weight_params = None
            self.input_built = True

        def call(self, inputs):
            instances = [self.compute_attention_scores(instance) for instance in inputs]
            instances = ops.stack(instances)
            alpha = ops.softmax(instances, axis=0)
            return [alpha[i] for i in range(alpha.shape[0])]

        def compute_attention_scores(self, instance):
            original_instance = instance
            instance = ops.tanh(ops.tensordot(instance, self.v_weight_params, axes=1))
            if self.use_gated:
                instance = instance * ops.sigmoid(
                    ops.tensordot(original_instance, self.u_weight_params, axes=1))
            return ops.tensordot(instance, self.w_weight_params, axes=1)

    def create_model(instance_shape):
        inputs, embeddings = [], []
        shared_dense_layer_1 = layers.Dense(8, activation="relu")
        shared_dense_layer_2 = layers.Dense(4, activation="relu")
        for _ in range(BAG_SIZE):
            inp = layers.Input(instance_shape)
            flatten = layers.Flatten()(inp)
            dense_1 = shared_dense_layer_1(flatten)
            dense_2 = shared_dense_layer_2(dense_1)
            inputs.append(inp)
            embeddings.append(dense_2)
        alpha = MILAttentionLayer(weight_params_dim=8,
                                  kernel_regularizer=keras.regularizers.L2(0.01),
                                  use_gated=True, name="alpha")(embeddings)
        multiply_layers = [layers.multiply([alpha[i], embeddings[i]]) for i in range(len(alpha))]
        concat = layers.concatenate(multiply_layers, axis=1)
        output = layers.Dense(2, activation="softmax")(concat)
        return keras.Model(inputs, output)

    def compute_class_weights(labels):
        negative_count = len(np.where(labels == 0)[0])
        positive_count = len(np.where(labels == 1)[0])
        total_count = negative_count + positive_count
        return {0: (1 / negative_count) * (total_count / 2),
                1: (1 / positive_count) * (total_count / 2)}

    model = same_weights(create_model((FEATURES,)))
    file_path = str(directory / f"best_model_{keras.__name__}.weights.h5")
    model_checkpoint = keras.callbacks.ModelCheckpoint(
        file_path, monitor="val_loss", verbose=0, mode="min", save_best_only=True,
        save_weights_only=True)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(train_data, train_labels, validation_data=(val_data, val_labels),
                        epochs=3, class_weight=compute_class_weights(train_labels),
                        batch_size=8, shuffle=False, callbacks=[model_checkpoint], verbose=0)
    last = model.predict(val_data, verbose=0)
    model.load_weights(file_path)
    best = model.predict(val_data, verbose=0)
    attention = keras.Model(model.inputs, model.get_layer("alpha").output)
    return {"history": history.history, "last": last, "best": best,
            "attention": attention.predict(val_data, verbose=0)}


def test_attention_mil_with_class_weight_and_checkpoint_matches_keras(tmp_path):
    ours, theirs = run_twins(functools.partial(mil_script, directory=tmp_path))
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
    # The attention over a bag's instances is a softmax: it sums to 1.
    np.testing.assert_allclose(np.sum(ours["attention"], axis=0), 1.0, rtol=1e-5)
