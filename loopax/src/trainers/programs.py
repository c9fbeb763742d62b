"""`StepProgram`: a step, how it is fed and how many steps one call runs.

A step is `step(state, batch) -> (logs, state)` (predict: outputs). The feeds:
"batch" `(state, batch)` (with `counts_rows` also the batch's real rows, so a
padded partial batch runs it, padded_batches.py); "device" `(state, data,
order, row0, n, batch_size)`, batch `i` gathered inside the program from rows
`order[row0 + i*B : row0 + (i+1)*B]` of the device-resident data (predict adds
`capacity`, its output buffer's steps); "stacked" `(state, stacked, n)`, host
batches stacked on a leading axis. The lengths: "one" (feed "batch"),
"dynamic" (`fori_loop`, `n` at run time) or "static" (`n` a constant: a
fixed-length scan, 1.55x faster per MLP step on an H100; alike on CPU). A loop
returns the last step's logs (predict: every step's outputs).

Every program donates the state (argument 0): the caller must not reuse it.

`cpu_rules` (applied to the first trace on CPU): a program holding a
convolution compiles with `CONVOLUTION_COMPILER_OPTIONS`, which hand the
convolutions from YNNPACK back to Eigen (kernel gradients 2-3x faster on AVX-512,
bench/vs_tensorflow.py) and keep YNNPACK's reductions (without them XLA splits
BatchNormalization's sums into slow reduce-window trees: ResNet-20's step 0.80x);
options the installed jaxlib does not know are dropped. A loop whose convolutions
XLA cannot put in Eigen's NHWC/HWIO form inside a `while` body (any convolution
gradient, NCHW data: XLA canonicalizes only the entry computation's) may not fuse,
as it would run 20-50x slower (bench/conv_fused.py): its steps then run as
one-step calls.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import ClosedJaxpr

from loopax.src.compilation_cache import compile_seconds_saved
from loopax.src.trainers.data_adapters.data_adapter_utils import batch_size_of
from loopax.src.trainers.padded_batches import with_real_rows

# XLA:CPU options for programs holding a convolution (see the module docstring).
CONVOLUTION_COMPILER_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_REDUCE"}
_accepted_options: dict = {}
# Whether passes compile the programs of batch shapes still to come in the
# background (tests switch it off to compare).
COMPILE_AHEAD = True
_STATIC_ARGS = {("device", "dynamic"): ("batch_size",), ("device", "static"): ("batch_size", "n"),
                ("stacked", "dynamic"): (), ("batch", "one"): ()}


class StepProgram:
    """A step compiled for one feed and one length (see the module docstring).

    Args:
        step: `step(state, batch) -> (logs, state)` (predict: outputs).
        feed: "batch", "device" or "stacked".
        length: "one", "dynamic" or "static".
        finalize: `(logs, state) -> logs`, applied inside the program (not predict).
        predict: the step returns outputs, which loops collect.
        counts_rows: a "batch" program takes the batch's real rows as well.
        eager: run the step as plain Python (feed "batch", length "one").
        wait: each call waits for its results (`placement.calls_must_wait`).
    """

    def __init__(self, step, feed="batch", length="one", finalize=None, predict=False,
                 counts_rows=False, eager=False, wait=False):
        if (feed, length) not in _STATIC_ARGS:
            raise ValueError(f"StepProgram: no program for feed={feed!r}, length={length!r}.")
        self.feed, self.length, self.eager, self.wait = feed, length, eager, wait
        self.counts_rows = counts_rows and not eager
        self._function = _program_function(step, finalize or _logs_only, feed, length,
                                           predict, self.counts_rows)
        static = _STATIC_ARGS[feed, length] + (("capacity",) if predict and feed == "device"
                                               else ())
        self._jit_kwargs = {"static_argnames": static, "donate_argnums": (0,)}
        self._jitted = None if eager else jax.jit(self._function, **self._jit_kwargs)
        self._may_fuse = None if jax.default_backend() == "cpu" else True
        self._ahead: dict = {}     # batch signature -> Future of (compiled, seconds)
        self._called: set = set()  # batch signatures compiled by a call

    def _arguments(self, args, kwargs):
        """`args` with a "batch" program's real rows (`rows`, default: all) added."""
        if self.feed != "batch":
            return args, kwargs
        rows = kwargs.pop("rows", args[2] if len(args) > 2 else None)
        args = args[:2]
        if self.counts_rows:
            rows = batch_size_of(args[1]) if rows is None else rows
            args += (rows if isinstance(rows, jax.ShapeDtypeStruct) else np.int32(rows),)
        return args, kwargs

    def _apply_cpu_rules(self, args, kwargs):
        if self._may_fuse is None:
            options, self._may_fuse = cpu_rules(self._jitted.trace(*args, **kwargs).jaxpr)
            if options:
                self._jitted = jax.jit(self._function, compiler_options=options,
                                       **self._jit_kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> jax.stages.Lowered:
        """The program lowered for these arguments (`jax.stages.Lowered`)."""
        args, kwargs = self._arguments(args, dict(kwargs))
        self._apply_cpu_rules(args, kwargs)
        return self._jitted.lower(*args, **kwargs)

    def may_fuse(self, *args: Any, **kwargs: Any) -> bool:
        """Whether this loop runs as one program (True on accelerators; on CPU,
        `cpu_rules` of its trace for these arguments). False: run its steps as
        one-step calls."""
        if self._may_fuse is None:
            self._apply_cpu_rules(*self._arguments(args, dict(kwargs)))
        return self._may_fuse

    def compile_async(self, state: Any, batch_spec: Any) -> None:
        """Lowers this one-step program for `state` and batches like `batch_spec`
        (ShapeDtypeStructs) here and compiles it in a background thread, unless
        it exists already: the result is what a call would compile."""
        key = _signature(batch_spec)
        if self.eager or not COMPILE_AHEAD or key in self._ahead or key in self._called:
            return
        lowered = self.lower(state, batch_spec, rows=jax.ShapeDtypeStruct((), np.int32))
        self._ahead[key] = _compile_in_background(lowered)

    def ahead_seconds(self, batch_spec: Any) -> float:
        """How long the background compile for batches like `batch_spec` took
        (0.0 when none ran)."""
        future = self._ahead.get(_signature(batch_spec))
        return 0.0 if future is None else future.result()[1]

    def programs(self) -> dict:
        """`{"by_call": n, "ahead": m}`: a one-step program's batch shapes compiled
        so far by a call and in the background."""
        return {"by_call": len(self._called), "ahead": len(self._ahead)}

    def cache_size(self) -> int:
        """How many XLA programs calls have compiled (0: never run)."""
        return 0 if self._jitted is None else self._jitted._cache_size()

    def __call__(self, *args, **kwargs):
        """Runs the program: `(state, ...) -> (state, logs or outputs)`."""
        args, kwargs = self._arguments(args, dict(kwargs))
        if self.eager:   # dicts in the key order a jitted call returns (sorted), as Keras's
            return jax.tree_util.tree_map(lambda leaf: leaf, self._function(*args, **kwargs))
        out = None
        if self.feed == "batch":
            key = _signature(args[1])
            future = self._ahead.get(key)
            if future is not None:
                try:
                    out = future.result()[0](*args)
                except TypeError:   # the state's types changed since: a call compiles it
                    del self._ahead[key]
            if out is None:
                self._called.add(key)
        if out is None:
            self._apply_cpu_rules(args, kwargs)
            out = self._jitted(*args, **kwargs)
        return jax.block_until_ready(out) if self.wait else out


def cpu_rules(jaxpr: ClosedJaxpr) -> tuple[dict, bool]:
    """`(compiler_options, may_fuse)` for an XLA:CPU program of `jaxpr` (see the
    module docstring): the Eigen convolution options if it holds a convolution,
    and whether its convolutions (if any) are all in the NHWC / HWIO -> NHWC
    form XLA:CPU runs with Eigen inside a loop body."""
    convolutions = [eqn.params["dimension_numbers"] for eqn in _equations(jaxpr)
                    if eqn.primitive.name == "conv_general_dilated"]
    options = convolution_compiler_options() if convolutions else {}
    return options, all(_eigen_form(numbers) for numbers in convolutions)


def convolution_compiler_options() -> dict:
    """`CONVOLUTION_COMPILER_OPTIONS` less those the installed jaxlib refuses
    (an unknown XLA option fails the compile), checked once per option set."""
    key = tuple(sorted(CONVOLUTION_COMPILER_OPTIONS.items()))
    if key not in _accepted_options:
        accepted = {}
        for name, value in CONVOLUTION_COMPILER_OPTIONS.items():
            try:
                jax.jit(lambda x: x + 1, compiler_options={name: value}).lower(
                    np.float32(0)).compile()
                accepted[name] = value
            except Exception:  # XLA's error for an unknown option varies
                pass
        _accepted_options[key] = accepted
    return _accepted_options[key]


def _eigen_form(dimension_numbers):
    lhs, rhs, out = (tuple(d) for d in dimension_numbers)
    rank = len(lhs)
    channels_last = (0, rank - 1) + tuple(range(1, rank - 1))
    return lhs == out == channels_last and rhs == (rank - 1, rank - 2) + tuple(range(rank - 2))


def _equations(jaxpr):
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)   # a ClosedJaxpr's Jaxpr
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in _nested_jaxprs(param):
                yield from _equations(sub)


def _nested_jaxprs(param):
    """The jaxprs in an equation parameter: a loop's body, a cond's branches..."""
    if hasattr(param, "eqns") or hasattr(getattr(param, "jaxpr", None), "eqns"):
        return [param]
    if isinstance(param, (tuple, list)):
        return [j for p in param for j in _nested_jaxprs(p)]
    return []


# ---- the programs' functions ------------------------------------------------

def _logs_only(logs, state):
    return logs


def _program_function(step, finalize, feed, length, predict, counts_rows):
    """The Python function a `StepProgram` jits (named "one..." or "loop...")."""
    if feed == "batch":
        def one(state, batch):
            out, state = step(state, batch)
            return state, out if predict else finalize(out, state)

        def one_counting_rows(state, batch, rows):
            return one(state, with_real_rows(batch, rows))
        return one_counting_rows if counts_rows else one
    run = _collect if predict else _run
    if feed == "stacked":
        def loop(state, stacked, n):
            return run(step, lambda i: stacked_batch(stacked, i), state, n, finalize)
        return loop

    def loop(state, data, order, row0, n, batch_size, capacity=None):
        fetch = lambda i: device_batch(data, order, row0, i, batch_size)
        return run(step, fetch, state, n, capacity if predict else finalize)
    return loop


def _run(step, fetch, state, n, finalize):
    """`step` applied `n` times (n >= 1) to `fetch(i)`; returns (state, logs)."""
    logs_spec, _ = jax.eval_shape(step, state, fetch(0))

    def body(i, carry):
        state, _ = carry
        logs, state = step(state, fetch(i))
        return state, logs

    zeros = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), logs_spec)
    state, logs = lax.fori_loop(0, n, body, (state, zeros))
    return state, finalize(logs, state)


def _collect(predict, fetch, state, n, capacity):
    """(state, every step's outputs in a buffer of `capacity` steps)."""
    spec, _ = jax.eval_shape(predict, state, fetch(0))
    buffers = jax.tree_util.tree_map(
        lambda s: jnp.zeros((capacity,) + tuple(s.shape), s.dtype), spec)

    def body(i, carry):
        state, buffers = carry
        out, state = predict(state, fetch(i))
        return state, jax.tree_util.tree_map(
            lambda b, o: lax.dynamic_update_index_in_dim(b, o, i, 0), buffers, out)

    return lax.fori_loop(0, n, body, (state, buffers))


# ---- batches from device-resident data ----------------------------------------

def device_batch(data: Any, order: jax.Array | None, row0: Any, i: Any, batch_size: int) -> Any:
    """Batch `i` of a device-resident dataset, starting at row `row0`."""
    start = row0 + i * batch_size
    if order is None:
        return jax.tree_util.tree_map(
            lambda a: lax.dynamic_slice_in_dim(a, start, batch_size), data)
    rows = lax.dynamic_slice_in_dim(order, start, batch_size)
    return gather_rows(data, rows)


def gather_rows(data: Any, rows: jax.Array) -> Any:
    """`a[rows]` for every array in `data`.

    XLA's gather is slow on CPU for whole rows (about 2x a loop of row
    copies for a batch of MNIST rows), so there the rows are copied one by
    one; other backends gather natively.
    """
    if jax.default_backend() != "cpu":
        return jax.tree_util.tree_map(lambda a: jnp.take(a, rows, axis=0, mode="clip"), data)
    leaves, treedef = jax.tree_util.tree_flatten(data)
    buffers = [jnp.zeros((rows.shape[0],) + a.shape[1:], a.dtype) for a in leaves]

    def copy_row(j, buffers):
        return [lax.dynamic_update_index_in_dim(
                    buf, lax.dynamic_index_in_dim(a, rows[j], keepdims=True), j, 0)
                for buf, a in zip(buffers, leaves)]

    return jax.tree_util.tree_unflatten(treedef, lax.fori_loop(0, rows.shape[0], copy_row, buffers))


def stacked_batch(stacked: Any, i: Any) -> Any:
    """Batch `i` of batches stacked on a leading axis."""
    return jax.tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, i, keepdims=False),
                                  stacked)


@jax.jit(static_argnames=("batch_size",))
def _take_batch(data, order, row0, batch_size):
    return device_batch(data, order, row0, 0, batch_size)


@jax.jit
def _take_rows(data, order, index):
    return gather_rows(data, index if order is None else order[index])


def batch_of(data: Any, order: Any, row0: Any, batch_size: int, rows: Any = None) -> Any:
    """The batch of `batch_size` rows at `row0` of a device-resident dataset (in
    `order`, or the natural order for None), for a one-step program: so that
    program depends on the batch's shape only, and fit()'s validation, evaluate()
    on other data, host data and `test_on_batch` share it. With `rows` less than
    `batch_size`, its first `rows` then copies of them up to `batch_size` (a
    partial batch padded for the full batches' program, padded_batches.py).

    On CPU with NumPy: the arrays are in host memory already, and the gather
    costs microseconds where a gather program costs a compile (0.2-0.7 s) per
    dataset shape in a script's first epoch; the batch stays NumPy (the compiled
    step's C++ dispatch moves it). Elsewhere by small gather programs."""
    cpu = jax.default_backend() == "cpu"
    if rows is None or rows == batch_size:
        if not cpu:
            return _take_batch(data, order, row0, batch_size=batch_size)
        index = (slice(row0, row0 + batch_size) if order is None
                 else np.asarray(order)[row0:row0 + batch_size])
        return jax.tree_util.tree_map(lambda a: np.asarray(a)[index], data)
    index = row0 + np.arange(batch_size) % rows
    if not cpu:
        return _take_rows(data, order, jnp.asarray(index, jnp.int32))
    if order is not None:
        index = np.asarray(order)[index]
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[index], data)


def batch_spec(data: Any, batch_size: int) -> Any:
    """ShapeDtypeStructs of a batch of `batch_size` rows of `data`."""
    return jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct((batch_size,) + tuple(a.shape[1:]), a.dtype), data)


# ---- compiling in the background --------------------------------------------

_compiler = None
_in_flight = 0   # background compiles asked for and not finished
_in_flight_lock = threading.Lock()


def compiling_in_background() -> bool:
    """Whether a program is compiling (or waiting to) in the background now: a
    step timed meanwhile shares the CPU with it."""
    return _in_flight > 0


def _compile_in_background(lowered: jax.stages.Lowered) -> concurrent.futures.Future:
    global _in_flight
    with _in_flight_lock:
        _in_flight += 1
    return background_compiler().submit(_timed_compile, lowered)


def background_compiler() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread background compiles run on, in the order asked."""
    global _compiler
    if _compiler is None:
        _compiler = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="loopax-compile")
    return _compiler


def _signature(batch):
    return tuple((tuple(a.shape), str(a.dtype)) for a in jax.tree_util.tree_leaves(batch))


def _timed_compile(lowered):
    """(compiled, seconds): the compile's time, or the time it took when the cache
    stored the program it loads instead (compilation_cache.compile_seconds_saved)."""
    global _in_flight
    try:
        start, saved = time.perf_counter(), compile_seconds_saved()
        compiled = lowered.compile()
        return compiled, time.perf_counter() - start + compile_seconds_saved() - saved
    finally:
        with _in_flight_lock:
            _in_flight -= 1
