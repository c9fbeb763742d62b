"""A pass's last, partial batch, run by the full batches' one-step program.

The last batch of a pass over array data is usually shorter than the others,
and a batch of another shape is another program to compile: as long to compile
as the full batches' for training, one more for each evaluation. In a short
script that is most of the first epoch (#19). Where the model's step treats
each row on its own, the partial batch instead runs through the full batches'
program: `programs.batch_of` (device data) or `pad_host_batch` (a
generator's batches) fills it up to the full size with copies of its own
rows, and the step is traced knowing how many rows are real
(losses/padded_rows.py), so the loss, its gradient, the metrics and the loss
tracker count those only, and predict drops the padding's outputs. The numbers
are the unpadded batch's up to the order of float additions
(tests/trainers/test_padded_batches.py compares both programs, and Keras).

`why_not_padded(model, kind)` says when a pass keeps Keras's one program per
batch shape instead, for anything that may mix rows or see the padding: a
step, `compute_loss` or `compute_metrics` of the user's, a layer that does not
declare itself row-wise (`Layer.row_wise`: a custom or `Lambda` layer, a
subclassed model's `call`, batch statistics in training), an axis along the
batch, masks, activity regularizers, stateful RNNs, a loss or metric that is
not a built-in, a distribution, or random
draws JAX would not make the same for a batch's first rows
(`jax_threefry_partitionable` off).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import jax
import numpy as np

from loopax.src import random
from loopax.src.distribution import distribution
from loopax.src.trainers.pass_kind import PREDICT, TRAIN

if TYPE_CHECKING:
    from loopax.src.layers.layer import Layer
    from loopax.src.models.model import Model
    from loopax.src.trainers.pass_kind import PassKind

# Whether passes pad their partial batch where they can (tests switch it off to compare).
PAD_PARTIAL_BATCHES = True


def why_not_padded(model: Model, kind: PassKind, default_steps: type) -> str | None:
    """None when `kind`'s passes (a `PassKind`) may pad their partial batch,
    else the reason they keep a program per batch shape. `default_steps`: the
    class whose step and loss methods are the default ones (`Trainer`)."""
    if not PAD_PARTIAL_BATCHES:
        return "switched off"
    if distribution() is not None:
        return "a distribution is set"
    cls = type(model)
    for method in (kind.step_method,) + (() if kind is PREDICT else (
            "compute_loss", "compute_metrics", "stateless_compute_loss")):
        if getattr(cls, method) is not getattr(default_steps, method):
            return f"{method} is overridden"
    if kind is TRAIN and not random.prefix_stable_draws():
        return "random draws depend on the batch size (jax_threefry_partitionable is off)"
    reason = _layers_reason(model, training=kind is TRAIN)
    if reason or kind is PREDICT:
        return reason
    return _loss_and_metrics_reason(model)


def _layers_reason(model, training):
    seen, todo = set(), [model]
    while todo:
        layer = todo.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if not _row_wise_class(layer, training):
            return f"layer {layer.name!r} ({type(layer).__name__}) may mix rows"
        if getattr(layer, "activity_regularizer", None) is not None:
            return f"layer {layer.name!r} has an activity regularizer"
        if getattr(layer, "mask_zero", False) or getattr(layer, "stateful", False):
            return f"layer {layer.name!r} is masked or stateful"
        if _acts_along_the_batch(layer):
            return f"layer {layer.name!r} normalizes or concatenates along the batch axis"
        todo.extend(layer.layers)
    return None


def _row_wise_class(layer: Layer, training: bool) -> bool:
    """Whether `layer` declares itself row-wise (`Layer.row_wise`): a declaration
    made on a class whose `call` the layer's class overrides does not count."""
    cls = type(layer)
    declared_by = _defining_class(cls, "row_wise")
    if not issubclass(declared_by, _defining_class(cls, "call")):
        return False
    row_wise = layer.row_wise
    return row_wise is True or (row_wise == "inference" and not training)


def _defining_class(cls, attribute):
    return next(k for k in cls.__mro__ if attribute in vars(k))


def _acts_along_the_batch(layer: Layer) -> bool:
    """Whether a layer's `axis` (Softmax, Concatenate, the normalizations) is the
    batch axis: 0, or a negative axis counted from the rank of the layer's input
    in its graph (a layer a built-in layer calls itself, as attention's softmax,
    has its axes from that layer)."""
    axes = getattr(layer, "axis", None)
    if axes is None:
        return False
    axes = [axes] if isinstance(axes, int) else list(axes)
    try:
        inputs = layer.input
        rank = len((inputs[0] if isinstance(inputs, (list, tuple)) else inputs).shape)
    except Exception:
        rank = None
    return any(axis == 0 or (rank is not None and axis + rank == 0)
               for axis in axes if isinstance(axis, int))


def _builtin(obj: object) -> bool:
    return type(obj).__module__.startswith("loopax.src.")


def _loss_and_metrics_reason(model):
    compiled_loss = model._compile_loss
    if compiled_loss is not None:
        for _, loss, _ in getattr(compiled_loss, "entries", ()):
            fn = getattr(loss, "fn", None)
            if not _builtin(loss) or (fn is not None and not (getattr(
                    fn, "__module__", None) or "").startswith("loopax.src.")):
                return f"loss {getattr(loss, 'name', loss)!r} is not a built-in"
    compiled_metrics = model._compile_metrics
    for _, metric, _ in getattr(compiled_metrics, "entries", ()):
        fn = getattr(metric, "_fn", None)
        if not _builtin(metric) or (fn is not None and not (getattr(
                fn, "__module__", None) or "").startswith("loopax.src.")):
            return f"metric {metric.name!r} is not a built-in"
    return None


def pad_host_batch(batch: Any, signature: tuple) -> tuple[Any, int] | None:
    """`(batch padded to the rows of batches with `signature`, its real rows)` for
    a host batch (NumPy leaves) that has the same structure, dtypes and trailing
    shapes but fewer rows (a generator's last, partial batch); None otherwise."""
    leaves, treedef = jax.tree_util.tree_flatten(batch)
    full_treedef, full = signature
    if treedef != full_treedef or len(leaves) != len(full) or not leaves:
        return None
    row_counts = {np.shape(a)[0] if np.ndim(a) else None for a in leaves}
    sizes = {shape[0] if shape else None for shape, _ in full}
    if len(row_counts) != 1 or len(sizes) != 1 or None in row_counts or None in sizes:
        return None
    rows, size = cast(int, row_counts.pop()), cast(int, sizes.pop())
    if not 0 < rows < size or any(
            tuple(np.shape(a)[1:]) != shape[1:] or str(getattr(a, "dtype", None)) != dtype
            for a, (shape, dtype) in zip(leaves, full)):
        return None
    index = np.arange(size) % rows
    return jax.tree_util.tree_unflatten(treedef, [np.asarray(a)[index] for a in leaves]), rows
