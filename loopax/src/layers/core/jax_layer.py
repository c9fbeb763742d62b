"""`JaxLayer` and `FlaxLayer`: a pure-JAX model function or a Flax linen module
as a layer, trained by `fit()` like any other (Keras's `keras.layers.JaxLayer`
and `FlaxLayer`).

The function's `params` become trainable weights and its `state` non-trainable
ones, one `Variable` per array leaf, in `jax.tree_util` flattening order (the
order Keras uses), so the model file holds them. The function itself is code:
a model file only names it, and loading needs it registered
(`@loopax.saving.register_keras_serializable()`) or passed as
`custom_objects`, as for `Lambda`.
"""

from __future__ import annotations

import dataclasses
import inspect

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import random, serialization
from loopax.src.api_export import export
from loopax.src.layers.core.lambda_layer import function_config, load_function
from loopax.src.layers.layer import Layer
from loopax.src.state import Variable, tracing
from loopax.src.tensor import Tensor, unwrap

_CALL_ARGUMENTS = ("params", "state", "rng", "inputs", "training")
_INIT_ARGUMENTS = ("rng", "inputs", "training")


def _argument_names(fn, what, allowed, owner):
    """The names of `fn`'s arguments, in order; a ValueError unless they are a
    subset of `allowed` that includes `inputs` (arguments are passed by name)."""
    if not callable(fn):
        raise TypeError(f"{owner}: `{what}` must be a function, got {type(fn).__name__}.")
    names = list(inspect.signature(fn).parameters)
    unknown = [name for name in names if name not in allowed]
    if unknown or "inputs" not in names:
        problems = ([] if "inputs" in names else ["has no argument named `inputs`"]) + (
            [f"has argument(s) {unknown} it cannot be given"] if unknown else [])
        problem = " and ".join(problems)
        raise ValueError(
            f"{owner}: `{what}` {problem}; its arguments are {names}. {owner} passes "
            f"arguments by name, from {list(allowed)}, and `inputs` is required. Wrap the "
            f"function, e.g. `def {what}({', '.join(a for a in allowed if a != 'training')})"
            f": return my_fn(...)`.")
    return names


def _is_array_leaf(value):
    return isinstance(value, (jax.Array, np.ndarray, np.generic, bool, int, float))


def _leaf_name(path):
    """A weight name from a pytree key path, e.g. `params_Dense_0_kernel`."""
    parts = []
    for key in path:
        for attribute in ("key", "idx", "name"):
            if hasattr(key, attribute):
                parts.append(str(getattr(key, attribute)))
                break
        else:
            parts.append(str(key))
    return "_".join(parts).replace("/", "_") or "variable"


def _values(tree):
    """`tree` with each Variable replaced by its value (other leaves kept)."""
    return jax.tree_util.tree_map(lambda v: v.value if isinstance(v, Variable) else v, tree,
                                  is_leaf=lambda v: isinstance(v, Variable))


def _ones_like_shapes(input_shape):
    """Arrays of ones with the shapes of `input_shape` (a shape, or a list/tuple/dict
    of them), None sizes as 1: the sample inputs `init_fn` is called with."""
    if isinstance(input_shape, dict):
        return {key: _ones_like_shapes(value) for key, value in input_shape.items()}
    if isinstance(input_shape, (list, tuple)) and all(
            d is None or isinstance(d, (int, np.integer)) for d in input_shape):
        return jnp.ones([1 if d is None else int(d) for d in input_shape])
    return type(input_shape)(_ones_like_shapes(shape) for shape in input_shape)


@export("loopax.layers.JaxLayer")
class JaxLayer(Layer):
    """A layer running a pure-JAX model function `call_fn`.

    `call_fn` takes, by name, `inputs` and any of `params` (trainable pytree),
    `state` (non-trainable pytree), `rng` (a raw `uint32[2]` key in training,
    None otherwise) and `training` (a bool). With `state` it returns
    `(outputs, new_state)`, `new_state` having the structure of `state`;
    otherwise the outputs.

    `init_fn(rng, inputs[, training])` creates the initial `params` (or
    `(params, state)` when `call_fn` takes `state`) at build time from sample
    inputs of ones with the input's shape (None axes as 1); or pass `params` /
    `state` directly.

    Args:
        call_fn: The model function (see above).
        init_fn: The function creating `params` (and `state`), or None when they are
            given.
        params: The initial trainable pytree, or None to call `init_fn`.
        state: The initial non-trainable pytree, or None.
        seed: The int seed of the `rng` passed to `call_fn`, or None.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `call_fn`/`init_fn` have other arguments than these, or `call_fn`
            takes `params`/`state` and neither `init_fn`, `params` nor `state` is given.
    """

    # Plain pytrees of the weights, which `add_weight` already tracks.
    _untracked_attributes = Layer._untracked_attributes | {"params", "state"}

    def __init__(self, call_fn, init_fn=None, params=None, state=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.call_fn, self.init_fn, self.seed = call_fn, init_fn, seed
        self._call_arguments = _argument_names(call_fn, "call_fn", _CALL_ARGUMENTS, owner)
        self._init_arguments = (None if init_fn is None else
                                _argument_names(init_fn, "init_fn", _INIT_ARGUMENTS, owner))
        if init_fn is None and params is None and state is None and self._needs_weights():
            raise ValueError(
                f"{owner} {self.name!r}: `call_fn` takes `params` or `state`, so pass "
                "`init_fn` to create them at build time, or pass `params=`/`state=`.")
        self.seed_generator = None
        if "rng" in self._call_arguments:
            self.seed_generator = random.SeedGenerator(seed)
        self.params = self.state = None
        if params is not None or state is not None:
            self._create_weights(params, state)
            self.built = True

    def _needs_weights(self):
        return "params" in self._call_arguments or "state" in self._call_arguments

    def _create_weights(self, params, state):
        self.params = self._variables_from(params, trainable=True)
        self.state = self._variables_from(state, trainable=False)

    def _variables_from(self, tree, trainable):
        """`tree` with a new weight in place of each array or number leaf (floats in the
        layer's dtype, others in their own); other leaves (strings...) stay as they are."""
        def create(path, value):
            if not _is_array_leaf(value):
                return value
            value = jnp.asarray(value)
            dtype = None if jnp.issubdtype(value.dtype, jnp.floating) else value.dtype
            return self.add_weight(value.shape, lambda shape, dtype: jnp.asarray(value, dtype),
                                   dtype=dtype, trainable=trainable, name=_leaf_name(path))
        return jax.tree_util.tree_map_with_path(create, tree)

    def build(self, input_shape):
        if self.params is None and self.state is None and self._needs_weights():
            self._initialize_weights(input_shape)
        self.built = True

    def _initialize_weights(self, input_shape):
        if tracing():
            raise ValueError(
                f"{type(self).__name__} {self.name!r} cannot be built while JAX traces a "
                "function (its init_fn must run on real arrays). Build it first: call it "
                "once on an example batch, or call `layer.build(input_shape)`.")
        given = {"rng": self._init_rng, "inputs": lambda: _ones_like_shapes(input_shape),
                 "training": lambda: True}
        result = self.init_fn(*(given[name]() for name in self._init_arguments))
        if "state" in self._call_arguments:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise ValueError(
                    f"{type(self).__name__} {self.name!r}: `call_fn` takes `state`, so "
                    "`init_fn` must return `(params, state)`; it returned a "
                    f"{type(result).__name__}.")
            self._create_weights(*result)
        else:
            self._create_weights(result, None)

    def _init_rng(self):
        """The `rng` given to `init_fn`: a raw key drawn from the global generator."""
        return jax.random.key_data(random.draw_key(None))

    def _call_rng(self, training):
        """The `rng` given to `call_fn`: a fresh raw key in training, None otherwise."""
        return jax.random.key_data(self.seed_generator.next()) if training else None

    def call(self, inputs, training=False):
        training = bool(training) if training is None or isinstance(training, bool) else training
        given = {"params": lambda: _values(self.params), "state": lambda: _values(self.state),
                 "rng": lambda: self._call_rng(training),
                 "inputs": lambda: jax.tree_util.tree_map(
                     unwrap, inputs, is_leaf=lambda x: isinstance(x, (Tensor, Variable))),
                 "training": lambda: training}
        result = self.call_fn(*(given[name]() for name in self._call_arguments))
        if "state" not in self._call_arguments:
            return result
        outputs, new_state = result
        self._assign_state(new_state)
        return outputs

    def _assign_state(self, new_state):
        is_variable = lambda v: isinstance(v, Variable)
        held, held_tree = jax.tree_util.tree_flatten(self.state, is_leaf=is_variable)
        new, new_tree = jax.tree_util.tree_flatten(new_state)
        if held_tree != new_tree:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: `call_fn` returned a state of "
                f"structure {new_tree}, but the layer's state has structure {held_tree}. "
                "Return `(outputs, new_state)` with new_state shaped like the initial state.")
        for variable, value in zip(held, new):
            if isinstance(variable, Variable):
                variable.assign(value)

    def get_config(self):
        return {**super().get_config(), "call_fn": function_config(self.call_fn),
                "init_fn": None if self.init_fn is None else function_config(self.init_fn),
                "seed": self.seed}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        for key in ("call_fn", "init_fn"):
            if config.get(key) is not None:
                config[key] = load_function(config[key], config.get("name"), key,
                                            custom_objects, owner=cls.__name__)
        if config.get("init_fn") is None:
            raise ValueError(
                f"{cls.__name__} {config.get('name')!r} was made from `params`/`state` without "
                "an `init_fn`, so its config cannot re-create its weights (as in Keras). Give it "
                "an `init_fn` (registered with @loopax.saving.register_keras_serializable()) "
                "before saving, or re-create the layer yourself and call `load_weights`.")
        return cls(**config)


@export("loopax.layers.FlaxLayer")
class FlaxLayer(JaxLayer):
    """A layer running a Flax linen module (`flax.linen.Module`).

    The module's `"params"` collection becomes trainable weights; every other
    collection (`"batch_stats"`, ...) non-trainable ones, updated by each call
    (applied with `mutable=DenyList(["params"])`). A `training` argument of the
    method gets the layer's training flag; in training, a fresh `"dropout"` rng
    is passed. Flax NNX modules are not supported (nor by Keras 3.15).

    Args:
        module: A `flax.linen.Module` instance.
        method: The method to run: None (`__call__`), a method's name, or a
            function `f(module, inputs[, training])`.
        variables: The module's variables as `module.init` returns them, or None to
            call `module.init` at build time.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Saving: the model file holds the weights and names the module's class with
    its config (`module.get_config()` where defined, else its dataclass fields);
    loading needs the class registered or passed as `custom_objects`.
    """

    _untracked_attributes = JaxLayer._untracked_attributes | {"module", "method"}

    def __init__(self, module, method=None, variables=None, **kwargs):
        from flax import linen

        if not isinstance(module, linen.Module):
            raise TypeError(f"FlaxLayer: `module` must be a flax.linen.Module instance, got "
                            f"{type(module).__name__}. (Flax NNX modules are not supported.)")
        self.module = module
        self.method = getattr(module, method) if isinstance(method, str) else method
        self._mutable = linen.DenyList(["params"])
        takes_training = "training" in inspect.signature(
            self.method or module.__call__).parameters
        call_fn = self._apply_with_training if takes_training else self._apply
        init_fn = self._init_with_training if takes_training else self._init
        params, state = _split_variables(variables)
        super().__init__(call_fn, init_fn, params=params, state=state, **kwargs)

    def _apply(self, params, state, rng, inputs):
        return self.module.apply({**params, **state}, inputs, rngs=rng, method=self.method,
                                 mutable=self._mutable)

    def _apply_with_training(self, params, state, rng, inputs, training):
        return self.module.apply({**params, **state}, inputs, rngs=rng, method=self.method,
                                 mutable=self._mutable, training=training)

    def _init(self, rng, inputs):
        return _split_variables(self.module.init(rng, inputs, method=self.method))

    def _init_with_training(self, rng, inputs, training):
        return _split_variables(self.module.init(rng, inputs, method=self.method,
                                                 training=training))

    def _init_rng(self):
        draw = super()._init_rng
        return {"params": draw(), "dropout": draw()}

    def _call_rng(self, training):
        return {"dropout": super()._call_rng(training)} if training else {}

    def get_config(self):
        config = super().get_config()
        for key in ("call_fn", "init_fn"):   # made from the module
            config.pop(key)
        method = self.method
        if getattr(method, "__self__", None) is self.module:
            method = method.__name__
        elif method is not None:
            method = function_config(method)
        return {**config, "module": _module_config(self.module), "method": method}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["module"] = _module_from_config(config["module"], config.get("name"),
                                               custom_objects)
        if isinstance(config.get("method"), dict):
            config["method"] = load_function(config["method"], config.get("name"), "method",
                                             custom_objects, owner=cls.__name__)
        return cls(**config)


def _split_variables(variables):
    """Flax variables -> (params, state): `{"params": ...}` and the other collections."""
    if variables is None:
        return None, None
    variables = dict(variables)
    params = {"params": variables.pop("params")} if "params" in variables else {}
    return params, variables


def _module_config(module):
    """`serialize()`'s entry for a Flax module: its `get_config()` if it has one, else
    its dataclass fields (which must be plain JSON values)."""
    if hasattr(module, "get_config"):
        return serialization.serialize(module)
    fields = {f.name: getattr(module, f.name) for f in dataclasses.fields(module)
              if f.init and f.name not in ("parent", "name")}
    entry = {"class_name": type(module).__name__, "config": serialization.serialize(fields)}
    if serialization.is_registered(type(module)):
        entry["registered_name"] = serialization.get_registered_name(type(module))
    return entry


def _module_from_config(entry, layer_name, custom_objects):
    names = [entry.get("registered_name"), entry.get("class_name")]
    for name in filter(None, names):
        cls = serialization.get_registered_object(name, custom_objects)
        if cls is not None:
            break
    else:
        raise ValueError(
            f"FlaxLayer {layer_name!r}: cannot load its Flax module {entry.get('class_name')!r}: "
            "a model file holds no code. Register the module class (it needs get_config) with "
            "@loopax.saving.register_keras_serializable() before saving, or pass "
            f"custom_objects={{{entry.get('class_name')!r}: {entry.get('class_name')}}} when "
            "loading.")
    config = entry.get("config") or {}
    return cls.from_config(config) if hasattr(cls, "from_config") else cls(**config)
