"""Metrics: the registry (`get`, `serialize`, `deserialize`), `resolve`, which
turns what `compile(metrics=[...])` accepts into Metric objects, and
`get_accuracy_for`, which picks the accuracy that "accuracy" means."""

from __future__ import annotations

from typing import Any, Callable

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.losses import is_binary_or_sparse_categorical, loss_kind
from loopax.src.metrics.accuracy_metrics import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from loopax.src.metrics.confusion_metrics import (
    AUC,
    FalseNegatives,
    FalsePositives,
    Precision,
    PrecisionAtRecall,
    Recall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
    TrueNegatives,
    TruePositives,
)
from loopax.src.metrics.correlation_metrics import (
    ConcordanceCorrelation,
    PearsonCorrelation,
    concordance_correlation,
    pearson_correlation,
)
from loopax.src.metrics.f_score_metrics import F1Score, FBetaScore
from loopax.src.metrics.iou_metrics import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from loopax.src.metrics.metric import Metric
from loopax.src.metrics.probabilistic_metrics import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CategoricalHinge,
    Hinge,
    KLDivergence,
    Poisson,
    SparseCategoricalCrossentropy,
    SquaredHinge,
)
from loopax.src.metrics.reduction_metrics import Mean, MeanMetricWrapper, Sum
from loopax.src.metrics.regression_metrics import (
    CosineSimilarity,
    LogCoshError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    R2Score,
    RootMeanSquaredError,
    cosine_similarity,
)
from loopax.src.module import _snake_case
from loopax.src.utils.registry import Registry, name_table

METRIC_CLASSES = (
    Mean, Sum, MeanMetricWrapper,
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError, RootMeanSquaredError, LogCoshError, CosineSimilarity,
    Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
    BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
    KLDivergence, Poisson, Hinge, SquaredHinge, CategoricalHinge,
    TruePositives, FalsePositives, TrueNegatives, FalseNegatives, Precision, Recall, AUC,
    PrecisionAtRecall, RecallAtPrecision, SensitivityAtSpecificity, SpecificityAtSensitivity,
    F1Score, FBetaScore, R2Score, PearsonCorrelation, ConcordanceCorrelation,
    IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU,
)

# The metric functions configs may name (a function serializes by its name).
METRIC_FUNCTIONS = (
    accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
    top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, cosine_similarity,
    pearson_correlation, concordance_correlation,
)
serialization.register_builtins("metric", METRIC_FUNCTIONS)

ALL_OBJECTS = name_table(METRIC_CLASSES, {
    "mse": MeanSquaredError, "MSE": MeanSquaredError,
    "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
    "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
    "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
    "rmse": RootMeanSquaredError,
    "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
    "kld": KLDivergence, "KLD": KLDivergence,
    "logcosh": LogCoshError, "acc": Accuracy, "auc": AUC,
})
_REGISTRY = Registry(
    "metric", ALL_OBJECTS, base=Metric, unlisted=("MeanMetricWrapper", "mean_metric_wrapper"),
    accepts="a Metric object, a Metric class, or a function fn(y_true, y_pred) -> "
            "per-sample values")


@export("loopax.metrics.get")
def get(identifier):
    """A metric from a name, class, instance, config dict or callable.

    Names and classes give a default instance ("mae" -> MeanAbsoluteError());
    instances and functions are returned as they are. None gives None.

    Args:
        identifier: None, a name ("mae", "AUC", ...), a Metric class or instance, a
            config dict, or a function `fn(y_true, y_pred)`.

    Returns:
        The metric (or the function, or None).

    Raises:
        ValueError: an unknown name, or something that is neither of these.
    """
    return _REGISTRY.get(identifier)


def lookup(name: str) -> Callable:
    """The metric class or function `name` stands for, without making an instance (an
    instance would take the automatic name, `auc`, from the metric `compile` makes).

    Raises:
        ValueError: an unknown name, with the valid ones.
    """
    return _REGISTRY.lookup(name)


@export("loopax.metrics.serialize")
def serialize(metric):
    """{"class_name", "config"} for a Metric object.

    Args:
        metric: A Metric (a built-in metric function gives its name; other objects
            come back unchanged).

    Returns:
        A JSON-serializable dict that `deserialize` turns back into the metric.
    """
    return _REGISTRY.serialize(metric)


@export("loopax.metrics.deserialize")
def deserialize(config, custom_objects=None):
    """The metric `serialize` described (`custom_objects` maps extra class names).

    Args:
        config: A `serialize()` dict, or a name.
        custom_objects: `{name: class}` for custom metrics.

    Returns:
        A new Metric (fresh state), or the function a name stands for.

    Raises:
        ValueError: the dict has no `class_name`, or it names an unknown class.
    """
    return _REGISTRY.deserialize(config, custom_objects)


@export("loopax.metrics.get_accuracy_for")
def get_accuracy_for(loss=None, y_true_shape=None, y_pred_shape=None, name="accuracy"):
    """The accuracy metric that `metrics=["accuracy"]` means for one output.

    The loss decides first (tf.keras's rule): binary crossentropy, binary focal
    crossentropy and (squared) hinge -> BinaryAccuracy; sparse categorical
    crossentropy -> SparseCategoricalAccuracy; categorical crossentropy and
    categorical hinge -> CategoricalAccuracy. Otherwise the shapes decide
    (Keras 3's rule): one output unit -> BinaryAccuracy; labels of lower rank,
    or a trailing label axis of 1 against several units ->
    SparseCategoricalAccuracy; else CategoricalAccuracy.

    Args:
        loss: the output's loss (name, function, class or Loss object), or None.
        y_true_shape, y_pred_shape: label and output shapes (batch included).
        name: the metric's name (the identifier the user wrote).

    Returns:
        A new BinaryAccuracy, SparseCategoricalAccuracy or CategoricalAccuracy.

    Raises:
        ValueError: neither the loss nor both shapes are given.
    """
    kind = loss_kind(loss) if loss is not None else None
    if kind is None:
        if y_true_shape is None or y_pred_shape is None:
            raise ValueError('"accuracy" needs the loss or the label and output shapes to '
                             "choose binary, sparse or categorical accuracy.")
        is_binary, is_sparse = is_binary_or_sparse_categorical(y_true_shape, y_pred_shape)
        kind = "binary" if is_binary else "sparse" if is_sparse else "categorical"
    cls = {"binary": BinaryAccuracy, "sparse": SparseCategoricalAccuracy,
           "categorical": CategoricalAccuracy}[kind]
    return cls(name=name)


def resolve(identifier: Any, y_true_shape: tuple | None = None,
            y_pred_shape: tuple | None = None, loss: Any = None) -> Metric | None:
    """The Metric object `compile(metrics=[identifier])` uses for one output, as Keras's.

    "accuracy" / "acc" go through `get_accuracy_for`. Other names and classes give a
    default instance, plain functions a `MeanMetricWrapper`; the metric is then renamed
    to what was written ("mae" in the logs). Its variables keep the paths they were made
    with (`mean_absolute_error/total`, `mean_metric_wrapper/count`), as in Keras.
    Metric objects are kept as they are.
    """
    if identifier is None:
        return None
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
        return get_accuracy_for(loss, y_true_shape, y_pred_shape, name=identifier)
    obj = get(identifier)
    name = identifier if isinstance(identifier, str) else _object_name(obj)
    metric = obj if isinstance(obj, Metric) else MeanMetricWrapper(obj)
    metric.name = name
    return metric


def _object_name(obj: Any) -> str:
    """Keras's name for a metric given as an object: its `name`, else its function or
    class name in snake case (`MyMetric` -> `my_metric`)."""
    if isinstance(getattr(obj, "name", None), str):
        return obj.name
    return _snake_case(getattr(obj, "__name__", None) or type(obj).__name__)
