"""`DTypePolicy`: the dtypes a layer computes in and keeps its weights in.

A policy is named by a dtype ("float32", "bfloat16": both dtypes alike) or
by "mixed_float16" / "mixed_bfloat16" (compute in float16 / bfloat16, keep
float32 weights). Every layer has one (`layer.dtype_policy`; its `dtype=`
argument accepts a policy or a name); layers created without one take the
global policy (`set_dtype_policy`, Keras's legacy name `set_global_policy`),
which defaults to `floatx()`.

Quantized policies ("int8_from_float32", "int4/128_from_mixed_bfloat16",
"float8_from_float32") add a `quantization_mode` to a source policy's dtypes:
`layer.quantize(mode)` sets one, and a layer built with one creates its
quantized weights (loopax.src.quantizers). `DTypePolicyMap` maps layer paths
to policies.

What a layer does with its policy (loopax.src.layers.layer): float inputs
are cast to `compute_dtype`, weights are created in `variable_dtype`, and
while its `call` runs float weights read as `compute_dtype` (autocasting;
gradients flow back to the float32 weights through the cast).
"""

from __future__ import annotations

import re
import threading
from collections.abc import MutableMapping

import jax.numpy as jnp

from loopax.src import dtypes
from loopax.src.api_export import export

# The modes `quantize(mode)` knows (loopax builds int8, int4 and float8).
QUANTIZATION_MODES = ("int8", "float8", "int4", "gptq", "awq")

_MIXED = {"mixed_float16": ("float16", "float32"),
          "mixed_bfloat16": ("bfloat16", "float32")}


@export(
    "loopax.dtype_policies.DTypePolicy",
    "loopax.mixed_precision.DTypePolicy",
    "loopax.mixed_precision.Policy",
)
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
        self._set_dtypes(name)

    def _set_dtypes(self, source_name):
        self._compute_dtype, self._variable_dtype = _parse(source_name)
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
        """The quantization mode ("int8", "int4", "float8"), None if not quantized."""
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
        # A plain policy equals a FloatDTypePolicy of the same name (Keras's rule);
        # quantized ones compare their class and settings too.
        if type(self) in _PLAIN or type(other) in _PLAIN:
            return type(self) in _PLAIN and type(other) in _PLAIN and other._name == self._name
        return type(other) is type(self) and other.get_config() == self.get_config()

    def __hash__(self):
        return hash(("DTypePolicy", self._name))

    def __repr__(self):
        name = "DTypePolicy" if type(self) in _PLAIN else type(self).__name__
        return f'<{name} "{self._name}">'


# Keras's legacy name (`keras.mixed_precision.Policy`).
Policy = DTypePolicy


@export("loopax.dtype_policies.FloatDTypePolicy")
class FloatDTypePolicy(DTypePolicy):
    """Keras's older name of a plain (float) `DTypePolicy`; equal to one of the same name.

    Args:
        name: As `DTypePolicy`'s.
    """


_PLAIN = (DTypePolicy, FloatDTypePolicy)


@export("loopax.dtype_policies.QuantizedDTypePolicy")
class QuantizedDTypePolicy(DTypePolicy):
    """A quantized layer's policy: `mode` on top of the dtypes of `source_name`.

    Named `"<mode>_from_<source_name>"` (e.g. "int8_from_mixed_bfloat16").

    Args:
        mode: "int8", "int4" or "float8" ("gptq"/"awq" are accepted names).
        source_name: The policy giving the compute and variable dtypes; default
            the global policy's name.

    Raises:
        ValueError: an unknown mode, or int8 with a float16 compute dtype.
    """

    def __init__(self, mode, source_name=None):
        if source_name is None:
            source_name = dtype_policy().name
        self._set_dtypes(source_name)
        base_mode = mode.split("/")[0] if isinstance(mode, str) else mode
        if base_mode not in QUANTIZATION_MODES:
            raise ValueError(f"Invalid quantization mode. Expected one of "
                             f"{QUANTIZATION_MODES}. Received: mode={mode}")
        if self._compute_dtype == "float16" and base_mode == "int8":
            raise ValueError(f"Quantization mode='{mode}' doesn't work well with "
                             "compute_dtype='float16'. Use 'mixed_bfloat16' or 'float32'.")
        self._name = f"{mode}_from_{source_name}"
        self._source_name = source_name
        self._quantization_mode = base_mode

    @property
    def quantization_mode(self):
        return self._quantization_mode

    @property
    def source_name(self) -> str:
        return self._source_name

    def get_config(self):
        return {"mode": self._quantization_mode, "source_name": self._source_name}


@export("loopax.dtype_policies.QuantizedFloat8DTypePolicy")
class QuantizedFloat8DTypePolicy(QuantizedDTypePolicy):
    """float8 training's policy.

    Args:
        mode: "float8".
        source_name: The policy giving the dtypes (default the global one).
        amax_history_length: The length of the windows of absolute maxima the
            delayed scales come from (default 1024).

    Raises:
        TypeError: `amax_history_length` is not an int.
    """

    default_amax_history_length = 1024

    def __init__(self, mode, source_name=None, amax_history_length=1024):
        super().__init__(mode, source_name)
        if not isinstance(amax_history_length, int):
            raise TypeError("`amax_history_length` must be an integer. "
                            f"Received: amax_history_length={amax_history_length}")
        self._amax_history_length = amax_history_length

    @property
    def amax_history_length(self) -> int:
        return self._amax_history_length

    def get_config(self):
        return {**super().get_config(), "amax_history_length": self._amax_history_length}


@export("loopax.dtype_policies.Int4DTypePolicy")
class Int4DTypePolicy(QuantizedDTypePolicy):
    """int4's policy, carrying the block size.

    Args:
        mode: `"int4/<block_size>"` (-1: one scale per output channel; n > 0:
            groups of n input rows).
        source_name: The policy giving the dtypes (default the global one).

    Raises:
        ValueError: a mode not of that form, or a block size of 0 or below -1.
    """

    def __init__(self, mode, source_name=None):
        parts = mode.split("/") if isinstance(mode, str) else []
        form = "Expected format 'int4/<block_size>'"
        if len(parts) != 2 or parts[0] != "int4":
            raise ValueError(f"Invalid mode for Int4DTypePolicy. {form}, but got '{mode}'.")
        try:
            block_size = int(parts[1])
        except ValueError:
            raise ValueError(f"Invalid mode for Int4DTypePolicy. <block_size> must be an "
                             f"integer. {form}, but got '{mode}'.") from None
        if block_size < -1 or block_size == 0:
            raise ValueError("Invalid block_size in mode. Supported values are -1 "
                             "(per-channel) or a positive integer (sub-channel), but got "
                             f"{block_size} from '{mode}'.")
        super().__init__(mode, source_name)
        self.mode = "int4"
        self.block_size = block_size

    def get_config(self):
        return {**super().get_config(), "mode": f"int4/{self.block_size}"}


# The calibrated methods' arguments, checked alike by their configs
# (loopax.src.quantizers) and by the policies that rebuild saved layers.
GPTQ_WEIGHT_BITS = (2, 3, 4, 8)


def check_gptq_weight_bits(weight_bits, where="GPTQConfig"):
    if weight_bits not in GPTQ_WEIGHT_BITS:
        raise ValueError(f"{where}: unsupported weight_bits={weight_bits!r}. Supported values "
                         "are 2, 3, 4, and 8.")


def check_awq_weight_bits(weight_bits, where="AWQConfig"):
    if weight_bits != 4:
        raise ValueError(f"{where}: AWQ only supports 4-bit quantization; got "
                         f"weight_bits={weight_bits!r}.")


def check_group_size(group_size, where="GPTQConfig"):
    if not isinstance(group_size, int) or group_size < -1 or group_size == 0:
        raise ValueError(f"{where}: invalid group_size={group_size!r}. Supported values are -1 "
                         "(one group per output channel) or a positive integer (input rows "
                         "per group).")


class _CalibratedDTypePolicy(QuantizedDTypePolicy):
    """The policy of a calibrated method (`method` "gptq" or "awq"): the mode
    `"<method>/<weight_bits>/<group_size>"` carries what a saved layer is
    rebuilt with."""

    method = None

    def __init__(self, mode, source_name=None):
        kind = type(self).__name__
        parts = mode.split("/") if isinstance(mode, str) else []
        form = f"Expected format '{self.method}/<weight_bits>/<group_size>'"
        if len(parts) != 3 or parts[0] != self.method:
            raise ValueError(f"Invalid mode for {kind}. {form}, but got '{mode}'.")
        try:
            weight_bits, group_size = int(parts[1]), int(parts[2])
        except ValueError:
            raise ValueError(f"Invalid mode for {kind}. <weight_bits> and <group_size> must "
                             f"be integers. {form}, but got '{mode}'.") from None
        self._check_weight_bits(weight_bits, f"{kind}({mode!r})")
        check_group_size(group_size, f"{kind}({mode!r})")
        super().__init__(mode, source_name)
        self.mode = self.method
        self.weight_bits, self.group_size = weight_bits, group_size

    @staticmethod
    def _check_weight_bits(weight_bits, where):
        raise NotImplementedError

    def get_config(self):
        return {**super().get_config(),
                "mode": f"{self.method}/{self.weight_bits}/{self.group_size}"}


@export("loopax.dtype_policies.GPTQDTypePolicy")
class GPTQDTypePolicy(_CalibratedDTypePolicy):
    """GPTQ's policy, carrying the bits and group size a saved layer is rebuilt with.

    Args:
        mode: `"gptq/<weight_bits>/<group_size>"` (bits 2, 3, 4 or 8; group size
            -1 for one group per output channel, or a positive integer).
        source_name: The policy giving the dtypes (default the global one).

    Raises:
        ValueError: a mode not of that form, or bits or a group size out of range.
    """

    method = "gptq"

    @staticmethod
    def _check_weight_bits(weight_bits, where):
        check_gptq_weight_bits(weight_bits, where)


@export("loopax.dtype_policies.AWQDTypePolicy")
class AWQDTypePolicy(_CalibratedDTypePolicy):
    """AWQ's policy, carrying the group size a saved layer is rebuilt with.

    Args:
        mode: `"awq/4/<group_size>"` (AWQ stores 4 bits; group size -1 for one
            group per output channel, or a positive integer).
        source_name: The policy giving the dtypes (default the global one).

    Raises:
        ValueError: a mode not of that form, bits other than 4, or a bad group size.
    """

    method = "awq"

    @staticmethod
    def _check_weight_bits(weight_bits, where):
        check_awq_weight_bits(weight_bits, where)


def quantized_policy(name) -> QuantizedDTypePolicy:
    """The policy a quantized name stands for: "int8_from_float32",
    "int4/128_from_float32" (an Int4DTypePolicy), "float8_from_float32"."""
    mode, sep, source_name = name.partition("_from_")
    if not sep or "_from_" in source_name:
        raise ValueError(
            "Cannot convert `policy` into a valid pair (`mode`, `source_name`) to "
            f"instantiate `QuantizedDTypePolicy`. Received: policy={name}")
    if mode.startswith("int4/"):
        return Int4DTypePolicy(mode, source_name)
    if mode.startswith("gptq/"):
        return GPTQDTypePolicy(mode, source_name)
    if mode.startswith("awq/"):
        return AWQDTypePolicy(mode, source_name)
    if mode == "float8":
        return QuantizedFloat8DTypePolicy(mode, source_name)
    return QuantizedDTypePolicy(mode, source_name)


def _is_quantized_name(name) -> bool:
    return isinstance(name, str) and name.startswith(QUANTIZATION_MODES)


@export("loopax.dtype_policies.DTypePolicyMap")
class DTypePolicyMap(DTypePolicy, MutableMapping):
    """Layer paths (or regular expressions over them) mapped to policies;
    a path that matches no key gets `default_policy`.

    A key is first matched exactly, then every key is tried as a regular
    expression (`re.fullmatch`); a path matching two patterns is an error.

    Args:
        default_policy: A policy or its name; None: the global policy.
        policy_map: A dict `{path: policy}`, or None.

    Raises:
        ValueError: `default_policy` is a DTypePolicyMap; TypeError:
            `policy_map` is not a dict.
    """

    def __init__(self, default_policy=None, policy_map=None):
        if isinstance(default_policy, DTypePolicyMap):
            raise ValueError("`default_policy` cannot be a `DTypePolicyMap`.")
        if policy_map is not None and not isinstance(policy_map, dict):
            raise TypeError("If specified, `policy_map` must be a dict. Received: "
                            f"policy_map={policy_map} of type {type(policy_map)}")
        self._default_policy_arg = default_policy
        self._policy_map = {key: get(value) for key, value in (policy_map or {}).items()}

    @property
    def default_policy(self) -> DTypePolicy:
        return get(self._default_policy_arg)

    @property
    def name(self) -> str:
        return f"map_{self.default_policy.name}"

    def __getattr__(self, attribute):
        # compute/variable dtypes and the cached per-call attributes: the default's.
        if attribute.startswith("__") or attribute in ("_default_policy_arg", "_policy_map"):
            raise AttributeError(attribute)
        return getattr(self.default_policy, attribute)

    @property
    def compute_dtype(self):
        return self.default_policy.compute_dtype

    @property
    def variable_dtype(self):
        return self.default_policy.variable_dtype

    @property
    def quantization_mode(self):
        return self.default_policy.quantization_mode

    @property
    def is_mixed(self):
        return self.default_policy.is_mixed

    def __getitem__(self, key):
        if key in self._policy_map:
            return self._policy_map[key]
        matching = [pattern for pattern in self._policy_map if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"Path '{key}' matches multiple dtype policy specification keys: "
                             f"{matching}. Please make sure each path only matches at most one "
                             "dtype policy specification key in the DTypePolicyMap.")
        return self._policy_map[matching[0]] if matching else self.default_policy

    def __setitem__(self, key, policy):
        if key in self._policy_map:
            raise ValueError(f"{key} already exist in the DTypePolicyMap with value "
                             f"{self._policy_map[key]}. Please make sure to not use "
                             "duplicated keys.")
        try:
            policy = get(policy)
        except Exception:
            raise ValueError("Cannot interpret the assigned value by "
                             f"`loopax.dtype_policies.get`. Received: {policy} of type "
                             f"{type(policy)}") from None
        self._policy_map[key] = policy

    def __delitem__(self, key):
        return self._policy_map.pop(key)

    def __contains__(self, key):
        return key in self._policy_map

    def __len__(self):
        return len(self._policy_map)

    def __iter__(self):
        return iter(self._policy_map)

    def __eq__(self, other):
        return (isinstance(other, DTypePolicyMap) and other.get_config() == self.get_config())

    def __hash__(self):
        return id(self)

    def __repr__(self):
        mapping = [(key, value.name) for key, value in self._policy_map.items()]
        return (f"<DTypePolicyMap default_policy={self.default_policy.name}, "
                f"mapping={mapping}>")

    def get_config(self):
        default = self._default_policy_arg
        return {"default_policy": serialize(default) if isinstance(default, DTypePolicy)
                else default,
                "policy_map": {key: serialize(value) for key, value in self._policy_map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        default = config.get("default_policy")
        return cls(default_policy=deserialize(default) if isinstance(default, dict) else default,
                   policy_map={key: deserialize(value)
                               for key, value in (config.get("policy_map") or {}).items()})


_CLASSES = {cls.__name__: cls for cls in (
    DTypePolicy, FloatDTypePolicy, QuantizedDTypePolicy, QuantizedFloat8DTypePolicy,
    Int4DTypePolicy, GPTQDTypePolicy, AWQDTypePolicy, DTypePolicyMap)}


@export("loopax.dtype_policies.serialize")
def serialize(policy) -> dict:
    """A policy as Keras serializes it.

    Args:
        policy: A `DTypePolicy` (any kind, a `DTypePolicyMap` too).

    Returns:
        `{"module", "class_name", "config", "registered_name"}`, which Keras reads.

    Raises:
        TypeError: `policy` is not a DTypePolicy.
    """
    if not isinstance(policy, DTypePolicy):
        raise TypeError(f"serialize: expected a DTypePolicy, got {policy!r} "
                        f"({type(policy).__name__}).")
    module = "keras" if type(policy) in _PLAIN else "keras.dtype_policies"
    return {"module": module, "class_name": type(policy).__name__,
            "config": policy.get_config(), "registered_name": None}


@export("loopax.dtype_policies.deserialize")
def deserialize(config, custom_objects=None) -> DTypePolicy:
    """The policy a `serialize()` dict (Keras's or loopax's) describes.

    Args:
        config: A serialized policy, or a policy name.
        custom_objects: `{class name: class}` for policy classes of your own.

    Returns:
        The `DTypePolicy`.

    Raises:
        ValueError: a class that is not a dtype policy.
    """
    if isinstance(config, str):
        return get(config)
    class_name = config.get("class_name") if isinstance(config, dict) else None
    cls = (custom_objects or {}).get(class_name) or _CLASSES.get(class_name)
    if cls is None:
        raise ValueError(f"Could not deserialize dtype policy {config!r:.200}: the class must "
                         f"be one of {sorted(_CLASSES)}.")
    return cls.from_config(config.get("config", {}))


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


@export(
    "loopax.config.set_dtype_policy",
    "loopax.mixed_precision.set_dtype_policy",
    "loopax.mixed_precision.set_global_policy",
)
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
        policy = get(policy)
    _global.policy = policy


@export(
    "loopax.config.dtype_policy",
    "loopax.mixed_precision.dtype_policy",
    "loopax.mixed_precision.global_policy",
)
def dtype_policy() -> DTypePolicy:
    """Returns the global policy (a `DTypePolicy(floatx())` unless `set_dtype_policy`
    set one)."""
    policy = _global.policy
    return policy if policy is not None else DTypePolicy(dtypes.floatx())


# Keras's legacy names (`keras.mixed_precision.set_global_policy`, `global_policy`).
set_global_policy = set_dtype_policy
global_policy = dtype_policy


@export("loopax.dtype_policies.get")
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
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if _is_quantized_name(identifier):
        return quantized_policy(identifier)
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    try:
        return DTypePolicy(dtypes.standardize(identifier))
    except TypeError:
        raise ValueError(
            f"Could not interpret dtype policy {identifier!r}: pass a policy name such "
            "as 'mixed_bfloat16', a dtype, or a DTypePolicy.") from None
