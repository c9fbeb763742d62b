"""The environment of a subprocess that simulates `n` CPU devices."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def environment_with_devices(n):
    """This process's environment with XLA simulating `n` CPU devices. The suite's
    other XLA flags (tests/conftest.py: compile at -O0 with the quick emitters) stay,
    so the subprocess compiles as fast as the tests in this process."""
    flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "",
                   os.environ.get("XLA_FLAGS", ""))
    return dict(os.environ, XLA_FLAGS=f"{flags} --xla_force_host_platform_device_count={n}".strip(),
                PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
