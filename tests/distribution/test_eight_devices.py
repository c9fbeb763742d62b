"""Data and model parallelism on 8 simulated CPU devices.

The main pytest process has one device, so `eight_device_checks.py` runs once in
a subprocess with XLA simulating 8 devices (`simulated_devices.py`); it trains
each model distributed and on one device, and these tests compare the two.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from simulated_devices import environment_with_devices


@pytest.fixture(scope="module")
def runs():
    done = subprocess.run([sys.executable, str(Path(__file__).with_name(
        "eight_device_checks.py"))], env=environment_with_devices(8), capture_output=True,
        text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout)
    assert results["device_count"] == 8
    return results


def assert_same_history(history, reference, rtol=1e-4):
    assert history.keys() == reference.keys()
    for key in reference:
        np.testing.assert_allclose(history[key], reference[key], rtol=rtol, err_msg=key)


def test_data_parallel_fit_matches_one_device(runs):
    dp = runs["dp"]
    assert_same_history(dp["history"], dp["ref_history"])
    assert max(dp["weight_rel_diff"]) <= 1e-4
    assert len(dp["weight_rel_diff"]) == 4


def test_data_parallel_replicates_kernels_slots_and_metrics(runs):
    dp = runs["dp"]
    assert dp["kernel_devices"] == [8, 8] and all(dp["kernel_replicated"])
    assert set(dp["slot_devices"]) == {8} and set(dp["metric_devices"]) == {8}


def test_state_keeps_its_sharding_between_fused_calls(runs):
    # The compiled loop's inputs have the same shardings in every call (its
    # outputs come back on the variables' layouts): one compile for 3 epochs
    # in two fit() calls.
    assert runs["dp"]["loop_compiles_after_second_fit"] == 1


def test_data_parallel_from_a_generator(runs):
    gen = runs["dp_generator"]
    assert_same_history(gen["history"], gen["ref_history"])
    assert max(gen["weight_rel_diff"]) <= 1e-4


def test_model_built_before_the_distribution_is_placed_at_fit(runs):
    early = runs["dp_built_before"]
    assert early["kernel_devices"] == 8
    assert max(early["weight_rel_diff"]) <= 1e-4


def test_model_parallel_places_kernels_as_the_layout_map_asks(runs):
    mp = runs["mp"]
    assert mp["specs"] == {"hidden/kernel": "(None, 'model')", "hidden/bias": "('model',)",
                           "out/kernel": "('model', None)", "out/bias": "(None,)"}
    # 16 columns over the 4 devices of axis "model": 4 per device.
    assert mp["hidden_kernel_shard_shape"] == [12, 4]


def test_model_parallel_optimizer_slots_follow_their_variable(runs):
    slots = runs["mp"]["slot_specs"]
    for name, expected in [("hidden_kernel", "(None, 'model')"), ("hidden_bias", "('model',)"),
                           ("out_kernel", "('model', None)"), ("out_bias", "(None,)")]:
        found = [spec for path, spec in slots.items() if f"_{name}_" in path]
        assert found == [expected, expected], (name, slots)   # momentum and velocity


def test_model_parallel_trains_evaluates_and_predicts_like_one_device(runs):
    mp = runs["mp"]
    assert_same_history(mp["history"], mp["ref_history"])
    assert max(mp["weight_rel_diff"]) <= 1e-4
    assert mp["predict_max_abs_diff"] <= 1e-5
    assert_same_history({k: [v] for k, v in mp["eval"].items()},
                        {k: [v] for k, v in mp["ref_eval"].items()})


def test_data_parallel_predict_with_a_partial_batch(runs):
    assert runs["dp_predict_max_abs_diff"] <= 1e-5


def test_stateless_custom_loop_runs_sharded(runs):
    loop = runs["custom_loop"]
    np.testing.assert_allclose(loop["losses"], loop["ref_losses"], rtol=1e-5)
    assert max(loop["weight_rel_diff"]) <= 1e-4
    assert loop["batch_devices"] == 8 and loop["batch_spec"] == "('batch', None)"
    assert loop["kernel_devices"] == 8
    assert runs["distribute_tensor_spec"] == "('model', None)"


BAD_LAYOUT_CASES = [
    ("batch_not_divisible", ["batch size 12", "data-parallel degree 8", "'batch'"]),
    ("missing_axis", ["'dense.*kernel'", "'tensor'", "('batch', 'model')"]),
    ("dimension_not_divisible", ["/out/kernel'", "(16, 4)", "dimension 1 (size 4)",
                                 "'model' of size 8"]),
    ("distribute_batch_not_divisible", ["batch size 30", "degree 8"]),
    ("wrong_rank", ["hidden/kernel'", "(12, 16)", "('model',)"]),
]


@pytest.mark.parametrize("case, words", BAD_LAYOUT_CASES,
                         ids=[case for case, _ in BAD_LAYOUT_CASES])
def test_bad_layouts_and_batches_raise_clear_errors(runs, case, words):
    message = runs["errors"][case]
    assert message is not None and message.startswith("ValueError"), message
    for word in words:
        assert word in message, (word, message)


def test_a_layout_key_matching_no_variable_is_skipped_with_one_warning(runs):
    """Keras applies the keys that match and ignores the others; loopax too, warning
    once (fit and evaluate) with the key and the variable paths."""
    result = runs["unmatched_key"]
    assert len(result["warnings"]) == 1
    for word in ["'conv.*kernel'", "match no variable", "hidden/kernel'"]:
        assert word in result["warnings"][0]
    assert result["hidden_kernel_spec"] == "(None, 'model')"   # the matching key applied
