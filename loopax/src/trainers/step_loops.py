"""Compiled loops of steps: `n` training, test or predict steps in one XLA call.

A step is `step(state, batch) -> (logs, state)` (predict: `-> outputs`). The
loops here run it `n` times inside one compiled call (`lax.fori_loop` with
`n` a runtime value, so any `n` up to the data runs without recompiling) and
return the final state and the last step's logs:

- `device_loop`: the whole dataset is already on the device; batch `i` is
  rows `order[row0 + i*B : row0 + (i+1)*B]` gathered inside the loop
  (`order` is the epoch's permutation, or None for the natural order).
  With `static=True`, `n` is a compile-time constant instead: XLA gets a
  fixed-length scan, which GPUs run markedly faster than a loop whose trip
  count is a runtime value (1.55x on an H100 for a small MLP step); on CPU
  the two cost the same, and one program serves every `n`;
- `stacked_loop`: `n` host batches stacked on a leading axis and transferred
  together;
- `single_step`: one step, no loop, on a batch (some XLA backends run a loop
  body slower than the same ops at top level, so the planner measures both);
  on device data its batch is gathered first (`on_device_data`: by
  `take_batch`, on CPU by NumPy), so one program per batch shape serves every
  dataset.

On CPU a loop whose step holds a convolution XLA cannot hand to Eigen as it
is (any gradient of a convolution, or NCHW data) runs as repeated one-step
calls instead (`unless_slow_in_loops`): XLA:CPU rewrites such convolutions
into Eigen's NHWC/HWIO form only at a program's top level (its
ConvCanonicalization pass walks the entry computation only), so inside a
`while` body they run as naive loop nests, 20-50x slower (bench/conv_fused.py).

On CPU a program whose step holds a convolution compiles with
`CONVOLUTION_COMPILER_OPTIONS`: jaxlib 0.10's XLA:CPU hands every convolution
to YNNPACK, whose kernel gradients run 2-3x slower than Eigen's on this
machine's AVX-512 cores (mnist_convnet's 32->64 kernel gradient 32 -> 12 ms,
its forward 16 -> 8 ms); an empty YNN fusion list gives them back to Eigen,
and the XLA ops of the whole convnet step to about a third (bench/
vs_tensorflow.py, docs/performance.md). Options the installed jaxlib does not
know are dropped (checked once). XLA's default element-wise emitters stay: the
older ones (this rule until #37) compiled a convolution step about 1 s faster
but ran its element-wise fusions (the layout copies around the convolutions,
BatchNormalization's gradient) markedly slower. Every program of one step
holds the same ops, so a step's single-step program and its loops make the
same choice and compute the same bits.

Every program donates the state (argument 0): training's updates weights and
optimizer slots in place, and evaluation's and prediction's return the weights
they were given without a copy (an argument returned undonated is copied every
call, unchanged or not). The caller must not reuse the arrays it passed.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from loopax.src.compilation_cache import compile_seconds_saved
from loopax.src.losses.padded_rows import padded_rows
from loopax.src.trainers.data_adapters.data_adapter_utils import batch_size_of

# XLA:CPU options for programs holding a convolution (see the module docstring).
CONVOLUTION_COMPILER_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}
_accepted_options = {}


def convolution_compiler_options():
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
            except Exception:  # noqa: BLE001 - XLA's error for an unknown option varies
                pass
        _accepted_options[key] = accepted
    return _accepted_options[key]


def step_jit(fn, **jit_kwargs):
    """`jax.jit(fn, **jit_kwargs)`; on CPU, a program holding a convolution gets
    `CONVOLUTION_COMPILER_OPTIONS`, decided when it is first traced."""
    if jax.default_backend() != "cpu":
        return jax.jit(fn, **jit_kwargs)
    return _ConvolutionAwareJit(fn, jit_kwargs)


class _ConvolutionAwareJit:
    """See `step_jit`. The first call, `lower` or `trace` traces `fn` with the
    default options; a program with a convolution is then jitted again with
    `CONVOLUTION_COMPILER_OPTIONS` (a second, warm trace). Other attributes
    (`_cache_size`, ...) are the chosen jitted function's."""

    def __init__(self, fn, jit_kwargs):
        self._fn = fn
        self._jit_kwargs = jit_kwargs
        self._chosen = None
        self._default = jax.jit(fn, **jit_kwargs)

    def _choose(self, args, kwargs):
        if self._chosen is None:
            options = convolution_compiler_options()
            if options and has_convolution(self._default.trace(*args, **kwargs).jaxpr):
                self._chosen = jax.jit(self._fn, compiler_options=options, **self._jit_kwargs)
            else:
                self._chosen = self._default
        return self._chosen

    def __call__(self, *args, **kwargs):
        return (self._chosen or self._choose(args, kwargs))(*args, **kwargs)

    def lower(self, *args, **kwargs):
        return self._choose(args, kwargs).lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        return self._choose(args, kwargs).trace(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._chosen or self._default, name)


def _zeros_like_spec(tree):
    return jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), tree)


def device_batch(data, order, row0, i, batch_size):
    """Batch `i` of a device-resident dataset, starting at row `row0`."""
    start = row0 + i * batch_size
    if order is None:
        return jax.tree_util.tree_map(
            lambda a: lax.dynamic_slice_in_dim(a, start, batch_size), data)
    rows = lax.dynamic_slice_in_dim(order, start, batch_size)
    return gather_rows(data, rows)


def gather_rows(data, rows):
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


def stacked_batch(stacked, i):
    return jax.tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, i, keepdims=False),
                                  stacked)


def _run(step, fetch, state, n, finalize):
    """`step` applied `n` times (n >= 1) to `fetch(i)`; returns (state, logs)."""
    logs_spec, _ = jax.eval_shape(step, state, fetch(0))

    def body(i, carry):
        state, _ = carry
        logs, state = step(state, fetch(i))
        return state, logs

    state, logs = lax.fori_loop(0, n, body, (state, _zeros_like_spec(logs_spec)))
    return state, finalize(logs, state)


def _identity_finalize(logs, state):
    return logs


def make_device_loop(step, finalize=_identity_finalize, static=False):
    """`loop(state, data, order, row0, n, batch_size) -> (state, logs)`; with
    `static`, `n` (like `batch_size`) is static: one program per value."""
    def loop(state, data, order, row0, n, batch_size):
        return _run(step, lambda i: device_batch(data, order, row0, i, batch_size),
                    state, n, finalize)
    return step_jit(loop, static_argnames=("batch_size", "n") if static else ("batch_size",),
                    donate_argnums=(0,))


def make_device_scan(step, finalize=_identity_finalize):
    """`make_device_loop` with a static trip count."""
    return make_device_loop(step, finalize, static=True)


def make_stacked_loop(step, finalize=_identity_finalize):
    def loop(state, stacked, n):
        return _run(step, lambda i: stacked_batch(stacked, i), state, n, finalize)
    return step_jit(loop, donate_argnums=(0,))


@jax.jit(static_argnames=("batch_size",))
def take_batch(data, order, row0, batch_size):
    """The batch at `row0` of a device-resident dataset, as its own small
    program (one per dataset shape)."""
    return device_batch(data, order, row0, 0, batch_size)


def take_batch_on_host(data, order, row0, batch_size):
    """`take_batch` with NumPy, for CPU: the arrays are in host memory already,
    and the gather costs microseconds where `take_batch` costs a compile
    (0.2-0.7 s) per dataset shape, in a script's first epoch. The batch stays
    NumPy: the compiled step's C++ dispatch moves it (`jax.device_put` from
    Python would cost ~100 µs per array)."""
    rows = (slice(row0, row0 + batch_size) if order is None
            else np.asarray(order)[row0:row0 + batch_size])
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[rows], data)


def take_padded_batch(data, order, row0, rows, batch_size):
    """The `rows` rows at `row0` of a device-resident dataset (in `order`, or the
    natural order for None), then copies of them up to `batch_size` rows: a
    partial batch padded for the full batches' program (padded_batches.py). On
    CPU with NumPy, as `take_batch_on_host`; elsewhere by `gather_rows`."""
    index = row0 + np.arange(batch_size) % rows
    if jax.default_backend() == "cpu":
        if order is not None:
            index = np.asarray(order)[index]
        return jax.tree_util.tree_map(lambda a: np.asarray(a)[index], data)
    return _take_rows(data, order, jnp.asarray(index, jnp.int32))


@jax.jit
def _take_rows(data, order, index):
    return gather_rows(data, index if order is None else order[index])


def on_device_data(one_step):
    """`one_step(state, batch)` (a `make_single_step` / `make_single_predict`
    program) with the device loops' signature `(state, data, order, row0,
    batch_size)`: the batch is gathered first (`take_batch`; on CPU
    `take_batch_on_host`), so the step's program depends on the batch's shape
    only, and fit()'s validation, evaluate() on other data, host data and
    `test_on_batch` share it (Keras's one `test_step` per batch shape)."""
    return _OnDeviceData(one_step)


def _batch_spec(data, batch_size):
    return jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct((batch_size,) + tuple(a.shape[1:]), a.dtype), data)


class _OnDeviceData:
    """See `on_device_data`. `compile_ahead(state, data, batch_size)` compiles
    the program for batches of `batch_size` rows of `data` in the background
    (when `one_step` is a `CompilesAhead`)."""

    def __init__(self, one_step):
        self.one_step = one_step
        self._gather = take_batch_on_host if jax.default_backend() == "cpu" else take_batch

    def __call__(self, state, data, order, row0, batch_size, rows=None):
        """The step on the batch of `batch_size` rows at `row0`; with `rows` less
        than that, on its first `rows` padded with copies to `batch_size`
        (padded_batches.py: the program knows the real rows, or predict's
        caller drops the padding's outputs)."""
        if rows is None or rows == batch_size:
            return self.one_step(state, self._gather(data, order, row0, batch_size=batch_size))
        batch = take_padded_batch(data, order, row0, rows, batch_size)
        if getattr(self.one_step, "counts_rows", False):
            return self.one_step(state, batch, rows)
        return self.one_step(state, batch)

    def compile_ahead(self, state, data, batch_size):
        if isinstance(self.one_step, CompilesAhead):
            self.one_step.compile_ahead(state, _batch_spec(data, batch_size))

    def ahead_seconds(self, data, batch_size) -> float:
        """How long the background compile for `batch_size`-row batches took
        (0.0 when a call compiled the program)."""
        if not isinstance(self.one_step, CompilesAhead):
            return 0.0
        return self.one_step.ahead_seconds(_batch_spec(data, batch_size))


def make_single_step(step, finalize=_identity_finalize, jit=True,
                     counts_rows=False):
    """`one(state, batch) -> (state, logs)`. With `counts_rows` (and `jit`) it is
    `one(state, batch, rows=None)`: the program takes the batch's real rows as an
    argument (None: all of them), so a padded partial batch runs it too
    (padded_batches.py)."""
    def one(state, batch):
        logs, state = step(state, batch)
        return state, finalize(logs, state)

    def one_counting_rows(state, batch, rows):
        with padded_rows(rows, batch_size_of(batch)):
            logs, state = step(state, batch)
        return state, finalize(logs, state)

    if not jit:
        return one
    if counts_rows:
        return CompilesAhead(step_jit(one_counting_rows, donate_argnums=(0,)),
                             counts_rows=True)
    return CompilesAhead(step_jit(one, donate_argnums=(0,)))


# ---- one-step programs compiled ahead, off the critical path --------------

# Whether passes compile the programs of batch shapes still to come in the
# background (tests switch it off to compare).
COMPILE_AHEAD = True
_compiler = None
_in_flight = 0   # background compiles asked for and not finished
_in_flight_lock = threading.Lock()


def compiling_in_background() -> bool:
    """Whether a program is compiling (or waiting to) in the background now: a
    step timed meanwhile shares the CPU with it."""
    return _in_flight > 0


def _compile_in_background(lowered) -> concurrent.futures.Future:
    global _in_flight
    with _in_flight_lock:
        _in_flight += 1
    return _background_compiler().submit(_timed_compile, lowered)


def _background_compiler():
    global _compiler
    if _compiler is None:
        _compiler = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="loopax-compile")
    return _compiler


def _batch_signature(batch):
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


class CompilesAhead:
    """A jitted one-step program `fn(state, batch)` that can compile its
    program for a batch shape still to come in a background thread
    (`compile_ahead`) while other work runs: fit()'s first training step
    compiles while validation's is lowered, and validation's, like a pass's
    last, partial batch's, while the steps before it run, off the critical path
    (XLA compiles with the GIL released). It is the program a call would compile
    (the same lowering), so the results are the same. Other attributes are the
    jitted function's."""

    def __init__(self, jitted, counts_rows=False):
        self._jitted = jitted
        self.counts_rows = counts_rows   # called as (state, batch, rows): make_single_step
        self._ahead = {}      # batch signature -> Future of (compiled, seconds)
        self._called = set()  # batch signatures compiled by a call

    def compile_ahead(self, state, batch_spec):
        """Lowers the step for `state` and batches like `batch_spec`
        (ShapeDtypeStructs) here, and compiles it in the background, unless
        that program exists already."""
        key = _batch_signature(batch_spec)
        if not COMPILE_AHEAD or key in self._ahead or key in self._called:
            return
        rows = (jax.ShapeDtypeStruct((), np.int32),) if self.counts_rows else ()
        lowered = self._jitted.lower(state, batch_spec, *rows)
        self._ahead[key] = _compile_in_background(lowered)

    def programs(self) -> dict:
        """`{"by_call": n, "ahead": m}`: the batch shapes compiled so far by a call
        and in the background (one program each: the state's shapes are fixed)."""
        return {"by_call": len(self._called), "ahead": len(self._ahead)}

    def ahead_seconds(self, batch_spec) -> float:
        future = self._ahead.get(_batch_signature(batch_spec))
        return 0.0 if future is None else future.result()[1]

    def __call__(self, state, batch, rows=None):
        key = _batch_signature(batch)
        args = (state, batch)
        if self.counts_rows:
            args += (np.int32(batch_size_of(batch) if rows is None else rows),)
        future = self._ahead.get(key)
        if future is not None:
            try:
                return future.result()[0](*args)
            except TypeError:   # the state's types changed since: a call compiles it
                del self._ahead[key]
        self._called.add(key)
        return self._jitted(*args)

    def __getattr__(self, name):
        return getattr(self._jitted, name)


# ---- loops that run as one-step calls where a fused loop is slow ----------

def unless_slow_in_loops(fused, unfused):
    """`fused` (a jitted loop) on accelerators; on CPU, a `_FusedUnlessSlow`
    choosing between it and `unfused` at the first call."""
    if jax.default_backend() != "cpu":
        return fused
    return _FusedUnlessSlow(fused, unfused)


class _FusedUnlessSlow:
    """A jitted loop, or `unfused` (the same signature, running one-step calls
    back to back) when the first call's program holds a convolution that
    XLA:CPU runs far slower inside a loop body (see the module docstring).
    The first call is traced once: the jitted loop reuses that trace. Other
    attributes are the jitted loop's (`lower`, `_cache_size`, ...)."""

    def __init__(self, fused, unfused):
        self._fused = fused
        self._unfused = unfused
        self._chosen = None

    def __call__(self, *args, **kwargs):
        if self._chosen is None:
            slow = has_slow_convolution(self._fused.trace(*args, **kwargs).jaxpr)
            self._chosen = self._unfused if slow else self._fused
        return self._chosen(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._fused, name)


def has_convolution(jaxpr) -> bool:
    """Whether `jaxpr` (or a jaxpr nested in it) holds a convolution."""
    return any(eqn.primitive.name == "conv_general_dilated" for eqn in _equations(jaxpr))


def has_slow_convolution(jaxpr) -> bool:
    """Whether `jaxpr` (or a jaxpr nested in it) holds a convolution whose
    dimension numbers are not NHWC / HWIO -> NHWC (any rank): the only form
    XLA:CPU runs with Eigen inside a loop body."""
    return any(eqn.primitive.name == "conv_general_dilated"
               and not _eigen_form(eqn.params["dimension_numbers"])
               for eqn in _equations(jaxpr))


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


def make_unfused_device_loop(one):
    """`make_device_loop`'s signature, run as `n` calls of `one` (the model's
    one-step program on device data, `on_device_data`: the loop compiles
    nothing of its own); the logs are None when `n` is 0."""
    def loop(state, data, order, row0, n, batch_size):
        logs = None
        for i in range(n):
            state, logs = one(state, data, order, row0 + i * batch_size, batch_size=batch_size)
        return state, logs
    return loop


def make_unfused_stacked_loop(step, finalize=_identity_finalize):
    """`make_stacked_loop`'s signature, run as `n` one-step calls."""
    def one_of(state, stacked, i):
        logs, state = step(state, stacked_batch(stacked, i))
        return state, finalize(logs, state)
    one = step_jit(one_of, donate_argnums=(0,))

    def loop(state, stacked, n):
        logs = None
        for i in range(n):
            state, logs = one(state, stacked, i)
        return state, logs
    return loop


# ---- predict: outputs of every step are kept ------------------------------
# A predict step is `step(state, batch) -> (outputs, state)`; the loops return
# `(state, outputs)` (the state: advanced seed generators).

def _collect(predict, fetch, state, n, capacity):
    spec, _ = jax.eval_shape(predict, state, fetch(0))
    buffers = jax.tree_util.tree_map(
        lambda s: jnp.zeros((capacity,) + tuple(s.shape), s.dtype), spec)

    def body(i, carry):
        state, buffers = carry
        out, state = predict(state, fetch(i))
        return state, jax.tree_util.tree_map(
            lambda b, o: lax.dynamic_update_index_in_dim(b, o, i, 0), buffers, out)

    return lax.fori_loop(0, n, body, (state, buffers))


def make_device_predict(predict):
    def loop(state, data, order, row0, n, batch_size, capacity):
        return _collect(predict, lambda i: device_batch(data, order, row0, i, batch_size),
                        state, n, capacity)
    return step_jit(loop, static_argnames=("batch_size", "capacity"), donate_argnums=(0,))


def make_unfused_device_predict(one):
    """`make_device_predict`'s signature, run as `n` calls of `one` (the
    model's one-step predict program on device data); the outputs come back
    stacked on a leading axis of `n` (None when `n` is 0)."""
    def loop(state, data, order, row0, n, batch_size, capacity):
        outs = []
        for i in range(n):
            state, out = one(state, data, order, row0 + i * batch_size, batch_size=batch_size)
            outs.append(out)
        if not outs:
            return state, None
        return state, jax.tree_util.tree_map(lambda *a: jnp.stack(a), *outs)
    return loop


def make_single_predict(predict, jit=True):
    def one(state, batch):
        out, state = predict(state, batch)
        return state, out
    return CompilesAhead(step_jit(one, donate_argnums=(0,))) if jit else one

