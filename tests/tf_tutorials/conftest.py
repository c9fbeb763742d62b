"""Runs tutorial-style scripts (TensorFlow 2 code written the way tensorflow.org's
tutorials are) and reads back what they print, with two fixtures:

* `run_tutorial(source, workdir, backend="loopax")` executes a script written with
  `import loopax.tf as tf`, `WORKDIR` set to a folder it may write its small data set
  to, and returns `(values, text)`: `values` maps each printed `name: ...` line to its
  rest. With `backend="tensorflow"` the same source runs with `import tensorflow as tf`
  (skipped where TensorFlow is not installed).
* `tutorial.run_loopax(script)` runs a script written with `import tensorflow as tf`
  under loopax (the one changed line) and returns its output;
  `tutorial.run_tensorflow(script)` runs it under `TF_PYTHON=/path/to/python` (a venv
  with TensorFlow) as the recorded numbers were, or returns None without it.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import textwrap

import pytest

LOOPAX_IMPORTS = (("import loopax.tf as tf", "import tensorflow as tf"),
                  ("from loopax.tf.keras import", "from tensorflow.keras import"))


def _run(source, workdir, backend="loopax"):
    if backend == "tensorflow":
        pytest.importorskip("tensorflow")
        for ours, theirs in LOOPAX_IMPORTS:
            source = source.replace(ours, theirs)
    out = io.StringIO()
    namespace = {"__name__": "__main__", "WORKDIR": str(workdir)}
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<tutorial>", "exec"), namespace)
    text = out.getvalue()
    values = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and " " not in name.strip():
            values[name.strip()] = rest.strip()
    return values, text


@pytest.fixture
def run_tutorial():
    """`run_tutorial(source, workdir, backend="loopax")` -> (values, stdout)."""
    return _run



def run_loopax(script: str) -> str:
    # The changed import lines: `import tensorflow as tf` and `from tensorflow.keras...`.
    text = (textwrap.dedent(script).replace("import tensorflow as tf", "import loopax.tf as tf")
            .replace("from tensorflow.", "from loopax.tf."))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, "<tutorial>", "exec"), {"__name__": "__tutorial__"})
    return out.getvalue()


def run_tensorflow(script: str):
    """The script's output under TensorFlow, or None when `TF_PYTHON` is not set."""
    python = os.environ.get("TF_PYTHON")
    if not python:
        return None
    done = subprocess.run([python, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
                               "KERAS_BACKEND": "tensorflow"})
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise RuntimeError("the script failed under TensorFlow")
    return done.stdout


def values(output: str, key: str) -> list[float]:
    """The numbers printed after `key=` on the lines of `output`."""
    found = []
    for line in output.splitlines():
        parts = line.split()
        for i, part in enumerate(parts):
            if part.startswith(key + "="):
                text = part[len(key) + 1:] or (parts[i + 1] if i + 1 < len(parts) else "")
                found.append(float(text.rstrip(",")))
    return found


class _Tutorial:
    run_loopax = staticmethod(run_loopax)
    run_tensorflow = staticmethod(run_tensorflow)
    values = staticmethod(values)


@pytest.fixture
def tutorial():
    return _Tutorial()
