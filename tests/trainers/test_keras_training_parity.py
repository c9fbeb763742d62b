"""What fit(), evaluate() and the *_on_batch methods compute, against Keras 3 itself:
the same models, weights and data run through both libraries."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))
# keras_reference skips this module without Keras.
from keras_reference import keras

import loopax

LIBRARIES = {"keras": keras, "loopax": loopax}


def assert_same_weights(got, expected, what):
    assert len(got) == len(expected), what
    for i, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{what} [{i}]")


# ---------------------------------------------------------------------------
# Weights used only inside an overridden compute_loss are trained (Keras
# differentiates with respect to all the model's trainable weights).
# ---------------------------------------------------------------------------

def loss_only_kernel_model(lib, steps_per_execution):
    """A model whose `extra` Dense is used only by its compute_loss."""

    class LossOnlyKernel(lib.Model):
        def __init__(self):
            super().__init__()
            self.dense = lib.layers.Dense(1, use_bias=False, kernel_initializer="ones")
            self.extra = lib.layers.Dense(1, use_bias=False, kernel_initializer="ones")
            self.extra.build((None, 1))

        def call(self, x):
            return self.dense(x)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            fit_extra = lib.ops.mean(lib.ops.square(self.extra(x) - y))
            return fit_extra + lib.ops.mean(lib.ops.square(y_pred - y))

    model = LossOnlyKernel()
    model.compile(optimizer=lib.optimizers.SGD(0.1),
                  steps_per_execution=steps_per_execution)
    return model


@pytest.mark.parametrize("steps_per_execution", [1, 3], ids=["single-steps", "fused-3"])
def test_a_kernel_used_only_in_compute_loss_is_trained_as_keras(steps_per_execution):
    x, y = np.ones((4, 1), "float32"), np.zeros((4, 1), "float32")
    results = {}
    for name, lib in LIBRARIES.items():
        model = loss_only_kernel_model(lib, steps_per_execution)
        model(x)
        history = model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        results[name] = (model.get_weights(), history.history["loss"],
                         model.evaluate(x, y, verbose=0))
    (k_weights, k_loss, k_eval), (l_weights, l_loss, l_eval) = results.values()
    assert not np.allclose(k_weights[1], 1.0)   # Keras trains the loss-only kernel
    assert_same_weights(l_weights, k_weights, "weights after fit")
    np.testing.assert_allclose(l_loss, k_loss, rtol=1e-5)
    # evaluate() reads the trained kernel, not the value it had when first compiled.
    np.testing.assert_allclose(l_eval, k_eval, rtol=1e-5)


def distiller(lib, teacher_weights, student_weights):
    """Keras's knowledge-distillation example (keras.io/examples/vision/
    knowledge_distillation) at a small size: a `Model` holding a teacher and a
    student, with the distillation loss in an overridden `compute_loss`."""

    class Distiller(lib.Model):
        def __init__(self, student, teacher):
            super().__init__()
            self.teacher = teacher
            self.student = student

        def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn,
                    alpha=0.1, temperature=3):
            super().compile(optimizer=optimizer, metrics=metrics)
            self.student_loss_fn = student_loss_fn
            self.distillation_loss_fn = distillation_loss_fn
            self.alpha = alpha
            self.temperature = temperature

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         allow_empty=False):
            teacher_pred = self.teacher(x, training=False)
            student_loss = self.student_loss_fn(y, y_pred)
            distillation_loss = self.distillation_loss_fn(
                lib.ops.softmax(teacher_pred / self.temperature, axis=1),
                lib.ops.softmax(y_pred / self.temperature, axis=1),
            ) * (self.temperature ** 2)
            return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

        def call(self, x):
            return self.student(x)

    def mlp(units, weights, name):
        model = lib.Sequential([lib.Input((6,)), lib.layers.Dense(units, activation="relu"),
                                lib.layers.Dense(3)], name=name)
        model.set_weights(weights)
        return model

    model = Distiller(student=mlp(4, student_weights, "student"),
                      teacher=mlp(8, teacher_weights, "teacher"))
    model.compile(optimizer=lib.optimizers.Adam(0.01),
                  metrics=[lib.metrics.SparseCategoricalAccuracy()],
                  student_loss_fn=lib.losses.SparseCategoricalCrossentropy(from_logits=True),
                  distillation_loss_fn=lib.losses.KLDivergence(), alpha=0.1, temperature=3)
    return model


def random_weights(rng, units):
    return [rng.normal(size=(6, units)).astype("float32") * 0.5,
            rng.normal(size=units).astype("float32") * 0.1,
            rng.normal(size=(units, 3)).astype("float32") * 0.5,
            rng.normal(size=3).astype("float32") * 0.1]


def test_knowledge_distillation_trains_the_teacher_too_as_keras():
    rng = np.random.default_rng(0)
    teacher_weights, student_weights = random_weights(rng, 8), random_weights(rng, 4)
    x = rng.normal(size=(32, 6)).astype("float32")
    y = rng.integers(0, 3, size=(32,)).astype("int32")
    results = {}
    for name, lib in LIBRARIES.items():
        model = distiller(lib, teacher_weights, student_weights)
        history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        results[name] = (model.teacher.get_weights(), model.student.get_weights(),
                         history.history, model.evaluate(x, y, verbose=0, return_dict=True))
    (k_teacher, k_student, k_history, k_eval), (l_teacher, l_student, l_history, l_eval) = (
        results.values())
    assert not np.allclose(k_teacher[0], teacher_weights[0])   # Keras updates the teacher
    assert_same_weights(l_teacher, k_teacher, "teacher weights")
    assert_same_weights(l_student, k_student, "student weights")
    assert sorted(l_history) == sorted(k_history)
    for key in k_history:
        np.testing.assert_allclose(l_history[key], k_history[key], rtol=1e-4, err_msg=key)
    assert l_eval == pytest.approx(k_eval, rel=1e-4)


# ---------------------------------------------------------------------------
# train_on_batch / test_on_batch: each call returns its own batch's values.
# ---------------------------------------------------------------------------

def on_batch_results(lib, return_dict):
    """Two train_on_batch calls then two test_on_batch calls, a learning rate of 0
    keeping the weights (and so each batch's loss) fixed."""
    model = lib.Sequential([lib.Input((1,)),
                            lib.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
    model.compile(optimizer=lib.optimizers.SGD(0.0), loss="mse", metrics=["mae"])
    x = np.ones((2, 1), "float32")
    targets = [np.full((2, 1), value, "float32") for value in (1.0, 3.0, 1.0, 2.0)]
    out = [model.train_on_batch(x, t, return_dict=return_dict) for t in targets[:2]]
    out += [model.test_on_batch(x, t, return_dict=return_dict) for t in targets[2:]]
    return out, {m.name: float(np.asarray(m.result())) for m in model.metrics[:1]}


@pytest.mark.parametrize("return_dict", [False, True], ids=["as-list", "as-dict"])
def test_on_batch_methods_return_the_batch_values_as_keras(return_dict):
    expected, expected_tracker = on_batch_results(keras, return_dict)
    got, got_tracker = on_batch_results(loopax, return_dict)
    assert expected[1] == ({"loss": 9.0, "mae": 3.0} if return_dict else [9.0, 3.0])
    assert got == [pytest.approx(e) for e in expected]
    # The loss tracker holds the last batch's loss afterwards, as in Keras.
    assert got_tracker == pytest.approx(expected_tracker)


# ---------------------------------------------------------------------------
# fit() checks Embedding indices only where the layer certainly receives x as is.
# ---------------------------------------------------------------------------

def id_and_feature_model(lib):
    """A subclassed model feeding its Embedding only `x[:, 0]`; `x[:, 1]` is a
    numeric feature far above the Embedding's `input_dim`."""

    class IdAndFeature(lib.Model):
        def __init__(self):
            super().__init__()
            self.embedding = lib.layers.Embedding(5, 2, embeddings_initializer="ones")
            self.head = lib.layers.Dense(1, kernel_initializer="ones")

        def call(self, x):
            ids = lib.ops.cast(x[:, 0], "int32")
            feature = lib.ops.cast(x[:, 1:], "float32") / 100.0
            return self.head(lib.ops.concatenate([self.embedding(ids), feature], axis=-1))

    model = IdAndFeature()
    model.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
    return model


def test_a_subclassed_model_feeding_its_embedding_part_of_x_trains_as_keras():
    x = np.stack([np.arange(8) % 5, np.arange(8) * 20], axis=1).astype("int32")
    y = np.ones((8, 1), "float32")
    losses = {name: id_and_feature_model(lib).fit(x, y, batch_size=4, epochs=2, shuffle=False,
                                                  verbose=0).history["loss"]
              for name, lib in LIBRARIES.items()}
    np.testing.assert_allclose(losses["loopax"], losses["keras"], rtol=1e-5)
