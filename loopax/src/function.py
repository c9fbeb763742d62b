"""`loopax.function`: compiles a stateful Python function with XLA, as
`tf.function` does, and `loopax.print`, which prints at run time.

```python
@loopax.function
def train_step(x, y):
    with loopax.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    train_loss(loss)
```

How: on the first call with a new input signature the Python function runs
once, traced (`jax.make_jaxpr`), inside a StateScope that hands it a traced
stand-in for every Variable it reads and collects what it assigns; Variables
created during that trace (optimizer slots, metric accumulators) are created
for real. The program becomes the pure function

    (values of assigned variables, values of read variables, array args)
        -> (array outputs, new values of the assigned variables)

which `jax.jit` compiles from the traced program (the Python body does not run
again). Each call passes the current values in and writes the new values back
into the Variables. The assigned variables' buffers are donated (updated in
place) when they are the values a loopax.function wrote and nothing read since;
otherwise a copy goes in, so no array anyone holds is ever invalidated. The
global seed state is a Variable like any other: unseeded random ops draw fresh
numbers on every call.

As in TensorFlow, Variables may be created on the first call only: a first
trace that created some runs once more to check that it creates none again,
and a later trace that creates one raises a ValueError. A decorated method is
one Function per instance, so each instance's first call may create its
Variables.

Signatures: array arguments (NumPy, JAX, Tensors) specialize on shape and
dtype; everything else (Python numbers, strings, objects, Variables) on its
value or identity, as in TensorFlow. A new signature traces again (warned
about once it has happened `RETRACE_WARNING_AFTER` times).

Python side effects (`print`, appending to a list, reading the clock) run
only while tracing, i.e. once per signature, not on every call: use
`loopax.print` for values at run time. Python `if`/`while`/`for`,
`break`/`continue`/`return` on traced values are rewritten as lax control
flow by autograph (`autograph.py`; `autograph=False` turns it off). Called
inside another compiled function, inside a StateScope or while a GradientTape
records, the function simply runs as Python (the outer trace or tape sees
every op).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import inspect
import sys
import textwrap
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import autograph as _autograph
from loopax.src import random
from loopax.src.state import StateScope, Variable, _state, tracing
from loopax.src.tape import static_key
from loopax.src.tensor import Tensor, as_tensors
from loopax.src.utils.interrupts import INTERRUPTS_HELD

RETRACE_WARNING_AFTER = 5
_ARRAYS = (jax.Array, np.ndarray, np.generic)


def function(fn=None, input_signature=None, autograph=True, jit_compile=True,
             reduce_retracing=False, name=None):
    """Compiles `fn` (also usable as `@loopax.function` or `@loopax.function(...)`).

    Args:
        fn: the Python function; it may read and assign Variables of models,
            optimizers and metrics.
        jit_compile: False runs `fn` eagerly as plain Python (for debugging).
        reduce_retracing: accepted for TensorFlow compatibility; XLA needs
            static shapes, so each new shape still compiles once.
        autograph: True (the default) rewrites Python `if`/`while`/`for`,
            `break`/`continue`/`return` on traced values as lax control flow
            (see `loopax.src.autograph`); False runs the Python as written.
        input_signature: accepted for compatibility and ignored (`loopax.tf.function`
            binds it).
        name: a name for messages (default: the function's name).

    Returns:
        A `Function` (or, called without `fn`, a decorator that makes one).
    """
    def wrap(f):
        return Function(f, jit_compile=jit_compile, reduce_retracing=reduce_retracing,
                        name=name, autograph=autograph)
    return wrap if fn is None else wrap(fn)


class Function:
    """A compiled stateful function; see `loopax.function`.

    Each new combination of input shapes, dtypes and non-array arguments traces and
    compiles `fn` once; Variables it reads and assigns are carried in and written back.

    Args:
        fn: The Python function.
        jit_compile: False runs `fn` eagerly as plain Python.
        reduce_retracing: Accepted for TensorFlow compatibility.
        name: A name for messages (default: the function's name).
        autograph: Whether Python control flow on traced values is rewritten.
    """

    def __init__(self, fn, jit_compile=True, reduce_retracing=False, name=None,
                 autograph=True):
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.autograph = autograph
        self._converted = None
        self.jit_compile = jit_compile
        self.reduce_retracing = reduce_retracing
        self._name = name or getattr(fn, "__name__", "function")
        self._traces = {}
        self._tracing_count = 0
        self._warned_retracing = False
        self._checked_side_effects = False
        self._instances = weakref.WeakKeyDictionary()   # instance -> its _Method

    def __get__(self, obj, objtype=None):
        """A decorated method is one Function per instance (as in TensorFlow), so
        each instance's first call may create its Variables."""
        if obj is None:
            return self
        try:
            bound = self._instances.get(obj)
            if bound is None:
                bound = self._instances[obj] = _Method(self, obj)
        except TypeError:   # an instance that is unhashable or not weakly referable
            return functools.partial(self, obj)
        return bound

    def experimental_get_tracing_count(self):
        """Returns how many times the function has been traced (compiled)."""
        return self._tracing_count

    @property
    def _run_function(self):
        """The Python function the traces run: autograph's rewrite (made once) or,
        with `autograph=False`, the function as written."""
        if self._converted is None:
            self._converted = (_autograph.convert(self.python_function) if self.autograph
                               else self.python_function)
        return self._converted

    def __call__(self, *args, **kwargs):
        if _state.scopes:   # inside a stateless call or fit's step: arrays as they are
            return self._run_function(*args, **kwargs)
        # Eager results are Tensors (`.numpy()`, watchable), as TensorFlow's.
        return as_tensors(self._call(args, kwargs))

    def _call(self, args, kwargs):
        if not self.jit_compile or _state.tapes:
            return self._run_function(*args, **kwargs)
        leaves, treedef = jax.tree_util.tree_flatten(
            (args, kwargs), is_leaf=lambda x: isinstance(x, (Variable, Tensor)))
        key, template, positions, arrays = [treedef], [], [], []
        for i, x in enumerate(leaves):
            if isinstance(x, Tensor):
                if _is_host_text(x):
                    # Strings stay on the host (XLA computes on numbers): the function is
                    # traced for their value, and its string results are constants.
                    key.append(_text_key(x))
                    template.append(x)
                    continue
                x = x._loopax_value
            if isinstance(x, _ARRAYS):
                if isinstance(x, jax.core.Tracer):   # inside an outer trace: inline
                    return self._run_function(*args, **kwargs)
                key.append((x.shape, x.dtype, getattr(x, "weak_type", False)))
                template.append(None)
                positions.append(i)
                arrays.append(x)
            else:
                key.append(static_key(x))
                template.append(x)
        key = tuple(key)
        trace = self._traces.get(key)
        if trace is None:
            trace = self._traces[key] = self._new_trace(treedef, template, positions, arrays)
        return trace(arrays)

    def _new_trace(self, treedef, template, positions, arrays):
        if not self._checked_side_effects:
            self._checked_side_effects = True
            _warn_python_print(self.python_function, self._name)
        first = not self._traces   # no trace has succeeded yet
        self._count_trace()
        random.global_seed_generator()   # process-wide state, not this function's to create
        created = []
        with _on_variable_created(created.append if first else self._refuse_variable):
            trace = _Trace(self._run_function, self._name, treedef, template, positions,
                           arrays)
        if created:
            # As tf.function: trace once more; a function that creates Variables on
            # every call (rather than on the first only) creates them again here.
            with _on_variable_created(self._refuse_variable):
                trace = _Trace(self._run_function, self._name, treedef, template,
                               positions, arrays)
        return trace

    def _refuse_variable(self, variable):
        raise ValueError(
            f"loopax.function {self._name!r} created Variable {variable.path!r} after its "
            "first trace (a new input signature traces again, and so does a first call that "
            "created Variables, to check this): Variables may be created on the first call "
            "only, as in tf.function, or every call would make a new one. Create it outside "
            "the function (in __init__ or build()), or once: `if self.v is None: self.v = "
            "loopax.Variable(...)`.")

    def _count_trace(self):
        self._tracing_count += 1
        if self._tracing_count > RETRACE_WARNING_AFTER and not self._warned_retracing:
            self._warned_retracing = True
            warnings.warn(
                f"loopax.function {self._name!r} has been traced "
                f"{self._tracing_count} times. Each new input shape, dtype or Python "
                "argument value compiles it again, which is slow. Pass arrays rather "
                "than Python numbers, and keep batch shapes fixed (e.g. drop the last "
                "partial batch).", stacklevel=3)

    def __repr__(self):
        return f"<loopax.function {self._name} traced {self._tracing_count} times>"


_PYTHON_CONTROL_FLOW = (
    "loopax.function {name!r} branches in Python on a traced value (an `if` or `while` "
    "on a Tensor or Variable, or bool()/float() of one; see the JAX error above). Inside "
    "a compiled function values are known only when it runs. Autograph rewrites the "
    "`if`/`while`/`for` statements of the decorated function itself (unless "
    "autograph=False or do_not_convert), not those of functions it calls, nor "
    "int()/float()/bool() of a traced value. Use "
    "loopax.ops.cond(pred, true_fn, false_fn) for an `if`, "
    "loopax.ops.while_loop(cond, body, loop_vars) for a `while`, loopax.ops.where(c, a, "
    "b) to select elementwise, or loopax.ops.fori_loop / scan; a `for i in range(n)` "
    "with a Python `n` works as it is. To debug in Python, use "
    "loopax.function(fn, jit_compile=False).")


_ESCAPED_VALUE = (
    "loopax.function {name!r}: a value computed inside a compiled branch or loop (an `if`, "
    "`while` or `for` on a traced value, which autograph turns into lax.cond / "
    "lax.while_loop, or loopax.ops.cond / while_loop) escaped it through a Python side "
    "effect, e.g. appended to a Python list or stored on an object. Inside such a loop "
    "only its loop variables carry values out: collect values "
    "in a tf.TensorArray (`ta = ta.write(i, x)`) or a preallocated tensor, and assign "
    "attributes after the loop."
)


class _Method(Function):
    """A `Function` decorating a method, bound to one instance (held weakly: the
    instance's Function lives as long as the instance)."""

    def __init__(self, function, obj):
        instance, fn = weakref.ref(obj), function._run_function

        @functools.wraps(function.python_function)
        def method(*args, **kwargs):
            return fn(instance(), *args, **kwargs)

        super().__init__(method, jit_compile=function.jit_compile,
                         reduce_retracing=function.reduce_retracing, name=function._name,
                         autograph=False)   # `fn` is already converted


@contextlib.contextmanager
def _on_variable_created(hook):
    """Calls `hook(variable)` for each Variable created inside."""
    hooks = _state.variable_creation_hooks
    hooks.append(hook)
    try:
        yield
    finally:
        hooks.remove(hook)


class _LiftingScope(StateScope):
    """The scope of the one trace of a signature: the first time the function
    reads a Variable, the scope takes a concrete copy of its value (the copy
    marks where the value enters the program; the trace then lets it become an
    argument of the compiled function). Each read returns that copy through an
    `optimization_barrier`, a tracer (no Python branching on it) of whichever
    trace reads it: a read inside a `lax.cond` branch or loop body (autograph's,
    `loopax.ops.cond`'s) is that inner trace's, and the copy stays one constant
    of the whole program."""

    def __init__(self):
        super().__init__()
        self.stand_ins = []   # (variable, the concrete copy the trace captured)

    def _lookup(self, var):
        hit = self._values.get(id(var))
        if hit is None:
            with jax.ensure_compile_time_eval():
                copy = jnp.array(var._value, copy=True)
            self.stand_ins.append((var, copy))
            hit = self._values[id(var)] = (var, _StandIn(copy))
        value = hit[1]
        if isinstance(value, _StandIn):   # read, not assigned (yet)
            return jax.lax.optimization_barrier(value.copy)
        return value


class _StandIn:
    """The concrete copy of a Variable read (not assigned) in a trace."""

    __slots__ = ("copy",)

    def __init__(self, copy):
        self.copy = copy


class _Trace:
    """One input signature: the program of one trace of the Python function and
    the Variables it reads and assigns, compiled as the pure function

        (values of read+assigned variables, of read-only ones, array args)
            -> (array outputs, new values of the assigned variables).
    """

    def __init__(self, fn, name, treedef, template, positions, arrays):
        self.fn, self.name = fn, name
        self.treedef, self.template, self.positions = treedef, template, positions
        self._trace_once(arrays)
        self._jitted = jax.jit(self._pure, donate_argnums=0)

    def _call_fn(self, arrays):
        leaves = list(self.template)
        for p, a in zip(self.positions, arrays):
            leaves[p] = a
        args, kwargs = jax.tree_util.tree_unflatten(self.treedef, leaves)
        return self.fn(*args, **kwargs)

    def _trace_once(self, arrays):
        """Runs the Python function once, abstractly, under a `_LiftingScope`."""
        scope = _LiftingScope()

        def traced(arrays):
            with scope:
                out = self._call_fn(arrays)
                leaves, self.out_tree = jax.tree_util.tree_flatten(
                    out, is_leaf=lambda x: isinstance(x, (Variable, Tensor)))
                # Read inside the scope: a returned Variable is its value after
                # the step's assignments (as in TensorFlow), not a trace-time constant.
                outputs = [_array_of(x) for x in leaves if _is_array(x)]
                for x in leaves:
                    if isinstance(x, _autograph.Undefined):   # defined on one path only
                        x._fail()
            self.out_leaves = [None if _is_array(x) else x for x in leaves]
            self.assigned = scope.assigned_variables
            return outputs, [scope.get_current_value(v) for v in self.assigned]

        try:
            closed = jax.make_jaxpr(traced)(
                [jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a)) for a in arrays])
        except jax.errors.ConcretizationTypeError as e:
            raise TypeError(_PYTHON_CONTROL_FLOW.format(name=self.name)) from e
        except jax.errors.UnexpectedTracerError as e:
            raise TypeError(_ESCAPED_VALUE.format(name=self.name)) from e
        if any(isinstance(c, jax.core.Tracer) for c in closed.consts) and not tracing():
            # a tracer of an inner (branch or loop body) trace the program closes over
            raise TypeError(_ESCAPED_VALUE.format(name=self.name))
        self.jaxpr, self.n_out = closed.jaxpr, sum(x is None for x in self.out_leaves)
        const_slot = {id(c): i for i, c in enumerate(closed.consts)}
        inputs = [(v, const_slot[id(c)]) for v, c in scope.stand_ins if id(c) in const_slot]
        assigned_ids = {id(v) for v in self.assigned}
        self.read_assigned = [(v, i) for v, i in inputs if id(v) in assigned_ids]
        self.read_only = [(v, i) for v, i in inputs if id(v) not in assigned_ids]
        taken = {i for _, i in inputs}
        self.consts = [None if i in taken else c for i, c in enumerate(closed.consts)]

    def _pure(self, read_assigned_values, read_only_values, arrays):
        consts = list(self.consts)
        for (_, slot), value in zip(self.read_assigned + self.read_only,
                                    list(read_assigned_values) + list(read_only_values)):
            consts[slot] = value
        flat = jax.core.eval_jaxpr(self.jaxpr, consts, *arrays)
        return flat[:self.n_out], flat[self.n_out:]

    def __call__(self, arrays):
        # Donated: the values this (or another) loopax.function wrote and nothing
        # has read since (`Variable.value` clears `_owned_value`); anything else,
        # e.g. a value the user assigned or read, goes in as a copy.
        donated = [v._value if v._owned_value is v._value else jnp.array(v._value, copy=True)
                   for v, _ in self.read_assigned]
        # A Ctrl-C between the call and the writes would leave the Variables on donated
        # (deleted) buffers: it is held until they are written.
        with INTERRUPTS_HELD if donated else contextlib.nullcontext():
            out_arrays, new_values = self._jitted(
                donated, [v._value for v, _ in self.read_only], arrays)
            for v, value in zip(self.assigned, new_values):
                v._write(value, owned=True)
        it = iter(out_arrays)
        leaves = [next(it) if x is None else x for x in self.out_leaves]
        return jax.tree_util.tree_unflatten(self.out_tree, leaves)


def _is_array(x):
    return isinstance(x, (Variable, Tensor) + _ARRAYS) and not _is_host_text(x)


def _is_host_text(x):
    """Whether `x` is a string tensor (a NumPy object array of bytes on the host)."""
    value = x._loopax_value if isinstance(x, Tensor) else x
    return isinstance(value, np.ndarray) and value.dtype == object


def _text_key(x):
    """The trace key of a string tensor argument: its shape and its strings."""
    value = x._loopax_value
    return ("text", value.shape, tuple(value.reshape(-1)))


def _array_of(x):
    if isinstance(x, Tensor):
        return x._loopax_value
    return x.value if isinstance(x, Variable) else x


def _warn_python_print(fn, name):
    """Warns once if `fn`'s own body calls Python's print()."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
           for n in ast.walk(tree)):
        warnings.warn(
            f"loopax.function {name!r} calls print(). Python side effects run only "
            "while the function is traced (once per input signature), and print "
            "shows traced placeholders there. Use loopax.print(...) to print values "
            "every time the compiled function runs.", stacklevel=4)


# --------------------------------------------------------------------------
# loopax.print
# --------------------------------------------------------------------------

def print(*inputs, output_stream=None, sep=" ", end="\n", summarize=None):
    """Prints `inputs` when the code runs, also inside `loopax.function` and
    `jax.jit` (like `tf.print`). Arrays, Tensors and Variables print their
    values; lists, tuples and dicts of them print element by element.

    Args:
        output_stream: a file object (default `sys.stdout`).
        sep, end: as for Python's print.
        summarize: show this many items at each end of long arrays
            (NumPy's default if None, everything if -1).
    """
    leaves, tree = jax.tree_util.tree_flatten(
        inputs, is_leaf=lambda x: isinstance(x, (Variable, Tensor)))
    leaves = [_array_of(x) if isinstance(x, (Variable, Tensor)) else x for x in leaves]
    positions = [i for i, x in enumerate(leaves) if isinstance(x, _ARRAYS)]

    def emit(*arrays):
        filled = list(leaves)
        for p, a in zip(positions, arrays):
            filled[p] = np.asarray(a)
        items = jax.tree_util.tree_unflatten(tree, filled)
        options = {} if summarize is None else (
            {"threshold": sys.maxsize} if summarize < 0 else
            {"edgeitems": summarize, "threshold": 2 * summarize})
        with np.printoptions(**options):
            text = sep.join(_format(x) for x in items)
        builtins.print(text, end=end, file=output_stream or sys.stdout)

    arrays = [leaves[p] for p in positions]
    if any(isinstance(a, jax.core.Tracer) for a in arrays) or tracing():
        jax.debug.callback(emit, *arrays, ordered=True)
    else:
        emit(*arrays)


def _format(x):
    if isinstance(x, np.ndarray):
        return np.array2string(x) if x.ndim else str(x)
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_format(e) for e in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_format(v)}" for k, v in x.items()) + "}"
    return str(x)
