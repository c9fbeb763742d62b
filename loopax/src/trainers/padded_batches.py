"""A pass's last, partial batch, run by the full batches' one-step program.

The last batch of a pass over array data is usually shorter than the others,
and a batch of another shape is another program to compile: as long to compile
as the full batches' for training, one more for each evaluation. In a short
script that is most of the first epoch (#19). Where the model's step treats
each row on its own, the partial batch instead runs through the full batches'
program: `programs.batch_of` (device data) or `pad_host_batch` (a
generator's batches) fills it up to the full size with copies of its own
rows, and the program gives the step the count of real rows in the batch's
sample weight (`with_real_rows`: a `RealRows`, the user's weight and the
count). The default step passes it on to `compute_loss` and `compute_metrics`
as any sample weight; the compiled loss and metrics give the copies a weight
of 0 and the mean reductions and the loss trackers count the real rows only
(`RealRows.weigh`, `scale`, `rows_of`), so the loss, its gradient and the
metrics are the unpadded batch's up to the order of float additions
(tests/trainers/test_padded_batches.py compares both programs, and Keras);
predict drops the padding's outputs.

`why_not_padded(model, kind)` says when a pass keeps Keras's one program per
batch shape instead, for anything that may mix rows or see the padding: a
step, `compute_loss` or `compute_metrics` of the user's, a layer that does not
declare itself row-wise (`Layer.row_wise`: a custom or `Lambda` layer, a
subclassed model's `call`, batch statistics in training), an axis along the
batch, masks, activity regularizers, stateful RNNs, a loss or metric that is
not a built-in or a loss summed along the batch (Dice's and Tversky's default
`axis=None`), a distribution, or random
draws JAX would not make the same for a batch's first rows
(`jax_threefry_partitionable` off).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import random
from loopax.src.distribution import distribution
from loopax.src.trainers.data_adapters.data_adapter_utils import (
    batch_size_of,
    unpack_x_y_sample_weight,
)
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
            if _reduces_the_batch(getattr(loss, "_fn_kwargs", {}).get("axis", -1)):
                return f"loss {getattr(loss, 'name', loss)!r} sums along the batch axis"
    compiled_metrics = model._compile_metrics
    for _, metric, _ in getattr(compiled_metrics, "entries", ()):
        fn = getattr(metric, "_fn", None)
        if not _builtin(metric) or (fn is not None and not (getattr(
                fn, "__module__", None) or "").startswith("loopax.src.")):
            return f"metric {metric.name!r} is not a built-in"
    return None


def _reduces_the_batch(axis: Any) -> bool:
    """Whether a loss's `axis` (Dice's and Tversky's default None: all axes) takes
    in the batch axis, so its value mixes rows and the copies would count."""
    axes = [axis] if axis is None or isinstance(axis, int) else list(axis)
    return any(a is None or a == 0 for a in axes)


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


# ---- the step's view of a padded batch ---------------------------------------

class RealRows:
    """The sample weight a padded batch's step gets: the user's (`weight`: None, an
    array, or one per output) and how many of the batch's `size` rows are real
    (`rows`, a traced int32 scalar; the rest are copies). Only the default steps
    see one (`why_not_padded`); the compiled loss and metrics and the loss
    tracker read it. A full batch is `rows == size`: its numbers keep their bits
    (weights times 1, a mean times 1)."""

    def __init__(self, weight: Any, rows: Any, size: int):
        self.weight, self.rows, self.size = weight, rows, int(size)

    def weigh(self, weight: Any) -> jax.Array:
        """`weight` (one output's, or None) times 0/1 weights of the real rows; with
        no `weight`, a per-sample weight of shape `(size,)`."""
        real = jnp.arange(self.size) < self.rows
        if weight is None:
            return real.astype("float32")
        weight = jnp.asarray(weight)
        return weight * real.reshape((-1,) + (1,) * (weight.ndim - 1)).astype(weight.dtype)

    def scale(self, dtype: Any) -> jax.Array:
        """`size / rows`: a mean over all the padded batch's entries times this is
        the mean over the real rows' entries."""
        return jnp.asarray(self.size, dtype) / jnp.asarray(self.rows, dtype)


def with_real_rows(batch: Any, rows: Any) -> tuple:
    """`batch` as `(x, y, RealRows(sample_weight, rows, size))`: how a padded
    batch's step learns that only its first `rows` rows are real."""
    x, y, sample_weight = unpack_x_y_sample_weight(batch)
    return x, y, RealRows(sample_weight, rows, batch_size_of(batch))


def split_weight(sample_weight: Any) -> tuple[Any, RealRows | None]:
    """`(the user's sample weight, the RealRows or None)` of a step's sample weight."""
    if isinstance(sample_weight, RealRows):
        return sample_weight.weight, sample_weight
    return sample_weight, None


def rows_of(sample_weight: Any, size: int) -> Any:
    """The real rows of a batch of `size` rows with this sample weight."""
    return sample_weight.rows if isinstance(sample_weight, RealRows) else size
