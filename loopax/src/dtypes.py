"""Dtype names and the default float type."""

import jax.numpy as jnp

_FLOATX = "float32"

# The fuzz factor Keras calls `epsilon()`: keeps probabilities off 0 and 1 in
# log-losses, and norms off 0 in constraints.
EPSILON = 1e-7


def floatx() -> str:
    """The default float dtype for weights and inputs ("float32")."""
    return _FLOATX


def set_floatx(dtype: str):
    global _FLOATX
    _FLOATX = standardize(dtype)


def standardize(dtype) -> str:
    """A dtype's canonical string name ("float32", "int32", ...)."""
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


def is_float(dtype) -> bool:
    """Whether `dtype` is a floating-point dtype (bfloat16 included).

    Args:
        dtype: A dtype or its name.

    Returns:
        A Python bool.
    """
    return jnp.issubdtype(jnp.dtype(dtype), jnp.floating)


def is_int(dtype) -> bool:
    """Whether `dtype` is an integer dtype (signed or unsigned).

    Args:
        dtype: A dtype or its name.

    Returns:
        A Python bool.
    """
    return jnp.issubdtype(jnp.dtype(dtype), jnp.integer)
