"""`Model`: a `Layer` that trains (`compile`/`fit` from `Trainer`), saves and
summarizes itself.

Three ways to make one, as in Keras:

- functional: `Model(inputs, outputs)` with tensors from `loopax.Input`
  (returns a `Functional`, see `functional.py`);
- `Sequential([layers])` (see `sequential.py`);
- subclassing: `class M(Model)` with layers as attributes and a `call`.

A subclass called with `inputs=`/`outputs=` (Keras's
`CustomModel(inputs, outputs)` that overrides `train_step`) becomes a
functional model that is still an instance of the subclass.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import warnings
from typing import Any, Callable, Sequence

import jax.numpy as jnp

from loopax.src import dtypes, serialization
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer, _shape_of
from loopax.src.layers.symbolic import any_symbolic
from loopax.src.models import calibration, summary
from loopax.src.quantizers import quantization_config
from loopax.src.saving import model_file, weights_file
from loopax.src.trainers import in_use
from loopax.src.trainers.trainer import Trainer


def is_functional_call(args, kwargs) -> bool:
    """Whether constructor arguments are `(inputs, outputs)` symbolic tensors."""
    if len(args) >= 2:
        inputs, outputs = args[0], args[1]
    elif len(args) == 1 and "outputs" in kwargs:
        inputs, outputs = args[0], kwargs["outputs"]
    elif "inputs" in kwargs and "outputs" in kwargs:
        inputs, outputs = kwargs["inputs"], kwargs["outputs"]
    else:
        return False
    return any_symbolic(inputs) or any_symbolic(outputs)


_functional_subclasses: dict[type, type] = {}


def _functional_version_of(cls):
    """`cls` with `Functional`'s graph machinery mixed in (cached).

    MRO: user class (its train_step etc.) -> Functional -> Model -> Trainer
    -> Layer; `type(m).__name__` and `isinstance(m, cls)` stay the user's.
    """
    from loopax.src.models.functional import Functional
    if cls not in _functional_subclasses:
        _functional_subclasses[cls] = type(cls.__name__, (cls, Functional), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "_functional_base": cls})
    return _functional_subclasses[cls]


def _is_json_able(value) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


@export("loopax.models.Model")
@serialization.register_core_class
class Model(Trainer, Layer):
    """A layer with `fit`/`evaluate`/`predict`, `summary`, saving and weights I/O.

    Subclass it and define `call(inputs, training=None)`; create layers in `__init__`
    (they are tracked as attributes) and they build on the first call. Or call
    `Model(inputs, outputs)` for a functional model.

    Args:
        *args: `(inputs, outputs)` for a functional model (see `Functional`); nothing
            otherwise.
        **kwargs: `inputs=`/`outputs=` for a functional model, and `Layer`'s keyword
            arguments (`name`, `trainable`, `dtype`, ...).

    Raises:
        TypeError: positional arguments other than `(inputs, outputs)` are given.
    """

    _untracked_attributes = Trainer._untracked_attributes | Layer._untracked_attributes

    def __new__(cls, *args, **kwargs):
        from loopax.src.models.functional import Functional
        from loopax.src.models.sequential import Sequential
        if is_functional_call(args, kwargs) and not issubclass(cls, (Functional, Sequential)):
            target = Functional if cls is Model else _functional_version_of(cls)
            return object.__new__(target)
        instance = object.__new__(cls)
        if not issubclass(cls, (Functional, Sequential)):
            instance._auto_config = _capture_init_args(cls, args, kwargs)
        return instance

    def __init__(self, *args, **kwargs):
        if is_functional_call(args, kwargs):
            # A subclass whose __init__ builds a graph and passes it up:
            # `super().__init__(inputs=..., outputs=...)`.
            from loopax.src.models.functional import Functional
            if not isinstance(self, Functional):
                self.__class__ = _functional_version_of(type(self))
            Functional.__init__(self, *args, **kwargs)
            return
        if args:
            raise TypeError(
                f"{type(self).__name__}: Model.__init__ takes keyword arguments (name=, "
                f"trainable=, dtype=), or (inputs, outputs) tensors from loopax.Input; "
                f"got {len(args)} positional argument(s).")
        Trainer.__init__(self)
        Layer.__init__(self, **kwargs)
        self._build_input_shape = None

    # ---- building ----------------------------------------------------------
    def _maybe_build(self, first_arg):
        if self.built:
            return
        self._build_input_shape = _shape_of(first_arg)
        if type(self).build is Model.build:
            self.built = True   # sub-layers build themselves inside this first call
        else:
            self.build(self._build_input_shape)
            self.built = True

    def build(self, input_shape: Any = None) -> None:
        """Creates the weights by calling the model once on zeros of `input_shape`.

        Args:
            input_shape: A shape such as `(None, 784)` (None sizes become 1), or a list or
                dict of shapes for several inputs; None only marks the model built.

        Raises:
            ValueError: `input_shape` is not a shape or a structure of shapes.
        """
        if self.built:
            return
        self._build_input_shape = input_shape
        if input_shape is None:
            self.built = True
            return
        zeros = _zeros_like_shapes(input_shape)
        self.built = True
        try:
            self(zeros, training=False)
        except Exception:
            self.built = False
            raise

    # ---- layers ------------------------------------------------------------
    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """The layer called `name`, or the one at position `index` in `layers`.

        Args:
            name: A layer's name.
            index: A position in `layers` (negative counts from the end).

        Returns:
            The `Layer`.

        Raises:
            ValueError: both or neither of `name` and `index` are given, or no layer matches.
        """
        if (name is None) == (index is None):
            raise ValueError("get_layer() needs exactly one of `name=` or `index=`.")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer(index={index}): model {self.name!r} has "
                                 f"{len(layers)} layers.")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No layer named {name!r} in model {self.name!r}. Its layers are: "
                         f"{[layer.name for layer in layers]}.")

    def count_params(self) -> int:
        """The number of scalars in `weights` (the model must be built).

        Returns:
            The parameter count, an int.

        Raises:
            ValueError: the model is not built.
        """
        if not self.built:
            raise ValueError(f"Model {self.name!r} is not built yet, so it has no weights to "
                             "count: call it on a batch or call build(input_shape) first.")
        return int(sum(v.size for v in self.weights))

    def get_quantization_layer_structure(self, mode=None):
        """The layers GPTQ/AWQ calibrate, for `quantize("gptq"|"awq")` without a
        `quantization_layer_structure` in its config: override it to return
        `{"pre_block_layers": [...], "sequential_blocks": [...]}`; None here.

        Args:
            mode: The quantization mode asking.
        """
        del mode
        return None

    def quantize(self, mode: str | None = None, config=None, filters=None, **kwargs) -> None:
        """Quantizes every layer that can be (Dense, EinsumDense, Embedding) in place.

        Every other layer (or one that cannot take `mode`) is skipped with a
        warning naming it, as in Keras. The model's compiled steps are dropped;
        call `compile()` again before training a quantized model (its trainable
        weights changed).

        Args:
            mode: "int8", "int4", "float8", "gptq" or "awq" (optional with `config`).
            config: A `loopax.quantizers.QuantizationConfig`; for "gptq"/"awq" a
                `GPTQConfig`/`AWQConfig` (its calibration data and layer
                structure: the Dense/EinsumDense layers of the sequential blocks
                are then calibrated, see `loopax.src.models.calibration`).
            filters: Only layers whose name matches this regular expression (or
                one of a list), or for which this callable returns True.
            **kwargs: `type_check` (see `Layer.quantize`).

        Raises:
            ValueError: an unknown keyword or mode, bad `filters`, or an unbuilt model.
        """
        type_check = kwargs.pop("type_check", True)
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments passed to "
                             f"{type(self).__name__}.quantize: {kwargs}")
        if filters is not None and not isinstance(filters, (str, list, tuple)) and \
                not callable(filters):
            raise ValueError("The `filters` argument must be a regex string, a list of regex "
                             f"strings, or a callable. Received: {type(filters)}")
        resolved = quantization_config.resolve(mode, config)   # bad arguments fail first
        if not self.built:
            raise ValueError(f"Cannot quantize model {self.name!r}: it is not built yet. Call "
                             "it on a batch or call build(input_shape) first.")
        structure = None
        if resolved.mode in ("gptq", "awq"):   # data and structure checked before any change
            structure = calibration.calibration_structure(self, resolved)
        changed = False
        for layer in self._layers_tree():
            if layer.layers or not _matches(layer, filters):
                continue
            try:
                layer.quantize(mode, type_check=type_check, config=config)
                changed = True
            except NotImplementedError as error:   # Keras warns for each such layer
                warnings.warn(str(error), stacklevel=2)
        if structure is not None:
            calibration.quantize_model(resolved, structure,
                                       lambda layer: _matches(layer, filters))
            calibration.warn_uncalibrated(self._layers_tree(), resolved.mode)
        if changed:   # the compiled steps were traced with the float weights
            self._new_engine()

    def summary(self, line_length: int | None = None, positions: Sequence[float] | None = None,
                print_fn: Callable[[str], Any] | None = None, expand_nested: bool = False,
                show_trainable: bool = False, layer_range: Sequence[str] | None = None) -> None:
        """Prints a table of layers, output shapes and parameter counts.

        Args:
            line_length: The table's width in characters (default 88, or 108 with a
                "Connected to" column for non-sequential graphs).
            positions: The columns' right edges, as fractions of `line_length` (all <= 1)
                or as character positions.
            print_fn: Called with each line of the table (default `print`).
            expand_nested: Also list the layers inside nested models and layers.
            show_trainable: Add a column marking trainable layers.
            layer_range: `[first, last]`, two regular expressions of layer names: show
                only the layers from the first match to the last.

        Raises:
            ValueError: the model is not built, or `layer_range` matches no layer.
        """
        summary.print_summary(self, line_length=line_length, positions=positions,
                              print_fn=print_fn, expand_nested=expand_nested,
                              show_trainable=show_trainable, layer_range=layer_range)

    # ---- saving ------------------------------------------------------------
    @in_use.exclusive("save_weights")
    def save_weights(self, filepath: str | os.PathLike, overwrite: bool = True) -> None:
        """Writes `weights` to a safetensors file (see `loopax.saving`).

        Args:
            filepath: The file to write; its folder is created if needed.
            overwrite: False refuses to replace an existing file.

        Raises:
            FileExistsError: the file exists and `overwrite=False`.
            RuntimeError: another thread is running this model's fit/evaluate/predict.
        """
        weights_file.save_weights(self, filepath, overwrite=overwrite)

    @in_use.exclusive("load_weights")
    def load_weights(self, filepath: str | os.PathLike, skip_mismatch: bool = False) -> None:
        """Reads weights written by `save_weights` (or `save`, or Keras) into this model.

        Args:
            filepath: A `.weights.h5`/safetensors file, a `.keras` archive, or an
                `OrbaxCheckpoint` folder (its latest checkpoint, or a `<folder>/<step>`).
            skip_mismatch: Load the weights that match and warn about the rest, instead of
                raising.

        Raises:
            FileNotFoundError: no file at `filepath`.
            ValueError: the file's weights do not match the model's names or shapes (and
                `skip_mismatch=False`).
            RuntimeError: another thread is running this model's fit/evaluate/predict.
        """
        weights_file.load_weights(self, filepath, skip_mismatch=skip_mismatch)

    @in_use.exclusive("save")
    def save(self, filepath: str | os.PathLike, overwrite: bool = True, zipped: bool | None = None,
             include_optimizer: bool = True, compress: bool = False, **kwargs: Any) -> None:
        """Writes the architecture and weights to one zip file.

        Read it back with `loopax.saving.load_model(filepath)`. With `include_optimizer` (as
        Keras) the optimizer's variables and the layers' SeedGenerator states are saved
        too, so the loaded model's `fit()` continues exactly.

        Args:
            filepath: The file to write (`.keras`).
            overwrite: False refuses to replace an existing file.
            zipped: Only None/True: loopax writes the zip format.
            include_optimizer: Also save the optimizer's state.
            compress: Deflate the weights and optimizer state in the zip (a smaller
                file, several times slower to write: float weights barely compress).
                Default False: stored as they are, as Keras does, so a save costs
                about one write of the weights. `load_model` reads both.
            **kwargs: Keras's legacy options (`save_format=`, ...) are refused, not ignored.

        Raises:
            ValueError: `zipped=False`.
            TypeError: any other keyword argument.
            RuntimeError: another thread is running this model's fit/evaluate/predict.
        """
        if zipped is False:
            raise ValueError(f"Model {self.name!r}: save(zipped=False) is not supported; "
                             "loopax writes one zip archive (leave `zipped` unset).")
        if kwargs:
            raise TypeError(f"Model {self.name!r}: save() got unsupported argument(s) "
                            f"{sorted(kwargs)}; it takes filepath, overwrite, zipped, "
                            "include_optimizer and compress.")
        model_file.save_model(self, filepath, overwrite=overwrite,
                              include_optimizer=include_optimizer, compress=compress)

    def to_json(self, **kwargs: Any) -> str:
        """The architecture (and compile arguments) as JSON, no weights.

        Read it back with `loopax.models.model_from_json`.

        Args:
            **kwargs: Passed to `json.dumps` (e.g. `indent=2`).

        Returns:
            A JSON string.
        """
        return model_file.config_to_json(self, model_file.model_config(self), **kwargs)

    # ---- config ------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments that re-create a subclassed model.

        Name, trainable, dtype and the `__init__` arguments it was called with when they
        are plain JSON values. Override it (with `from_config`) when `__init__` takes
        other objects.

        Returns:
            A JSON-serializable dict.
        """
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        auto = getattr(self, "_auto_config", None)
        if auto is not None:
            config = {k: v for k, v in config.items() if _accepts(type(self), k)}
            config.update(auto)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Model:
        """Re-creates a model from `get_config()`'s dict.

        A functional config (layers and their connections) rebuilds the graph; any other
        config is passed to the constructor.

        Args:
            config: The dict `get_config` returned.
            custom_objects: `{name: class or function}` for custom layers in the config.

        Returns:
            A new model of class `cls`.

        Raises:
            TypeError: the constructor does not accept the config.
        """
        from loopax.src.models import functional
        if functional.is_functional_config(config) and _revivable_as_functional(cls):
            return functional.functional_from_config(cls, config, custom_objects)
        try:
            return cls(**config)
        except TypeError as e:
            raise TypeError(
                f"Could not re-create {cls.__name__} from its config {config}: {e}. "
                f"Give {cls.__name__} a get_config() returning its __init__ arguments "
                "(and a from_config() if they are not plain values).") from e


def _capture_init_args(cls, args, kwargs):
    """The `__init__` arguments as a dict, if all are JSON values (else None)."""
    init = cls.__init__
    if init is Model.__init__:
        return None
    try:
        bound = inspect.signature(init).bind(None, *args, **kwargs)
    except TypeError:
        return None
    captured = {}
    for key, value in list(bound.arguments.items())[1:]:
        kind = inspect.signature(init).parameters[key].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            captured.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                return None
        else:
            captured[key] = value
    return captured if _is_json_able(captured) else None


def _revivable_as_functional(cls) -> bool:
    """Whether `cls(inputs=..., outputs=..., name=...)` re-creates a functional
    model of class `cls` (its __init__ is Model's/Functional's or passes
    `*args, **kwargs` through)."""
    from loopax.src.models.functional import Functional
    cls = getattr(cls, "_functional_base", cls)
    if cls.__init__ in (Model.__init__, Functional.__init__):
        return True
    kinds = {p.kind for p in inspect.signature(cls.__init__).parameters.values()}
    return {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD} <= kinds


def _accepts(cls, key) -> bool:
    params = inspect.signature(cls.__init__).parameters
    return key in params or any(p.kind is inspect.Parameter.VAR_KEYWORD
                                for p in params.values())


def _is_shape(value) -> bool:
    return isinstance(value, (list, tuple)) and all(
        d is None or isinstance(d, int) for d in value)


def _zeros_like_shapes(shapes):
    if _is_shape(shapes):
        return jnp.zeros(tuple(1 if d is None else d for d in shapes), dtypes.floatx())
    if isinstance(shapes, dict):
        return {k: _zeros_like_shapes(v) for k, v in shapes.items()}
    if isinstance(shapes, (list, tuple)):
        return type(shapes)(_zeros_like_shapes(s) for s in shapes)
    raise ValueError(f"build(input_shape=...) takes a shape such as (None, 784), or a "
                     f"list/dict of shapes; got {shapes!r}.")


def _matches(layer, filters) -> bool:
    """Whether `Model.quantize(filters=...)` selects `layer` (None: every layer)."""
    if filters is None:
        return True
    if callable(filters):
        return bool(filters(layer))
    patterns = [filters] if isinstance(filters, str) else filters
    return any(re.search(pattern, layer.name) for pattern in patterns)
