"""A test that builds the same model twice (e.g. to check that the same seeds give the
same weights) compiles the same programs twice; with loopax's compilation cache on for
the test, the second model is still built, traced and lowered on its own, and XLA's
compile of a program identical to one already compiled is loaded instead (a program
that differs, e.g. by a constant drawn at trace time, is compiled and so checked)."""

import contextlib

import jax

import loopax

_CACHE_SETTINGS = ("jax_compilation_cache_max_size",
                   "jax_persistent_cache_min_compile_time_secs",
                   "jax_persistent_cache_min_entry_size_bytes")


@contextlib.contextmanager
def identical_programs_compiled_once(directory):
    """Inside: compiled programs are kept in `directory` (a test's tmp_path) and
    reused; after: the cache is as it was (the suite runs without one)."""
    previous_dir = loopax.config.compilation_cache_dir()
    previous = {name: getattr(jax.config, name) for name in _CACHE_SETTINGS}
    assert loopax.config.enable_compilation_cache(str(directory))
    try:
        yield
    finally:
        loopax.config.disable_compilation_cache()
        if previous_dir is not None:
            loopax.config.enable_compilation_cache(previous_dir)
        for name, value in previous.items():
            jax.config.update(name, value)
