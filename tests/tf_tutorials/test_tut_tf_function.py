"""The tf.function guide's AutoGraph examples as a whole script
(scripts/tf_function_autograph.py: fizzbuzz with tf.print, `train(num_steps=
tf.constant(10))`, sum_even, loops over Python data, a TensorArray RNN, early
return/break, a Variable assigned in a loop), run under `import loopax.tf as
tf`; its output must be TensorFlow's.

EXPECTED is what TensorFlow 2.21 printed for the same script (run with
`import tensorflow as tf` in /work/tfvenv: stdout and stderr, TF's log lines
dropped). Where TensorFlow is installed the test also runs it there."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("scripts") / "tf_function_autograph.py"
FIZZBUZZ = ["1", "2", "fizz", "4", "buzz"]
EXPECTED = [
    "Tracing for loop", "Tracing fizzbuzz branch", "Tracing fizz branch",
    "Tracing buzz branch", "Tracing default branch",
    *FIZZBUZZ, *FIZZBUZZ, "fizz", "7", "8", "fizz", "buzz", "11", "fizz", "13", "14",
    "fizzbuzz", "16",
    "Retracing occurs for different Python arguments.",
    "Tracing with num_steps = 10", "Executing with num_steps = 10",
    "Tracing with num_steps = 20", "Executing with num_steps = 20",
    "Traces are reused for Tensor arguments.",
    "Tracing with num_steps = <a traced placeholder>",
    "Executing with num_steps = 10", "Executing with num_steps = 20",
    "train traced: 3",
    "shrink: [0.29566 0.33194 0.34742]",
    "sum_even: 42",
    "first_above: 1 -1",
    "signed_sqrt: -2.0 3.0",
    "collatz_steps: 8 111",
    "train_on: 7",
    "dynamic_rnn: [ 0.  1.  2.  4.  6.  9.  6.  7. 14. 16. 24. 27.]",
    "count_even: 6.0 6.0",
    "clipped: 2.0 3.2",
]
# What a traced argument prints as differs (TF: Tensor("num_steps:0", ...), JAX: a tracer).
_PLACEHOLDER = re.compile(r"(Tracing with num_steps = )(Tensor\(.*\)|\S*Tracer.*)$")


def _normalized(text):
    return [_PLACEHOLDER.sub(r"\1<a traced placeholder>", line) for line in text.splitlines()]


def _run_loopax():
    """The script's stdout and tf.print's stderr, interleaved as printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), {"__name__": "__main__"})
    return out.getvalue()


def test_the_guides_autograph_examples_print_what_tensorflow_prints():
    assert _normalized(_run_loopax()) == EXPECTED


def test_tensorflow_prints_the_recorded_output():
    pytest.importorskip("tensorflow")
    source = SCRIPT.read_text().replace("import loopax.tf as tf", "import tensorflow as tf")
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                            timeout=300, check=True)
    lines = [line for line in _normalized(result.stdout + result.stderr)
             if line in EXPECTED or not re.match(r"^(WARNING|[IEW]\d{4}|\d{4}-)", line)]
    assert sorted(lines) == sorted(EXPECTED)
