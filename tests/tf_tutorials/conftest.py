"""Runs a tutorial-style script with `import loopax.tf as tf` (the one changed line)
and returns what it printed; `TF_PYTHON=/path/to/python` (a venv with TensorFlow)
runs the same text under TensorFlow, as the recorded numbers in the tests were."""

import contextlib
import io
import os
import subprocess
import sys
import textwrap

import pytest


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
