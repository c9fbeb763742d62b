"""`CompileLoss` and `CompileMetrics`: what `compile(loss=..., metrics=...)` builds.

Both map the user's specification (one item, a list in output order, or a
dict keyed by output names) onto the model's outputs, once the first batch
shows the shapes of the targets and outputs (`build`). Each output is named
as the model names it (`model.output_names`), else `output_0`, `output_1`...
Nested outputs (`[p, [q, r]]`) are flattened, their losses named by path as
Keras does (`1/q_loss`); targets and losses may be nested the same way.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import jax
import numpy as np

from loopax.src import losses as losses_module
from loopax.src import metrics as metrics_module
from loopax.src.metrics import Mean, Metric
from loopax.src.naming import name_scope
from loopax.src.state import _state
from loopax.src.tensor import unwrap
from loopax.src.trainers.data_adapters.data_adapter_utils import batch_size_of
from loopax.src.trainers.padded_batches import rows_of, split_weight

if TYPE_CHECKING:
    from loopax.src.metrics.metric import Metric

# --------------------------------------------------------------------------
# Outputs and targets as aligned flat lists
# --------------------------------------------------------------------------

def flatten_outputs(y_pred: Any, output_names: Sequence[str] | None = None,
                    ) -> tuple[list[str], list]:
    """(names, leaves) of the model outputs, in the model's output order."""
    if isinstance(y_pred, dict):
        keys = list(output_names) if output_names and set(output_names) == set(
            map(str, y_pred)) else sorted(y_pred)
        return [str(k) for k in keys], [y_pred[k] for k in keys]
    if is_nested(y_pred):
        leaves = jax.tree_util.tree_leaves(list(y_pred))
    elif isinstance(y_pred, (list, tuple)):
        leaves = list(y_pred)
    else:
        leaves = [y_pred]
    if output_names and len(output_names) == len(leaves):
        names = [str(n) for n in output_names]
    elif len(leaves) == 1:
        names = ["output"]
    else:
        names = [f"output_{i}" for i in range(len(leaves))]
    return names, leaves


def is_nested(value: Any) -> bool:
    """Whether `value` is a list/tuple holding lists, tuples or dicts (a model's nested
    outputs `[y1, [y2, y3]]`, or a loss/target given in that structure)."""
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, (list, tuple, dict)) for v in value)


def path_names(y_pred: Any, names: list[str]) -> list[str]:
    """Keras's names of nested outputs (for their `<name>_loss` logs): the path to each
    output with its last index replaced by the output's name (`[p, [q, r]]` gives `p`,
    `1/q`, `1/r`); `names` as they are for flat outputs."""
    if not is_nested(y_pred):
        return names
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(list(y_pred))[0]]
    out = []
    for path, name in zip(paths, names):
        keys = [getattr(k, "idx", getattr(k, "key", k)) for k in path]
        if isinstance(keys[-1], int):
            keys[-1] = name
        out.append("/".join(str(k) for k in keys))
    return out


def _flat_lists(spec):
    """The items of a list/tuple nested in lists/tuples, in order."""
    if isinstance(spec, (list, tuple)):
        return [item for part in spec for item in _flat_lists(part)]
    return [spec]


def _is_multi(spec):
    return isinstance(spec, (list, tuple, dict))


def match_to_outputs(spec: Any, names: Sequence[str], what: str, allow_single: bool = True,
                     default: Any = None) -> list:
    """`spec` as one entry per output: one item repeated, a list in output
    order, or a dict keyed by output names (absent names get `default`)."""
    n = len(names)
    if isinstance(spec, dict):
        unknown = [k for k in spec if k not in names]
        if unknown:
            raise ValueError(
                f"`{what}` has keys {unknown} that name no output; the model's outputs "
                f"are {names}. Key `{what}` by those names.")
        return [spec.get(name, default) for name in names]
    if isinstance(spec, (list, tuple)):
        if len(spec) == n:
            return list(spec)
        if is_nested(spec) and len(_flat_lists(spec)) == n:   # as nested outputs
            return _flat_lists(spec)
        if n == 1 and allow_single:
            return [spec]
        raise ValueError(
            f"`{what}` is a {type(spec).__name__} of {len(spec)} entries but the model has "
            f"{n} output(s) {names}. Give one entry per output, in order, or a dict "
            "keyed by output name.")
    return [spec] * n


def match_targets(y_true: Any, names: Sequence[str], what: str = "y") -> list:
    """The targets as one entry per output (None where an output has none)."""
    n = len(names)
    if y_true is None:
        return [None] * n
    if isinstance(y_true, dict):
        if n == 1 and len(y_true) == 1 and names[0] not in y_true:
            return list(y_true.values())
        unknown = [k for k in y_true if k not in names]
        if unknown:
            raise ValueError(
                f"`{what}` is a dict with keys {sorted(map(str, y_true))}, but the model's "
                f"outputs are named {names}; unknown: {unknown}. Key the targets by "
                "output name.")
        return [y_true.get(name) for name in names]
    if isinstance(y_true, (list, tuple)):
        if len(y_true) == n:
            return list(y_true)
        if is_nested(y_true) and len(jax.tree_util.tree_leaves(list(y_true))) == n:
            return jax.tree_util.tree_leaves(list(y_true))   # nested as the outputs
        raise ValueError(
            f"`{what}` is a {type(y_true).__name__} of {len(y_true)} arrays but the model "
            f"has {n} output(s) {names}. Pass one target per output, in order, or a dict "
            "keyed by output name.")
    if n != 1:
        raise ValueError(
            f"The model has {n} outputs {names} but `{what}` is a single array. Pass a "
            "list with one target per output, or a dict keyed by output name.")
    return [y_true]


def _shape(x):
    return tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)


# Losses whose Keras 3 implementation requires targets of the output's exact shape
# (Keras raises on targets that only broadcast against the output).
_SAME_SHAPE_LOSSES = ("binary_crossentropy", "binary_focal_crossentropy",
                      "categorical_crossentropy", "categorical_focal_crossentropy")


def _same_rank(t, p):
    """Both shapes after Keras's rule for a trailing axis of size 1 (one side may
    have it and the other not)."""
    if len(t) == len(p) + 1 and t[-1] == 1:
        return t[:-1], p
    if len(p) == len(t) + 1 and p[-1] == 1:
        return t, p[:-1]
    return t, p


def _broadcast_together(t: tuple, p: tuple) -> bool:
    return all(a == b or a == 1 or b == 1 for a, b in zip(t[::-1], p[::-1]))


def check_target_shape(name: str, y_true: Any, y_pred: Any, loss_kind: str | None = None,
                       model_name: str = "model", keras_requires_same_shape: bool = False,
                       user_loss: bool = False) -> str | None:
    """A clear error when `y_true` cannot be compared with output `name`.

    Returns a warning text (None when the shapes agree) where the target only
    broadcasts against the output: Keras computes such a loss by broadcasting, so
    loopax does too, but it is most likely a mistake. A `user_loss` (the user's
    own function or Loss subclass) gets any other shapes as Keras passes them:
    its own code decides (e.g. labels `(batch,)` against embeddings `(batch, d)`).
    """
    t, p = _shape(y_true), _shape(y_pred)
    if t == p:
        return None
    if loss_kind == "sparse":
        if (len(t) == len(p) - 1 and t == p[:-1]) or (
                len(t) == len(p) and t[-1:] == (1,) and t[:-1] == p[:-1]):
            return None
    else:
        tt, pp = _same_rank(t, p)
        if tt == pp:
            return None
        # A crossentropy Keras refuses unless the shapes match; loopax keeps
        # accepting a target that broadcasts into the output (as it did), warning.
        target_fits_output = len(tt) <= len(pp) and all(
            a in (1, b) for a, b in zip(tt[::-1], pp[::-1]))
        if _broadcast_together(tt, pp) and (target_fits_output or not keras_requires_same_shape):
            return _broadcast_warning(name, model_name, t, p)
    if user_loss:
        return None
    hint = ""
    if loss_kind == "categorical" and len(t) == len(p) - 1:
        hint = (" The targets look like class indices: use "
                "loss='sparse_categorical_crossentropy', or one-hot encode them with "
                "loopax.utils.to_categorical.")
    elif loss_kind == "sparse":
        hint = (" A sparse loss takes integer class indices of shape (batch,) or "
                "(batch, 1).")
    raise ValueError(
        f"Output {name!r} of {model_name} has shape {p} but its target y has shape "
        f"{t}; these cannot be compared. Pass targets matching the output's shape "
        f"(or change the model's output).{hint}")


def _broadcast_warning(name: str, model_name: str, t: tuple, p: tuple) -> str:
    """The warning for targets of shape `t` that only broadcast against output shape `p`."""
    if t and p and p[-1] == 1 and t[-1] != 1:
        fix = (f"If each sample has {t[-1]} targets, give the output {t[-1]} units (e.g. "
               f"Dense({t[-1]})); if it has one, pass targets of shape {p}.")
    elif t and p and t[-1] == 1 and p[-1] != 1:
        fix = (f"If each target is one class index, use "
               "loss='sparse_categorical_crossentropy'; if it is one value, give the "
               f"output 1 unit (Dense(1)), or pass targets of shape {p}.")
    else:
        fix = f"Pass targets of the output's shape {p}, or change the model's output."
    return (f"Output {name!r} of {model_name} has shape {p} but its target y has shape "
            f"{t}: the loss broadcasts them against each other (as Keras does), so each "
            f"output value is compared with several targets or the reverse. This is most "
            f"likely a mistake. {fix}")


def _scoped_or_eager(metric: Metric, value: Any) -> bool:
    """Whether updating `metric` now is safe: eagerly on concrete values, or
    with its variables mapped by an active `StateScope` (a stateless step)."""
    variables = metric.variables
    if not variables:
        return True
    if not isinstance(unwrap(value), jax.core.Tracer):
        return True
    return all(any(s.get_current_value(v) is not None for s in _state.scopes) for v in variables)


# --------------------------------------------------------------------------
# CompileLoss
# --------------------------------------------------------------------------

class CompileLoss:
    """The total loss `sum_i weight_i * loss_i(y_true_i, y_pred_i, sample_weight_i)`
    over the outputs that have a loss.

    With several losses, `metrics` holds one `Mean` per output named
    `<output>_loss`, updated whenever the loss is computed in a stateless step
    or eagerly (Keras 3's per-output loss logs).
    """

    def __init__(self, loss, loss_weights=None, output_names=None, model_name="model"):
        check_names(loss, losses_module.get, shape_dependent=("crossentropy", "ce"))
        self._loss_spec = loss
        self._weights_spec = loss_weights
        self._output_names = list(output_names) if output_names else None
        self._model_name = model_name
        self.built = False
        self.metrics = []
        self.last_losses = None
        self._warned = set()

    def build(self, y_true: Any, y_pred: Any) -> None:
        output_names, preds = flatten_outputs(y_pred, self._output_names)
        self.names = path_names(y_pred, output_names)
        targets = match_targets(y_true, self.names)
        specs = match_to_outputs(self._loss_spec, self.names, "loss")
        weights = match_to_outputs(self._weights_spec, self.names, "loss_weights",
                                   allow_single=False)
        self.entries = []  # (output index, Loss, weight)
        for i, (name, spec, target, pred) in enumerate(zip(self.names, specs, targets, preds)):
            if spec is None:
                continue
            tshape = _shape(target) if target is not None else None
            loss = losses_module.resolve(spec, tshape, _shape(pred))
            weight = 1.0 if weights[i] is None else float(weights[i])
            self.entries.append((i, loss, weight))
        if not self.entries:
            raise ValueError(f"`loss` {self._loss_spec!r} gives no output a loss.")
        if len(self.entries) > 1 and not self.metrics:
            with name_scope("compile_loss"):   # Keras's paths: compile_loss/a_loss/total
                self.metrics = [Mean(name=f"{self.names[i]}_loss") for i, _, _ in self.entries]
        self.losses_by_output = {output_names[i]: loss for i, loss, _ in self.entries}
        self.built = True
        self.check_targets(y_true, y_pred)

    def check_targets(self, y_true: Any, y_pred: Any) -> None:
        """A clear error if a target cannot be compared with its output; a warning
        (once per model and shapes) if it only broadcasts against it."""
        _, preds = flatten_outputs(y_pred, self.names)
        targets = match_targets(y_true, self.names)
        for i, loss, _ in self.entries:
            if targets[i] is None:
                continue
            warning = check_target_shape(
                self.names[i], targets[i], preds[i], losses_module.loss_kind(loss),
                self._model_name, keras_requires_same_shape=_keras_requires_same_shape(loss),
                user_loss=_is_user_loss(loss))
            key = (i, _shape(targets[i])[1:], _shape(preds[i])[1:])   # any batch size
            if warning is not None and key not in self._warned:
                self._warned.add(key)
                warnings.warn(warning, UserWarning, stacklevel=2)

    def __call__(self, y_true, y_pred, sample_weight=None):
        if not self.built:
            self.build(y_true, y_pred)
        else:   # a later batch with targets of another shape (traced again): checked too
            self.check_targets(y_true, y_pred)
        _, preds = flatten_outputs(y_pred, self.names)
        targets = match_targets(y_true, self.names)
        sample_weight, padding = split_weight(sample_weight)   # a padded batch's real rows
        weights = match_to_outputs(sample_weight, self.names, "sample_weight") \
            if sample_weight is not None else [None] * len(self.names)
        total = 0.0
        values = []
        for i, loss, weight in self.entries:
            if targets[i] is None:
                raise ValueError(
                    f"The model was compiled with a loss for output {self.names[i]!r} but "
                    "the data gives it no target y. Pass y (x, y pairs), or compile "
                    "without that loss and compute it in train_step.")
            if padding is None:
                value = loss(targets[i], preds[i], sample_weight=weights[i])
            else:   # the copies weigh 0; a mean over all entries made one over the real
                value = loss(targets[i], preds[i], sample_weight=padding.weigh(weights[i]))
                if getattr(loss, "reduction", None) in ("sum_over_batch_size", "mean"):
                    value = value * padding.scale(value.dtype)
            check_scalar(value, f"loss {getattr(loss, 'name', loss)!r} of output "
                                f"{self.names[i]!r}")
            values.append(value)
            total = total + weight * value if weight != 1.0 else total + value
        self.last_losses = values
        if self.metrics:
            n = rows_of(padding, batch_size_of(preds))
            for tracker, value in zip(self.metrics, values):
                if _scoped_or_eager(tracker, value):
                    tracker.update_state(value, sample_weight=n)
        return total


def _keras_requires_same_shape(loss: Any) -> bool:
    fn = getattr(loss, "fn", loss)
    names = {getattr(fn, "__name__", ""), getattr(loss, "name", ""),
             _snake(type(loss).__name__)}
    return any(n in _SAME_SHAPE_LOSSES for n in names)


def _is_user_loss(loss: Any) -> bool:
    """Whether `loss` is the user's own code (a function or Loss subclass from
    outside loopax), not one of loopax's losses."""
    fn = getattr(loss, "fn", None)
    module = getattr(fn, "__module__", None) if fn is not None else type(loss).__module__
    return not (module or "").startswith("loopax.")


def _snake(class_name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in class_name).lstrip("_")


def check_scalar(value: Any, who: str) -> None:
    shape = _shape(value)
    if shape != ():
        raise ValueError(
            f"The {who} is not a scalar: it has shape {shape}. A training loss must "
            "reduce to one number: use a Loss with reduction='sum_over_batch_size' "
            "(the default), or reduce it yourself (e.g. loopax.ops.mean).")


# --------------------------------------------------------------------------
# CompileMetrics
# --------------------------------------------------------------------------

class CompileMetrics(Metric):
    """The compiled metrics of every output, as one `Metric` named "compile_metrics".

    `metrics=` gets no sample weights; `weighted_metrics=` gets them. A flat
    list applies to every output; a list of lists (or None) gives each output
    its own; a dict is keyed by output names. With several outputs the names
    are prefixed: `<output>_<metric>`.

    It holds the per-output metrics (in `entries`), so the ownership walk lists
    their variables as its own and `reset_state` and the stateless methods are
    `Metric`'s; `result()` is the dict of their results (the logs flatten it).
    """

    # The user's specifications may hold Metric objects; the ones in use (a
    # copy where one object serves two outputs) are those in `entries`.
    _untracked_attributes = frozenset({"_metrics_spec", "_weighted_spec"})

    def __init__(self, metrics=None, weighted_metrics=None, output_names=None):
        for spec in (metrics, weighted_metrics):
            check_names(spec, metrics_module.lookup, shape_dependent=("accuracy", "acc"))
        super().__init__(name="compile_metrics")
        self._metrics_spec = metrics
        self._weighted_spec = weighted_metrics
        self._output_names = list(output_names) if output_names else None
        self.built = False
        self.entries = []  # (output index, Metric, weighted)
        self.own_names = []

    @property
    def metrics(self) -> list[Metric]:
        """The per-output metrics, in the order their results are logged."""
        return [m for _, m, _ in self.entries]

    def _log_names(self):
        return [m.name for m in self.metrics]

    def build(self, y_true: Any, y_pred: Any, losses_by_output: Any = None) -> None:
        self.names, preds = flatten_outputs(y_pred, self._output_names)
        targets = match_targets(y_true, self.names)
        multi = len(self.names) > 1
        taken: dict = {}
        for spec, weighted in ((self._metrics_spec, False), (self._weighted_spec, True)):
            if is_nested(y_pred):
                spec = _per_nested_output(spec, y_pred)
            for i, items in enumerate(_per_output(spec, self.names, weighted)):
                for item in items:
                    if item is None:
                        continue
                    tshape = _shape(targets[i]) if targets[i] is not None else None
                    loss = (losses_by_output or {}).get(self.names[i])
                    metric = metrics_module.resolve(item, tshape, _shape(preds[i]), loss=loss)
                    if metric is None:
                        continue
                    if any(metric is m for _, m, _ in self.entries):
                        metric = type(metric).from_config(metric.get_config())
                    if hasattr(metric, "build_from_shapes") and tshape is not None:
                        # State sized by the data (F-scores, multi-label AUC) is
                        # made now, before a compiled step would trace it.
                        metric.build_from_shapes(tshape, _shape(preds[i]))
                    self.own_names.append(metric.name)   # evaluate's list order reads them
                    metric.name = _log_name(metric.name, self.names[i] if multi else None,
                                            weighted, taken)
                    self.entries.append((i, metric, weighted))
        self.built = True

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        if not self.built:
            self.build(y_true, y_pred)
        if not self.entries:
            return
        _, preds = flatten_outputs(y_pred, self.names)
        targets = match_targets(y_true, self.names)
        sample_weight, padding = split_weight(sample_weight)   # a padded batch's real rows
        weights = match_to_outputs(sample_weight, self.names, "sample_weight") \
            if sample_weight is not None else [None] * len(self.names)
        for i, metric, weighted in self.entries:
            if targets[i] is None:
                continue
            weight = weights[i] if weighted else None
            if padding is not None:
                weight = padding.weigh(weight)   # the copies weigh 0, in every metric
            if weight is not None:
                metric.update_state(targets[i], preds[i], sample_weight=weight)
            else:
                metric.update_state(targets[i], preds[i])

    def result(self) -> dict:
        return results_of(self.metrics)

    def __repr__(self):
        return f"<CompileMetrics {[m.name for m in self.metrics]}>"


def _log_name(name, output, weighted, taken):
    """Keras's logs key of a compiled metric: `<output>_<name>`; a weighted metric whose
    key is taken becomes `<output>_weighted_<name>`; a key taken still gets `_1`, `_2`...
    `taken` counts the keys given so far."""
    prefix = f"{output}_" if output else ""
    key = prefix + name
    if key in taken and weighted:
        key = f"{prefix}weighted_{name}"
    if key in taken:
        taken[key] += 1
        key = f"{key}_{taken[key] - 1}"
    else:
        taken[key] = 1
    return key


def _per_nested_output(spec, y_pred):
    """A metrics list nested like the nested outputs `y_pred` (`["mae", ["mse", "mae"]]`,
    a leaf a metric or a list of them) as one list per output; other specs unchanged."""
    if not isinstance(spec, (list, tuple)):
        return spec
    structure = jax.tree_util.tree_structure(_as_lists(y_pred))
    try:
        flat = structure.flatten_up_to(_as_lists(spec))
    except (ValueError, TypeError):
        return spec
    return [[] if s is None else list(s) if isinstance(s, list) else [s] for s in flat]


def _as_lists(tree):
    """`tree` with its tuples as lists (a structure given with either matches)."""
    if isinstance(tree, (list, tuple)):
        return [_as_lists(t) for t in tree]
    return tree


def _per_output(spec, names, weighted):
    """`spec` (metrics=/weighted_metrics=) as a list of metric lists, one per output."""
    what = "weighted_metrics" if weighted else "metrics"
    n = len(names)
    if spec is None:
        return [[] for _ in names]
    if isinstance(spec, dict):
        per = match_to_outputs(spec, names, what, default=[])
        return [list(p) if isinstance(p, (list, tuple)) else [p] for p in per]
    if isinstance(spec, (list, tuple)):
        nested = any(isinstance(s, (list, tuple)) or s is None for s in spec)
        if nested or (n > 1 and len(spec) == n):   # Keras 3: one entry per output
            if len(spec) != n:
                raise ValueError(
                    f"`{what}` is a list of {len(spec)} lists but the model has {n} "
                    f"output(s) {names}. Give one list per output, or a dict keyed by "
                    "output name.")
            return [list(s) if isinstance(s, (list, tuple)) else ([] if s is None else [s])
                    for s in spec]
        if n > 1:
            warnings.warn(
                f"`{what}={list(spec)!r}` has {len(spec)} entries for a model with {n} outputs "
                f"{names}: loopax applies each metric to every output (tf.keras 2's reading; "
                f"Keras 3 refuses it). A list of exactly {n} entries means one entry per "
                "output; a dict keyed by output name says either explicitly.", stacklevel=3)
        return [list(spec) for _ in names]
    raise TypeError(f"`{what}` must be a list or a dict of metrics, got {spec!r}. "
                    f"Wrap a single metric in a list: {what}=[{spec!r}].")


def results_of(metrics: Iterable[Metric]) -> dict:
    """`{name: result}` of `metrics`; a metric whose result is a dict adds its keys."""
    out = {}
    for metric in metrics:
        value = metric.result()
        if isinstance(value, dict):
            out.update(value)
        else:
            out[metric.name] = value
    return out


def check_names(spec: Any, get: Callable[[Any], Any],
                shape_dependent: Iterable[str] = ()) -> None:
    """Looks up every name in a loss/metric spec (a name, list or dict of them)
    so a typo fails at `compile()` with the registry's list of valid names,
    not at the first `fit()`. Names resolved from shapes later are skipped."""
    if isinstance(spec, str):
        if spec.lower() not in shape_dependent:
            get(spec)
    elif isinstance(spec, (list, tuple)):
        for s in spec:
            check_names(s, get, shape_dependent)
    elif isinstance(spec, dict):
        for s in spec.values():
            check_names(s, get, shape_dependent)
