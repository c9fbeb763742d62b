"""`DTypePolicy`: the dtypes a layer computes in and keeps its weights in.

A policy is named by a dtype ("float32", "bfloat16": both dtypes alike) or
by "mixed_float16" / "mixed_bfloat16" (compute in float16 / bfloat16, keep
float32 weights). Every layer has one (`layer.dtype_policy`; its `dtype=`
argument accepts a policy or a name); layers created without one take the
global policy (`set_dtype_policy`, Keras's legacy name `set_global_policy`),
which defaults to `floatx()`.

What a layer does with its policy (loopax.src.layers.layer): float inputs
are cast to `compute_dtype`, weights are created in `variable_dtype`, and
while its `call` runs float weights read as `compute_dtype` (autocasting;
gradients flow back to the float32 weights through the cast).
"""

from __future__ import annotations

import threading

import jax.numpy as jnp

from loopax.src import dtypes

_MIXED = {"mixed_float16": ("float16", "float32"),
          "mixed_bfloat16": ("bfloat16", "float32")}


class DTypePolicy:
    """A layer's compute and variable dtypes, from a policy name.

    Args:
        name: "mixed_float16", "mixed_bfloat16", or a dtype name such as
            "float32" (both dtypes alike). None: the global policy's name.
    """

    def __init__(self, name=None):
        if name is None:
            name = dtype_policy().name
        if not isinstance(name, str):
            raise TypeError(
                f"DTypePolicy: `name` must be a string such as 'mixed_bfloat16' or "
                f"'float32', got {name!r} ({type(name).__name__}).")
        self._name = name
        self._compute_dtype, self._variable_dtype = _parse(name)
        # Looked up on every layer call: computed once.
        self.compute_np_dtype = jnp.dtype(self._compute_dtype)
        self.computes_in_float = dtypes.is_float(self._compute_dtype)

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype of a layer's inputs, outputs and arithmetic."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype a layer creates its weights in."""
        return self._variable_dtype

    @property
    def quantization_mode(self):
        """Always None: loopax has no quantized policies."""
        return None

    @property
    def is_mixed(self) -> bool:
        return self._compute_dtype != self._variable_dtype

    def get_config(self) -> dict:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other._name == self._name

    def __hash__(self):
        return hash(("DTypePolicy", self._name))

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'


# Keras's legacy name (`keras.mixed_precision.Policy`).
Policy = DTypePolicy


def _parse(name):
    if name in _MIXED:
        return _MIXED[name]
    try:
        dtype = dtypes.standardize(name)
    except TypeError:
        dtype = None
    if dtype is None or not (dtypes.is_float(dtype) or dtypes.is_int(dtype)
                             or dtype == "bool"):
        raise ValueError(
            f"Unknown dtype policy {name!r}. Use 'mixed_float16', 'mixed_bfloat16' or "
            "the name of a dtype such as 'float32' or 'bfloat16'.")
    return dtype, dtype


class _Global(threading.local):
    policy = None


_global = _Global()


def set_dtype_policy(policy):
    """Sets the policy of layers created without `dtype=` (a DTypePolicy or
    its name, e.g. "mixed_bfloat16"); None goes back to `floatx()`.

    Args:
        policy: A DTypePolicy, a policy name ("float32", "mixed_float16",
            "mixed_bfloat16", ...), or None.

    Raises:
        ValueError: `policy` is neither a name nor a DTypePolicy, or an unknown name.
    """
    if policy is not None and not isinstance(policy, DTypePolicy):
        if not isinstance(policy, str):
            raise ValueError(
                "set_dtype_policy: pass a policy name such as 'mixed_bfloat16' or a "
                f"DTypePolicy; got {policy!r} ({type(policy).__name__}).")
        policy = DTypePolicy(policy)
    _global.policy = policy


def dtype_policy() -> DTypePolicy:
    """Returns the global policy (a `DTypePolicy(floatx())` unless `set_dtype_policy`
    set one)."""
    policy = _global.policy
    return policy if policy is not None else DTypePolicy(dtypes.floatx())


# Keras's legacy names (`keras.mixed_precision.set_global_policy`, `global_policy`).
set_global_policy = set_dtype_policy
global_policy = dtype_policy


def get(identifier) -> DTypePolicy:
    """A policy from None (the global one), a DTypePolicy, its name, a dtype,
    or a Keras config dict `{"class_name": "DTypePolicy", "config": {...}}`.

    Args:
        identifier: None, a DTypePolicy, a policy name, a dtype, or a config dict.

    Returns:
        A DTypePolicy (`identifier` itself when it is one).

    Raises:
        ValueError: `identifier` cannot be interpreted.
    """
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict) and "name" in identifier.get("config", {}):
        return DTypePolicy(identifier["config"]["name"])
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    try:
        return DTypePolicy(dtypes.standardize(identifier))
    except TypeError:
        raise ValueError(
            f"Could not interpret dtype policy {identifier!r}: pass a policy name such "
            "as 'mixed_bfloat16', a dtype, or a DTypePolicy.") from None
