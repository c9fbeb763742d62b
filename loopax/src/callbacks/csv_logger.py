"""`CSVLogger`: append each epoch's logs as a row of a CSV file."""

import collections.abc
import csv
import io
import os

import numpy as np

from loopax.src.api_export import export
from loopax.src.callbacks.callback import Callback


@export("loopax.callbacks.CSVLogger")
class CSVLogger(Callback):
    """Writes `epoch` and every logged value (sorted by name) per epoch to `filename`.

    Args:
        filename: the CSV file, e.g. `"run/log.csv"`.
        separator: the field delimiter.
        append: continue an existing file (its header is kept) instead of overwriting.
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.keys = None
        self.writer = None
        self.csv_file = None
        self._write_header = True
        self._start = 0        # the file's size when this fit opened it
        self._written = ""     # what this fit wrote (for BackupAndRestore)
        self._buffer = io.StringIO()

    def on_train_begin(self, logs=None):
        self._close()
        if self.append and os.path.exists(self.filename):
            with open(self.filename) as existing:
                self._write_header = not existing.readline()
        else:
            self._write_header = True
        directory = os.path.dirname(self.filename)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.csv_file = open(self.filename, "a" if self.append else "w", newline="")
        self._start = self.csv_file.tell()
        self._written = ""
        self.keys = None
        self.writer = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            # Validation may skip the first epochs (validation_freq): keep its columns.
            for name in getattr(self._model, "metrics_names", None) or ():
                if name.startswith("val_") and name not in self.keys:
                    self.keys.append(name)
        if self.writer is None:
            dialect = type("Dialect", (csv.excel,), {"delimiter": self.sep})
            self.writer = csv.DictWriter(self._buffer, fieldnames=["epoch"] + self.keys,
                                         dialect=dialect)
            if self._write_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((key, _cell(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        self.csv_file.write(text)
        self.csv_file.flush()
        self._written += text

    def get_backup_state(self):
        """What BackupAndRestore saves: the rows written so far, so a resumed
        run rewrites exactly those and goes on (no row twice)."""
        return {"start": self._start, "written": self._written, "keys": self.keys,
                "write_header": self._write_header}

    def set_backup_state(self, state):
        self._close()
        with open(self.filename, "a+", newline="") as f:
            f.truncate(state["start"])
            f.write(state["written"])
        self.csv_file = open(self.filename, "a", newline="")
        self._start, self._written = state["start"], state["written"]
        self.keys = state["keys"]
        # The header was written if there are keys (and it was wanted then).
        self._write_header = state["write_header"] and self.keys is None
        self.writer = None

    def on_train_end(self, logs=None):
        self._close()

    def _close(self):
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None


def _cell(value):
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Iterable) and np.ndim(value) > 0:
        return f'"[{", ".join(map(str, value))}]"'
    return value
