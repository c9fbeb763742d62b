"""Two processes on localhost, joined by `loopax.distribution.initialize`
(jax.distributed, CPU collectives over gloo), train one data-parallel model.

Each process holds half the rows (`distribute_dataset`: rows 0-63 and 64-127)
and feeds local batches of 16, so global batch i is rows 16i..16i+15 of
process 0 followed by the same of process 1. The one-device reference trains
on those global batches in that order.
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from simulated_devices import ROOT, environment_with_devices
from two_process_data import make_data, make_model

WORKER = Path(__file__).with_name("two_process_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("two_process")
    env = environment_with_devices(2)
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(i), port,
                               str(folder / f"{i}.json")], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    try:
        logs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-4000:]
    return [json.loads((folder / f"{i}.json").read_text()) for i in range(2)]


@pytest.fixture(scope="module")
def reference():
    x, y = make_data()
    order = np.concatenate([np.r_[16 * i:16 * i + 16, 64 + 16 * i:64 + 16 * i + 16]
                            for i in range(4)])
    model = make_model()
    history = model.fit(x[order], y[order], batch_size=32, epochs=2, verbose=0,
                        shuffle=False).history
    evaluation = model.evaluate(x[order], y[order], batch_size=32, verbose=0,
                                return_dict=True)
    return history, evaluation, model.get_weights(), model.predict(x[order], verbose=0)


def test_two_processes_form_one_job(outputs):
    for out in outputs:
        assert out["process_count"] == 2 and out["device_count"] == 4
        assert out["own_rows"] == 64
        assert out["kernel_devices"] == 4


def test_two_process_fit_equals_one_device_on_the_global_batches(outputs, reference):
    history, evaluation, weights, prediction = reference
    for out in outputs:
        for key in history:
            np.testing.assert_allclose(out["history"][key], history[key], rtol=1e-4)
        for key in evaluation:
            np.testing.assert_allclose(out["evaluate"][key], evaluation[key], rtol=1e-4)
        for got, want in zip(out["weights"], weights):
            assert np.linalg.norm(np.asarray(got) - want) <= 1e-4 * np.linalg.norm(want)
        # predict gathers every process's rows, process 0's first in each batch.
        np.testing.assert_allclose(out["prediction"], prediction, atol=1e-5)
