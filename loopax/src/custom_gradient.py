"""`custom_gradient`: a function with a hand-written gradient, as in TensorFlow.

```python
@loopax.custom_gradient
def bar(x, y):
    def grad(upstream):
        return upstream * y, upstream * x     # one gradient per input
    return x * y, grad
```

`f(*inputs)` returns `(outputs, grad_fn)`. `grad_fn(*upstreams)` gets one
upstream gradient per output (flattened) and returns one gradient per array
input (a single one may be returned bare; None means zeros). If `f` reads
trainable Variables, `grad_fn(*upstreams, variables=None)` is called with
those Variables (in the order `f` first read them) and returns
`(input_grads, variable_grads)`.

Underneath is a `jax.custom_vjp`, so a GradientTape, `jax.grad`, `jax.jit`
and `jax.vmap` all see the same gradient; under a recording tape the whole
function is one recorded op. The backward pass calls `f` again to obtain
`grad_fn` (its residuals are the inputs), so Python side effects in `f` run
once more there. Non-array arguments (Python numbers, strings) are static.
"""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.state import Variable, _state
from loopax.src.tape import recording as tape_lib
from loopax.src.tape.recording import (
    _fill,
    _is_wrapped,
    _split_leaves,
    _suspended,
    _template_key,
    _TrackingScope,
)
from loopax.src.tensor import Tensor, unwrap


def custom_gradient(f=None):
    """Decorator: gives `f` a hand-written gradient (see the module docstring).

    Args:
        f: A function `f(*inputs) -> (outputs, grad_fn)`; `grad_fn(*upstreams)` returns
            one gradient per array input (with `variables=` when `f` reads trainable
            Variables: `(input_grads, variable_grads)`).

    Returns:
        The function with the custom gradient (without `f`: the decorator itself).
    """
    if f is None:
        return custom_gradient
    return _CustomGradient(f)


def _value(x):
    if isinstance(x, Tensor):
        return x._loopax_value
    return x.value if isinstance(x, Variable) else x


def _spec(x):
    dtype = jax.dtypes.canonicalize_dtype(getattr(x, "dtype", None) or np.result_type(x))
    return jax.ShapeDtypeStruct(np.shape(x), dtype)


class _CustomGradient:
    def __init__(self, f):
        functools.update_wrapper(self, f)
        self._f = f
        self._name = getattr(f, "__name__", repr(f))
        self._variables = {}   # call signature -> Variables f reads
        self._cores = {}       # structure -> jax.custom_vjp function

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_wrapped)
        template, positions = _split_leaves(leaves)
        inputs = [leaves[p] for p in positions]
        structure = (treedef, _template_key(template), positions)
        signature = structure + (tuple(_spec(_value(x)) for x in inputs),)
        variables = self._variables.get(signature)
        if variables is None:
            variables = self._variables[signature] = self._discover(
                treedef, template, positions, inputs)
        key = structure + (tuple(map(id, variables)),)
        core = self._cores.get(key)
        if core is None:
            core = self._cores[key] = self._make_core(treedef, template, positions, variables)
        if _state.tapes:
            return tape_lib.record(core, (list(variables), inputs), {})
        return core([v.value for v in variables], [_value(x) for x in inputs])

    # ---- the pieces ------------------------------------------------------
    def _run(self, treedef, template, positions, scope, arrays):
        with _suspended(), scope:
            a, k = _fill(treedef, template, positions, arrays)
            result = self._f(*a, **k)
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError(
                f"custom_gradient function {self._name!r} must return "
                f"`(outputs, grad_fn)`, got {type(result).__name__}.")
        outputs, grad_fn = result
        return jax.tree_util.tree_map(unwrap, outputs, is_leaf=_is_wrapped), grad_fn

    def _discover(self, treedef, template, positions, inputs):
        """The Variables `f` reads, found by tracing it abstractly once."""
        scope = _TrackingScope(())

        def probe(arrays):
            self._run(treedef, template, positions, scope, arrays)
        jax.eval_shape(probe, [_spec(_value(x)) for x in inputs])
        return tuple(scope.unmapped.values())

    def _make_core(self, treedef, template, positions, variables):
        where = f"custom_gradient function {self._name!r}"
        trainable = [v for v in variables if v.trainable]

        def run(variable_values, arrays):
            scope = _TrackingScope(zip(variables, variable_values), strict=where)
            return self._run(treedef, template, positions, scope, arrays)

        @jax.custom_vjp
        def core(variable_values, arrays):
            return run(variable_values, arrays)[0]

        def fwd(variable_values, arrays):
            return run(variable_values, arrays)[0], (variable_values, arrays)

        def bwd(residuals, upstream):
            variable_values, arrays = residuals
            _, grad_fn = run(variable_values, arrays)
            upstreams = jax.tree_util.tree_leaves(upstream)
            with _suspended(), _TrackingScope(zip(variables, variable_values), strict=where):
                if trainable:
                    if not _accepts_variables(grad_fn):
                        raise TypeError(
                            f"{where} reads trainable Variables "
                            f"{[v.path for v in trainable]}, so its grad_fn must accept "
                            "a keyword argument `variables` and return "
                            "(input_grads, variable_grads).")
                    result = grad_fn(*upstreams, variables=list(trainable))
                    if not (isinstance(result, (tuple, list)) and len(result) == 2):
                        raise TypeError(
                            f"{where}: grad_fn(..., variables=...) must return "
                            "(input_grads, variable_grads).")
                    input_grads, variable_grads = result
                else:
                    input_grads, variable_grads = grad_fn(*upstreams), []
            input_cts = _cotangents(input_grads, arrays, f"{where}: grad_fn", "inputs")
            trainable_cts = iter(_cotangents(
                variable_grads, [variable_values[i] for i, v in enumerate(variables)
                                 if v.trainable], f"{where}: grad_fn", "variables"))
            variable_cts = [next(trainable_cts) if v.trainable else jnp.zeros_like(val)
                            for v, val in zip(variables, variable_values)]
            return variable_cts, input_cts

        core.defvjp(fwd, bwd)
        return core


def _accepts_variables(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in params)


def _cotangents(grads, primals, who, what):
    """One cotangent per primal: None -> zeros, cast to the primal's dtype."""
    if len(primals) == 1 and not isinstance(grads, (tuple, list)):
        grads = [grads]
    grads = jax.tree_util.tree_leaves(grads, is_leaf=lambda g: g is None)
    if len(grads) != len(primals):
        raise ValueError(
            f"{who} returned {len(grads)} gradients for the {what}, but there are "
            f"{len(primals)} {what}; return one gradient per {what[:-1]} (None for zero).")
    out = []
    for g, x in zip(grads, primals):
        shape, dtype = np.shape(x), jnp.result_type(x)
        if not jnp.issubdtype(dtype, jnp.inexact):
            out.append(np.zeros(shape, jax.dtypes.float0))
            continue
        g = jnp.zeros(shape, dtype) if g is None else jnp.asarray(unwrap(g), dtype)
        if g.shape != shape:
            raise ValueError(
                f"{who} returned a gradient of shape {g.shape} for one of the {what} "
                f"of shape {shape}; the shapes must match.")
        out.append(g)
    return out
