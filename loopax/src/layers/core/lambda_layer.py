"""`Lambda`: a Python function used as a layer.

A model file never holds code (see `loopax.src.serialization`), so a
Lambda's config names its function instead of storing its bytecode:

- a function registered with `@register_keras_serializable()`: its
  registered name, `{"class_name": "function", "config": "package>name"}`;
- a loopax built-in (`loopax.ops.square`, `loopax.activations.gelu`): its
  name and public module, `{..., "config": "square", "module": "loopax.ops"}`;
- any other function (a `lambda`, a `def` of the script): its name and
  module, for the error message: loading it needs
  `custom_objects={name: function}`.
"""

from __future__ import annotations

import functools
import inspect

import jax
import numpy as np

from loopax.src import activations, serialization
from loopax.src.api_export import export
from loopax.src.layers import symbolic
from loopax.src.layers.layer import Layer, retyped
from loopax.src.ops import core, image, linalg, math, nn
from loopax.src.ops import numpy as ops_numpy


@functools.lru_cache(maxsize=1)
def _ops_tables():
    """{public module: {name: function}} of loopax's ops, as `loopax.ops`
    exports them (a later module's name wins, as its star imports)."""
    top = {}
    for module in (core, linalg, math, nn, ops_numpy):
        top.update({name: getattr(module, name) for name in module.__all__})
    images = {name: getattr(image, name) for name in image.__all__}
    return {"loopax.ops": top, "loopax.ops.image": images}


def builtin_function(module, name):
    """The loopax built-in function `name` of public module `module`
    (`"loopax.ops"`, `"loopax.ops.image"`, `"loopax.activations"`), or None."""
    if not isinstance(name, str):
        return None
    if module == "loopax.activations":
        try:
            fn = activations.deserialize(name)
        except ValueError:
            return None
        return fn if activations.serialize(fn) == name else None
    fn = _ops_tables().get(module, {}).get(name)
    return fn if callable(fn) and not inspect.isclass(fn) else None


def function_config(fn) -> dict:
    """The config entry naming `fn` (see the module docstring); never code."""
    if serialization.is_registered(fn):
        return serialization.serialize(fn)
    name = activations.serialize(fn)
    if isinstance(name, str):
        return {"class_name": "function", "config": name, "module": "loopax.activations"}
    for module, table in _ops_tables().items():
        for name, known in table.items():
            if known is fn:
                return {"class_name": "function", "config": name, "module": module}
    return {"class_name": "function", "config": getattr(fn, "__name__", type(fn).__name__),
            "module": getattr(fn, "__module__", None)}


def load_function(entry, layer_name, what="function", custom_objects=None, owner="Lambda"):
    """The function a `function_config` entry names: from `custom_objects`, a
    `custom_object_scope` or the registry, else (for an entry naming a
    loopax module) the loopax built-in; a ValueError saying how to supply it
    otherwise (naming the `owner` layer class). Python bytecode (Keras's
    `__lambda__`) is refused."""
    where = f"{owner} layer {layer_name!r}"
    if isinstance(entry, dict) and entry.get("class_name") == "__lambda__":
        raise ValueError(
            f"{where}: its {what} is stored as Python bytecode (a Keras `lambda`); loopax "
            "never runs code from a file, whatever safe_mode says. Define the function with "
            "`def`, register it with @loopax.saving.register_keras_serializable() (or pass "
            "custom_objects={name: function}) and save the model again.")
    if not (isinstance(entry, dict) and entry.get("class_name") == "function"
            and isinstance(entry.get("config"), str)):
        raise ValueError(f"{where}: its {what} config {entry!r:.120} does not name a function "
                         "({'class_name': 'function', 'config': name}).")
    name, module = entry["config"], entry.get("module")
    fn = serialization.get_registered_object(name, custom_objects)
    if fn is None and module is not None and module.startswith("loopax."):
        fn = builtin_function(module, name)
    if fn is not None:
        return fn
    origin = f" (from module {module!r})" if module else ""
    if name == "<lambda>":
        raise ValueError(
            f"{where}: its {what} is a Python lambda{origin}, which is saved by name only "
            "(loopax never stores or runs code from a file). Pass the function as "
            "custom_objects={'<lambda>': function} when loading, or define it with `def`, "
            "register it with @loopax.saving.register_keras_serializable() and save again.")
    raise ValueError(
        f"{where}: cannot load its {what} {name!r}{origin}: loopax never loads code from a "
        f"file, so it finds the function by name. Pass custom_objects={{{name!r}: {name}}} to "
        "load_model (or deserialize), or register the function with "
        "@loopax.saving.register_keras_serializable() before saving.")


def _is_shape(value) -> bool:
    return isinstance(value, (tuple, list)) and all(
        d is None or isinstance(d, (int, np.integer)) for d in value)


def _parameter_names(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):   # some builtins have no signature
        return set()
    return {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


@export("loopax.layers.Lambda")
class Lambda(Layer):
    """Wraps a function `function(inputs, **arguments)` as a layer.

    For quick experiments in Sequential and functional models; a `Layer`
    subclass with `get_config` is the portable way to save custom code. The
    functional API infers the output shape by tracing the function on shapes
    (`jax.eval_shape`); `output_shape` overrides it (and is checked against
    it when both are known). `function` receives `mask=` and `training=`
    when it names such parameters.

    Saving never stores code: `get_config` names the function (registered
    name, or loopax built-in), and loading a Lambda whose function is neither
    registered nor passed as `custom_objects={name: function}` raises a
    ValueError saying so.

    Args:
        function: The callable, taking the layer's input as first argument.
        output_shape: The output shape without the batch axis (a tuple, or a list of
            tuples for several outputs), or a callable `f(input_shape) -> shape`
            (batch axis included); None (the default) infers it.
        mask: None (no output mask), a callable `mask(inputs, previous_mask)`, or a
            fixed boolean array, as the output's mask.
        arguments: Keyword arguments passed to `function` on every call (plain values,
            arrays, registered functions or serializable objects, for saving).
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Raises:
        TypeError: `function` (or a callable `output_shape`/`mask`) is not callable,
            or `arguments` is not a dict.
        ValueError: (in the functional API) `output_shape` disagrees with the shape
            the function computes.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments: dict | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda {self.name!r}: `function` must be callable, got "
                            f"{function!r:.80}.")
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError(f"Lambda {self.name!r}: `arguments` must be a dict of keyword "
                            f"arguments for the function, got {type(arguments).__name__}.")
        if _is_shape(output_shape) or (isinstance(output_shape, list)
                                       and all(_is_shape(s) for s in output_shape)):
            output_shape = (tuple(output_shape) if _is_shape(output_shape)
                            else [tuple(s) for s in output_shape])
        elif output_shape is not None and not callable(output_shape):
            raise TypeError(f"Lambda {self.name!r}: `output_shape` must be a shape tuple, a "
                            f"list of them or a callable, got {output_shape!r:.80}.")
        self.function, self._output_shape = function, output_shape
        self.mask, self.arguments = mask, dict(arguments or {})
        self.supports_masking = mask is not None
        names = _parameter_names(function)
        self._fn_takes_mask, self._fn_takes_training = "mask" in names, "training" in names
        self.built = True   # no weights

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_takes_mask:
            kwargs["mask"] = mask
        if self._fn_takes_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        return self.mask(inputs, mask) if callable(self.mask) else self.mask

    def compute_output_shape(self, input_shape):
        """`output_shape` (with the input's batch size first) when given, else the
        shape the function computes."""
        if self._output_shape is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape):
            return self._output_shape(input_shape)
        first = input_shape if _is_shape(input_shape) else jax.tree_util.tree_leaves(
            input_shape, is_leaf=_is_shape)[0]
        batch = first[0] if len(first) else None
        if _is_shape(self._output_shape):
            return (batch,) + tuple(self._output_shape)
        return [(batch,) + tuple(s) for s in self._output_shape]

    def _symbolic_outputs(self, args, kwargs):
        """As any layer, but a given `output_shape` wins (checked against the
        traced shapes), and stands in when the function cannot be traced."""
        try:
            inferred = super()._symbolic_outputs(args, kwargs)
        except Exception as e:
            if self._output_shape is None:
                raise retyped(e, f"{e} (If the function cannot run on shapes alone, give "
                              "the Lambda its `output_shape`.)") from e
            inferred = None
        if self._output_shape is None:
            return inferred
        input_shape = jax.tree_util.tree_map(lambda t: t.shape, args[0],
                                             is_leaf=symbolic.is_symbolic)
        declared = self.compute_output_shape(input_shape)
        shapes = [tuple(declared)] if _is_shape(declared) else [tuple(s) for s in declared]
        if inferred is None:
            outputs = [symbolic.SymbolicTensor(s, self.compute_dtype, name=self.name)
                       for s in shapes]
            return outputs[0] if _is_shape(declared) else outputs
        leaves, treedef = jax.tree_util.tree_flatten(inferred, is_leaf=symbolic.is_symbolic)
        found = [t.shape for t in leaves]
        agree = len(found) == len(shapes) and all(
            len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))
            for a, b in zip(shapes, found))
        if not agree:
            raise ValueError(
                f"Lambda {self.name!r}: output_shape {self._output_shape} gives output shape(s) "
                f"{shapes}, but the function returns {found}. Fix output_shape (it excludes "
                "the batch axis) or leave it None to use the function's shapes.")
        return jax.tree_util.tree_unflatten(treedef, [
            symbolic.SymbolicTensor(tuple(y if x is None else x for x, y in zip(s, t.shape)),
                                    t.dtype, name=self.name) for s, t in zip(shapes, leaves)])

    def get_config(self):
        config = {**super().get_config(), "function": function_config(self.function)}
        if self._output_shape is not None:
            config["output_shape"] = (function_config(self._output_shape)
                                      if callable(self._output_shape) else self._output_shape)
        if self.mask is not None:
            config["mask"] = (function_config(self.mask) if callable(self.mask)
                              else array_config(self.mask))
        config["arguments"] = {key: _argument_config(value)
                               for key, value in self.arguments.items()}
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        name = config.get("name")
        load = functools.partial(load_function, layer_name=name, custom_objects=custom_objects)
        config["function"] = load(config["function"])
        if isinstance(config.get("output_shape"), dict):
            config["output_shape"] = load(config["output_shape"], what="output_shape function")
        if config.get("mask") is not None:
            config["mask"] = _from_config(config["mask"], load, "mask function", custom_objects)
        config["arguments"] = {
            key: _from_config(value, load, f"argument {key!r}", custom_objects)
            for key, value in (config.get("arguments") or {}).items()}
        return cls(**config)


ARRAY_CLASSES = ("__numpy__", "__tensor__")   # Keras's names for saved arrays


def array_config(value) -> dict:
    """An array as JSON, in Keras's form: `{"class_name": "__numpy__",
    "config": {"value": nested lists, "dtype": name}}`."""
    value = np.asarray(value)
    return {"class_name": "__numpy__",
            "config": {"value": value.tolist(), "dtype": str(value.dtype)}}


def load_array(entry, layer_name):
    """The array an `array_config` entry holds (numbers and booleans only)."""
    config = entry.get("config") if isinstance(entry.get("config"), dict) else {}
    try:
        dtype = np.dtype(config.get("dtype"))
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in "biufc":
        raise ValueError(f"Lambda layer {layer_name!r}: a saved array must have a numeric "
                         f"or boolean dtype; got {config.get('dtype')!r}.")
    return np.asarray(config.get("value"), dtype)


def _from_config(value, load, what, custom_objects):
    """A saved mask or argument: a function, an array, an object or a value."""
    if not isinstance(value, dict) or "class_name" not in value:
        return value
    if value["class_name"] in ("function", "__lambda__"):
        return load(value, what=what)
    if value["class_name"] in ARRAY_CLASSES:
        return load_array(value, load.keywords["layer_name"])
    return serialization.deserialize(value, custom_objects)


def _argument_config(value):
    """An entry of `arguments` as JSON: arrays in Keras's form, functions by name."""
    if isinstance(value, (np.ndarray, jax.Array)) and np.ndim(value) > 0:
        return array_config(value)
    if callable(value) and not inspect.isclass(value) and not hasattr(value, "get_config"):
        return function_config(value)
    return serialization.serialize(value)
