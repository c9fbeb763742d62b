"""Knowledge distillation as in the keras.io example: a Distiller model that
overrides `compute_loss` (student loss + temperature-softened KL to the
teacher) and `call`; teacher trained first, student distilled, both compared
with Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins


def blobs(rng, n, classes=3):
    """(n, 6) points around one of `classes` centres, and their labels."""
    labels = rng.integers(0, classes, n)
    centres = rng.standard_normal((classes, 6)).astype("float32") * 2
    return (centres[labels] + rng.standard_normal((n, 6))).astype("float32"), labels


def distillation_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    x, y = blobs(np.random.default_rng(0), 96)

    class Distiller(keras.Model):
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
                ops.softmax(teacher_pred / self.temperature, axis=1),
                ops.softmax(y_pred / self.temperature, axis=1),
            ) * (self.temperature ** 2)
            return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

        def call(self, x):
            return self.student(x)

    teacher = same_weights(keras.Sequential([
        keras.Input((6,)), layers.Dense(32, activation="relu"), layers.Dense(3)],
        name="teacher"))
    student = same_weights(keras.Sequential([
        keras.Input((6,)), layers.Dense(4, activation="relu"), layers.Dense(3)],
        name="student"))
    teacher.compile(optimizer=keras.optimizers.Adam(0.01),
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    metrics=[keras.metrics.SparseCategoricalAccuracy()])
    teacher_history = teacher.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0)

    distiller = Distiller(student=student, teacher=teacher)
    distiller.compile(optimizer=keras.optimizers.Adam(0.01),
                      metrics=[keras.metrics.SparseCategoricalAccuracy()],
                      student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      distillation_loss_fn=keras.losses.KLDivergence(),
                      alpha=0.1, temperature=10)
    history = distiller.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0)
    evaluation = distiller.evaluate(x, y, verbose=0, return_dict=True)
    return {"teacher": teacher_history.history, "distiller": history.history,
            "evaluate": evaluation, "student": student.predict(x[:4], verbose=0)}


def test_knowledge_distillation_compute_loss_override_matches_keras():
    ours, theirs = run_twins(distillation_script)
    assert_same_results(ours, theirs)
    assert falls(ours["teacher"]) and falls(ours["distiller"])
