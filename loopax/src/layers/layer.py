"""`Layer`: the base of every layer and model.

A layer creates its weights in `build(input_shape)` (called once, on the
first call, with the shape of the first input) and computes in
`call(inputs, ...)`. Calling a layer:

- on symbolic tensors (from `loopax.Input`) records a graph node for the
  functional API;
- on arrays, Variables or Tensors computes eagerly, under `jax.jit`, under a
  `GradientTape` or inside a stateless call alike.

`training` propagates: a model called with `training=True` passes it to every
layer whose `call` takes a `training` argument, unless the caller of that
layer passed one explicitly.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import threading
import weakref
from typing import Any, Callable, MutableMapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import (
    constraints,
    dtypes,
    initializers,
    random,
    regularizers,
    remat,
    serialization,
    tape,
)
from loopax.src.api_export import export
from loopax.src.array_types import ArrayLike, DTypeLike, Shape
from loopax.src.distribution.distributions import distribution
from loopax.src.distribution.placement import distribute_tensor
from loopax.src.layers import symbolic
from loopax.src.mixed_precision import policies as dtype_policies
from loopax.src.module import Module, _snake_case, track_created
from loopax.src.naming import current_path, name_scope, unique_name
from loopax.src.quantizers import quantization_config
from loopax.src.state import (
    StateScope,
    Variable,
    _state,
    active_scope,
    check_values_match,
    is_tracer,
    notify_built,
    pure,
    tracing,
)
from loopax.src.tensor import eager_tensors, op
from loopax.src.utils import memory_utils


class _CallContext(threading.local):
    def __init__(self):
        self.stack = []   # one entry per active outermost call: {"training": ...}


_ctx = _CallContext()
_holding_losses: weakref.WeakSet = weakref.WeakSet()   # layers keeping eager add_loss values


class LossList(list):
    """The list of losses a stateless call returns; `jnp.sum(losses)` works on it
    (JAX refuses plain lists), as the stateless-loop tutorial writes."""

    def __jax_array__(self):
        return jnp.stack([jnp.asarray(x) for x in self]) if self else jnp.zeros((0,))


jax.tree_util.register_pytree_node(
    LossList, lambda l: (list(l), None), lambda _, children: LossList(children))


@export("loopax.layers.InputSpec")
class InputSpec:
    """What a layer accepts, checked on every call.

    A mismatch raises a ValueError that names the layer and both shapes.

    Args:
        ndim: The exact rank, or None.
        min_ndim: The smallest rank, or None.
        max_ndim: The largest rank, or None.
        axes: Fixed sizes of some axes, `{axis: size}` (e.g. `{-1: 784}`); a None size
            is not checked.
        dtype: The expected dtype; recorded for Keras compatibility, not checked.
    """

    def __init__(self, ndim: int | None = None, min_ndim: int | None = None,
                 max_ndim: int | None = None, axes: dict[int, int | None] | None = None,
                 dtype: DTypeLike = None):
        self.ndim, self.min_ndim, self.max_ndim = ndim, min_ndim, max_ndim
        self.axes = dict(axes or {})
        self.dtype = dtype

    def check(self, layer: Layer, shape: Sequence[int | None]) -> None:
        """Raises unless an input of shape `shape` fits this spec.

        Args:
            layer: The layer being called (named in the error).
            shape: The input's shape; None sizes are not checked.

        Raises:
            ValueError: the rank or a fixed axis size does not match.
        """
        shape = tuple(shape)
        rank = len(shape)
        expect = None
        if self.ndim is not None and rank != self.ndim:
            expect = f"rank {self.ndim}"
        elif self.min_ndim is not None and rank < self.min_ndim:
            expect = f"rank >= {self.min_ndim}"
        elif self.max_ndim is not None and rank > self.max_ndim:
            expect = f"rank <= {self.max_ndim}"
        else:
            for axis, size in self.axes.items():
                if size is None:
                    continue
                if -rank <= axis < rank and shape[axis] is not None and shape[axis] != size:
                    expect = f"size {size} on axis {axis}"
                    break
        if expect is not None:
            want = _describe_spec(self, rank)
            raise ValueError(
                f"Input to layer {layer.name!r} ({type(layer).__name__}) has shape "
                f"{shape}, but the layer expects {expect} (shape {want}). "
                f"{_hint(layer, shape, self)}")


def _describe_spec(spec, rank):
    n = spec.ndim or max(rank, spec.min_ndim or 0)
    dims = ["None"] * n
    for axis, size in spec.axes.items():
        if size is not None and -n <= axis < n:
            dims[axis] = str(size)
    return "(" + ", ".join(dims) + ("," if n == 1 else "") + ")"


def _hint(layer, shape, spec):
    if spec.axes:
        return ("The layer was built for a different feature size: pass inputs "
                "of the size it was built with, or use a new layer.")
    if spec.ndim is not None and len(shape) == spec.ndim - 1:
        return "Did you forget the batch dimension? Add one, e.g. x[None]."
    return "Reshape the input, or put a Flatten/Reshape layer before it."


def _masks_fit_probes(first, mask):
    """Whether the masks on a symbolic first argument have the shape of its
    leading axes (None where it has None), so they can join the probes that
    trace `call`. A fixed-size mask (a Lambda's `mask=` array, sized for real
    data) does not; `call` is traced without it then, and gets it when it runs."""
    pairs = zip(first, mask) if isinstance(first, (list, tuple)) else [(first, mask)]
    for x, m in pairs:
        if m is None:
            continue
        if not (symbolic.is_symbolic(x) and symbolic.is_symbolic(m)):
            return False
        if tuple(m.shape) != tuple(x.shape[:len(m.shape)]):
            return False
    return True


def _standardize_input(x):
    """NumPy arrays and Python numbers become JAX arrays (float64 -> float32);
    arrays of strings stay NumPy (host-side preprocessing layers take them)."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "USO":
        return x
    if isinstance(x, np.ndarray):
        if x.dtype == np.float64:
            return dtypes.asarray(x, dtype=dtypes.floatx())
        return dtypes.asarray(x)
    if isinstance(x, (float, int)) and not isinstance(x, bool):
        return jnp.asarray(x, dtype=dtypes.floatx() if isinstance(x, float) else None)
    if isinstance(x, Variable):
        return x
    return x


def _shape_of(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_shape_of(e) for e in x)
    if isinstance(x, dict):
        return {k: _shape_of(v) for k, v in x.items()}
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


@export("loopax.layers.Layer")
class Layer(Module):
    """Base class for layers.

    Args:
        name: the layer's name (auto-numbered from the class name otherwise).
        trainable: whether its weights are trainable.
        dtype: a dtype policy or its name: "float32", "bfloat16",
            "mixed_bfloat16" (bfloat16 compute, float32 weights), ...; default
            the global policy (`loopax.mixed_precision.set_global_policy`).
        autocast: under a mixed policy, cast float inputs to the compute
            dtype and read float weights as it inside `call` (default True).
        activity_regularizer: adds `regularizer(outputs)` to `losses`.
        input_shape / input_dim: only for the first layer of a `Sequential`.

    Raises:
        TypeError: an unknown keyword argument is given.
    """

    # (variable, regularizer) pairs: walking them would list regularized weights first.
    _untracked_attributes = Module._untracked_attributes | {"_regularized", "_remat_mode"}
    # The `RematScope` settings the layer was created under (None: no scope).
    _remat_mode = None
    # Whether `__call__` casts float inputs to the compute dtype (a functional
    # model casts each input to its Input's dtype instead).
    _convert_input_args = True
    # Whether each row of `call`'s outputs depends on that row of its inputs alone
    # (random draws included; sub-layers declare their own): True, False, or
    # "inference" (row-wise in inference only, as batch statistics). A pass pads
    # its partial batch only through row-wise layers (trainers/padded_batches.py).
    # The declaration holds for subclasses that keep its class's `call`.
    row_wise: bool | str = False

    def __init_subclass__(cls, **kwargs):
        # loopax's own layer classes are nameable in configs from their definition
        # on (`serialization.register_builtins`); a user's class must be registered.
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("loopax.src.") and not cls.__name__.startswith("_"):
            serialization.register_builtins("layer", [cls])
        build = cls.__dict__.get("build")
        if callable(build) and not getattr(build, "_in_name_scope", False):
            cls.build = _built_in_name_scope(build)

    def __init__(self, *, name: str | None = None, trainable: bool = True,
                 dtype: str | dtype_policies.DTypePolicy | None = None,
                 activity_regularizer: str | Callable | None = None,
                 input_shape: Shape | None = None, input_dim: int | None = None,
                 batch_input_shape: Shape | None = None, batch_size: int | None = None,
                 autocast: bool = True, **kwargs: Any):
        if kwargs:
            raise TypeError(
                f"{type(self).__name__}() got unexpected keyword argument(s) "
                f"{sorted(kwargs)}.")
        self.name = name or unique_name(_snake_case(type(self).__name__))
        self.__dict__["_trainable"] = bool(trainable)   # sub-layers come later
        self.dtype_policy = dtype
        self.autocast = bool(autocast)
        self.built = False
        self.input_spec = None
        self._losses = []   # add_loss values of the last eager call (outside any scope)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is not None:
            self._batch_input_shape = tuple(batch_input_shape)
        elif input_shape is not None:
            self._batch_input_shape = (batch_size,) + tuple(input_shape)
        else:
            self._batch_input_shape = None
        self._regularized = []  # (variable, regularizer)
        remat_mode = remat.current_remat_mode()
        if remat_mode is not None and remat_mode.mode is not None:
            self._remat_mode = remat_mode
        params = inspect.signature(self.call).parameters
        self._call_takes_training = "training" in params
        self._call_takes_mask = "mask" in params
        self._training_default = (params["training"].default
                                  if self._call_takes_training else None)

    # ---- dtypes ----------------------------------------------------------
    @property
    def dtype_policy(self) -> dtype_policies.DTypePolicy:
        """The layer's `DTypePolicy` (settable with a policy or its name)."""
        return self.__dict__["_dtype_policy"]

    @dtype_policy.setter
    def dtype_policy(self, value):
        policy = dtype_policies.get(value)
        mode = policy.quantization_mode
        if mode is not None and self.__dict__.get("built") and \
                self.dtype_policy.quantization_mode is None:
            # Keras: a quantized policy on a built float layer quantizes it.
            block_size = getattr(policy, "block_size", None)
            config = quantization_config.Int4QuantizationConfig(block_size=block_size) \
                if mode == "int4" else None
            self.quantize(mode, config=config)
        self.__dict__["_dtype_policy"] = policy

    @property
    def dtype(self) -> str:
        """The dtype of the layer's weights (Keras: an alias of `variable_dtype`)."""
        return self.dtype_policy.variable_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype the layer creates its weights in (the policy's `variable_dtype`)."""
        return self.dtype_policy.variable_dtype

    @property
    def compute_dtype(self) -> str:
        """The dtype of the layer's inputs, computation and outputs."""
        return self.dtype_policy.compute_dtype

    @property
    def quantization_mode(self) -> str | None:
        """"int8", "int4" or "float8" once quantized (`quantize`), else None."""
        return self.dtype_policy.quantization_mode

    def quantize(self, mode: str | None = None, type_check: bool = True,
                 config: quantization_config.QuantizationConfig | None = None) -> None:
        """Quantizes the layer's weights in place (Keras's `Layer.quantize`).

        Dense, EinsumDense and Embedding implement it; the layer's policy becomes
        `"<mode>_from_<policy>"` and its calls use the quantized weights.

        Args:
            mode: "int8", "int4", "float8", "gptq" or "awq" (optional with `config`;
                "gptq"/"awq" give Dense/EinsumDense their weights, which
                `Model.quantize` then calibrates).
            type_check: True refuses subclasses of the built-in layers (their `call`
                may not use the quantized weights), as Keras does.
            config: A `loopax.quantizers.QuantizationConfig` (its quantizers,
                int4's `block_size`).

        Raises:
            ValueError: the layer is not built or already quantized, an unknown
                mode, or int8 under a float16 compute dtype.
            NotImplementedError: the layer cannot be quantized.
        """
        config = quantization_config.resolve(mode, config)
        mode = config.mode
        if not self.built:
            raise ValueError(f"Cannot quantize a layer that isn't yet built. Layer "
                             f"'{self.name}' (of type '{type(self).__name__}') is not built "
                             "yet: call it on data (or `build(input_shape)`) first.")
        if self.quantization_mode is not None:
            raise ValueError(f"Layer '{self.name}' is already quantized with "
                             f"dtype_policy='{self.dtype_policy.name}'. Received: mode={mode}")
        if mode == "int8" and self.compute_dtype == "float16":
            raise ValueError(
                f"Quantization mode='{mode}' doesn't work well with compute_dtype='float16'. "
                "Consider loading model/layer with another dtype policy such as "
                "'mixed_bfloat16' or 'float32' before calling `quantize()`.")
        self._quantize_weights(mode, config, type_check)

    def _quantize_weights(self, mode, config, type_check):
        """Replaces the float weights by quantized ones and sets the quantized
        policy; layers that can be quantized override it."""
        raise NotImplementedError(
            f"Layer {type(self).__name__} does not have a `quantize` method implemented.")

    def _quantizable(self, base, mode, type_check, modes=("int8", "int4", "float8")):
        """NotImplementedError unless `self` is exactly `base` (with `type_check`)
        and `mode` is one of `modes`."""
        if type_check and type(self) is not base:
            raise NotImplementedError(
                f"Layer {type(self).__name__} does not have a `quantize` method implemented "
                f"(it subclasses {base.__name__}; pass type_check=False if its `call` uses "
                f"{base.__name__}'s).")
        if mode not in modes:
            raise NotImplementedError(
                f"Invalid quantization mode. Expected one of {modes} for "
                f"{type(self).__name__}. Received: quantization_mode={mode}")

    @property
    def input_dtype(self) -> str:
        """The dtype float inputs are cast to: the policy's compute dtype."""
        return self.dtype_policy.compute_dtype

    # ---- weights ---------------------------------------------------------
    def add_weight(self, *args, shape: Sequence[int] | None = None,
                   initializer: str | Callable | None = None,
                   dtype: DTypeLike = None, trainable: bool = True, name: str | None = None,
                   regularizer: str | Callable | None = None,
                   constraint: str | Callable | None = None, aggregation: str | None = None,
                   autocast: bool = True) -> Variable:
        """Creates a Variable owned by this layer (path `layer_name/name`).

        The layer keeps it in `self.weights` in creation order; assign it to an attribute
        too (`self.kernel = self.add_weight(...)`) to use it.

        `shape`, `initializer` and `dtype` may also come positionally, in that
        order (Keras 3 allows those three). The Keras 2 style with the name first,
        `add_weight("kernel", shape=...)`, raises a ValueError naming the fix, as
        Keras 3 and TF 2.16+'s tf.keras do.

        Args:
            shape: The weight's shape (default `()`, a scalar).
            initializer: An initializer, its name (`"zeros"`, `"glorot_uniform"`, ...) or a
                callable `(shape, dtype) -> array`; None is Keras's default, glorot_uniform
                for float weights and zeros for the others.
            dtype: The weight's dtype; default the layer's variable dtype.
            trainable: Whether optimizers update it.
            name: The weight's name (default `"variable"`).
            regularizer: A regularizer (or its name) whose penalty joins `losses`.
            constraint: A constraint (or its name) optimizers apply after each update.
            aggregation: Accepted for Keras compatibility; unused.
            autocast: False keeps the weight in its own dtype inside `call` under a mixed
                policy (normalization statistics do).

        Returns:
            The new `Variable`.

        Raises:
            MemoryError: the weight cannot fit in the free memory.
            ValueError: the name given positionally, or an argument given both
                positionally and by keyword.
            TypeError: more than three positional arguments.
        """
        shape, initializer, dtype = _positional_weight_args(args, shape, initializer, dtype)
        if initializer is None:
            float_dtype = jnp.issubdtype(jnp.dtype(dtype or self.dtype), jnp.floating)
            initializer = "glorot_uniform" if float_dtype else "zeros"
        name = name or "variable"
        _check_weight_fits(self, name, tuple(shape), dtype or self.dtype)
        with name_scope(self.name, caller=self):
            var = Variable(initializers.get(initializer), shape=tuple(shape),
                           dtype=dtype or self.dtype, trainable=trainable, name=name,
                           autocast=autocast)
        track_created(self, var)   # listed first, in creation order (module.owned)
        if trainable:
            self.__dict__.setdefault("_trainable_weights_created", []).append(var)
        reg = regularizers.get(regularizer)
        if reg is not None:
            self._regularized.append((var, reg))
        if constraint is not None:
            var.constraint = constraints.get(constraint)   # applied by optimizers
        return var

    @property
    def trainable(self) -> bool:
        """Whether the layer's weights train. Setting it sets it on every sub-layer
        and on the weights the layer created trainable, as Keras does: `False`
        moves them to `non_trainable_weights`, `True` brings them all back (also
        those of a sub-layer frozen on its own). A compiled model keeps its
        state groups until the next `compile()`."""
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value):
        value = bool(value)
        self.__dict__["_trainable"] = value
        for variable in self.__dict__.get("_trainable_weights_created", ()):
            variable.trainable = value
        for layer in self.layers:
            layer.trainable = value

    @property
    def weights(self) -> list[Variable]:
        """The layer's weights: `variables` less RNG seed states (as in Keras).

        Seed states still belong to `non_trainable_variables`, so stateless
        calls and `fit()` carry them."""
        return [v for v in self.variables if not v.is_seed_state]

    @property
    def trainable_weights(self) -> list[Variable]:
        """The trainable weights (`trainable_variables`), own first, then sub-layers'."""
        return self.trainable_variables

    @property
    def non_trainable_weights(self) -> list[Variable]:
        """The non-trainable weights (frozen ones and statistics), less RNG seed states."""
        return [v for v in self.non_trainable_variables
                if not v.is_seed_state]

    @property
    def layers(self) -> list["Layer"]:
        """Direct sub-layers, in attribute order."""
        _, subs = self._direct({id(self)})
        return [m for m in subs if isinstance(m, Layer)]

    def get_weights(self) -> list[np.ndarray]:
        """Returns the weights' values as NumPy arrays, in the order of `weights`."""
        return [np.asarray(v.value) for v in self.weights]

    def set_weights(self, weights: Sequence[ArrayLike]) -> None:
        """Assigns NumPy arrays to `weights`, in order; lists every mismatch.

        Args:
            weights: One array per weight, in the order of `weights`, with matching shapes.

        Raises:
            ValueError: the number of arrays or a shape does not match.
        """
        own = self.weights
        weights = list(weights)
        problems = []
        if len(weights) != len(own):
            problems.append(f"expected {len(own)} arrays, got {len(weights)}")
        for i, (var, w) in enumerate(zip(own, weights)):
            if tuple(np.shape(w)) != var.shape:
                problems.append(f"weight {i} ({var.path}): expected shape {var.shape}, "
                                f"got {tuple(np.shape(w))}")
        if problems:
            raise ValueError(f"set_weights on {self.name!r} does not match the layer's "
                             "weights:\n  " + "\n  ".join(problems))
        for var, w in zip(own, weights):
            var.assign(dtypes.asarray(w, dtype=var.dtype))

    # ---- build and call --------------------------------------------------
    def build(self, input_shape: Any = None) -> None:
        """Creates the weights, given the shape of the first input.

        Called once, by the first call. Subclasses override it; the base only marks the
        layer built.

        Args:
            input_shape: The first input's shape (a tuple, or a structure of tuples for
                several inputs), batch dimension included.
        """
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The layer's computation; subclasses override it (the base returns `inputs`).

        Args:
            inputs: The input array(s).
            *args: Further positional inputs.
            **kwargs: Further arguments such as `training` and `mask`, passed on when the
                subclass's `call` declares them.

        Returns:
            The outputs.
        """
        return inputs

    # ---- masks (see loopax.src.layers.masking) ---------------------------
    @property
    def supports_masking(self) -> bool:
        """Whether the layer passes a mask on: by default, when it defines
        `compute_mask`; layers that keep the time axis set it True."""
        return self.__dict__.get("_supports_masking",
                                 type(self).compute_mask is not Layer.compute_mask)

    @supports_masking.setter
    def supports_masking(self, value):
        self.__dict__["_supports_masking"] = bool(value)

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The mask of the outputs, given the inputs and their mask.

        Args:
            inputs: The layer's inputs.
            previous_mask: The inputs' mask, or None.

        Returns:
            The outputs' mask (the base passes `previous_mask` on), or None.
        """
        return previous_mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for `input_shape` (None sizes stay None); builds the layer.

        Args:
            input_shape: A shape tuple (or a structure of them), None for unknown sizes.

        Returns:
            The output shape(s), in the structure of the outputs.
        """
        is_shape = lambda s: isinstance(s, tuple) and all(
            d is None or isinstance(d, int) for d in s)
        if not self.built:
            self._build_input_shape = input_shape
            self.build(input_shape)
            self.built = True
        probes = [self.compute_output_spec(jax.tree_util.tree_map(
            lambda s: jax.ShapeDtypeStruct(tuple(size if d is None else d for d in s), self.dtype),
            input_shape, is_leaf=is_shape)) for size in symbolic._PROBE_SIZES]
        return jax.tree_util.tree_map(
            lambda a, b: symbolic.merge_probe_shapes(a.shape, b.shape), *probes)

    def compute_output_spec(self, *args: Any, **kwargs: Any) -> Any:
        """The outputs' shapes and dtypes, computed without running `call` on data.

        Args:
            *args: `call`'s positional arguments, as arrays or `jax.ShapeDtypeStruct`s.
            **kwargs: `call`'s keyword arguments.

        Returns:
            `jax.ShapeDtypeStruct`s in the structure of the outputs.
        """
        def run(*a, **k):
            with random.shape_inference_scope():
                return self.call(*a, **k)
        return jax.eval_shape(run, *args, **kwargs)

    def _maybe_build(self, first_arg):
        if self.built:
            return
        self._build_input_shape = _shape_of(first_arg)
        self.__dict__["_path"] = self.scope_path
        self.build(self._build_input_shape)
        self.built = True
        notify_built(self)

    @property
    def scope_path(self) -> str:
        """The layer's path as Keras names it: the name scopes open at its first call
        or build (or where a Sequential wired it), then its name: "d1" for a functional
        model's layer, "sequential/d3" for a Sequential's, "sub/d4" for a layer a
        subclassed model `sub` calls. Its variables' paths start with it. A `LayoutMap`
        key `"<scope_path>/output"` lays out the layer's output."""
        parent = self.__dict__.get("_parent_path")
        if parent is None:   # not called yet: where a call now would place it
            parent = current_path()
        return f"{parent}/{self.name}" if parent else self.name

    @property
    def path(self) -> str | None:
        """Keras's `layer.path`: `scope_path` where the layer was built, or None for a
        layer not built yet or built at creation (Dropout), as in Keras."""
        return self.__dict__.get("_path")

    @contextlib.contextmanager
    def _name_scope(self):
        """The layer's name scope; its place (`path`) is settled on first entry, as Keras's."""
        if "_parent_path" not in self.__dict__:
            self.__dict__["_parent_path"] = current_path()
        with name_scope(self.name, caller=self):
            yield

    def __call__(self, *args, **kwargs):
        built_before = self.built
        with self._name_scope():
            outputs = self._scoped_call(args, kwargs)
        if self.built and (not built_before or _built_by_first_call_in_keras(self)):
            self.__dict__.setdefault("_path", self.scope_path)   # Keras's path
        dist = distribution()
        if dist is not None:
            outputs = _laid_out(outputs, dist.get_tensor_layout(f"{self.scope_path}/output"))
        if not _ctx.stack and not _state.scopes:
            # The outermost call, run eagerly (not in a stateless call, fit's step or a
            # trace): its arrays come back as Tensors, as TensorFlow's eager tensors.
            outputs = _eager_tensors(outputs)
        return outputs

    def _scoped_call(self, args, kwargs):
        if args and symbolic.any_symbolic(args[0]) or symbolic.any_symbolic((args, kwargs)):
            return self._symbolic_call(*args, **kwargs)
        if args:
            first = args[0]
            if isinstance(first, (list, tuple)):
                first = type(first)(_standardize_input(x) for x in first)
            elif isinstance(first, dict):
                first = {k: _standardize_input(v) for k, v in first.items()}
            else:
                first = _standardize_input(first)
            args = (first,) + args[1:]
            if self._convert_input_args and self.autocast:
                args, kwargs = _precision.cast_inputs((args, kwargs), self.dtype_policy)
                first = args[0]
            self._maybe_build(first)
            if self.input_spec is not None:
                self._check_input_spec(first)
        elif not self.built:
            self.__dict__["_path"] = self.scope_path
            self.build(None)
            self.built = True

        outer = not _ctx.stack
        if outer and _state.tapes:
            # A recording GradientTape records the whole outermost layer call
            # as one differentiable step (see loopax.src.tape).
            return tape.record_layer_call(self, args, kwargs)
        if outer:
            self._clear_losses()
            _ctx.stack.append({"training": kwargs.get("training")})
        frame = _ctx.stack[0]
        try:
            if self._call_takes_training:
                training = kwargs.get("training")
                if training is None:
                    training = frame["training"] if frame["training"] is not None \
                        else self._training_default
                    kwargs["training"] = training
                if frame["training"] is None and training is not None:
                    frame["training"] = training
            elif "training" in kwargs:
                kwargs = dict(kwargs)
                t = kwargs.pop("training")
                if frame["training"] is None:
                    frame["training"] = t
            previous_mask = kwargs.get("mask") if self._call_takes_mask else None
            if previous_mask is None and args:
                previous_mask = _masking.masks_of(args[0])
                if previous_mask is not None and self._call_takes_mask:
                    kwargs["mask"] = previous_mask
            with _precision.call_scope(self):
                call = self.call if self._remat_mode is None else \
                    remat.layer_call(self, args, kwargs)
                outputs = call(*args, **kwargs)
            if self.supports_masking and args:
                _masking.attach_output_masks(self, args[0], outputs, previous_mask)
            if self.activity_regularizer is not None:
                for out in jax.tree_util.tree_leaves(outputs):
                    self.add_loss(_activity_loss(self.activity_regularizer, out))
        finally:
            if outer:
                _ctx.stack.pop()
        return outputs

    def _check_input_spec(self, x):
        specs = self.input_spec if isinstance(self.input_spec, (list, tuple)) else [self.input_spec]
        xs = x if isinstance(x, (list, tuple)) and len(specs) > 1 else [x]
        for spec, xi in zip(specs, xs):
            if spec is not None and hasattr(xi, "shape"):
                spec.check(self, xi.shape)

    def _symbolic_call(self, *args, **kwargs):
        is_sym = symbolic.is_symbolic
        first = args[0] if args else None
        if not self.built:
            shape = jax.tree_util.tree_map(lambda t: t.shape, first, is_leaf=is_sym) \
                if first is not None else None
            self._build_input_shape = shape
            self.build(shape)
            self.built = True
        if self.input_spec is not None and first is not None:
            self._check_input_spec(first)
        call_kwargs = kwargs
        if self._call_takes_mask and kwargs.get("mask") is None and first is not None:
            # As on concrete inputs (and Keras): the mask the previous layers put
            # on the first argument reaches `call`. The node does not record it;
            # each concrete run reads it from the inputs again.
            mask = _masking.masks_of(first)
            if mask is not None and _masks_fit_probes(first, mask):
                call_kwargs = {**kwargs, "mask": mask}
        outputs = self._symbolic_outputs(args, call_kwargs)
        node = symbolic.Node(self, args, kwargs, outputs)
        for i, t in enumerate(node.output_tensors):
            t.node, t.index = node, i
        self.__dict__.setdefault("_inbound_nodes", []).append(node)
        if self.supports_masking and first is not None:
            _masking.attach_symbolic_output_masks(self, first, outputs)
        return outputs

    def _symbolic_outputs(self, args, kwargs):
        """The `SymbolicTensor`s a call on symbolic `args` returns: `call` is
        traced (`jax.eval_shape`) twice, with None sizes set to two different
        probe sizes; output sizes that differ between the two are None.
        Layers with a closed-form output shape skip the tracing."""
        closed_form = symbolic.closed_form_outputs(self, args, kwargs)
        if closed_form is not None:
            return closed_form
        is_sym = symbolic.is_symbolic

        def probe(k):
            a, kw = jax.tree_util.tree_map(
                lambda t: symbolic.to_probe_struct(t, k) if is_sym(t) else t,
                (args, kwargs), is_leaf=is_sym)
            statics = {}
            dyn_kw = {}
            for key, v in kw.items():
                leaves = jax.tree_util.tree_leaves(v)
                dynamic = isinstance(v, jax.ShapeDtypeStruct) or (
                    isinstance(v, (list, tuple, dict)) and leaves
                    and all(isinstance(e, jax.ShapeDtypeStruct) for e in leaves))
                (dyn_kw if dynamic else statics)[key] = v

            def run(*a, **dkw):
                if self._convert_input_args and self.autocast:
                    a, dkw = _precision.cast_inputs((a, dkw), self.dtype_policy)
                with random.shape_inference_scope(), _precision.call_scope(self):
                    outer = not _ctx.stack
                    if outer:
                        _ctx.stack.append({"training": statics.get("training")})
                    try:
                        return self.call(*a, **dkw, **statics)
                    finally:
                        if outer:
                            _ctx.stack.pop()
            return jax.eval_shape(run, *a, **dyn_kw)

        # The probes' losses are of shapes only: the layers keep their last call's.
        kept = [(layer, list(layer._losses)) for layer in self._layers_tree()]
        try:
            out1, out2 = probe(0), probe(1)
        except Exception as e:
            raise retyped(
                e,
                f"Calling layer {self.name!r} ({type(self).__name__}) on symbolic "
                f"inputs {jax.tree_util.tree_map(lambda t: t.shape, args, is_leaf=is_sym)} "
                f"failed: {e}",
            ) from e
        finally:
            for layer, losses in kept:
                layer._losses = losses
        return jax.tree_util.tree_map(
            lambda a, b: symbolic.SymbolicTensor(
                symbolic.merge_probe_shapes(a.shape, b.shape), a.dtype, name=self.name),
            out1, out2)

    # ---- functional API: the tensors of the first call ---------------------
    def _first_call_tensors(self, attribute, what):
        nodes = self.__dict__.get("_inbound_nodes")
        if not nodes:
            raise AttributeError(
                f"The layer {self.name!r} has never been called on symbolic tensors "
                f"(loopax.Input and layers called on it), so it has no {what}.")
        tensors = getattr(nodes[0], attribute)
        return tensors[0] if len(tensors) == 1 else list(tensors)

    @property
    def input(self) -> Any:
        """The symbolic input tensor(s) of the layer's first functional call
        (a list when it took several, as Keras)."""
        return self._first_call_tensors("input_tensors", "input")

    @property
    def output(self) -> Any:
        """The symbolic output tensor(s) of the layer's first functional call."""
        return self._first_call_tensors("output_tensors", "output")

    # ---- losses ----------------------------------------------------------
    # An `add_loss` value goes to the active StateScope (a stateless call, fit's
    # step, a tape's or remat's trace), which hands it on or lets it go with the
    # trace; outside any scope (an eager call) the layer keeps it. An outermost
    # call drops its layers' losses of earlier calls, as Keras's.
    def add_loss(self, loss: ArrayLike) -> None:
        """Adds a scalar loss (e.g. a regularization penalty) from inside `call`.

        Args:
            loss: A scalar array; it joins `losses` (and the loss `fit` minimizes).

        Raises:
            RuntimeError: called outside the layer's `call`.
        """
        if not _ctx.stack:
            raise RuntimeError(f"{self.name}.add_loss() must be called from inside call().")
        self._collect_loss(loss)

    def _collect_loss(self, loss):
        scope = active_scope()
        if scope is not None:
            scope.losses.append((self, loss))
        else:
            self._losses.append(loss)
            _holding_losses.add(self)

    def _clear_losses(self):
        """An outermost call starts afresh: its layers' losses of earlier calls go
        (in the active scope, or outside any, the layers' own). Nothing to walk
        when no layer holds a loss (a model without add_loss)."""
        scope = active_scope()
        if scope is not None:
            if any(s.losses for s in _state.scopes):
                scope.clear_losses(self._layers_tree())
        elif _holding_losses:
            for layer in self._layers_tree():
                if layer._losses:
                    layer._losses = []
                    _holding_losses.discard(layer)

    def _keep_losses(self, added):
        """The losses of an outermost call run elsewhere (a tape's compiled or
        recorded call): `(layer, value)` pairs, kept as that call's."""
        self._clear_losses()
        for owner, value in added:
            owner._collect_loss(value)

    def _layers_tree(self):
        return [self] + [m for m in self.submodules if isinstance(m, Layer)]

    @property
    def losses(self) -> list:
        """Losses from `add_loss` in the last call, plus weight regularization
        penalties computed from the current (scope-aware) weights."""
        layers = self._layers_tree()
        out = []
        if _state.scopes:
            added = StateScope.visible_losses()
            for layer in layers:
                out.extend(v for o, v in added if o is layer)
        else:
            out = [v for layer in layers for v in layer._losses]
            if any(is_tracer(v) for v in out) and not tracing():
                # A bare `jax.jit`'s call ended: its values must not leak out.
                out = [v for v in out if not is_tracer(v)]
        for layer in layers:
            for var, reg in layer._regularized:
                # As an op, so a recording GradientTape differentiates the penalty.
                out.append(op(reg)(var) if _state.tapes else reg(var.value))
        return out

    # ---- stateless API ---------------------------------------------------
    def stateless_call(self, trainable_variables: Sequence[ArrayLike],
                       non_trainable_variables: Sequence[ArrayLike], *args: Any,
                       return_losses: bool = False, **kwargs: Any) -> tuple:
        """Calls the layer with the given variable values instead of its own.

        The layer's own Variables are not changed; values, not Variables, come back. Works
        under `jax.jit`, `jax.grad` and `jax.vmap`.

        Args:
            trainable_variables: One value per `trainable_variables` entry, in order.
            non_trainable_variables: One value per `non_trainable_variables` entry, in order.
            *args: The call's inputs.
            return_losses: Also return the losses the call added.
            **kwargs: Further arguments of `call` (`training`, `mask`, ...).

        Returns:
            `(outputs, non_trainable_variables)`, the non-trainable values after the call
            (e.g. BatchNormalization statistics, seed states), or
            `(outputs, non_trainable_variables, losses)` with `return_losses=True`.

        Raises:
            ValueError: the layer is not built, or the values do not match its variables
                in number or shape.
        """
        if not self.built:
            raise ValueError(
                f"{self.name}.stateless_call() needs a built layer: call it once on a "
                "batch (or call build(input_shape)) so its variables exist.")
        owner = f"{self.name}.stateless_call"
        trainable = self.trainable_variables
        non_trainable = self.non_trainable_variables
        trainable_variables = check_values_match(
            trainable, trainable_variables, "trainable_variables", owner)
        non_trainable_variables = check_values_match(
            non_trainable, non_trainable_variables, "non_trainable_variables", owner)

        def call():
            outputs = self(*args, **kwargs)
            return outputs, LossList(self.losses) if return_losses else None

        (outputs, losses), new_values = pure(call, trainable + non_trainable)(
            trainable_variables + non_trainable_variables)
        new_non_trainable = new_values[len(trainable):]
        if return_losses:
            return outputs, new_non_trainable, losses
        return outputs, new_non_trainable

    # ---- config ----------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments that re-create this layer (no weights).

        Returns:
            A JSON-serializable dict; subclasses add their own arguments.
        """
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": self.dtype_policy.name}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config: dict) -> Layer:
        """Creates a layer from the dict `get_config` returned.

        Args:
            config: The constructor's keyword arguments.

        Returns:
            A new, unbuilt layer.
        """
        return cls(**config)

    def count_params(self) -> int:
        """Returns the number of scalars in the layer's weights."""
        return int(sum(v.size for v in self.weights))

    # ---- saving hooks (Keras's; used by model.save / load_model) --------
    def get_build_config(self) -> dict | None:
        """The shape the layer was first built with, for saving.

        Returns:
            `{"input_shape": shape}`, or None if the layer was not built by a call;
            `load_model` passes it to `build_from_config`.
        """
        shape = self.__dict__.get("_build_input_shape")
        return None if shape is None else {"input_shape": _jsonable_shape(shape)}

    def build_from_config(self, config: dict | None) -> None:
        """Builds the layer from `get_build_config()`'s dict.

        Args:
            config: `{"input_shape": shape}` or Keras's `{"shapes_dict": {...}}`; None or an
                already built layer does nothing.
        """
        if not config or self.built:
            return
        if "input_shape" in config:
            shape = _shape_from_json(config["input_shape"])
            self._build_input_shape = shape
            self.build(shape)
        elif "shapes_dict" in config:
            self.build(**{k: _shape_from_json(v) for k, v in config["shapes_dict"].items()})
        self.built = True

    def _own_weights(self):
        """The weights this layer holds itself (not those of its sub-layers)."""
        weights = {id(v) for v in self.weights}
        return [v for v in self._direct({id(self)})[0] if id(v) in weights]

    def save_own_variables(self, store: MutableMapping[str, Any]) -> None:
        """Writes the layer's own weights into `store` as `"0", "1", ...`.

        Override it (with `load_own_variables`) to save other arrays. Sub-layers save
        their own.

        Args:
            store: A dict-like mapping from string keys to arrays.
        """
        for i, variable in enumerate(self._own_weights()):
            store[str(i)] = np.asarray(variable.value)

    def load_own_variables(self, store: MutableMapping[str, Any]) -> None:
        """Assigns what `save_own_variables` wrote back to the layer's own weights.

        Args:
            store: The dict-like mapping `save_own_variables` filled.

        Raises:
            ValueError: the number of arrays or a shape differs from the layer's own weights.
        """
        own = self._own_weights()
        if len(store) != len(own):
            raise ValueError(
                f"Layer {self.name!r} ({type(self).__name__}) has {len(own)} weights of its "
                f"own, but the saved state holds {len(store)} arrays ({sorted(store)}). The "
                "layer must be built as it was when saved.")
        for i, variable in enumerate(own):
            value = np.asarray(store[str(i)])
            if value.shape != variable.shape:
                raise ValueError(f"Layer {self.name!r}: saved weight {i} has shape "
                                 f"{value.shape}, but {variable.path} has {variable.shape}.")
            variable.assign(dtypes.asarray(value, dtype=variable.dtype))

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


# `Layer.__init_subclass__` registers the subclasses; these two are named too.
serialization.register_builtins("layer", [Layer, InputSpec])


def _activity_loss(regularizer, output):
    """`regularizer(output)` divided by the batch size (`output.shape[0]`), as Keras:
    the penalty's strength does not change with the batch size."""
    loss = regularizer(output)
    shape = tuple(getattr(output, "shape", ()))
    return loss / shape[0] if shape and shape[0] else loss


def retyped(error: Exception, message: str) -> Exception:
    """`message` as an exception of `error`'s type, or of its nearest built-in
    base class where that type is not built from a message (JAX's tracer
    errors take the tracer)."""
    try:
        return type(error)(message)
    except Exception:
        return next(c for c in type(error).__mro__ if c.__module__ == "builtins")(message)


def _jsonable_shape(shape):
    if isinstance(shape, dict):
        return {str(k): _jsonable_shape(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)):
        items = [_jsonable_shape(s) for s in shape]
        return tuple(items) if all(d is None or isinstance(d, int) for d in items) else items
    return None if shape is None else int(shape)


def _shape_from_json(shape):
    """JSON lists back to shape tuples (a list of shapes stays a list)."""
    if isinstance(shape, dict):
        return {k: _shape_from_json(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)):
        if all(d is None or isinstance(d, int) for d in shape):
            return tuple(shape)
        return [_shape_from_json(s) for s in shape]
    return shape


# Weights below this size are not checked against the free memory.
_UNCHECKED_WEIGHT_BYTES = 64 * 1024 ** 2


def _check_weight_fits(layer, name, shape, dtype):
    """A `MemoryError` naming the layer, weight, shape and size when a weight
    cannot fit in the free memory (XLA would abort the process instead), and
    a ValueError when it would pass the current `memory_utils.weight_budget`."""
    try:
        count = math.prod(int(d) for d in shape)
    except (TypeError, ValueError):
        return  # unknown dimensions: the Variable reports them
    nbytes = count * jnp.dtype(dtypes.standardize(dtype)).itemsize
    memory_utils.charge_weight(nbytes, f"Layer {layer.name!r} ({type(layer).__name__})'s "
                                       f"weight {name!r} of shape {shape}")
    if nbytes <= _UNCHECKED_WEIGHT_BYTES:
        return
    available = memory_utils.available_memory_bytes()
    if available is not None and nbytes > available:
        raise MemoryError(
            f"Layer {layer.name!r} ({type(layer).__name__}) asks for weight {name!r} of shape "
            f"{shape} ({dtypes.standardize(dtype)}): {nbytes:,} bytes ({nbytes / 1024 ** 3:.1f} "
            f"GiB), but only {available:,} bytes ({available / 1024 ** 3:.1f} GiB) are free on "
            f"{jax.devices()[0].platform}. Use fewer units / a smaller input, or a smaller "
            "dtype.")


# Built-in layers loopax makes built (they have nothing to build) that Keras builds on their
# first call, which gives them a `path` there: `Flatten().path` is "flatten" once called.
_KERAS_BUILDS_ON_FIRST_CALL = frozenset({
    "Add", "Average", "Concatenate", "Maximum", "Minimum", "Multiply", "Subtract",
    "Flatten", "Lambda", "Permute", "RepeatVector", "Rescaling", "CategoryEncoding",
    "Cropping1D", "Cropping2D", "Cropping3D", "UpSampling1D", "UpSampling2D", "UpSampling3D",
    "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "CenterCrop", "Resizing", "RandomCrop",
    "AugMix", "AutoContrast", "ContrastLimitedAdaptiveHistogramEqualization", "CutMix",
    "Equalization", "MelSpectrogram", "MixUp", "RandAugment", "RandomColorJitter",
    "RandomElasticTransform", "RandomErasing", "RandomFlip", "RandomGaussianBlur",
    "RandomGrayscale", "RandomInvert", "RandomPerspective", "RandomShear", "Solarization",
})


def _built_by_first_call_in_keras(layer: Layer) -> bool:
    """Whether Keras builds `layer` on its first call: its nearest built-in class (a user
    subclass counts as its base) is one of `_KERAS_BUILDS_ON_FIRST_CALL`."""
    for cls in type(layer).__mro__:
        if cls.__module__.startswith("loopax.src.layers."):
            return cls.__name__ in _KERAS_BUILDS_ON_FIRST_CALL
    return False


def _built_in_name_scope(build):
    """`build` run in the layer's name scope, as Keras runs every `build`: the variables
    it creates, also those of sub-layers it builds, have the layer's path as prefix."""
    users = not (build.__module__ or "").startswith("loopax.src.")

    @functools.wraps(build)
    def build_in_scope(self, *args, **kwargs):
        with self._name_scope():
            self.__dict__["_path"] = current_path()
            result = build(self, *args, **kwargs)
        if users and not self.built:
            # As Keras: a user's layer is built once its `build` returns, also when the
            # user calls it (`layer.build(shape)`, then `set_weights`): the first call must
            # not build it again over the weights it holds. loopax's own builds say when.
            shape = args[0] if args else kwargs.get("input_shape")
            self.__dict__.setdefault("_build_input_shape", shape)
            self.built = True
        return result

    build_in_scope._in_name_scope = True
    return build_in_scope


Layer.build = _built_in_name_scope(Layer.build)


def _eager_tensors(outputs):
    """`outputs` with each concrete `jax.Array` as a `Tensor`, its Keras mask carried over."""
    return eager_tensors(outputs, carry=_carry_mask)


def _carry_mask(array, tensor):
    mask = _masking.get_keras_mask(array)
    if mask is not None:
        _masking.set_keras_mask(tensor, mask)


def _laid_out(outputs, layout):
    """`outputs` (arrays, not symbolic tensors) placed by `layout` (a sharding
    constraint when traced), as Keras's `distribute_tensor` on a layer's output."""
    if layout is None or symbolic.any_symbolic(outputs):
        return outputs
    return jax.tree_util.tree_map(lambda out: distribute_tensor(out, layout), outputs)


# Imported last: the mask helpers live beside the Masking layer, which subclasses Layer.
from loopax.src.layers import masking as _masking  # noqa: E402
from loopax.src.layers import precision as _precision  # noqa: E402


def _positional_weight_args(args, shape, initializer, dtype):
    """`add_weight`'s (shape, initializer, dtype) from its positional `args`
    and keywords, refusing what Keras 3 refuses with the fix in the message."""
    if len(args) > 3:
        raise TypeError(f"add_weight() takes at most 3 positional arguments (shape, "
                        f"initializer, dtype); {len(args)} were given. Pass the others "
                        f"by keyword, e.g. add_weight(shape, 'zeros', trainable=False).")
    if args and isinstance(args[0], str):
        raise ValueError(f"add_weight() takes the weight's name by keyword only; got "
                         f"add_weight({args[0]!r}, ...) (the Keras 2 order). Use "
                         f"add_weight(shape=..., name={args[0]!r}).")
    given = dict(shape=shape, initializer=initializer, dtype=dtype)
    for key, value in zip(given, args):
        if given[key] is not None:
            raise ValueError(f"add_weight() got `{key}` both positionally and as a "
                             f"keyword argument; pass it once.")
        given[key] = value
    if given["shape"] is None:
        given["shape"] = ()
    return given["shape"], given["initializer"], given["dtype"]
