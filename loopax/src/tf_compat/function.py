"""`tf.function` with `input_signature`, `tf.TensorSpec` and `tf.GradientTape`
whose results are Tensors.

`tf.function` is `loopax.function` (one compiled program per input shape,
Variables carried in and out) plus TensorFlow's binding of an
`input_signature`: each call's arguments are checked against the
`TensorSpec`s (a mismatch raises TypeError, as TensorFlow), NumPy arrays and
Python values are converted to the spec's dtype, and outputs come back as
Tensors. A `None` dimension accepts any size; XLA still compiles once per
concrete shape.
"""

from __future__ import annotations

import functools
import inspect
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.data.strings import StringTensor
from loopax.src.function import Function
from loopax.src.state import Variable
from loopax.src.tape import GradientTape as _LoopaxTape
from loopax.src.tensor import Tensor, TensorShape
from loopax.src.tf_compat import dtypes
from loopax.src.tf_compat.errors import errors
from loopax.src.tf_compat.tensors import HostValueNeeded, as_tensors, document_module


class _UnknownRank(TensorShape):
    """`TensorShape(None)` of a `TensorSpec(None, ...)`: any rank. A tf.function
    binds any value to it; tf.saved_model.save takes the rank from the shapes the
    function was called with (StableHLO needs it)."""

    rank = None
    ndims = None

    def __new__(cls):
        return tuple.__new__(cls, ())

    def as_list(self):
        raise ValueError("as_list() is not defined on an unknown TensorShape.")

    def is_compatible_with(self, other):
        return True

    def __repr__(self):
        return "TensorShape(None)"


class TensorSpec:
    """The shape (None: any size) and dtype a `tf.function` argument must have.

    Args:
        shape: a list of ints or None.
        dtype: the dtype (default float32).
        name: an optional name (for messages).
    """

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self.shape = _UnknownRank() if shape is None else TensorShape(shape)
        self.dtype = np.dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        dtype = dtypes.string if isinstance(tensor, StringTensor) else jnp.result_type(tensor)
        return cls(np.shape(tensor), dtype, name)

    def is_compatible_with(self, value):
        """Whether a tensor (or spec) `value` has a compatible shape and the same dtype."""
        value_dtype = value.dtype if isinstance(value, TensorSpec) else jnp.result_type(value)
        return (self.shape.is_compatible_with(value.shape)
                and np.dtype(value_dtype) == dtypes.storage_dtype(self.dtype))

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and tuple(self.shape) == tuple(other.shape)
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((tuple(self.shape), self.dtype))

    def __repr__(self):
        dtype = "string" if self.dtype == object else self.dtype.name
        shape = "<unknown>" if isinstance(self.shape, _UnknownRank) else tuple(self.shape)
        return f"TensorSpec(shape={shape}, dtype=tf.{dtype}, name={self.name!r})"


def _spec_of(value):
    dtype = value.dtype if hasattr(value, "dtype") else jnp.result_type(value)
    return f"TensorSpec(shape={tuple(np.shape(value))}, dtype=tf.{np.dtype(dtype).name})"


def _bind_to_spec(value, spec, where):
    """`value` checked against (and, for NumPy or Python values, converted to)
    `spec`; raises TypeError as TensorFlow's binding does."""
    if isinstance(spec, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            raise TypeError(f"Binding inputs to tf.function failed: {where} must be a "
                            f"sequence of {len(spec)} values matching {spec}.")
        return type(value)(_bind_to_spec(v, s, f"{where}[{i}]")
                           for i, (v, s) in enumerate(zip(value, spec)))
    if isinstance(spec, dict):
        return {k: _bind_to_spec(value[k], s, f"{where}[{k!r}]") for k, s in spec.items()}
    if spec.dtype == dtypes.string:
        return _bind_text(value, spec, where)
    tensor_like = isinstance(value, (Tensor, Variable, jax.Array))
    if not tensor_like:
        array = np.asarray(value)
        if np.issubdtype(array.dtype, np.floating) and np.issubdtype(spec.dtype, np.integer):
            raise TypeError(
                f"Binding inputs to tf.function failed: {where} holds floats {array.dtype} "
                f"but the input_signature asks for {spec!r}; cast it first "
                "(np.asarray(x).astype(...) or tf.cast) or change the input_signature.")
        value = jnp.asarray(array, dtype=spec.dtype)
    if not spec.is_compatible_with(value):
        raise TypeError(
            f"Binding inputs to tf.function failed due to `Can not cast {_spec_of(value)} to "
            f"{spec!r}` ({where}). Pass a value of that dtype and a compatible shape "
            f"(tf.cast converts dtypes), or change the input_signature.")
    return value


def _bind_text(value, spec, where):
    """`value` as a string tensor of `spec`'s shape (strings stay on the host)."""
    if not isinstance(value, StringTensor):
        try:
            value = StringTensor(value)
        except TypeError:
            raise TypeError(
                f"Binding inputs to tf.function failed: {where} must be strings for "
                f"{spec!r}; got {type(value).__name__}. Convert numbers with "
                "tf.strings.as_string, or change the input_signature.") from None
    if not spec.shape.is_compatible_with(value.shape):
        raise TypeError(f"Binding inputs to tf.function failed: {where} has shape "
                        f"{tuple(value.shape)}, not compatible with {spec!r}.")
    return value


def _bind_signature(signature, python_signature, name, args, kwargs):
    try:
        bound = python_signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"Binding inputs to tf.function {name!r} failed due to `{e}`.") from None
    names = list(bound.arguments)
    if len(names) > len(signature):
        raise TypeError(
            f"Binding inputs to tf.function {name!r} failed: it was called with "
            f"{len(names)} arguments ({', '.join(names)}) but its input_signature has "
            f"{len(signature)} TensorSpecs.")
    for arg_name, spec in zip(names, signature):
        bound.arguments[arg_name] = _bind_to_spec(bound.arguments[arg_name], spec, arg_name)
    return bound.args, bound.kwargs


# ---- the text of traced signatures (`pretty_printed_concrete_signatures`) ------------

_GRAPH_NAMES = ("graph", "function_def", "captured_inputs", "inputs", "outputs",
                "add_to_graph", "add_gradient_functions_to_graph", "as_graph_def",
                "get_operations", "variables_in_graph", "experimental_get_compiler_ir")
_NO_GRAPH = ("loopax compiles a tf.function with XLA (through jax.jit) and builds no "
             "TensorFlow graph. To see what it computes, print the jaxpr: "
             "`jax.make_jaxpr(f.python_function)(*args)`, or the compiled program: "
             "`jax.jit(f.python_function).lower(*args).as_text()` (StableHLO); "
             "`f.experimental_get_tracing_count()` counts the traces.")


def _graph_error(owner, name):
    return AttributeError(f"{owner}.{name} is a TensorFlow graph internal, which loopax "
                          f"does not have: {_NO_GRAPH}")


def _type_text(value):
    """TensorFlow's text for the type of one argument or result."""
    if isinstance(value, TensorSpec):
        return repr(value)
    if isinstance(value, (Tensor, Variable, jax.Array, np.ndarray)):
        return repr(TensorSpec.from_tensor(value))
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return f"Literal[{value!r}]"
    if isinstance(value, list):
        return f"List[{', '.join(_type_text(v) for v in value)}]"
    if isinstance(value, tuple):
        return f"Tuple[{', '.join(_type_text(v) for v in value)}]"
    if isinstance(value, dict):
        return "Dict[" + ", ".join(f"[Literal[{k!r}], {_type_text(v)}]"
                                   for k, v in value.items()) + "]"
    return type(value).__name__


def _signature_text(parameters, output):
    """`parameters`: (name, kind, value) triples; `output`: the result (or a
    placeholder when the function was not called yet)."""
    lines = ["Input Parameters:"]
    lines += [f"  {name} ({kind}): {_type_text(value)}" for name, kind, value in parameters]
    output = output if isinstance(output, _NotTraced) else _type_text(output)
    lines += ["Output Type:", f"  {output}", "Captures:", "  None"]
    return "\n".join(lines)


class _NotTraced(str):
    """The output text of a concrete function not called yet (loopax traces on the
    first call)."""


_NOT_TRACED = _NotTraced("<not traced yet: loopax traces on the first call>")


def _parameters(signature, args, kwargs):
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return [(f"arg{i}", "POSITIONAL_ONLY", v) for i, v in enumerate(args)]
    kinds = {p.name: p.kind.name for p in signature.parameters.values()}
    return [(name, kinds[name], value) for name, value in bound.arguments.items()]


class TFFunction:
    """A `loopax.function` with TensorFlow's `input_signature` binding and
    Tensor outputs; see the module docstring.

    Args:
        compiled: the `loopax.Function` (or, for a method, the instance's bound one).
        python_function: the decorated Python function.
        input_signature: a list of TensorSpecs (nested lists/dicts allowed) or None.
        bound_to: the instance, for a decorated method (its `self` is not in the signature).
    """

    def __init__(self, compiled, python_function, input_signature=None, bound_to=None):
        self._compiled = compiled
        self._python_function = python_function
        self._input_signature = None if input_signature is None else list(input_signature)
        self._name = getattr(compiled, "_name", getattr(python_function, "__name__", "function"))
        target = python_function if bound_to is None else python_function.__get__(bound_to)
        self._signature = inspect.signature(target)
        self._methods = weakref.WeakKeyDictionary()
        self._bound_to = bound_to
        self._traced = []   # the text of each traced signature
        functools.update_wrapper(self, python_function)

    @property
    def input_signature(self):
        return self._input_signature

    @property
    def python_function(self):
        return self._python_function

    def __get__(self, obj, objtype=None):
        """A decorated method: one compiled function per instance, as TensorFlow."""
        if obj is None:
            return self
        method = self._methods.get(obj)
        if method is None:
            method = self._methods[obj] = TFFunction(
                self._compiled.__get__(obj), self._python_function, self._input_signature,
                bound_to=obj)
        return method

    def __call__(self, *args, **kwargs):
        if self._input_signature is not None:
            args, kwargs = _bind_signature(self._input_signature, self._signature, self._name,
                                           args, kwargs)
        traces = self._compiled.experimental_get_tracing_count()
        try:
            out = as_tensors(self._compiled(*args, **kwargs))
        except HostValueNeeded as e:
            if not self._compiled.jit_compile:
                raise
            self._run_as_python(e)
            out = as_tensors(self._compiled(*args, **kwargs))
        if self._compiled.experimental_get_tracing_count() != traces:
            self._record(args, kwargs, out)
        return out

    def _record(self, args, kwargs, out):
        if self._input_signature is not None:
            names = list(self._signature.parameters)
            parameters = [(n, "POSITIONAL_OR_KEYWORD", spec)
                          for n, spec in zip(names, self._input_signature)]
        else:
            parameters = _parameters(self._signature, args, kwargs)
        text = _signature_text(parameters, out)
        if text not in self._traced:
            self._traced.append(text)

    def pretty_printed_concrete_signatures(self, verbose=True):
        """The signature each trace was made for, as TensorFlow prints them: input
        types, output type, captures (None: loopax passes Variables in and out)."""
        return "\n\n".join(self._traced)

    def __getattr__(self, name):
        if name in _GRAPH_NAMES:
            raise _graph_error("tf.function", name)
        raise AttributeError(f"'Function' object has no attribute {name!r}")

    def _run_as_python(self, reason):
        """From now on, runs the function as Python (`jit_compile=False`): it makes
        strings from values it computes, and strings live on the host."""
        op = str(reason).split(":", 1)[0]
        warnings.warn(f"tf.function {self._name!r} makes strings from values it computes "
                      f"({op}); strings live on the host (XLA computes on numbers only), so "
                      f"it runs as Python from now on, as with jit_compile=False.",
                      stacklevel=3)
        self._compiled.jit_compile = False

    def experimental_get_tracing_count(self):
        return self._compiled.experimental_get_tracing_count()

    def get_concrete_function(self, *args, **kwargs):
        """This function for the given TensorSpecs (its input_signature, e.g. for
        `tf.saved_model.save(..., signatures=...)`); given arrays, or nothing, this
        function itself (XLA compiles per shape on the first call)."""
        specs = list(args) + list(kwargs.values())
        if specs and all(isinstance(s, TensorSpec) for s in specs) and not kwargs:
            return TFFunction(self._compiled, self._python_function, specs,
                              bound_to=self._bound_to)
        if not specs:
            return self
        return ConcreteFunction(self, args, kwargs)

    def __repr__(self):
        return f"<loopax.tf.function {self._name}>"


class ConcreteFunction:
    """`f.get_concrete_function(...)` given values as well as TensorSpecs (or tensors):
    the values are fixed, as TensorFlow's tracing bakes them in; the function is
    called with the remaining (tensor) arguments only.

    Args:
        function: the `TFFunction`.
        args, kwargs: the arguments of `get_concrete_function`.
    """

    def __init__(self, function, args, kwargs):
        self._function = function
        try:
            bound = function._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{function._name}.get_concrete_function: {e}") from None
        self._fixed = dict(bound.arguments)
        self._inputs = [name for name, value in bound.arguments.items()
                        if isinstance(value, TensorSpec) or _is_tensor_like(value)]
        self.input_signature = [
            value if isinstance(value, TensorSpec) else TensorSpec.from_tensor(value, name)
            for name, value in bound.arguments.items() if name in self._inputs]
        kinds = {p.name: p.kind.name for p in function._signature.parameters.values()}
        specs = {name: value if isinstance(value, TensorSpec) else TensorSpec.from_tensor(value)
                 for name, value in bound.arguments.items() if name in self._inputs}
        self._parameters = [(name, kinds[name], specs[name] if name in specs else value)
                            for name, value in bound.arguments.items()]
        self._output = _NOT_TRACED

    def __call__(self, *args, **kwargs):
        if len(args) > len(self._inputs):
            raise TypeError(f"{self._function._name}: this concrete function takes "
                            f"{len(self._inputs)} tensor arguments ({', '.join(self._inputs)}); "
                            f"got {len(args)}.")
        given = dict(zip(self._inputs, args))
        for name, value in kwargs.items():
            if name not in self._inputs or name in given:
                raise TypeError(
                    f"{self._function._name}: this concrete function takes only "
                    f"{', '.join(self._inputs)} (the other arguments were fixed when it was "
                    f"made); got an unexpected argument {name!r}.")
            given[name] = value
        missing = [n for n in self._inputs if n not in given]
        if missing:
            raise TypeError(f"{self._function._name}: missing tensor argument(s) "
                            f"{', '.join(missing)}.")
        for (name, value), spec in zip(given.items(), self.input_signature):
            self._check_dtype(name, value, spec)
        arguments = dict(self._fixed, **given)
        bound = inspect.BoundArguments(self._function._signature, arguments)
        out = self._function(*bound.args, **bound.kwargs)
        if self._output is _NOT_TRACED:
            self._output = out
        return out

    def _check_dtype(self, name, value, spec):
        """A tensor of another dtype than the trace's raises InvalidArgumentError, as
        TensorFlow's concrete functions do (they never convert)."""
        if not _is_tensor_like(value) and not isinstance(value, StringTensor):
            return
        is_text = isinstance(value, StringTensor)
        if is_text == (spec.dtype == dtypes.string) and (
                is_text or np.dtype(jnp.result_type(value)) == dtypes.storage_dtype(spec.dtype)):
            return
        got = "string" if is_text else np.dtype(jnp.result_type(value)).name
        want = "string" if spec.dtype == dtypes.string else spec.dtype.name
        raise errors.InvalidArgumentError(
            f"{self._function._name}: argument {name!r} of this concrete function was "
            f"traced as a {want} tensor but is a {got} tensor; call the tf.function "
            f"itself (it traces again for new dtypes) or cast the argument.")

    @property
    def function_type(self):
        """The signature as TensorFlow's FunctionType prints it:
        `(a: TensorSpec(...)) -> TensorSpec(...)` (the output once called)."""
        inputs = ", ".join(f"{name}: {_type_text(value)}" for name, _, value in self._parameters)
        output = (self._output if isinstance(self._output, _NotTraced)
                  else _type_text(self._output))
        return f"({inputs}) -> {output}"

    @property
    def inference_fn(self):
        """This function itself (TensorFlow's traced AtomicFunction; loopax's
        compiled program is called the same way)."""
        return self

    @property
    def structured_input_signature(self):
        """(args, kwargs) of TensorSpecs and fixed values, as TensorFlow's."""
        return (tuple(v for n, k, v in self._parameters if k != "KEYWORD_ONLY"),
                {n: v for n, k, v in self._parameters if k == "KEYWORD_ONLY"})

    def pretty_printed_signature(self, verbose=True):
        """Input types, output type and captures, as TensorFlow prints them."""
        return _signature_text(self._parameters, self._output)

    def __getattr__(self, name):
        if name in _GRAPH_NAMES:
            raise _graph_error("ConcreteFunction", name)
        raise AttributeError(f"'ConcreteFunction' object has no attribute {name!r}")

    def __repr__(self):
        return f"ConcreteFunction {self.pretty_printed_signature()}"


def _is_tensor_like(value):
    return isinstance(value, (Tensor, Variable, jax.Array, np.ndarray))


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None, name=None):
    """`tf.function`: compiles `func` (`loopax.function`), honouring `input_signature`.

    `jit_compile=False` runs eagerly, as `tf.config.run_functions_eagerly(True)`;
    None (TensorFlow's default) compiles with XLA.
    """
    def wrap(fn):
        compiled = Function(fn, jit_compile=jit_compile is not False,
                            reduce_retracing=reduce_retracing, name=name,
                            autograph=bool(autograph))
        return TFFunction(compiled, fn, input_signature)
    return wrap if func is None else wrap(func)


class GradientTape(_LoopaxTape):
    """`loopax.GradientTape` whose gradients and jacobians are Tensors (`.numpy()`).

    Args:
        persistent: Whether `gradient()` may be called more than once.
        watch_accessed_variables: Whether trainable Variables read inside are
            watched automatically.
    """

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        return as_tensors(super().gradient(target, sources, output_gradients,
                                           unconnected_gradients))

    def jacobian(self, target, sources, unconnected_gradients="none", *args, **kwargs):
        return as_tensors(super().jacobian(target, sources, unconnected_gradients,
                                           *args, **kwargs))

    def batch_jacobian(self, target, source, unconnected_gradients="none", *args, **kwargs):
        return as_tensors(super().batch_jacobian(target, source, unconnected_gradients,
                                                 *args, **kwargs))


document_module(globals())
