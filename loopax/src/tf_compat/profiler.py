"""`tf.profiler.experimental` on `jax.profiler`: `start(logdir)` / `stop()` write a
real trace (XLA's profiler, the `plugins/profile/<run>/*.xplane.pb` files
TensorBoard's profile plugin opens), and `Trace(name)` marks a region in it."""

from __future__ import annotations

import jax

_active = []


class ProfilerOptions:
    """Accepted for TensorFlow compatibility (`host_tracer_level`, `python_tracer_level`,
    `device_tracer_level`, `delay_ms`); JAX's profiler uses its own settings."""

    def __init__(self, host_tracer_level=2, python_tracer_level=0, device_tracer_level=1,
                 delay_ms=None):
        self.host_tracer_level = host_tracer_level
        self.python_tracer_level = python_tracer_level
        self.device_tracer_level = device_tracer_level
        self.delay_ms = delay_ms


def start(logdir, options=None):
    """Starts tracing into `logdir` (`jax.profiler.start_trace`).

    Args:
        logdir: The TensorBoard log directory the trace goes to.
        options: Accepted for TensorFlow compatibility; unused.

    Raises:
        RuntimeError: a trace is already running (as TensorFlow's AlreadyExistsError).
    """
    if _active:
        raise RuntimeError(f"tf.profiler.experimental.start: a trace into {_active[0]!r} "
                           "is already running; call stop() first.")
    jax.profiler.start_trace(str(logdir))
    _active.append(str(logdir))


def stop(save=True):
    """Stops the trace `start` began and writes it.

    Args:
        save: Accepted for TensorFlow compatibility (the trace is always written).

    Raises:
        RuntimeError: no trace is running.
    """
    if not _active:
        raise RuntimeError("tf.profiler.experimental.stop: no trace is running; call "
                           "tf.profiler.experimental.start(logdir) first.")
    try:
        jax.profiler.stop_trace()
    finally:
        _active.clear()


class Profile:
    """`with tf.profiler.experimental.Profile(logdir):` traces the block."""

    def __init__(self, logdir, options=None):
        self.logdir = logdir

    def __enter__(self):
        start(self.logdir)
        return self

    def __exit__(self, *exc):
        stop()


class Trace(jax.profiler.TraceAnnotation):
    """`with tf.profiler.experimental.Trace("train", step_num=step, _r=1):` names a
    region of the trace (`jax.profiler.TraceAnnotation`; keyword arguments are shown
    with it, as TensorFlow shows them)."""

    def __init__(self, name, **kwargs):
        super().__init__(str(name), **{k: str(v) for k, v in kwargs.items()})


class _Experimental:
    """`tf.profiler.experimental`."""

    start = staticmethod(start)
    stop = staticmethod(stop)
    Profile = Profile
    Trace = Trace
    ProfilerOptions = ProfilerOptions


experimental = _Experimental()
