"""`OptimizerMap` and `MultiOptimizer`: one optimizer per group of variables
(Keras 3.15's), e.g. Adam for an encoder and SGD for the rest.

`MultiOptimizer` groups the variables at `build()` by asking its map (an
`OptimizerMap`, or any callable `variable -> optimizer`), builds each inner
optimizer on its group, and each step hands every inner optimizer the
gradients of its group. State: `variables` is `[iterations, *inner
optimizers' variables]` (Keras's order), so the fused `fit()` steps,
`stateless_apply` and the model file carry all of it.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from typing import Any

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.naming import unique_name
from loopax.src.optimizers.loss_scale_optimizer import LossScaleOptimizer
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.registry import register_optimizer


def _check_inner(optimizer, where):
    """A TypeError/ValueError unless `optimizer` can run inside a MultiOptimizer."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{where} must be a loopax Optimizer, got {type(optimizer).__name__}.")
    if isinstance(optimizer, (LossScaleOptimizer, MultiOptimizer)):
        raise ValueError(
            f"{where} is a {type(optimizer).__name__}, which cannot run inside a "
            "MultiOptimizer; use plain optimizers there (set `loss_scale_factor` on the "
            "MultiOptimizer instead of a LossScaleOptimizer).")


@export("loopax.optimizers.OptimizerMap")
class OptimizerMap(MutableMapping):
    """Variable path (or regular expression) -> optimizer, with a default.

    `map[path]` is the optimizer of an exact key, else of the one key that
    `re.fullmatch`es the path (`"encoder/.*"` covers every variable under
    `encoder`), else `default_optimizer`. Calling the map on a variable looks up
    `variable.path`.

    Args:
        default_optimizer: The optimizer of every variable no key matches.
        optimizer_map: An initial `{key: optimizer}` dict, or None.

    Raises:
        TypeError: `default_optimizer` or an entry is not an Optimizer, or
            `optimizer_map` is not a dict.
        ValueError: a lookup matches more than one pattern, or a key is set twice.
    """

    def __init__(self, default_optimizer, optimizer_map=None):
        _check_inner(default_optimizer, "OptimizerMap: `default_optimizer`")
        if optimizer_map is not None and not isinstance(optimizer_map, dict):
            raise TypeError("OptimizerMap: `optimizer_map` must be a dict {path or pattern: "
                            f"optimizer}}, got {type(optimizer_map).__name__}.")
        self._default_optimizer = default_optimizer
        self._optimizer_map = {}
        for key, optimizer in (optimizer_map or {}).items():
            self[key] = optimizer

    @property
    def default_optimizer(self) -> Optimizer:
        return self._default_optimizer

    def __getitem__(self, key):
        if key in self._optimizer_map:
            return self._optimizer_map[key]
        matching = [pattern for pattern in self._optimizer_map if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"OptimizerMap: variable {key!r} matches several patterns "
                             f"{matching}; make the patterns exclusive.")
        return self._optimizer_map[matching[0]] if matching else self._default_optimizer

    def __setitem__(self, key, optimizer):
        if not isinstance(key, str):
            raise TypeError(f"OptimizerMap: a key must be a str (a variable path or a "
                            f"pattern), got {key!r}.")
        if key in self._optimizer_map:
            raise ValueError(f"OptimizerMap: {key!r} is already mapped to "
                             f"{self._optimizer_map[key]!r}; delete it first to remap it.")
        _check_inner(optimizer, f"OptimizerMap[{key!r}]")
        self._optimizer_map[key] = optimizer

    def __delitem__(self, key):
        del self._optimizer_map[key]

    def __len__(self):
        return len(self._optimizer_map)

    def __iter__(self):
        return iter(self._optimizer_map)

    def __call__(self, variable):
        return self[variable.path]

    def get_config(self) -> dict[str, Any]:
        return {"default_optimizer": serialization.serialize(self._default_optimizer),
                "optimizer_map": serialization.serialize(self._optimizer_map)}

    @classmethod
    def from_config(cls, config: dict[str, Any],
                    custom_objects: dict[str, Any] | None = None) -> Any:
        load = lambda entry: serialization.deserialize(entry, custom_objects)
        return cls(load(config["default_optimizer"]),
                   {key: load(entry) for key, entry in config["optimizer_map"].items()})


serialization.register_builtins("optimizer", [OptimizerMap])   # MultiOptimizer's config names it


@export("loopax.optimizers.MultiOptimizer")
@register_optimizer(wrapper=True)
class MultiOptimizer(Optimizer):
    """Updates each group of variables with its own optimizer.

    Args:
        optimizer_map: An `OptimizerMap`, or a callable `variable -> optimizer`
            (called once per variable at build time; an optimizer it returns
            several times is one optimizer for all those variables).
        loss_scale_factor: Set on every inner optimizer (gradients are divided by it;
            `scale_loss` multiplies by it).
        name: Prefix of the `iterations` variable's path.

    `learning_rate` is refused (each inner optimizer has its own); reach them
    through `optimizers`. `variables` lacks the unused `learning_rate` variable
    that Keras's MultiOptimizer holds.
    """

    def __init__(self, optimizer_map, loss_scale_factor=None, name=None):
        if not callable(optimizer_map):
            raise TypeError("MultiOptimizer: `optimizer_map` must be an OptimizerMap or a "
                            "callable `variable -> optimizer`, got "
                            f"{type(optimizer_map).__name__}.")
        self._optimizer_map = optimizer_map
        self._inner_optimizers = []
        super().__init__(learning_rate=None, loss_scale_factor=loss_scale_factor,
                         name=name or unique_name("multi_optimizer"))
        if isinstance(optimizer_map, OptimizerMap):
            for optimizer in [*optimizer_map.values(), optimizer_map.default_optimizer]:
                self._add_inner(optimizer)

    def _add_inner(self, optimizer):
        if not any(optimizer is known for known in self._inner_optimizers):
            optimizer.loss_scale_factor = self.loss_scale_factor
            self._inner_optimizers.append(optimizer)
        return next(i for i, known in enumerate(self._inner_optimizers) if known is optimizer)

    @property
    def optimizers(self) -> list[Optimizer]:
        """The inner optimizers, in the order their variables are listed."""
        return list(self._inner_optimizers)

    @property
    def loss_scale_factor(self) -> float | None:
        return self.__dict__.get("_loss_scale_factor")

    @loss_scale_factor.setter
    def loss_scale_factor(self, value: float | None) -> None:
        self.__dict__["_loss_scale_factor"] = value
        for optimizer in self.__dict__.get("_inner_optimizers", []):
            optimizer.loss_scale_factor = value

    @property
    def learning_rate(self) -> Any:
        raise AttributeError("A MultiOptimizer has no learning rate of its own: read or set "
                             "it on an inner optimizer (`optimizer.optimizers[i]`).")

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if value is not None:   # the base class's constructor passes None
            raise AttributeError("A MultiOptimizer has no learning rate of its own: set it "
                                 "on an inner optimizer (`optimizer.optimizers[i]`).")

    # ---- state ----------------------------------------------------------------
    def build(self, var_list: Sequence[Any]) -> None:
        if self.built:
            return
        var_list = list(var_list)
        group_of = []
        for variable in var_list:
            optimizer = self._optimizer_map(variable)
            _check_inner(optimizer, f"{self.name}: the optimizer chosen for "
                                    f"{getattr(variable, 'path', variable)!r}")
            group_of.append(self._add_inner(optimizer))
        for index, optimizer in enumerate(self._inner_optimizers):
            group = [v for v, g in zip(var_list, group_of) if g == index]
            if group:
                optimizer.build(group)
        self._group_of = group_of
        self._trainable_variables = var_list
        self._index_by_id = {id(v): i for i, v in enumerate(var_list)}
        self._variables = [self._iterations] + [
            v for optimizer in self._inner_optimizers for v in optimizer._variables]
        self._compiled.clear()
        self.built = True

    # ---- the update -------------------------------------------------------------
    def _update(self, grads, variables):
        groups = [([], []) for _ in self._inner_optimizers]
        for g, v in zip(grads, variables):
            sub_grads, sub_vars = groups[self._group_of[self._index_by_id[id(v)]]]
            sub_grads.append(g)
            sub_vars.append(v)
        for optimizer, (sub_grads, sub_vars) in zip(self._inner_optimizers, groups):
            if sub_grads:
                optimizer._update(sub_grads, sub_vars)
        self._iterations.assign(self._iterations.value + 1)

    def finalize_variable_values(self, var_list: Sequence[Any]) -> None:
        if not self.built:
            return
        known = [v for v in var_list if id(v) in self._index_by_id]
        for index, optimizer in enumerate(self._inner_optimizers):
            optimizer.finalize_variable_values(
                [v for v in known if self._group_of[self._index_by_id[id(v)]] == index])

    # ---- config -------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        return {"optimizer_map": serialization.serialize(self._optimizer_map),
                "loss_scale_factor": self.loss_scale_factor, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any],
                    custom_objects: dict[str, Any] | None = None) -> Any:
        config = dict(config)
        config["optimizer_map"] = serialization.deserialize(config["optimizer_map"],
                                                            custom_objects)
        return cls(**config)
