"""The distributed-training tutorials (custom loop with strategy.run/reduce, and
model.fit under strategy.scope()) as distribute_tutorials.py writes them, on one
device and on 8 simulated CPU devices, against TensorFlow 2.21's numbers.

fixtures/distribute_tutorials_tf.json is what TF printed for the "ordered" run:
    /work/tfvenv/bin/python tests/tf_tutorials/distribute_tutorials.py tf ordered
(the RESULTS line's "ordered" entry).
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "distribution"))
sys.path.insert(0, str(HERE))
import distribute_tutorials  # noqa: E402
from simulated_devices import environment_with_devices  # noqa: E402

TF = json.loads((HERE / "fixtures" / "distribute_tutorials_tf.json").read_text())
NUMBERS = ("custom", "epoch_function", "restored_accuracy", "iterated", "from_function", "fit",
           "evaluate", "replicated_evaluate", "fit_in_scope")


@pytest.fixture(scope="module")
def one_device():
    import loopax.tf as tf
    return distribute_tutorials.main(tf, shuffle=False)


@pytest.fixture(scope="module")
def eight_devices():
    done = subprocess.run([sys.executable, str(HERE / "distribute_tutorials.py")],
                          env=environment_with_devices(8), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULTS ")][-1]
    return json.loads(line[len("RESULTS "):])


def assert_close(got, want, rtol=1e-5):
    for key in NUMBERS:
        np.testing.assert_allclose(np.asarray(got[key], float), np.asarray(want[key], float),
                                   rtol=rtol, atol=1e-6, err_msg=key)


def test_one_device_prints_tensorflows_numbers(one_device):
    assert one_device["replicas"] == 1
    assert_close(one_device, TF)


def test_eight_devices_print_the_same_numbers(eight_devices):
    ordered = eight_devices["ordered"]
    assert ordered["replicas"] == 8
    assert_close(ordered, TF)
    # each batch is split over the 8 devices; the model's Variables are replicated
    assert ordered["layout"] == [8, False, 8, True]


def test_eight_devices_shuffled_data_trains_the_same_as_one_device(eight_devices):
    import loopax.tf as tf
    one = distribute_tutorials.main(tf, shuffle=True)
    shuffled = eight_devices["shuffled"]
    assert_close(shuffled, one)
    # the shuffle did change the order (else this would repeat the ordered test),
    # and each epoch of the tf.function loop over the dataset drew a new order
    assert shuffled["custom"][0][0] != pytest.approx(eight_devices["ordered"]["custom"][0][0],
                                                     rel=1e-6)


def free_port_pair():
    import socket
    for _ in range(20):
        with socket.socket() as s:
            s.bind(("localhost", 0))
            port = s.getsockname()[1]
        with socket.socket() as s:
            try:
                s.bind(("localhost", port + 1))
            except OSError:
                continue
        return port
    pytest.skip("no two free neighbouring ports")


def test_two_workers_with_multi_worker_mirrored_strategy(tmp_path):
    # TF_CONFIG names two workers on localhost; each process has 2 CPU devices
    # (4 replicas in all) and feeds its half of every global batch.
    port = free_port_pair()
    env = environment_with_devices(2)
    env.pop("TF_CONFIG", None)
    procs = [subprocess.Popen([sys.executable, str(HERE / "multi_worker.py"), str(i), str(port),
                               str(tmp_path / f"{i}.json")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(2)]
    try:
        logs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-4000:]
    for i in range(2):
        out = json.loads((tmp_path / f"{i}.json").read_text())
        assert out["process_count"] == 2 and out["replicas"] == 4
        assert out["layout"] == [4, False, 4, True]
        assert_close(out, TF)


def test_the_recorded_numbers_are_tensorflows():
    # Where TensorFlow is installed: the same script under TF prints the fixture.
    tensorflow = pytest.importorskip("tensorflow")
    assert_close(distribute_tutorials.main(tensorflow, shuffle=False), TF)
