import os
import re
import sys

# Tests compile hundreds of small programs and run each a few times: LLVM optimisation
# (-O0 here) would cost more time than it saves. Benchmarks and users keep the default.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_force_host_platform_device_count=1 --xla_backend_optimization_level=0")

# Tests count compilations and time nothing across runs: no persistent compilation cache
# (tests/test_compilation_cache.py switches it on in its own processes).
os.environ.setdefault("LOOPAX_COMPILATION_CACHE", "0")

# Keras 3 is the reference library of the parity tests: on JAX, as loopax.
os.environ.setdefault("KERAS_BACKEND", "jax")

import pytest

import loopax
from loopax.src import state


@pytest.fixture(autouse=True)
def _fresh_session():
    """Each test starts with fresh auto-names (loopax's and, once a parity test has
    imported it, Keras's) and a fixed global seed, and leaves no global dtype policy,
    floatx, image data format or distribution behind (clear_session keeps them)."""
    state.clear_session()
    loopax.random.set_random_seed(0)
    keras = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "utils"):
        keras.utils.clear_session(free_memory=False)
    yield
    loopax.mixed_precision.set_global_policy(None)
    loopax.config.set_floatx("float32")
    loopax.config.set_image_data_format("channels_last")
    keras = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "config"):
        keras.config.set_image_data_format("channels_last")
    loopax.distribution.set_distribution(None)


def pytest_collection_modifyitems(config, items):
    """Every parametrized case has a readable id: none made of `<lambda>` or of
    pytest's `<argname><index>` fallback for values it cannot print."""
    unreadable = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        fallback = any(re.search(rf"(^|-){re.escape(name)}\d+(-|$)", callspec.id)
                       for name in callspec.params)
        if "<lambda>" in callspec.id or fallback:
            unreadable.append(item.nodeid)
    if unreadable:
        raise pytest.UsageError(
            "parametrized cases without a readable id (give `ids=` or pytest.param(id=...)):\n  "
            + "\n  ".join(unreadable))
