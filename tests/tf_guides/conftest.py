"""Runs the guide scripts in scripts/ (TensorFlow 2 code that starts with
`import loopax.tf as tf`) and reads back what they print.

Each script prints lines `name: v1 v2 ...` (numbers). `run_guide` returns
{name: [array per printed line]}. With `backend="tensorflow"` the same script
runs with `import tensorflow as tf` instead (the optional comparison tests;
they skip where TensorFlow is not installed).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).with_name("scripts")
LOOPAX_IMPORT = "import loopax.tf as tf"


def script_source(name):
    source = (SCRIPTS / f"{name}.py").read_text()
    assert LOOPAX_IMPORT in source, f"{name}.py must import loopax.tf as tf"
    return source


def _numbers(text):
    cleaned = text
    for mark in "[](),":
        cleaned = cleaned.replace(mark, " ")
    return [float(v) for v in cleaned.split()]


def parse_printed(text):
    """{name: [np.ndarray, ...]} from lines `name: v1 v2 ...`; a line of numbers
    only continues the previous one (NumPy wraps long arrays)."""
    values, current = {}, None
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        try:
            if sep and " " not in name.strip():
                current = _numbers(rest)
                values.setdefault(name.strip(), []).append(current)
            elif current is not None:
                current.extend(_numbers(line))
        except ValueError:
            current = None
    return {k: [np.array(v) for v in vs] for k, vs in values.items()}


def _run_guide(name, backend="loopax", tmp_path=None):
    """Runs scripts/<name>.py and returns (parsed values, stdout text)."""
    source = script_source(name)
    if backend == "tensorflow":
        pytest.importorskip("tensorflow")
        source = source.replace(LOOPAX_IMPORT, "import tensorflow as tf")
    namespace = {"__name__": "__main__", "WORKDIR": str(tmp_path) if tmp_path else None}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, str(SCRIPTS / f"{name}.py"), "exec"), namespace)
    text = out.getvalue()
    return parse_printed(text), text


@pytest.fixture
def run_guide():
    """`run_guide(name, backend="loopax", tmp_path=None)` -> (values, stdout)."""
    return _run_guide
