"""`tf.summary`: TensorBoard event files through tensorboardX (an optional
dependency: `pip install loopax[tensorboard]`).

```python
writer = tf.summary.create_file_writer("logs/train")
with writer.as_default():
    tf.summary.scalar("loss", loss, step=epoch)
```

Inside a compiled `tf.function` the values are written when it runs (through
`jax.debug.callback`), as TensorFlow writes them.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings

import jax
import numpy as np

from loopax.src.tensor import unwrap
from loopax.src.tf_compat import profiler as _profiler

_default_writers = []
_step = [None]


def _tensorboardx():
    try:
        return importlib.import_module("tensorboardX")
    except ImportError:
        raise ImportError(
            "tf.summary writes TensorBoard files with tensorboardX, which is not "
            "installed: pip install loopax[tensorboard] (or pip install tensorboardX)."
        ) from None


class SummaryWriter:
    """Writes summaries to one TensorBoard log directory; make it the default with
    `as_default()`.

    Args:
        logdir: The directory of the event files.
        max_queue: Events held before a write (tensorboardX's default when None).
        flush_millis: Milliseconds between flushes (tensorboardX's default when None).
        filename_suffix: Appended to the event file's name.
    """

    def __init__(self, logdir, max_queue=None, flush_millis=None, filename_suffix=None):
        options = {}
        if max_queue is not None:
            options["max_queue"] = int(max_queue)
        if flush_millis is not None:
            options["flush_secs"] = max(1, int(flush_millis) // 1000)
        if filename_suffix is not None:
            options["filename_suffix"] = filename_suffix
        self.logdir = logdir
        self._suffix, self._reopened = filename_suffix or "", 0
        self._writer = _tensorboardx().SummaryWriter(logdir=logdir, **options)

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Makes this the writer of `tf.summary.scalar`/`histogram` inside the block.

        Args:
            step: A default step for the block, or None.

        Yields:
            This writer.
        """
        _default_writers.append(self)
        saved = _step[0]
        if step is not None:
            _step[0] = step
        try:
            yield self
        finally:
            _default_writers.remove(self)
            _step[0] = saved
            self.flush()

    def set_as_default(self, step=None):
        """Makes this the default writer from now on.

        Args:
            step: A default step, or None.
        """
        _default_writers.append(self)
        if step is not None:
            _step[0] = step

    def flush(self):
        """Writes pending events to disk. (tensorboardX's own flush leaves the events
        its background thread has not taken yet: closing drains them; the next
        summary opens a new event file, which TensorBoard reads as well, under a
        numbered name so that two in the same second do not collide.)"""
        self._writer.close()
        self._reopened += 1
        self._writer._filename_suffix = f"{self._suffix}.{self._reopened}"

    def close(self):
        """Flushes and closes the event file."""
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False, experimental_mesh=None):
    """A `SummaryWriter` for `logdir`.

    Args:
        logdir: The directory of the event files (created when needed).
        max_queue: Events held before a write.
        flush_millis: Milliseconds between flushes.
        filename_suffix: Appended to the event file's name.
        name: Accepted for TensorFlow compatibility; unused.
        experimental_trackable: Accepted for TensorFlow compatibility; unused.
        experimental_mesh: Accepted for TensorFlow compatibility; unused.

    Returns:
        A `SummaryWriter`.

    Raises:
        ImportError: tensorboardX is not installed.
    """
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix)


def _write(kind, name, data, step):
    """Writes now, or when the compiled function runs if `data`/`step` are traced;
    False when no writer is the default (as TensorFlow)."""
    if not _default_writers:
        return False
    writer = _default_writers[-1]
    step = _step[0] if step is None else step
    if step is None:
        raise ValueError(f"tf.summary.{kind}({name!r}): no step given and none set: pass "
                         "step=..., or call tf.summary.experimental.set_step(step).")
    data, step = unwrap(data), unwrap(step)

    def emit(value, at):
        if kind == "scalar":
            writer._writer.add_scalar(name, float(np.asarray(value)), int(at))
        else:
            writer._writer.add_histogram(name, np.asarray(value), int(at))

    if isinstance(data, jax.core.Tracer) or isinstance(step, jax.core.Tracer):
        jax.debug.callback(emit, data, step, ordered=True)
    else:
        emit(data, step)
    return True


def scalar(name, data, step=None, description=None):
    """Writes the scalar `data` under `name` at `step`.

    Args:
        name: The tag.
        data: A scalar (number or tensor).
        step: The step (default: the one set with `experimental.set_step` or `as_default`).
        description: Accepted for TensorFlow compatibility; unused.

    Returns:
        True if written, False when no writer is the default.
    """
    return _write("scalar", name, data, step)


def histogram(name, data, step=None, buckets=None, description=None):
    """Writes a histogram of the values of `data` under `name` at `step`.

    Args:
        name: The tag.
        data: A tensor of numbers.
        step: The step (default: the one set with `experimental.set_step` or `as_default`).
        buckets: Accepted for TensorFlow compatibility (tensorboardX picks the bins).
        description: Accepted for TensorFlow compatibility; unused.

    Returns:
        True if written, False when no writer is the default.
    """
    return _write("histogram", name, data, step)


def flush(writer=None, name=None):
    """Flushes `writer` (default: the default writer).

    Args:
        writer: A `SummaryWriter`, or None.
        name: Accepted for TensorFlow compatibility; unused.
    """
    writer = writer or (_default_writers[-1] if _default_writers else None)
    if writer is not None:
        writer.flush()


_trace = {"on": False, "profiler_outdir": None}


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Starts recording what `trace_export` writes.

    loopax has no TensorFlow graph to draw: `graph=True` records nothing (and
    `trace_export` says so, naming how to see the compiled program). With
    `profiler=True` a real trace starts (`jax.profiler`, TensorBoard's profile
    plugin opens it), into `profiler_outdir` or the default writer's directory.

    Args:
        graph: Whether TensorFlow would record the graph (see above).
        profiler: Whether to start the profiler.
        profiler_outdir: The directory of the profiler trace (default: the default
            writer's log directory at `trace_export`, or at once when one is set).
    """
    _trace.update(on=True, graph=bool(graph), profiler=bool(profiler),
                  profiler_outdir=profiler_outdir)
    if profiler:
        outdir = profiler_outdir or (_default_writers[-1].logdir if _default_writers else None)
        if outdir is None:
            raise ValueError("tf.summary.trace_on(profiler=True): give `profiler_outdir`, "
                             "or make a writer the default first.")
        _profiler.start(outdir)
        _trace["profiler_outdir"] = outdir


def trace_off():
    """Stops recording without writing (a running profiler trace is written)."""
    if _trace.get("profiler") and _profiler._active:
        _profiler.stop()
    _trace.update(on=False, profiler=False)


def trace_export(name, step=None, profiler_outdir=None):
    """Ends what `trace_on` started: writes the profiler trace (when it ran) and
    warns that no TensorFlow graph is written, naming what to use instead.

    Args:
        name: The trace's tag.
        step: The step (default: the one set with `experimental.set_step`).
        profiler_outdir: Accepted for TensorFlow compatibility (`trace_on` chose it).

    Returns:
        True when something was written (a profiler trace), False otherwise.
    """
    if not _trace["on"]:
        warnings.warn("tf.summary.trace_export: trace_on() was not called; nothing to "
                      "export.", stacklevel=2)
        return False
    wrote = False
    if _trace.get("profiler") and _profiler._active:
        _profiler.stop()
        wrote = True
    if _trace.get("graph"):
        where = (f" The profiler trace is in {_trace['profiler_outdir']}/plugins/profile "
                 "(TensorBoard's Profile tab)." if wrote else "")
        warnings.warn(
            f"tf.summary.trace_export({name!r}): loopax writes no graph for TensorBoard's "
            "Graphs tab (a loopax.function compiles a JAX program, not a TensorFlow "
            "graph)." + where + " To read the compiled program, print "
            "`jax.make_jaxpr(fn)(*args)` or `jax.jit(fn).lower(*args).as_text()` "
            "(StableHLO); for a trace, pass trace_on(profiler=True).", stacklevel=2)
    _trace.update(on=False, profiler=False)
    return wrote


class _Experimental:
    """`tf.summary.experimental`: the default step."""

    @staticmethod
    def set_step(step):
        _step[0] = step

    @staticmethod
    def get_step():
        return _step[0]


experimental = _Experimental()
