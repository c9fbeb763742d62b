"""How a `Distiller` compares teacher and student: `LogitsDistillation` (final
outputs, softened by a temperature) and `FeatureDistillation` (outputs of named
layers), as Keras's `keras.distillation`."""

import warnings

import jax
import jax.numpy as jnp

from loopax.src import losses, tree
from loopax.src.api_export import export


def _as_loss(loss):
    """A loss name as its function (Keras's `losses.get`); anything else as is."""
    if isinstance(loss, str):
        return losses.get(loss)
    return loss


def _losses(loss, owner):
    structure = tree.map_structure(_as_loss, loss)
    if all(item is None for item in tree.flatten(structure)):
        raise ValueError(f"{owner}: `loss` must hold at least one loss that is not None.")
    return structure


def _summed(values):
    return jnp.sum(jnp.stack([jnp.asarray(v, jnp.float32) for v in tree.flatten(values)]))


@export("loopax.distillation.DistillationLoss")
class DistillationLoss:
    """Base class of distillation losses: subclasses implement `compute_loss`."""

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        """Returns the scalar loss between the teacher's and the student's outputs.

        Args:
            teacher_outputs: The teacher's outputs (an array or a structure of them).
            student_outputs: The student's outputs, in the same structure.
            **kwargs: Extra arguments a subclass may take.
        """
        raise NotImplementedError("Subclasses must implement compute_loss")

    def validate_outputs(self, teacher_outputs, student_outputs):
        """Raises ValueError when the two outputs' structures differ.

        Args:
            teacher_outputs: The teacher's outputs.
            student_outputs: The student's outputs.
        """
        try:
            tree.assert_same_structure(teacher_outputs, student_outputs)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{type(self).__name__}: the teacher's and the student's "
                             f"outputs have different structures: {error}") from None

    def validate_model_compatibility(self, teacher, student):
        """Checks that this loss can compare the two models (nothing by default).

        Args:
            teacher: The teacher model.
            student: The student model.
        """


@export("loopax.distillation.FeatureDistillation")
class FeatureDistillation(DistillationLoss):
    """Compares the outputs of a teacher layer and a student layer (or of the final
    outputs when no layer is named) with `loss`, averaged.

    Args:
        loss: A loss name ("mse", "cosine_similarity", ...), a loss, or a structure of
            them matching the outputs (None skips that output).
        teacher_layer_name: The teacher layer whose output is compared, or None.
        student_layer_name: The student layer whose output is compared, or None.
    """

    def __init__(self, loss="mse", teacher_layer_name=None, student_layer_name=None):
        self.teacher_layer_name = teacher_layer_name
        self.student_layer_name = student_layer_name
        self.loss = _losses(loss, "FeatureDistillation")

    def validate_model_compatibility(self, teacher, student):
        """Raises ValueError when a named layer is missing, or a model with a named
        layer has no symbolic inputs (a subclassed model).

        Args:
            teacher: The teacher model.
            student: The student model.
        """
        named = {"teacher": (teacher, self.teacher_layer_name),
                 "student": (student, self.student_layer_name)}
        if self.teacher_layer_name is None and self.student_layer_name is None:
            return
        subclassed = [role for role, (model, _) in named.items()
                      if getattr(model, "inputs", None) is None]
        if subclassed:
            raise ValueError(
                f"FeatureDistillation with layer names needs Functional or Sequential "
                f"models; the {' and '.join(subclassed)} model(s) have no symbolic inputs. "
                "Use such models, drop the layer names (to compare final outputs) or use "
                "LogitsDistillation.")
        for role, (model, layer_name) in named.items():
            if layer_name is not None:
                try:
                    model.get_layer(name=layer_name)
                except ValueError as error:
                    raise ValueError(f"In {role} model: {error}") from None

    def validate_outputs(self, teacher_outputs, student_outputs):
        """Raises ValueError when the outputs do not match each other or `loss`.

        Args:
            teacher_outputs: The teacher layer's output.
            student_outputs: The student layer's output.
        """
        super().validate_outputs(teacher_outputs, student_outputs)
        try:
            tree.assert_same_structure(self.loss, teacher_outputs)
        except (ValueError, TypeError) as error:
            raise ValueError(f"FeatureDistillation: the `loss` structure does not match the "
                             f"outputs' structure: {error}") from None

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        """Returns the sum over outputs of `mean(loss(teacher, student))`.

        Args:
            teacher_outputs: The teacher layer's output (or structure).
            student_outputs: The student layer's output, same structure.
            **kwargs: Ignored.
        """
        def one(loss, teacher, student):
            return 0.0 if loss is None else jnp.mean(loss(teacher, student))
        return _summed(tree.map_structure(one, self.loss, teacher_outputs, student_outputs))

    def get_config(self):
        """Returns the constructor arguments, the losses serialized."""
        return {"loss": _serialize_losses(self.loss),
                "teacher_layer_name": self.teacher_layer_name,
                "student_layer_name": self.student_layer_name}

    @classmethod
    def from_config(cls, config):
        """Returns the loss `get_config` describes.

        Args:
            config: A dict from `get_config`.
        """
        config = dict(config)
        config["loss"] = _deserialize_losses(config["loss"])
        return cls(**config)


def _serialize_losses(structure):
    """A loss, or a list of losses (None kept), as configs."""
    if isinstance(structure, (list, tuple)):
        return [_serialize_losses(item) for item in structure]
    return None if structure is None else losses.serialize(structure)


def _deserialize_losses(config):
    if isinstance(config, list):
        return [_deserialize_losses(item) for item in config]
    return None if config is None else losses.deserialize(config)


@export("loopax.distillation.LogitsDistillation")
class LogitsDistillation(DistillationLoss):
    """Compares the final outputs (logits) after dividing both by `temperature`.

    With a `losses.KLDivergence` instance the softened logits become probabilities
    (softmax) and the loss is scaled by `temperature**2` (Hinton et al.). A loss given
    by name, the default "kl_divergence" included, is applied to the scaled logits
    themselves, as Keras 3.15 does (it warns: pass `losses.KLDivergence()` for the
    softened probabilities).

    Args:
        temperature: A positive number; larger values soften the teacher's outputs.
        loss: A loss name, a loss, or a structure of them matching the outputs.
    """

    def __init__(self, temperature=3.0, loss="kl_divergence"):
        self.temperature = temperature
        self.loss = _losses(loss, "LogitsDistillation")
        if not isinstance(temperature, (int, float)) or isinstance(temperature, bool):
            raise ValueError(f"LogitsDistillation: `temperature` must be a number, got "
                             f"{type(temperature).__name__}.")
        if temperature <= 0.0:
            raise ValueError(f"LogitsDistillation: `temperature` must be positive, got "
                             f"{temperature}.")
        if any(item is losses.get("kl_divergence") for item in tree.flatten(self.loss)):
            warnings.warn(
                "LogitsDistillation: loss='kl_divergence' (a name) is applied to the "
                "temperature-scaled logits, not to softmax probabilities, as Keras 3.15 "
                "does (the logits are clipped to [1e-7, 1]). For Hinton's softened "
                "probabilities pass loss=loopax.losses.KLDivergence().", stacklevel=2)

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        """Returns the sum over outputs of the loss between the scaled logits.

        Args:
            teacher_outputs: The teacher's logits (or structure).
            student_outputs: The student's logits, same structure.
            **kwargs: Ignored.
        """
        def scaled(x):
            return jnp.asarray(x) / self.temperature

        def one(loss, teacher, student):
            if loss is None:
                return 0.0
            if isinstance(loss, losses.KLDivergence):
                probs = [jax.nn.softmax(t, axis=-1) for t in (teacher, student)]
                return jnp.mean(loss(*probs)) * self.temperature ** 2
            return jnp.mean(loss(teacher, student))
        return _summed(tree.map_structure(one, self.loss,
                                          tree.map_structure(scaled, teacher_outputs),
                                          tree.map_structure(scaled, student_outputs)))

    def get_config(self):
        """Returns the constructor arguments, the losses serialized."""
        return {"temperature": self.temperature,
                "loss": _serialize_losses(self.loss)}

    @classmethod
    def from_config(cls, config):
        """Returns the loss `get_config` describes.

        Args:
            config: A dict from `get_config`.
        """
        config = dict(config)
        config["loss"] = _deserialize_losses(config["loss"])
        return cls(**config)
