"""Reading a monitored quantity from logs, and whether it should go up or down."""

import warnings

_MODES = ("auto", "min", "max")
_HIGHER_IS_BETTER = ("acc", "auc", "precision", "recall", "f1", "fbeta", "fmeasure", "iou", "r2")


def check_mode(mode, owner):
    if mode not in _MODES:
        raise ValueError(f"{owner}: mode must be one of {_MODES}, got {mode!r}.")
    return mode


def direction(monitor, mode, model):
    """"min" or "max" for `monitor`, or None when `mode="auto"` cannot tell.

    "auto" asks the model's metric of that name (its `_direction`, "up" or
    "down", as in Keras), then goes by the name: losses and errors go down,
    accuracy, AUC, precision, recall, F-scores, IoU and R² go up.
    """
    if mode != "auto":
        return mode
    name = monitor.removeprefix("val_")
    if name == "loss" or name.endswith("_loss"):
        return "min"
    for metric in _metrics_of(model):
        if getattr(metric, "name", None) == name and hasattr(metric, "_direction"):
            return "max" if metric._direction == "up" else "min"
    lowered = name.lower()
    if any(word in lowered for word in _HIGHER_IS_BETTER):
        return "max"
    if "loss" in lowered or "error" in lowered or lowered in ("mae", "mse", "rmse", "mape", "msle"):
        return "min"
    return None


def _metrics_of(model, depth=0):
    """The model's metrics, looking inside containers that hold `.metrics`."""
    found = []
    for metric in getattr(model, "metrics", None) or ():
        found.append(metric)
        if depth < 3 and getattr(metric, "metrics", None):
            found.extend(_metrics_of(metric, depth + 1))
    return found


def monitored_value(logs, monitor, owner):
    """`logs[monitor]`, or None with a warning that lists what is available."""
    value = (logs or {}).get(monitor)
    if value is None:
        warnings.warn(
            f"{owner} monitors `{monitor}`, which is not in the logs. "
            f"Available: {', '.join(logs or {}) or 'none'}.", stacklevel=3)
    return value
