"""`Distiller`: trains a student model to match a frozen teacher (Keras's
`keras.distillation.Distiller`). Its loss is

    student_loss_weight * student_loss + (1 - student_loss_weight) * distillation_loss

where `student_loss` compares the student's outputs with the labels (the `loss` given
to `compile`) and `distillation_loss` is the weighted sum of the distillation losses.
"""

import jax.numpy as jnp

from loopax.src import serialization, tree
from loopax.src.api_export import export
from loopax.src.distillation.distillation_loss import _as_loss
from loopax.src.metrics import Mean
from loopax.src.models.functional import Functional
from loopax.src.models.model import Model

FINAL_OUTPUT = "final_output"


@export("loopax.distillation.Distiller")
class Distiller(Model):
    """A model whose `fit()` distills `teacher` into `student`; calling it runs the
    student. The teacher is frozen (`trainable = False`).

    Args:
        teacher: The trained model to learn from.
        student: The model to train; same input shapes and dtypes as the teacher.
        distillation_losses: A `DistillationLoss` or a list of them.
        distillation_loss_weights: One weight per distillation loss (default 1.0 each).
        student_loss_weight: In [0, 1]: the share of the loss on the labels.
        name: The model's name.
        **kwargs: Passed to `Model`.
    """

    def __init__(self, teacher, student, distillation_losses, distillation_loss_weights=None,
                 student_loss_weight=0.5, name="distiller", **kwargs):
        super().__init__(name=name, **kwargs)
        _check_compatible_models(teacher, student)
        self.teacher, self.student = teacher, student
        self.student_loss_weight = _checked_student_weight(student_loss_weight)
        self.distillation_losses, self.distillation_loss_weights = _losses_and_weights(
            distillation_losses, distillation_loss_weights)
        for distillation_loss in self.distillation_losses:
            distillation_loss.validate_model_compatibility(teacher, student)
        self._teacher_features = _feature_extractor(
            teacher, [loss.teacher_layer_name for loss in self.distillation_losses
                      if getattr(loss, "teacher_layer_name", None)])
        self._student_features = _feature_extractor(
            student, [loss.student_layer_name for loss in self.distillation_losses
                      if getattr(loss, "student_layer_name", None)])
        self.teacher.trainable = False
        self.student_loss_tracker = Mean(name="student_loss")
        self.distillation_loss_tracker = Mean(name="distillation_loss")
        self.total_loss_tracker = Mean(name="total_loss")

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """Prepares training: `loss` (required) compares the student's outputs with
        the labels.

        Args:
            optimizer: The student's optimizer.
            loss: A loss name, a loss, or a structure of them matching the outputs.
            metrics: A list of metrics on the student's outputs.
            **kwargs: Passed to `Model.compile`.

        Raises:
            ValueError: `loss` is None, or `metrics` is not a list or tuple.
        """
        if loss is None:
            raise ValueError("Distiller.compile: `loss` (the student's loss on the labels) "
                             "cannot be None; e.g. loss='sparse_categorical_crossentropy'.")
        if metrics is not None and not isinstance(metrics, (list, tuple)):
            raise ValueError(f"Distiller.compile: `metrics` must be a list or tuple, got "
                             f"{type(metrics).__name__}; e.g. metrics=['accuracy'].")
        self._student_loss = tree.map_structure(_as_loss, loss)
        self._student_loss_config = loss
        super().compile(optimizer=optimizer, loss=None, metrics=metrics, **kwargs)

    def call(self, inputs, training=None, **kwargs):
        """Returns the student's outputs."""
        return self.student(inputs, training=training, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Returns the weighted sum of the student's and the distillation losses, and
        updates the `student_loss`, `distillation_loss` and `total_loss` trackers.
        (`sample_weight` is not used, as in Keras.)"""
        if y_pred is None:
            y_pred = self(x, training=training)
        student_loss = jnp.zeros((), jnp.float32)
        if self.student_loss_weight > 0.0 and y is not None:
            student_loss = self._student_loss_value(y, y_pred)
        distillation_loss = jnp.zeros((), jnp.float32)
        if self.student_loss_weight < 1.0:
            distillation_loss = self._distillation_loss_value(x, y_pred)
        total = (self.student_loss_weight * student_loss
                 + (1.0 - self.student_loss_weight) * distillation_loss)
        self.student_loss_tracker.update_state(student_loss)
        self.distillation_loss_tracker.update_state(distillation_loss)
        self.total_loss_tracker.update_state(total)
        return total

    def _student_loss_value(self, y, y_pred):
        values = tree.flatten(tree.map_structure(lambda loss, t, p: loss(t, p),
                                                 self._student_loss, y, y_pred))
        value = jnp.sum(jnp.stack(values)) if len(values) > 1 else jnp.asarray(values[0])
        return jnp.mean(value) if value.ndim else value

    def _distillation_loss_value(self, x, y_pred):
        teacher = (self._teacher_features(x, training=False) if self._teacher_features
                   else {FINAL_OUTPUT: self.teacher(x, training=False)})
        student = (self._student_features(x, training=True) if self._student_features
                   else {FINAL_OUTPUT: y_pred})
        total = jnp.zeros((), jnp.float32)
        for distillation_loss, weight in zip(self.distillation_losses,
                                             self.distillation_loss_weights):
            if getattr(distillation_loss, "teacher_layer_name", None) is not None:
                pair = (_feature(teacher, distillation_loss.teacher_layer_name),
                        _feature(student, distillation_loss.student_layer_name))
            else:
                pair = (teacher[FINAL_OUTPUT], y_pred)
            distillation_loss.validate_outputs(*pair)
            value = distillation_loss.compute_loss(*pair)
            if getattr(value, "ndim", 0):
                raise ValueError(f"{type(distillation_loss).__name__}.compute_loss returned a "
                                 f"loss of shape {value.shape}; it must return a scalar.")
            total = total + weight * value
        return total

    def get_config(self):
        """Returns the constructor arguments, the models and losses serialized."""
        return {"name": self.name, "teacher": serialization.serialize(self.teacher),
                "student": serialization.serialize(self.student),
                "distillation_losses": [serialization.serialize(loss)
                                        for loss in self.distillation_losses],
                "distillation_loss_weights": list(self.distillation_loss_weights),
                "student_loss_weight": self.student_loss_weight}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Returns the Distiller `get_config` describes.

        Args:
            config: A dict from `get_config`.
            custom_objects: Classes and functions the config names.
        """
        config = dict(config)
        for key in ("teacher", "student"):
            config[key] = serialization.deserialize(config[key], custom_objects)
        config["distillation_losses"] = [serialization.deserialize(item, custom_objects)
                                         for item in config["distillation_losses"]]
        return cls(**config)


def _checked_student_weight(weight):
    if not isinstance(weight, (int, float)) or isinstance(weight, bool):
        raise ValueError(f"Distiller: `student_loss_weight` must be a number, got "
                         f"{type(weight).__name__}.")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"Distiller: `student_loss_weight` must be between 0.0 and 1.0, "
                         f"got {weight}.")
    return weight


def _losses_and_weights(distillation_losses, weights):
    if distillation_losses is None:
        raise ValueError("Distiller: `distillation_losses` cannot be None; pass a "
                         "distillation loss (e.g. LogitsDistillation()) or a list of them.")
    if not isinstance(distillation_losses, (list, tuple)):
        return [distillation_losses], [1.0]
    if weights is None:
        return list(distillation_losses), [1.0] * len(distillation_losses)
    if len(weights) != len(distillation_losses):
        raise ValueError(f"Distiller: {len(weights)} distillation_loss_weights for "
                         f"{len(distillation_losses)} distillation_losses; give one weight "
                         "per loss.")
    return list(distillation_losses), list(weights)


def _check_compatible_models(teacher, student):
    """Same input shapes (known sizes) and input/output dtypes, when both models have
    symbolic inputs."""
    if getattr(teacher, "inputs", None) is None or getattr(student, "inputs", None) is None:
        return
    for t, s in zip(tree.flatten(teacher.inputs), tree.flatten(student.inputs)):
        _check_same("input shapes", t.shape, s.shape, _shapes_agree(t.shape, s.shape))
        _check_same("input dtypes", t.dtype, s.dtype, t.dtype == s.dtype)
    if getattr(teacher, "outputs", None) is None or getattr(student, "outputs", None) is None:
        return
    for t, s in zip(tree.flatten(teacher.outputs), tree.flatten(student.outputs)):
        _check_same("output dtypes", t.dtype, s.dtype, t.dtype == s.dtype)


def _shapes_agree(a, b):
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _check_same(what, teacher, student, agree):
    if not agree:
        raise ValueError(f"Distiller: the teacher's and the student's {what} are "
                         f"incompatible. Teacher: {teacher}, Student: {student}.")


def _feature_extractor(model, layer_names):
    """A model giving `{"final_output": ..., name: layer output, ...}` in one pass, or
    None when no layer is named."""
    if not layer_names:
        return None
    outputs = {FINAL_OUTPUT: model.outputs[0] if len(model.outputs) == 1 else model.outputs}
    for layer_name in dict.fromkeys(layer_names):
        outputs[layer_name] = model.get_layer(name=layer_name).output
    return Functional(model.inputs, outputs, name=f"{model.name}_multi_feature_extractor")


def _feature(features, layer_name):
    name = layer_name or FINAL_OUTPUT
    if name not in features:
        raise ValueError(f"Distiller: layer {name!r} is not among the extracted features "
                         f"{list(features)}.")
    return features[name]

