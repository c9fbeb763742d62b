"""TensorFlow's tf.function guide (scripts/tf_function.py): input_signature
binding, Variables returned after their assignment, compiled control flow,
tf.print on every call; numbers checked in closed form."""

from __future__ import annotations

import numpy as np


def _collatz(values):
    return [v // 2 if v % 2 == 0 else 3 * v + 1 for v in values]


def test_input_signature_converts_lists_and_rejects_mismatches(run_guide):
    printed, _ = run_guide("tf_function")
    assert printed["collatz"][0].tolist() == _collatz([1, 2, 3, 4])
    assert printed["collatz_list"][0].tolist() == _collatz([5, 6, 7])
    # a float32 tensor (wrong dtype) and a rank-2 tensor (wrong shape) raise TypeError
    assert [p.tolist() for p in printed["rejected"]] == [[1], [1]]
    assert printed["rejected_extra"][0].tolist() == [1]


def test_variable_returned_after_assignment_and_control_flow(run_guide):
    printed, _ = run_guide("tf_function")
    assert printed["counter"][0].tolist() == [1, 2, 3]
    assert printed["while_loop"][0].tolist() == [sum(i * i for i in range(5)),
                                                 sum(i * i for i in range(10))]
    assert printed["cond"][0].tolist() == [1, 0, 4, 1, 4, 16]
    np.testing.assert_allclose(printed["tensor_array"][0], [2, 3, 4, 5])
    # int32 then float32: two signatures, the second int32 call reuses the first
    assert printed["tracing_count"][0].tolist() == [2]
    assert printed["argmax_default_axis"][0].tolist() == [1, 0]


def test_tf_print_prints_on_every_call_to_stderr(run_guide, capsys):
    _, stdout = run_guide("tf_function")
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("value")] == [
        "value 0", "value 1", "value 2"]
    assert "value 0" not in stdout


def test_same_numbers_as_tensorflow(run_guide):
    printed, _ = run_guide("tf_function")
    reference, _ = run_guide("tf_function", backend="tensorflow")
    assert printed.keys() == reference.keys()
    for name in printed:
        np.testing.assert_allclose(printed[name], reference[name], rtol=1e-6)
