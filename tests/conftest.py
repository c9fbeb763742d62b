import contextlib
import os
import re
import sys
import threading
from importlib.metadata import version

# Tests compile thousands of small programs and run each a few times, so compile time is
# most of the suite's time: LLVM optimisation is off (-O0), and XLA:CPU's older element-wise
# emitters with one codegen unit compile a program about 2.5x faster than the MLIR fusion
# emitters (tests/layers/recurrent/test_rnn.py: backend compile 44.8 s -> 12.1 s, the whole
# suite's CPU time 24 -> 16 min; every test passes under both). Benchmarks and users keep
# XLA's defaults.
# The emitter flags are checked on jaxlib 0.10 (an unknown flag aborts XLA), so another
# jaxlib runs without them until someone checks them there.
os.environ.setdefault("XLA_FLAGS", " ".join(
    ["--xla_force_host_platform_device_count=1", "--xla_backend_optimization_level=0"]
    + (["--xla_cpu_use_fusion_emitters=false", "--xla_cpu_parallel_codegen_split_count=1"]
       if version("jaxlib").split(".")[:2] == ["0", "10"] else [])))

# Tests count compilations and time nothing across runs: no persistent compilation cache
# (tests/test_compilation_cache.py switches it on in its own processes).
os.environ.setdefault("LOOPAX_COMPILATION_CACHE", "0")

# Keras 3 is the reference library of the parity tests: on JAX, as loopax.
os.environ.setdefault("KERAS_BACKEND", "jax")

import jax
import pytest

import loopax
from loopax.src import naming


@pytest.fixture
def count_compiles():
    """`with count_compiles() as names:` lists the function name of each XLA compile this
    thread makes inside the block (not a compile another test left running in the
    background)."""
    return _compiles_in_this_thread


@contextlib.contextmanager
def _compiles_in_this_thread():
    names, this_thread = [], threading.get_ident()

    def on_duration(event, duration, **kwargs):
        if (event == "/jax/core/compile/backend_compile_duration"
                and threading.get_ident() == this_thread):
            names.append(kwargs.get("fun_name", ""))

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        yield names
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)


@pytest.fixture(autouse=True)
def _fresh_session():
    """Each test starts with fresh auto-names (loopax's and, once a parity test has
    imported it, Keras's) and a fixed global seed, and leaves no global dtype policy,
    floatx, image data format or distribution behind (clear_session keeps them)."""
    naming.clear_session()
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
