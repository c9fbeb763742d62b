"""The SavedModel guide and the Keras save_and_load tutorial as a whole script
(scripts/saved_model.py): a tf.Module saved with a traced `__call__`, an
input_signature `mutate` that assigns a Variable, several signatures and a
named output; a trained Keras model saved, loaded and called through
`serving_default`; the same model through tf.lite's converter and interpreter.

EXPECTED is what TensorFlow 2.21 printed for the same script (run with
`import tensorflow as tf` in /work/tfvenv; TF's own log lines dropped). Where
TensorFlow is installed the test also runs it there."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("scripts") / "saved_model.py"
EXPECTED = [
    "call: 3.0",
    "after_mutate: 6.0 2.0",
    "original_v: 1.0",
    "no_signatures: 0",
    "signature_keys: array_input serving_default",
    "array_input: output_0 [1. 2. 3.]",
    "serving_default: 5.0",
    "custom_output_name: custom_output_name [3. 6.]",
    "loaded_call: [1.5 3. ]",
    "keras_signatures: serving_default",
    "keras_outputs: output_0",
    "keras_same: True",
    "tflite_bytes: bytes",
    "tflite_input: [1 8] float32",
    "tflite_output: [1 2]",
    "tflite_same: True",
]


def test_saved_model_round_trips_print_what_tensorflow_prints():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), {"__name__": "__main__"})
    assert out.getvalue().splitlines() == EXPECTED


def test_tensorflow_prints_the_recorded_output(tmp_path):
    pytest.importorskip("tensorflow")
    source = SCRIPT.read_text().replace("import loopax.tf as tf", "import tensorflow as tf")
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                            timeout=300, check=True, cwd=tmp_path)
    assert [line for line in result.stdout.splitlines() if line in EXPECTED] == EXPECTED
