"""Runs tutorial-style scripts (TensorFlow 2 code written the way tensorflow.org's
tutorials are, with `import loopax.tf as tf`) and reads back what they print.

`run_tutorial(source, workdir)` executes `source` with `WORKDIR` set to a
folder the script may write its small data set to, and returns
`(values, text)`: `values` maps each printed `name: ...` line to its rest. With
`backend="tensorflow"` the same source runs with `import tensorflow as tf`
(those comparisons skip where TensorFlow is not installed).
"""

from __future__ import annotations

import contextlib
import io

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
