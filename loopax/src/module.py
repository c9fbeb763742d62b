"""`Module`: an object that tracks the Variables and sub-Modules it holds.

Tracking needs no registration: a Module finds its state by walking its
attributes (in assignment order), descending into lists, tuples and dicts.
The order is stable and documented:

1. the Variables the object created itself, in creation order: the list in
   its `_created_variables` attribute (`CREATED_VARIABLES`), which
   `Layer.add_weight`, `Metric.add_variable` and `Optimizer._track`
   (iterations, learning rate, slots) fill through `track_created`;
2. then the other Variables held in its attributes, in attribute order (a
   list keeps its order);
3. then each sub-Module's variables, recursively, in attribute order.

So a layer lists its weights in the order it created them, wherever (and
in whatever order) it stores them. A wrapper that holds a Variable it did
not create, and wants it listed in a fixed place among its own, records it
the same way (`SpectralNormalization`'s kernel). A Variable reached twice
is listed once. `Layer` and `Model` are Modules.
"""

from __future__ import annotations

from typing import Any, Callable

from loopax.src.naming import unique_name
from loopax.src.state import Variable

# Values that can hold nothing trackable: skipped at once (the walk is on the
# path of every `model.trainable_variables`).
_ATOMS = (str, int, float, bool, type(None), bytes, type)


def is_trackable(value) -> bool:
    """Whether the walk lists `value` as something an object owns: a Module, or
    another object that holds Variables (`_loopax_trackable`, e.g. SeedGenerator)."""
    return isinstance(value, Module) or getattr(value, "_loopax_trackable", False)


# The attribute holding, in creation order, the Variables an object created
# itself; the walk visits it before every other attribute.
CREATED_VARIABLES = "_created_variables"


def created_variables(obj) -> list[Variable]:
    """The list of Variables `obj` created (its `_created_variables`
    attribute, made empty on first use), in creation order."""
    return obj.__dict__.setdefault(CREATED_VARIABLES, [])


def track_created(obj, variable: Variable) -> Variable:
    """Records `variable` as created by `obj`, so the walk lists it among
    `obj`'s own Variables, before those merely held in attributes, in
    creation order. Returns `variable`."""
    created_variables(obj).append(variable)
    return variable


def tracked_items(obj) -> list[tuple[str, Any]]:
    """`obj`'s attributes the walk visits: its created Variables
    (`CREATED_VARIABLES`) first, then the others in assignment order, all but
    the names in its class's `_untracked_attributes`."""
    skip = getattr(type(obj), "_untracked_attributes", frozenset())
    attributes = vars(obj)
    if CREATED_VARIABLES not in attributes:
        return [(k, v) for k, v in attributes.items() if k not in skip]
    return [(CREATED_VARIABLES, attributes[CREATED_VARIABLES])] + [
        (k, v) for k, v in attributes.items() if k not in skip and k != CREATED_VARIABLES]


def _collect(value, seen, variables, found, wanted=is_trackable):
    """Appends the Variables in `value` to `variables` and the objects `wanted`
    accepts to `found`, descending into lists, tuples and dicts; ids in `seen`
    are skipped (and added)."""
    if isinstance(value, _ATOMS):
        return
    if isinstance(value, Variable):
        if id(value) not in seen:
            seen.add(id(value))
            variables.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, seen, variables, found, wanted)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, seen, variables, found, wanted)
    elif wanted(value):
        if id(value) not in seen:
            seen.add(id(value))
            found.append(value)


def owned(obj, seen: set | None = None, wanted: Callable = is_trackable
          ) -> tuple[list[Variable], list]:
    """What `obj` holds directly: (its Variables, the objects `wanted` accepts):
    the Variables it created first, in creation order, then the rest in
    attribute order (see the module doc). This one walk is how Modules, Layers, Metrics,
    Optimizers, Trainers and the weights files find what an object owns."""
    seen = {id(obj)} if seen is None else seen
    variables, found = [], []
    for _, value in tracked_items(obj):
        _collect(value, seen, variables, found, wanted)
    return variables, found


class Module:
    """A container of Variables and sub-Modules, like `tf.Module`.

    Subclass it, assign `loopax.Variable`s and other Modules as attributes,
    and read `.variables`, `.trainable_variables`, `.submodules`.

    Args:
        name: The module's name; defaults to a unique snake_case form of the class name.
    """

    # Attribute names the ownership walk never visits: references up or
    # sideways that would list another object's state as this one's.
    # Subclasses extend it (`Base._untracked_attributes | {...}`).
    _untracked_attributes: frozenset[str] = frozenset()

    def __init__(self, name=None):
        if name is not None:
            self.name = name
        elif not hasattr(self, "name"):
            self.name = unique_name(_snake_case(type(self).__name__))

    def _direct(self, seen):
        """(own Variables, direct sub-trackables), in attribute order."""
        return owned(self, seen)

    def _variables_and_trainability(self):
        """[(variable, trainable)], own first then sub-Modules', where a
        variable is trainable if it is and every Module holding it is
        (`layer.trainable = False` freezes a whole sub-tree)."""
        seen = {id(self)}
        out = []

        def visit(mod, parent_trainable):
            trainable = parent_trainable and getattr(mod, "trainable", True)
            if isinstance(mod, Module):
                own, subs = mod._direct(seen)
            else:  # another trackable, e.g. a SeedGenerator
                own, subs = [v for v in mod.variables if id(v) not in seen], []
                seen.update(id(v) for v in own)
            out.extend((v, trainable and v.trainable) for v in own)
            for sub in subs:
                visit(sub, trainable)
        visit(self, True)
        return out

    @property
    def variables(self) -> list[Variable]:
        """Every Variable, own first, then each sub-Module's, in attribute order."""
        return [v for v, _ in self._variables_and_trainability()]

    @property
    def trainable_variables(self) -> list[Variable]:
        """Variables that are trainable and held only by trainable Modules."""
        return [v for v, t in self._variables_and_trainability() if t]

    @property
    def non_trainable_variables(self) -> list[Variable]:
        """Variables that are not trainable or are held by a frozen Module."""
        return [v for v, t in self._variables_and_trainability() if not t]

    @property
    def submodules(self) -> list["Module"]:
        """All Modules below this one, depth first, in attribute order."""
        seen = {id(self)}
        out = []

        def visit(mod):
            _, subs = mod._direct(seen)
            for sub in subs:
                if isinstance(sub, Module):
                    out.append(sub)
                    visit(sub)
        visit(self)
        return out


def _snake_case(name: str) -> str:
    """Keras' rule: `Conv2D` -> `conv2d`, `GRUCell` -> `gru_cell`."""
    import re
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", re.sub(r"\W+", "", name))
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
