"""`Optimizer`: Keras's optimizer API over optax update math.

State. Everything an optimizer remembers is a non-trainable `Variable`;
`optimizer.variables` lists them in this documented order:

1. `iterations` (int32, the number of updates applied),
2. `learning_rate` (float32), when the learning rate is a number,
3. the optax state, one Variable per leaf of `transform.init(params)` in
   JAX's flattening order (for Adam: every `momentum`, then every
   `velocity`), named like Keras: `adam/dense_kernel_momentum`,
4. gradient accumulators, then EMA averages, when enabled,
5. variables a Keras-style subclass adds with `add_variable`.

The update. `apply(grads, variables)` is ordinary stateful code: it reads
Variables (`.value`, which a `StateScope` can substitute) and assigns them.
`stateless_apply` runs that same code inside a `StateScope` mapping the
optimizer's and the model's Variables to the given values and reads the
results back. Called eagerly (no scope, no tracers), `apply` runs that
stateless function through a cached `jax.jit`, so a tape-style training
loop pays one compiled call per step. Because the learning rate is a
Variable read inside the update, `optimizer.learning_rate = x` takes effect
without recompiling.

The math of a subclass is an optax `GradientTransformation` (its
`_transform()`); its `update` receives the extra keyword arguments
`learning_rate` (the current rate) and `step` (`iterations` before this
update), which plain optax transforms ignore (`optax.chain` drops them).

Around that math, one call runs Keras's order of operations, each concern
in its own module: unscale (`loss_scale_factor`) -> accumulate
(`accumulation.py`) -> clip (`clipping.py`) -> decay the weights
(`weight_decay.py`) -> update -> moving average (`ema.py`) -> count ->
constraints.
"""

from __future__ import annotations

import collections
import inspect
import warnings
from typing import Any, Callable, Iterable, MutableMapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.extend.core import Literal

from loopax.src import dtypes, initializers
from loopax.src.api_export import export
from loopax.src.array_types import Array, ArrayLike, DTypeLike
from loopax.src.distribution import placement
from loopax.src.module import CREATED_VARIABLES, created_variables, owned, track_created
from loopax.src.naming import name_scope, unique_name
from loopax.src.optimizers import accumulation, clipping, ema, schedules
from loopax.src.optimizers.slot_names import slot_names, unique_keys
from loopax.src.optimizers.state_cond import assign_cond
from loopax.src.optimizers.weight_decay import DecayExclusions, decayed
from loopax.src.state import Variable, active_scope, check_values_match, notify_built, pure, tracing
from loopax.src.tensor import unwrap

_BASE_ARGS = ("learning_rate", "weight_decay", "clipnorm", "clipvalue", "global_clipnorm",
              "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
              "gradient_accumulation_steps", "name")


def scale_by_learning_rate() -> optax.GradientTransformation:
    """optax transform: `updates * -learning_rate`, the rate read from the
    `learning_rate` extra argument of `update` (so it can change per step)."""

    def init_fn(params):
        del params
        return optax.EmptyState()

    def update_fn(updates, state, params=None, *, learning_rate, **extra):
        del params, extra
        return jax.tree.map(
            lambda g: g * jnp.asarray(-learning_rate, g.dtype), updates), state

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def _constant_state(init, params):
    """`init(params)` computed with NumPy when every output is a constant (the
    zeros or fills most optax states start from), so building an optimizer compiles
    nothing; None when an output depends on the params' values or is weakly typed
    (a NumPy array cannot carry that)."""
    closed, shapes = jax.make_jaxpr(init, return_shape=True)(params)
    if any(atom.aval.weak_type for atom in closed.jaxpr.outvars):
        return None
    values = {var: np.asarray(const) for var, const in zip(closed.jaxpr.constvars, closed.consts)}

    def read(atom):
        if isinstance(atom, Literal):
            return np.asarray(atom.val, dtype=atom.aval.dtype)
        return values.get(atom)

    for eqn in closed.jaxpr.eqns:
        rule = _CONSTANT_RULES.get(eqn.primitive.name)
        operands = [read(atom) for atom in eqn.invars]
        if rule is None or any(operand is None for operand in operands):
            return None
        (out,) = eqn.outvars
        values[out] = np.asarray(rule(*operands, **eqn.params), dtype=out.aval.dtype)
    outs = [read(atom) for atom in closed.jaxpr.outvars]
    if any(out is None for out in outs):
        return None
    return jax.tree.unflatten(jax.tree.structure(shapes), [dtypes.asarray(out) for out in outs])


def _broadcast_in_dim(operand, shape, broadcast_dimensions, **_):
    expanded = [1] * len(shape)
    for axis, size in zip(broadcast_dimensions, operand.shape):
        expanded[axis] = size
    return np.broadcast_to(operand.reshape(expanded), shape)


_CONSTANT_RULES = {
    "broadcast_in_dim": _broadcast_in_dim,
    "convert_element_type": lambda operand, new_dtype, **_: operand.astype(new_dtype),
}


_TRACER_TYPE = jax.core.Tracer


def _is_concrete_array(value: Any) -> bool:
    """Whether `value` is a concrete jax.Array (its class compared by identity: the
    per-gradient check of `apply` is on the eager hot path). The class is learnt from
    the first array seen, not at import: importing loopax must not start the backend
    (jax.distributed.initialize has to run first in a multi-process job)."""
    global _ARRAY_TYPE
    if _ARRAY_TYPE is None and isinstance(value, jax.Array) and not isinstance(
            value, _TRACER_TYPE):
        _ARRAY_TYPE = type(value)
    return type(value) is _ARRAY_TYPE


_ARRAY_TYPE: type | None = None


@export("loopax.optimizers.Optimizer")
class Optimizer:
    """Base class of loopax optimizers (Keras 3's API).

    Args:
        learning_rate: a float, a `LearningRateSchedule`, or any callable of
            the step (an optax schedule works) or of no arguments.
        weight_decay: decoupled weight decay: before each update every
            variable not excluded (`exclude_from_weight_decay`) becomes
            `var - var * weight_decay * learning_rate`.
        clipnorm: clip each gradient to this L2 norm.
        clipvalue: clip each gradient element to `[-clipvalue, clipvalue]`.
        global_clipnorm: clip all gradients jointly to this global L2 norm.
            (Only one of the three clipping arguments may be set.)
        use_ema: keep an exponential moving average of the variables, written
            into them every `ema_overwrite_frequency` steps and by
            `finalize_variable_values()`.
        ema_momentum: the average's momentum, in [0, 1] (`avg = m * avg + (1 - m) * var`).
        ema_overwrite_frequency: write the averages into the variables every this
            many steps (None: only in `finalize_variable_values`).
        loss_scale_factor: gradients are divided by it (see `scale_loss`).
        gradient_accumulation_steps: apply one update every N calls, with the
            mean of the N gradients (the other calls only add to the
            accumulators: no update runs); `iterations` and bias corrections
            count full updates, a learning-rate schedule every call (Keras's rules).
        name: prefix of the optimizer's variable paths.
        **kwargs: refused: an unknown argument raises rather than being ignored.

    Raises:
        ValueError: an unknown argument, more than one clipping argument,
            `gradient_accumulation_steps` < 2, or `ema_momentum` outside [0, 1].
    """

    # The variables it updates belong to the model, not to the optimizer.
    _untracked_attributes = frozenset({"_trainable_variables"})

    def __init__(self, learning_rate: float | schedules.LearningRateSchedule | Callable,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 use_ema: bool = False, ema_momentum: float = 0.99,
                 ema_overwrite_frequency: int | None = None,
                 loss_scale_factor: float | None = None,
                 gradient_accumulation_steps: int | None = None, name: str | None = None,
                 **kwargs: Any):
        if kwargs:
            own = [p for p in inspect.signature(type(self)).parameters if p != "kwargs"]
            raise ValueError(
                f"{type(self).__name__}: unknown argument(s) {sorted(kwargs)}. "
                f"Valid arguments: {sorted(set(own) | set(_BASE_ARGS))}.")
        owner = type(self).__name__
        clipping.check_one_clipping(owner, clipnorm, clipvalue, global_clipnorm)
        accumulation.check_steps(owner, gradient_accumulation_steps)
        if use_ema:
            ema.check_momentum(owner, ema_momentum)
        self.name = name or unique_name(type(self).__name__.lower())
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self.use_ema = bool(use_ema)
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = loss_scale_factor
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.jit_compile = True  # eager apply() through a cached jax.jit
        self.built = False
        self._variables = []
        self._trainable_variables: list[Variable] = []
        self._compiled: dict = {}
        self._warned_missing: set = set()
        self._decay_exclusions = DecayExclusions()
        with name_scope(self.name, caller=self):
            self._iterations = self._track(Variable(0, dtype="int32", trainable=False,
                                                    name="iteration"))
        self._learning_rate = None
        self._lr_takes_step = True
        if learning_rate is not None:
            self.learning_rate = learning_rate

    # ---- state -------------------------------------------------------------
    def _track(self, variable):
        track_created(self, variable)
        self._compiled.clear()
        return variable

    @property
    def _variables(self) -> list[Variable]:
        """The optimizer's state in creation order: the Variables `_track` made,
        which the ownership walk lists first (`module.CREATED_VARIABLES`)."""
        return created_variables(self)

    @_variables.setter
    def _variables(self, variables):
        self.__dict__[CREATED_VARIABLES] = list(variables)

    @property
    def variables(self) -> list[Variable]:
        """[iterations, learning_rate (if a number), *slot variables]; see the module doc.

        Found by the ownership walk, which lists the Variables the optimizer
        created first, in creation order, wherever its attributes hold them."""
        return owned(self)[0]

    @property
    def iterations(self) -> Variable | jax.Array:
        """The number of updates applied so far (an int32 Variable). With
        `gradient_accumulation_steps=N`, as in Keras, the number of full
        updates: the count of calls // N (an int32 array)."""
        if self.gradient_accumulation_steps:
            return self._update_count()
        return self._iterations

    def _update_count(self):
        """The number of full updates so far (scope-aware): the step that
        bias corrections and EMA see."""
        if self.gradient_accumulation_steps:
            return self._iterations.value // self.gradient_accumulation_steps
        return self._iterations.value

    # ---- learning rate ------------------------------------------------------
    @property
    def learning_rate(self) -> Any:
        """The learning-rate Variable (a float rate; assign to change it), or the
        schedule's value at the current step."""
        if isinstance(self._learning_rate, Variable):
            return self._learning_rate
        return self._current_learning_rate()

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self._assign_learning_rate(value)

    def _assign_learning_rate(self, value: Any) -> None:
        value = unwrap(value)
        if isinstance(value, schedules.LearningRateSchedule) or callable(value):
            self._set_schedule(value)
        elif isinstance(self._learning_rate, Variable):
            self._learning_rate.assign(value)
        elif self._learning_rate is not None:
            raise TypeError(
                f"{self.name} was created with a learning-rate schedule, so its learning "
                "rate cannot be set to a number; create the optimizer with a float "
                "`learning_rate` to make it settable.")
        else:
            try:
                value = float(np.asarray(value))
            except (TypeError, ValueError):
                raise TypeError(
                    f"{type(self).__name__}: `learning_rate` must be a float, a "
                    f"LearningRateSchedule or a callable of the step; got {value!r}."
                ) from None
            with name_scope(self.name, caller=self):
                self._learning_rate = self._track(Variable(
                    value, dtype="float32", trainable=False, name="learning_rate"))

    def _set_schedule(self, schedule):
        if isinstance(self._learning_rate, Variable):
            self._variables.remove(self._learning_rate)
        self._learning_rate = schedule
        self._lr_takes_step = True
        if not isinstance(schedule, schedules.LearningRateSchedule):
            try:
                params = inspect.signature(schedule).parameters.values()
                self._lr_takes_step = any(
                    p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
                    for p in params)
            except (TypeError, ValueError):
                pass
        self._compiled.clear()

    def _current_learning_rate(self):
        """The rate for this step (a float32 scalar; scope-aware)."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return lr.value
        if lr is None:
            raise ValueError(f"{self.name} has no learning rate.")
        # As Keras: a schedule sees every call, micro-steps of gradient
        # accumulation included.
        value = lr(self._iterations.value) if self._lr_takes_step else lr()
        return jnp.asarray(unwrap(value), jnp.float32)

    # ---- building -------------------------------------------------------------
    def _transform(self):
        """The optax GradientTransformation doing this optimizer's math (or None
        for a Keras-style subclass that overrides `update_step`)."""
        return None

    def build(self, var_list: Sequence[Variable]) -> None:
        """Creates the slot variables for `var_list` (the variables to train).

        Called by the first `apply`; call it yourself before `stateless_apply` or to
        restore a saved state. Does nothing once built.

        Args:
            var_list: The trainable Variables, in the order gradients will come in.

        Raises:
            TypeError: an entry is not a Variable or not of a float dtype.
        """
        if self.built:
            return
        var_list = list(var_list)
        for i, v in enumerate(var_list):
            if not isinstance(v, Variable):
                raise TypeError(
                    f"{self.name}.build: entry {i} of the variable list is a "
                    f"{type(v).__name__}, not a loopax Variable.")
            if not dtypes.is_float(v.dtype):
                raise TypeError(
                    f"{self.name}: variable {v.path!r} has dtype {v.dtype}; only float "
                    "variables can be trained. Create it with trainable=False or a "
                    "float dtype.")
        self._trainable_variables = var_list
        self._index_by_id = {id(v): i for i, v in enumerate(var_list)}
        self._keys = unique_keys([v.path.replace("/", "_") for v in var_list])
        self._tx = self._transform()
        self._slots_for: dict = {}
        if self._tx is not None:
            self._build_transform_state(var_list)
        if self.gradient_accumulation_steps:
            self._accumulators = self.add_optimizer_variables(var_list, "gradient_accumulator")
        if self.use_ema:
            # Zeros are fine: the first update sets each average to its variable.
            self._averages = self.add_optimizer_variables(var_list, "average")
        self.built = True
        notify_built(self)

    def _build_transform_state(self, var_list):
        params = collections.OrderedDict(
            (k, v._value) for k, v in zip(self._keys, var_list))
        if tracing():   # built inside a traced function: concrete slots all the same
            with jax.ensure_compile_time_eval():
                state = self._tx.init(params)
        else:   # no program where the state is constants (zeros, fills); else one
            state = _constant_state(self._tx.init, params)
            if state is None:
                state = jax.jit(self._tx.init)(params)
        leaves, treedef = jax.tree_util.tree_flatten_with_path(state)
        keypaths = [path for path, _ in leaves]
        names = slot_names(keypaths, set(self._keys), getattr(self, "_slot_aliases", {}))
        self._slot_by_keypath = {}
        reference_by_key = dict(zip(self._keys, var_list))
        with name_scope(self.name, caller=self):
            for path, name, (_, leaf) in zip(keypaths, names, leaves):
                # A slot follows the layout of the variable it belongs to.
                reference = next((reference_by_key[k.key] for k in path
                                  if getattr(k, "key", None) in reference_by_key), None)
                with (placement.replicated() if reference is None
                      else placement.layout_like(reference)):
                    var = self._track(Variable(jnp.asarray(leaf), trainable=False, name=name))
                self._slot_by_keypath[path] = var
        all_indices = tuple(range(len(var_list)))
        self._slots_for[all_indices] = (list(self._slot_by_keypath.values()), treedef)

    def _transform_slots(self, indices):
        """(slot Variables, state treedef) of the transform state for a subset
        of the variables (the subset whose gradients are not None)."""
        cached = self._slots_for.get(indices)
        if cached is None:
            params = collections.OrderedDict(
                (self._keys[i], self._trainable_variables[i]._value) for i in indices)
            shapes = jax.eval_shape(self._tx.init, params)
            leaves, treedef = jax.tree_util.tree_flatten_with_path(shapes)
            cached = ([self._slot_by_keypath[path] for path, _ in leaves], treedef)
            self._slots_for[indices] = cached
        return cached

    def add_variable(self, shape: Sequence[int], initializer: str | Callable = "zeros",
                     dtype: DTypeLike = None, name: str | None = None) -> Variable:
        """A new slot Variable (for Keras-style subclasses).

        Args:
            shape: The variable's shape.
            initializer: An initializer or its name.
            dtype: The dtype (default the float dtype).
            name: The variable's name (its path is `<optimizer name>/<name>`).

        Returns:
            The new non-trainable `Variable`, listed in `variables`.
        """
        init = initializers.get(initializer)
        with name_scope(self.name, caller=self), jax.ensure_compile_time_eval():
            value = init(tuple(shape), dtype=dtypes.standardize(dtype))
            return self._track(Variable(value, trainable=False, name=name or "variable"))

    def add_variable_from_reference(self, reference_variable: Variable, name: str | None = None,
                                    initializer: str | Callable = "zeros") -> Variable:
        """A slot Variable shaped like `reference_variable`.

        Args:
            reference_variable: The model Variable the slot belongs to; the slot takes its
                shape, dtype and layout.
            name: The slot's kind (`"momentum"`); the slot is named
                `<reference path with _>_<name>`.
            initializer: An initializer or its name.

        Returns:
            The new `Variable`.
        """
        with placement.layout_like(reference_variable):
            return self.add_variable(
                reference_variable.shape, initializer, reference_variable.dtype,
                f"{reference_variable.path.replace('/', '_')}_{name}")

    def add_optimizer_variables(self, var_list: Sequence[Variable], name: str,
                                initializer: str | Callable = "zeros") -> list[Variable]:
        """One slot Variable per variable of `var_list`.

        Args:
            var_list: The model Variables.
            name: The slots' kind, as in `add_variable_from_reference`.
            initializer: An initializer or its name.

        Returns:
            A list of new Variables, aligned with `var_list`.
        """
        return [self.add_variable_from_reference(v, name, initializer) for v in var_list]

    def _get_variable_index(self, variable):
        return self._index_by_id[id(variable)]

    # Keras-style helpers for subclasses' update_step.
    def assign(self, variable: Variable, value: ArrayLike) -> None:
        """Assigns `value` to `variable` (Keras's helper for `update_step`).

        Args:
            variable: A Variable.
            value: The new value, of its shape.
        """
        variable.assign(value)

    def assign_add(self, variable: Variable, value: ArrayLike) -> None:
        """Adds `value` to `variable` (Keras's helper for `update_step`).

        Args:
            variable: A Variable.
            value: The increment, broadcastable to its shape.
        """
        variable.assign_add(value)

    def assign_sub(self, variable: Variable, value: ArrayLike) -> None:
        """Subtracts `value` from `variable` (Keras's helper for `update_step`).

        Args:
            variable: A Variable.
            value: The decrement, broadcastable to its shape.
        """
        variable.assign_sub(value)

    def update_step(self, gradient: Array, variable: Variable, learning_rate: Array) -> None:
        """Override (with `build`) to write a Keras-style optimizer by hand.

        Args:
            gradient: The variable's gradient (clipped, no None).
            variable: The Variable to update (assign to it).
            learning_rate: The current learning rate, a float32 scalar.

        Raises:
            NotImplementedError: the subclass defines neither `_transform()` nor this.
        """
        raise NotImplementedError(
            f"{type(self).__name__} defines neither `_transform()` nor `update_step()`.")

    def _overrides_update_step(self):
        return type(self).update_step is not Optimizer.update_step

    # ---- public apply API ------------------------------------------------------
    def apply_gradients(self, grads_and_vars: Iterable[tuple[ArrayLike | None, Variable]]
                        ) -> Variable:
        """Applies `[(grad, variable), ...]`.

        Args:
            grads_and_vars: Pairs of a gradient and its Variable; None gradients are skipped.

        Returns:
            `iterations`, the update counter Variable.

        Raises:
            ValueError: no pairs are given.
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError(f"{self.name}.apply_gradients got no (gradient, variable) pairs.")
        grads, variables = zip(*grads_and_vars)
        self.apply(list(grads), list(variables))
        return self._iterations

    def apply(self, grads: Sequence[ArrayLike | None],
              trainable_variables: Sequence[Variable] | None = None) -> None:
        """Updates `trainable_variables` (default: those built with) from `grads`.

        A None gradient skips its variable for this step (with a warning).

        Args:
            grads: One gradient per variable, each of its variable's shape.
            trainable_variables: The Variables to update; default the ones the optimizer
                was built with (building it on the first call).

        Raises:
            ValueError: the gradients do not match the variables (count, shape, duplicates),
                all gradients are None, or a variable is not one the optimizer was built
                with.
            TypeError: an entry of `trainable_variables` is not a Variable.
        """
        grads, variables, indices = self._prepare(grads, trainable_variables, "apply")
        if not self._should_compile(grads):
            self._update(grads, variables)
            return
        if active_scope() is None:
            opt_values, var_values = self._own_values()
            new_vars, new_opt = self._compiled_step(indices)(opt_values, var_values, grads)
            for v, value in zip(self._trainable_variables, new_vars):
                v._write(value)
            for v, value in zip(self._variables, new_opt):
                v._write(value)
            return
        # Inside a scope holding concrete values (an eager stateless call):
        # the compiled step still applies, reading and assigning through it.
        opt_values = [v.value for v in self._variables]
        var_values = [v.value for v in self._trainable_variables]
        if not self._should_compile(opt_values + var_values):
            self._update(grads, variables)
            return
        new_vars, new_opt = self._compiled_step(indices)(opt_values, var_values, grads)
        for v, value in zip(self._trainable_variables + self._variables, new_vars + new_opt):
            v.assign(value)

    def stateless_apply(self, optimizer_variables: Sequence[ArrayLike],
                        grads: Sequence[ArrayLike | None],
                        trainable_variables: Sequence[ArrayLike]
                        ) -> tuple[list[Array], list[Array]]:
        """`apply` on values, without touching the Variables; works under `jax.jit`.

        Args:
            optimizer_variables: One value (or Variable) per `optimizer.variables` entry.
            grads: One gradient per trainable variable.
            trainable_variables: One value per variable the optimizer was built with.

        Returns:
            `(new_trainable_values, new_optimizer_values)`, two lists of arrays.

        Raises:
            ValueError: the optimizer is not built, or a list does not match in length or
                shapes.
        """
        if not self.built:
            raise ValueError(
                f"{self.name}.stateless_apply: the optimizer is not built; call "
                "`optimizer.build(model.trainable_variables)` first.")
        owner = f"{self.name}.stateless_apply"
        opt_values = [unwrap(v) for v in check_values_match(
            self._variables, optimizer_variables, "optimizer_variables", owner)]
        var_values = [unwrap(v) for v in check_values_match(
            self._trainable_variables, trainable_variables, "trainable_variables", owner)]
        grads, variables, indices = self._prepare(grads, None, "stateless_apply")
        if self._should_compile([*grads, *opt_values, *var_values]):
            new_vars, new_opt = self._compiled_step(indices)(opt_values, var_values, grads)
            return list(new_vars), list(new_opt)
        n = len(self._trainable_variables)
        _, new_values = pure(self._update, self._trainable_variables + self._variables)(
            var_values + opt_values, grads, variables)
        return new_values[:n], new_values[n:]

    def finalize_variable_values(self, var_list: Sequence[Variable]) -> None:
        """With `use_ema`, writes the moving averages into the variables.

        Args:
            var_list: The trained Variables (those the optimizer was built with).
        """
        if self.use_ema and self.built:
            for v in var_list:
                if id(v) in self._index_by_id:
                    v.assign(self._averages[self._index_by_id[id(v)]].value)

    def scale_loss(self, loss: Any) -> Any:
        """`loss * loss_scale_factor` (identity when no factor is set).

        Args:
            loss: A scalar loss.

        Returns:
            The scaled loss.
        """
        return loss if self.loss_scale_factor is None else loss * self.loss_scale_factor

    # ---- checks ------------------------------------------------------------------
    def _prepare(self, grads, trainable_variables, caller):
        """Unwraps gradients, drops None ones, checks them; builds if needed.

        Returns (grads, variables, indices into the built variable list).
        """
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                raise ValueError(
                    f"{self.name}.{caller}: pass the variables to update (the "
                    "optimizer is not built yet), or call `optimizer.build(vars)`.")
            variables = self._trainable_variables
        else:
            variables = list(trainable_variables)
            if not self.built:
                self.build(variables)
                notify_built(self)   # again after a subclass's build added its slots
        if len(grads) != len(variables):
            raise ValueError(
                f"{self.name}.{caller}: got {len(grads)} gradients for "
                f"{len(variables)} variables; pass one gradient per variable.")
        kept_grads, kept_vars, indices, missing = [], [], [], []
        index_by_id = self._index_by_id
        for i, (g, v) in enumerate(zip(grads, variables)):
            index = index_by_id.get(id(v))
            if index is None:
                self._raise_unknown(v, i, caller)
            if g is None:
                missing.append(v.path)
                continue
            if not _is_concrete_array(g):
                g = unwrap(g)
                if not hasattr(g, "shape"):
                    g = jnp.asarray(g)
            kept_grads.append(g)
            kept_vars.append(v)
            indices.append(index)
        if len(set(indices)) != len(indices):
            raise ValueError(f"{self.name}.{caller}: a variable appears more than once in "
                             f"{[v.path for v in kept_vars]}.")
        if not kept_grads:
            raise ValueError(f"{self.name}.{caller}: no gradients provided for any "
                             f"variable (all were None): {missing}.")
        if missing and tuple(missing) not in self._warned_missing:
            self._warned_missing.add(tuple(missing))
            warnings.warn(f"Gradients do not exist for variables {missing} when "
                          "minimizing the loss; they were not updated.", stacklevel=3)
        return kept_grads, kept_vars, tuple(indices)

    def _raise_unknown(self, v, i, caller):
        if not isinstance(v, Variable):
            raise TypeError(
                f"{self.name}.{caller}: trainable_variables[{i}] is a "
                f"{type(v).__name__}; pass the loopax Variables to update "
                "(to update plain arrays use `stateless_apply`).")
        raise ValueError(
            f"{self.name}: unknown variable {v.path!r}. An optimizer updates "
            "only the variables it was built with; create a new optimizer "
            "for a new set of variables.")

    # ---- the compiled eager path -------------------------------------------------
    def _should_compile(self, arrays):
        return self.jit_compile and not any(isinstance(a, _TRACER_TYPE) for a in arrays)

    def _own_values(self):
        return ([v._value for v in self._variables],
                [v._value for v in self._trainable_variables])

    def _compiled_step(self, indices):
        """jit(opt_values, var_values, grads) -> (new var values, new opt values),
        for gradients given for the variables at `indices`."""
        step = self._compiled.get(indices)
        if step is None:
            opt_vars = list(self._variables)
            all_vars = list(self._trainable_variables)
            updated = [all_vars[i] for i in indices]

            update = pure(self._update, all_vars + opt_vars)
            n = len(all_vars)

            def stateless_step(opt_values, var_values, grads):
                _, new_values = update(list(var_values) + list(opt_values), grads, updated)
                return new_values[:n], new_values[n:]

            step = self._compiled[indices] = jax.jit(stateless_step)
        return step

    # ---- the update (stateful, scope-aware) -----------------------------------------
    def _update(self, grads, variables):
        """One optimizer call, in Keras's order (module doc); reads and assigns Variables."""
        for g, v in zip(grads, variables):  # (runs once per trace when compiled)
            if tuple(g.shape) != v.shape:
                raise ValueError(
                    f"{self.name}: the gradient for variable {v.path!r} has shape "
                    f"{tuple(g.shape)} but the variable has shape {v.shape}.")
        grads = [g.astype(v.dtype) if g.dtype != v.dtype else g
                 for g, v in zip(grads, variables)]
        grads, variables = _overwrite_with_gradients(grads, variables)
        if not variables:
            return
        if self.loss_scale_factor is not None:
            grads = [g / self.loss_scale_factor for g in grads]
        if self.gradient_accumulation_steps:
            self._accumulate_or_step(grads, variables)
        else:
            self._step(grads, variables)
        if self.use_ema:
            self._update_averages()
        self._iterations.assign(self._iterations.value + 1)
        for v in variables:
            constraint = v.constraint
            if constraint is not None:
                v.assign(unwrap(constraint(v.value)))

    def _step(self, grads, variables):
        """One update: clip, decay the weights, then the transform (or update_step)."""
        learning_rate = self._current_learning_rate()
        grads = clipping.keras_clipping(self.clipnorm, self.clipvalue, self.global_clipnorm
                                        ).update(grads, optax.EmptyState())[0]
        self._apply_weight_decay(variables, learning_rate)
        if self._overrides_update_step():
            for g, v in zip(grads, variables):
                self.update_step(g, v, learning_rate)
            return
        indices = tuple(self._index_by_id[id(v)] for v in variables)
        slots, treedef = self._transform_slots(indices)
        keys = [self._keys[i] for i in indices]
        params = collections.OrderedDict((k, v.value) for k, v in zip(keys, variables))
        state = treedef.unflatten([s.value for s in slots])
        updates, new_state = self._transform_update(
            collections.OrderedDict(zip(keys, grads)), state, params,
            learning_rate, self._update_count())
        for v, key in zip(variables, keys):
            v.assign((params[key] + updates[key]).astype(v.dtype))
        for s, leaf in zip(slots, treedef.flatten_up_to(new_state)):
            s.assign(leaf)

    def _transform_update(self, grads, state, params, learning_rate, step):
        return self._tx.update(grads, state, params, learning_rate=learning_rate, step=step)

    def exclude_from_weight_decay(self, var_list: Sequence[Variable] | None = None,
                                  var_names: Sequence[str] | None = None) -> None:
        """Exempts variables from `weight_decay`.

        Call before the optimizer is built.

        Args:
            var_list: Variables to exempt.
            var_names: Strings; variables whose name matches any (`re.search`) are exempt.

        Raises:
            ValueError: the optimizer is already built.
        """
        if self.built:
            raise ValueError(
                f"{self.name}.exclude_from_weight_decay must be called before the "
                "optimizer is built (before its first apply or build).")
        self._decay_exclusions = DecayExclusions(var_list, var_names)

    def _use_weight_decay(self, variable):
        return variable not in self._decay_exclusions

    def _weight_decay_rate(self, variable):
        """The decay rate of `variable` (None: not decayed); a subclass may vary it."""
        if self.weight_decay and self._use_weight_decay(variable):
            return self.weight_decay
        return None

    def _apply_weight_decay(self, variables, learning_rate):
        for v in variables:
            rate = self._weight_decay_rate(v)
            if rate is not None:
                v.assign(decayed(v.value, rate, learning_rate))

    def _accumulate_or_step(self, grads, variables):
        """Every N-th call: update with the mean gradient and reset the
        accumulators; otherwise add the gradients to the accumulators."""
        steps = self.gradient_accumulation_steps
        accumulators = [self._accumulators[self._index_by_id[id(v)]] for v in variables]
        touched = list(variables) + [v for v in self._variables[1:]
                                     if v is not self._learning_rate]

        def update():
            sums = [a.value for a in accumulators]
            self._step(accumulation.mean_gradients(grads, sums, steps), variables)
            for a in accumulators:
                a.assign(jnp.zeros_like(a.value))

        def accumulate():
            sums = [a.value for a in accumulators]
            for a, total in zip(accumulators, accumulation.accumulated(grads, sums)):
                a.assign(total)

        assign_cond(accumulation.is_update_call(self._iterations.value, steps),
                    update, accumulate, touched)

    def _update_averages(self):
        count = self._update_count()
        for v, avg in zip(self._trainable_variables, self._averages):
            avg.assign(ema.averaged(avg.value, v.value, self.ema_momentum, count == 0))
        if self.ema_overwrite_frequency:
            overwrite = ema.overwrite_due(count, self.ema_overwrite_frequency)
            for v, avg in zip(self._trainable_variables, self._averages):
                v.assign(ema.overwritten(v.value, avg.value, overwrite))

    # ---- config ----------------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments that re-create this optimizer (no state).

        Returns:
            A JSON-serializable dict; a schedule learning rate is serialized.
        """
        lr = self._learning_rate
        if isinstance(lr, Variable):
            lr = float(lr.numpy())
        elif isinstance(lr, schedules.LearningRateSchedule):
            lr = schedules.serialize(lr)
        return dict(name=self.name, learning_rate=lr, weight_decay=self.weight_decay,
                    clipnorm=self.clipnorm, global_clipnorm=self.global_clipnorm,
                    clipvalue=self.clipvalue, use_ema=self.use_ema,
                    ema_momentum=self.ema_momentum,
                    ema_overwrite_frequency=self.ema_overwrite_frequency,
                    loss_scale_factor=self.loss_scale_factor,
                    gradient_accumulation_steps=self.gradient_accumulation_steps)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Optimizer:
        """Creates an optimizer from the dict `get_config` returned.

        Args:
            config: The constructor's keyword arguments.
            custom_objects: `{name: class}` for a custom learning-rate schedule.

        Returns:
            A new, unbuilt optimizer.
        """
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(
                config["learning_rate"], custom_objects)
        return cls(**config)

    def get_weights(self) -> list[np.ndarray]:
        """Returns the values of `variables` as NumPy arrays, in order."""
        return [v.numpy() for v in self._variables]

    def set_weights(self, weights: Sequence[ArrayLike]) -> None:
        """Assigns the values of `variables`, in order.

        Args:
            weights: One array per entry of `variables`.

        Raises:
            ValueError: the number of arrays differs.
        """
        if len(weights) != len(self._variables):
            raise ValueError(f"{self.name}.set_weights: got {len(weights)} arrays for "
                             f"{len(self._variables)} variables.")
        for v, w in zip(self._variables, weights):
            v.assign(w)

    def save_own_variables(self, store: MutableMapping[str, Any]) -> None:
        """Keras saving: `store["0"], store["1"], ...` = the variables' values.

        Args:
            store: A dict-like mapping from string keys to arrays.
        """
        for i, v in enumerate(self._variables):
            store[str(i)] = v.numpy()

    def load_own_variables(self, store: MutableMapping[str, Any]) -> None:
        """Assigns what `save_own_variables` wrote back to `variables`.

        Args:
            store: The dict-like mapping `save_own_variables` filled.

        Raises:
            ValueError: the number of arrays differs (e.g. the optimizer is not built).
        """
        if len(store.keys()) != len(self._variables):
            raise ValueError(
                f"{self.name}: the saved state has {len(store.keys())} variables but the "
                f"optimizer has {len(self._variables)}" + ("" if self.built else
                " (build it first: `optimizer.build(model.trainable_variables)`)") + ".")
        for i, v in enumerate(self._variables):
            v.assign(store[str(i)])

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name} built={self.built}>"


def _overwrite_with_gradients(grads, variables):
    """Assigns each gradient of a Variable marked `overwrite_with_gradient`
    to it (no learning rate, clipping or decay: Keras's float8 scales);
    returns the other (gradient, variable) pairs."""
    if not any(v.overwrite_with_gradient for v in variables):
        return grads, variables
    kept = []
    for g, v in zip(grads, variables):
        if v.overwrite_with_gradient:
            v.assign(g)
        else:
            kept.append((g, v))
    return [g for g, _ in kept], [v for _, v in kept]
