"""`Module`: an object that tracks the Variables and sub-Modules it holds.

Tracking needs no registration: a Module finds its state by walking its
attributes (in assignment order), descending into lists, tuples and dicts.
The order is stable and documented:

1. the Module's own Variables (in attribute order; a list keeps its order),
2. then each sub-Module's variables, recursively, in attribute order.

A Variable reached twice is listed once. `Layer` and `Model` are Modules.
"""

from __future__ import annotations

from loopax.src.state import Variable, unique_name

# Attributes that point back up or sideways in a graph; never walked.
_NOT_TRACKED = frozenset({
    "_inbound_nodes", "_outbound_nodes", "_call_context", "optimizer",
    "_compile_config", "compiled_loss", "compiled_metrics", "_tracker_cache",
    "history", "_trainer_state",
    "_regularized",  # (variable, regularizer) pairs: would list regularized weights first
})


# Values that can hold nothing trackable: skipped at once (the walk is on the
# path of every `model.trainable_variables`).
_ATOMS = (str, int, float, bool, type(None), bytes, type)


def _collect(value, seen, variables, modules):
    """Appends the Variables and trackables (Modules, SeedGenerators) in `value`."""
    if isinstance(value, _ATOMS):
        return
    if isinstance(value, Variable):
        if id(value) not in seen:
            seen.add(id(value))
            variables.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, seen, variables, modules)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, seen, variables, modules)
    elif isinstance(value, Module) or getattr(value, "_loopax_trackable", False):
        if id(value) not in seen:
            seen.add(id(value))
            modules.append(value)


class Module:
    """A container of Variables and sub-Modules, like `tf.Module`.

    Subclass it, assign `loopax.Variable`s and other Modules as attributes,
    and read `.variables`, `.trainable_variables`, `.submodules`.
    """

    def __init__(self, name=None):
        if name is not None:
            self.name = name
        elif not hasattr(self, "name"):
            self.name = unique_name(_snake_case(type(self).__name__))

    def _direct(self, seen):
        """(own Variables, direct sub-trackables), in attribute order."""
        vars_, mods = [], []
        for key, value in vars(self).items():
            if key not in _NOT_TRACKED:
                _collect(value, seen, vars_, mods)
        return vars_, mods

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
