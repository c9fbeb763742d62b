"""`History`: the per-epoch logs `fit` returns, and `plot()` to draw them."""

import math

from loopax.src.api_export import export
from loopax.src.callbacks.callback import Callback


@export("loopax.callbacks.History")
class History(Callback):
    """Records each epoch's logs: `history[name]` is a list with one value per epoch.

    Attributes:
        history: dict name -> list of per-epoch values (`loss`, metrics, `val_*`).
        epoch: list of the (0-based) epochs recorded.
        params, model: those of the `fit` call.
    """

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []
        self._epochs_of = {}  # name -> epochs it was logged at (val_ may be sparser)

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for name, value in (logs or {}).items():
            self.history.setdefault(name, []).append(value)
            self._epochs_of.setdefault(name, []).append(epoch)
        if self._model is not None:
            self._model.history = self

    def get_backup_state(self):
        """What BackupAndRestore saves: the epochs recorded so far."""
        return {"history": self.history, "epoch": self.epoch, "epochs_of": self._epochs_of}

    def set_backup_state(self, state):
        self.history = {k: list(v) for k, v in state["history"].items()}
        self.epoch = list(state["epoch"])
        self._epochs_of = {k: list(v) for k, v in state["epochs_of"].items()}
        if self._model is not None:
            self._model.history = self

    def plot(self, keys=None, ax=None):
        """Draws loss and each metric against the epoch, one subplot each, validation beside train.

        Args:
            keys: names to draw (`"loss"`, `"mae"`; a `val_` prefix is dropped);
                default: every name recorded, in order.
            ax: a matplotlib Axes (one name) or a sequence of Axes, one per name.

        Returns the matplotlib Figure.
        """
        pyplot = _import_pyplot()
        names = self._panel_names(keys)
        axes = _panel_axes(pyplot, ax, names)
        for axis, name in zip(axes, names):
            for key, label in ((name, "train"), ("val_" + name, "validation")):
                if key in self.history:
                    epochs = self._epochs_of.get(key, self.epoch[-len(self.history[key]):])
                    axis.plot([e + 1 for e in epochs], self.history[key], marker=".", label=label)
            axis.set_title(name)
            axis.set_xlabel("epoch")
            axis.legend()
        figure = axes[0].figure
        if ax is None:
            figure.tight_layout()
        return figure

    def _panel_names(self, keys):
        if not self.history:
            raise ValueError("History.plot: nothing recorded yet; call fit() first.")
        recorded = []
        for key in self.history:
            name = key.removeprefix("val_")
            if name not in recorded:
                recorded.append(name)
        if keys is None:
            return recorded
        if isinstance(keys, str):
            keys = [keys]
        names = [key.removeprefix("val_") for key in keys]
        unknown = [name for name in names if name not in recorded]
        if unknown:
            raise ValueError(
                f"History.plot: keys {unknown} were not recorded; available: {recorded}."
            )
        return list(dict.fromkeys(names))


def _import_pyplot():
    try:
        import matplotlib.pyplot as pyplot
    except ImportError as error:
        raise ImportError(
            "History.plot needs matplotlib, which is not installed: pip install loopax[plot]"
        ) from error
    return pyplot


def _panel_axes(pyplot, ax, names):
    if ax is None:
        columns = min(len(names), 3)
        rows = math.ceil(len(names) / columns)
        figure, grid = pyplot.subplots(rows, columns, figsize=(4.5 * columns, 3.5 * rows),
                                       squeeze=False)
        axes = list(grid.flat)
        for unused in axes[len(names):]:
            figure.delaxes(unused)
        return axes[:len(names)]
    axes = [ax] if hasattr(ax, "plot") else list(ax)
    if len(axes) != len(names):
        raise ValueError(
            f"History.plot: got {len(axes)} Axes for {len(names)} panels {names}; "
            f"pass one Axes per name, or choose names with keys=[...].")
    return axes
