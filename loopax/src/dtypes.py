"""Dtype names, the default float type, and host data to arrays of a dtype."""

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export

_FLOATX = "float32"

# The fuzz factor Keras calls `epsilon()`: keeps probabilities off 0 and 1 in
# log-losses, and norms off 0 in constraints.
EPSILON = 1e-7


@export("loopax.backend.floatx", "loopax.config.floatx")
def floatx() -> str:
    """Returns the default float dtype name for weights and inputs ("float32" unless
    `set_floatx` changed it)."""
    return _FLOATX


@export("loopax.backend.set_floatx", "loopax.config.set_floatx")
def set_floatx(dtype: str):
    """Sets the default float dtype (`floatx()`) of weights and inputs created from now on.

    Args:
        dtype: A dtype or its name, e.g. "float32", "bfloat16", "float16".

    Raises:
        TypeError: `dtype` is not a dtype.
    """
    global _FLOATX
    _FLOATX = standardize(dtype)


def standardize(dtype) -> str:
    """A dtype's canonical string name ("float32", "int32", ...).

    Args:
        dtype: A NumPy/JAX dtype, its name, an array (its dtype is taken), a Keras 3
            `DTypePolicy` config dict, or None (`floatx()`).

    Returns:
        The name, a str.

    Raises:
        TypeError: `dtype` is not a dtype.
    """
    if dtype is None:
        return floatx()
    if isinstance(dtype, dict) and dtype.get("class_name") == "DTypePolicy":
        dtype = dtype["config"]["name"]  # a Keras 3 config's dtype policy
    if hasattr(dtype, "dtype") and not isinstance(dtype, type):
        dtype = dtype.dtype
    try:
        return jnp.dtype(dtype).name
    except TypeError:
        raise TypeError(f"Unknown dtype {dtype!r}. Use a NumPy/JAX dtype or its name, "
                        "e.g. 'float32', 'int32', 'bfloat16'.") from None


@export("loopax.backend.is_float_dtype")
def is_float(dtype) -> bool:
    """Whether `dtype` is a floating-point dtype (bfloat16 included).

    Args:
        dtype: A dtype or its name.

    Returns:
        A Python bool.
    """
    return jnp.issubdtype(jnp.dtype(dtype), jnp.floating)


@export("loopax.backend.is_int_dtype")
def is_int(dtype) -> bool:
    """Whether `dtype` is an integer dtype (signed or unsigned).

    Args:
        dtype: A dtype or its name.

    Returns:
        A Python bool.
    """
    return jnp.issubdtype(jnp.dtype(dtype), jnp.integer)


# Python scalars NumPy converts to these dtypes exactly as JAX does: a bool or an int
# is exact (or refused alike when out of range), a float rounds once to the nearest.
_EXACT_FROM_PYTHON = {
    bool: {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "uint8", "uint16",
                                 "uint32", "float32")},
    int: {np.dtype(t) for t in ("int8", "int16", "int32", "uint8", "uint16", "uint32")},
    float: {np.dtype("float32")},
}


def asarray(value, dtype=None) -> jax.Array:
    """`jnp.asarray(value, dtype)` for a NumPy array, without a compile.

    jax 0.10 casts a NumPy array with NumPy, then runs a small compiled program on the
    result (`lax.stage`, or `convert_element_type` to the dtype it already has), compiled
    again for every new shape: about 20 ms each, one per weight in a `set_weights` or
    `load_weights`. Here the same NumPy cast makes the same array, and `jax.device_put`
    moves it; so does a Python scalar with a dtype it converts to exactly. Other values
    (lists, JAX arrays, tracers) and 64-bit dtypes JAX does not enable go to `jnp.asarray`.
    """
    if (dtype is not None and type(value) in (bool, int, float)
            and jnp.dtype(dtype) in _EXACT_FROM_PYTHON[type(value)]):
        value = np.asarray(value, dtype)   # `Variable(0, dtype="int32")`: one cast, exact
    if not isinstance(value, (np.ndarray, np.generic)) or value.dtype.kind not in "biuf":
        return jnp.asarray(value, dtype=dtype)
    target = jax.dtypes.canonicalize_dtype(value.dtype if dtype is None else np.dtype(dtype))
    if dtype is not None and target != np.dtype(dtype):
        return jnp.asarray(value, dtype=dtype)   # a 64-bit dtype without x64: JAX warns
    return jax.device_put(np.asarray(value, dtype=target))
