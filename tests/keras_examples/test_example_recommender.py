"""Collaborative filtering as in keras.io's movie-recommender example: a
subclassed RecommenderNet with user and item embeddings plus per-id biases,
a dot product by `ops.tensordot`, sigmoid ratings in [0, 1]; compared with
Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins

USERS, ITEMS = 12, 20


def ratings(rng, n):
    """(n, 2) int (user, item) pairs and ratings in [0, 1] from hidden factors."""
    user_factors, item_factors = rng.standard_normal((USERS, 2)), rng.standard_normal((ITEMS, 2))
    pairs = np.stack([rng.integers(0, USERS, n), rng.integers(0, ITEMS, n)], axis=1)
    score = (user_factors[pairs[:, 0]] * item_factors[pairs[:, 1]]).sum(1)
    return pairs.astype("int64"), (1 / (1 + np.exp(-score))).astype("float32")


def recommender_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    x, y = ratings(np.random.default_rng(3), 128)

    class RecommenderNet(keras.Model):
        def __init__(self, num_users, num_movies, embedding_size, **kwargs):
            super().__init__(**kwargs)
            self.user_embedding = layers.Embedding(
                num_users, embedding_size, embeddings_initializer="he_normal",
                embeddings_regularizer=keras.regularizers.l2(1e-6))
            self.user_bias = layers.Embedding(num_users, 1)
            self.movie_embedding = layers.Embedding(
                num_movies, embedding_size, embeddings_initializer="he_normal",
                embeddings_regularizer=keras.regularizers.l2(1e-6))
            self.movie_bias = layers.Embedding(num_movies, 1)

        def call(self, inputs):
            user_vector = self.user_embedding(inputs[:, 0])
            user_bias = self.user_bias(inputs[:, 0])
            movie_vector = self.movie_embedding(inputs[:, 1])
            movie_bias = self.movie_bias(inputs[:, 1])
            dot_user_movie = ops.tensordot(user_vector, movie_vector, 2)
            x = dot_user_movie + user_bias + movie_bias
            return ops.nn.sigmoid(x)

    model = RecommenderNet(USERS, ITEMS, 4)
    model(x[:2])  # builds the embeddings
    same_weights(model)
    model.compile(loss=keras.losses.BinaryCrossentropy(),
                  optimizer=keras.optimizers.Adam(learning_rate=0.01))
    history = model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0,
                        validation_split=0.25)
    users_first_items = np.stack([np.zeros(ITEMS, "int64"), np.arange(ITEMS)], axis=1)
    scores = model.predict(users_first_items, verbose=0).ravel()
    return {"history": history.history, "scores": scores,
            "top_items": np.argsort(-scores)[:5]}


def test_recommender_embeddings_matches_keras():
    ours, theirs = run_twins(recommender_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
