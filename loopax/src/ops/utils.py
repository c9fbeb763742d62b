"""Small helpers shared by the op modules."""

import functools
import inspect

import jax
import numpy as np

from loopax.src import dtypes
from loopax.src.config import image_data_format


def as_array(x):
    """`x` as a `jax.Array` (float64 NumPy input becomes float32, as JAX does)."""
    return x if isinstance(x, jax.Array) else dtypes.asarray(x)


def axis_arg(axis):
    """Keras accepts lists for axes; JAX wants hashable tuples."""
    return tuple(axis) if isinstance(axis, list) else axis


def compiled(*static_argnames):
    """Runs a composite op's pure function as one `jax.jit` call.

    Eagerly, an op then costs one dispatch instead of one per JAX operation
    inside it, and skips the Python work `jax.numpy` / `jax.nn` do per call
    (argument checks, custom_jvp tracing, einsum path search).
    `static_argnames` name the non-array arguments (axis, strides, padding,
    ...); lists and NumPy arrays given for them are made tuples so they hash.
    Inside an outer `jax.jit` the call is simply inlined. A `data_format` that
    defaults to None is made `config.image_data_format()` before the cache
    lookup, so a compiled op follows a later `set_image_data_format`.
    """
    def decorate(fn):
        jitted = jax.jit(fn, static_argnames=static_argnames)
        signature = inspect.signature(fn).parameters
        params = list(signature)
        static_positions = [params.index(n) for n in static_argnames if n in params]
        data_format_at = params.index("data_format") if "data_format" in params \
            and signature["data_format"].default is None else None

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if data_format_at is not None:
                args, kwargs = _resolve_data_format(args, kwargs, data_format_at)
            try:
                return jitted(*args, **kwargs)
            except ValueError as e:
                if "Non-hashable static arguments" not in str(e):
                    raise
            args = [_hashable(a) if i in static_positions else a for i, a in enumerate(args)]
            kwargs = {k: _hashable(v) if k in static_argnames else v for k, v in kwargs.items()}
            return jitted(*args, **kwargs)

        return call

    return decorate


def _resolve_data_format(args, kwargs, position):
    """`args`, `kwargs` with a None (or omitted) `data_format` made the global one."""
    if len(args) > position:
        if args[position] is None:
            args = args[:position] + (image_data_format(),) + args[position + 1:]
    elif kwargs.get("data_format") is None:
        kwargs = {**kwargs, "data_format": image_data_format()}
    return args, kwargs


def _hashable(x):
    if isinstance(x, np.ndarray):
        x = x.tolist()
    return tuple(_hashable(e) for e in x) if isinstance(x, (list, tuple)) else x
