import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")

import pytest

import loopax
from loopax.src import state


@pytest.fixture(autouse=True)
def _fresh_session():
    """Each test starts with fresh auto-names and a fixed global seed."""
    state.clear_session()
    loopax.random.set_random_seed(0)
    yield
