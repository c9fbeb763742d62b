"""Checks that turn silently wrong training into clear errors or warnings, run once
per `fit()`/`evaluate()`/`predict()` on the host before the first step (the compiled
loop pays nothing per step).

Sparse labels must be integral and in `[0, classes)` (or the loss's `ignore_class`),
checked as given in their own integer type (an int64 `2**40` is refused like `-1`):
anything else gives a loss of 0, NaN or garbage, so it is an error. In-memory arrays
are checked once; a generator's, PyDataset's or tf.data's batches each as the adapter
yields it. NaN/Inf in in-memory x, y or sample_weight warn (a Keras model may handle
them itself), raise with `check_data="raise"`; `check_data="off"` skips the checks.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import jax
import numpy as np

from loopax.src import losses as losses_module
from loopax.src.layers.core.embedding import Embedding
from loopax.src.trainers import epoch_runner
from loopax.src.trainers.compile_utils import flatten_outputs, match_targets
from loopax.src.trainers.data_adapters import unpack_x_y_sample_weight
from loopax.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter
from loopax.src.trainers.data_adapters.data_adapter import DataAdapter

CHECK_DATA_MODES = ("warn", "raise", "off")


def _is_count(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_fit_arguments(epochs: Any, initial_epoch: Any, steps_per_epoch: Any,
                        validation_steps: Any = None, check_data: Any = "warn") -> None:
    """Clear errors for arguments that would make `fit()` train nothing or
    something other than asked; a warning when `initial_epoch == epochs`
    (a resumed run that already finished: Keras code must keep running)."""
    if not _is_count(epochs) or epochs < 0:
        raise ValueError(f"fit(): `epochs` must be an integer >= 0, got {epochs!r}. "
                         "It is the index of the last epoch to run, e.g. epochs=10.")
    if not _is_count(initial_epoch) or initial_epoch < 0:
        raise ValueError(f"fit(): `initial_epoch` must be an integer >= 0, got "
                         f"{initial_epoch!r}.")
    if initial_epoch > epochs:
        raise ValueError(
            f"fit(): `initial_epoch`={initial_epoch} is past `epochs`={epochs}, so no epoch "
            "would run. `epochs` is the index of the last epoch (not a count of epochs "
            f"to add): pass epochs={initial_epoch} + the epochs you want to run.")
    if initial_epoch == epochs:
        warnings.warn(f"fit(): initial_epoch == epochs == {epochs}: no epoch will run. "
                      "`epochs` is the index of the last epoch, not a count of epochs to add.",
                      stacklevel=4)
    for name, value in (("steps_per_epoch", steps_per_epoch),
                        ("validation_steps", validation_steps)):
        check_steps(value, name, "fit")
    check_data_mode(check_data)


def check_steps(value: Any, name: str, what: str) -> None:
    """`steps`-like arguments are None or a positive integer."""
    if value is not None and (not _is_count(value) or value < 1):
        raise ValueError(f"{what}(): `{name}` must be a positive integer or None (all the "
                         f"data), got {value!r}.")


def check_data_mode(check_data: Any) -> None:
    if check_data not in CHECK_DATA_MODES:
        raise ValueError(f"`check_data` must be one of {CHECK_DATA_MODES}, got {check_data!r}.")


def check_steps_fit_arrays(adapter: DataAdapter, steps: int | None, what: str) -> None:
    """Warns (Keras's "ran out of data") when `steps` asks an array adapter
    for more batches than one pass over the arrays has; each epoch then runs
    the `adapter.num_batches` batches there are."""
    if not adapter.in_memory or steps is None or adapter.num_batches is None:
        return
    arrays = cast(ArrayDataAdapter, adapter)   # the in-memory adapter
    if steps > arrays.num_batches:
        name = "steps_per_epoch" if what == "fit" else "steps"
        warnings.warn(
            f"Your input ran out of data: {what}() was given {name}={steps}, but the arrays "
            f"({arrays.num_samples} samples, batch_size={arrays.batch_size}) give only "
            f"{arrays.num_batches} batches per epoch, so each epoch runs "
            f"{arrays.num_batches}. Pass {name}<={arrays.num_batches} (or None), or a "
            "larger batch size or more data.", stacklevel=4)


def _overrides(model, base, name):
    return getattr(type(model), name, None) is not getattr(base, name)


def check_model_has_a_loss(model: Any, base: type, batch: Any) -> None:
    """A clear error when the default `train_step` would train on a loss of
    zero: no `loss` in `compile()`, no `add_loss`/regularization losses and
    no `compute_loss`/`train_step` override of `base` (the `Trainer` class). (Keras 3
    trains nothing and logs loss 0.0.) Traces the model's forward once, only in that rare case."""
    if model._compile_loss is not None or _overrides(model, base, "train_step") \
            or _overrides(model, base, "compute_loss") or model.losses:
        return
    x = epoch_runner.to_jax(unpack_x_y_sample_weight(batch)[0])

    def forward_losses(trainable, non_trainable, x):
        return model.stateless_call(trainable, non_trainable, x, training=True,
                                    return_losses=True)[2]

    losses = jax.eval_shape(forward_losses, [v.value for v in model.trainable_variables],
                            [v.value for v in model.non_trainable_variables], x)
    if not losses:
        raise ValueError(
            f"fit(): {model._model_label()} has no loss to train on: `compile()` was "
            "called without `loss` and the model adds no losses (`add_loss`), so every "
            "step would compute a loss of 0 and change nothing. Pass a loss, e.g. "
            "model.compile(optimizer='adam', loss='mse'), or override `compute_loss` or "
            "`train_step`.")


# --------------------------------------------------------------------------
# in-memory data
# --------------------------------------------------------------------------

def check_array_data(model: Any, adapter: DataAdapter, check_data: str, what: str) -> None:
    """Checks the arrays of an in-memory adapter once, or the labels of each batch
    another adapter yields (see the module doc)."""
    if check_data == "off":
        return
    if not adapter.in_memory:
        _check_labels_of_each_batch(model, adapter, what)
        return
    x, y, sample_weight = cast(ArrayDataAdapter, adapter).parts
    if y is not None and _checks_labels(model):
        _check_sparse_labels(model, y, what)
    _check_embedding_indices(model, x, what)
    for name, part in (("x", x), ("y", y), ("sample_weight", sample_weight)):
        for path, leaf in jax.tree_util.tree_leaves_with_path(part):
            if not _all_finite(leaf):
                message = (
                    f"{what}: `{name}{jax.tree_util.keystr(path)}` holds NaN or Inf values "
                    f"({_count_non_finite(leaf)} of {np.size(leaf)}); training on them turns "
                    "the weights into NaN. Clean or impute the data (e.g. np.nan_to_num), or "
                    f"pass check_data='off' if the model handles them itself.")
                if check_data == "raise":
                    raise ValueError(message)
                warnings.warn(message + " (check_data='raise' makes this an error.)",
                              stacklevel=4)


def _checks_labels(model):
    loss = model._compile_loss
    return loss is not None and loss.built and any(
        losses_module.loss_kind(entry) == "sparse" for _, entry, _ in loss.entries)


def _check_labels_of_each_batch(model, adapter, what):
    """Checks the sparse labels of the adapter's first batch now, and of each batch
    its `host_batches` yields (the adapter is this call's)."""
    if not _checks_labels(model) or adapter.check_batch is not None:
        return
    _check_batch_labels(model, adapter.peek(), what, 0)
    adapter.check_batch = lambda batch, index: _check_batch_labels(model, batch, what, index)


def _check_batch_labels(model, batch, what, index):
    y = unpack_x_y_sample_weight(batch)[1]
    if y is not None:
        _check_sparse_labels(model, y, f"{what} batch {index}")


def _is_float(dtype):
    return np.issubdtype(np.dtype(dtype), np.inexact)


def _all_finite(a):
    """Whether `a` has no NaN/Inf: one reduction (no temporary array) in the
    common case; a sum that overflows falls back to the exact check."""
    if not _is_float(a.dtype):
        return True
    if np.isfinite(np.sum(a)):
        return True
    return bool(np.all(np.isfinite(a)))


def _count_non_finite(a):
    return int(np.size(a) - np.count_nonzero(np.isfinite(np.asarray(a))))


def _check_sparse_labels(model, y, what):
    """Labels of outputs with a sparse categorical loss are integral and in
    `[0, classes)`, `ignore_class` allowed."""
    compile_loss = model._compile_loss
    spec = model._compiled_steps.output_spec
    if spec is None:
        return
    _, preds = flatten_outputs(spec, compile_loss.names)
    targets = match_targets(y, compile_loss.names)
    for i, loss, _ in compile_loss.entries:
        if targets[i] is None or losses_module.loss_kind(loss) != "sparse":
            continue
        classes = preds[i].shape[-1]
        ignore = getattr(loss, "_fn_kwargs", {}).get("ignore_class")
        labels = np.asarray(targets[i])
        if ignore is not None:
            labels = labels[labels != ignore]
        where = f"y for output {compile_loss.names[i]!r}" if len(compile_loss.names) > 1 else "y"
        loss_name = getattr(loss, "name", getattr(loss, "__name__", loss))
        if _is_float(labels.dtype) and not np.all(labels == np.round(labels)):
            bad = labels[labels != np.round(labels)]
            raise ValueError(
                f"{what}: the sparse loss {loss_name!r} takes integer class indices, but "
                f"{where} holds non-integer values (e.g. {bad.flat[0].item()!r}). Pass class "
                "indices 0..classes-1, or one-hot / probability targets with "
                "loss='categorical_crossentropy'.")
        if labels.size and (labels.min() < 0 or labels.max() >= classes):
            bad = labels[(labels < 0) | (labels >= classes)]
            raise ValueError(
                f"{what}: the sparse loss {loss_name!r} takes class indices in [0, "
                f"{classes}) (output {compile_loss.names[i]!r} has {classes} classes), but "
                f"{where} holds {bad.size} label(s) outside it, e.g. {bad.flat[0].item()!r} (min "
                f"{labels.min().item()!r}, max {labels.max().item()!r}). Such labels give a "
                "loss of 0 or "
                "NaN. Re-index the labels to 0..classes-1 (or give the last layer more "
                "units); to skip a label, use the loss's `ignore_class`."
            )


def _check_embedding_indices(model, x, what):
    """Indices an `Embedding` certainly receives as given (a Functional or
    Sequential model whose Input feeds the layer directly) must be in
    `[0, input_dim)`: outside it JAX's gather gives NaN. Nothing is checked
    elsewhere: a subclassed model may feed the layer part of `x` (`x[:, 0]`) or
    remap it, and Keras trains on such data."""
    layers_fed_inputs = getattr(model, "_layers_fed_inputs", None)
    if layers_fed_inputs is None:
        return
    pairs = [(i, layer) for i, layer in layers_fed_inputs() if isinstance(layer, Embedding)]
    if not pairs:
        return
    names = model.input_names
    entries = _data_per_input(x, names)
    for i, layer in pairs:
        data = entries[i] if entries is not None else None
        if hasattr(data, "dtype"):
            where = f"{what} input x" if len(names) == 1 else f"{what} input {names[i]!r}"
            layer.check_indices(np.asarray(data), where=where)


def _data_per_input(x, names):
    """`x` as one entry per model input (`names` order), or None when its
    structure does not match them (the model's call reports that)."""
    if isinstance(x, dict):
        return [x.get(name) for name in names]
    if isinstance(x, (list, tuple)):
        return list(x) if len(x) == len(names) else None
    return [x] if len(names) == 1 else None
