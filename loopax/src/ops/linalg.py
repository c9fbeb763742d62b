"""Linear-algebra ops (`keras.ops.linalg`)."""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg

from loopax.src.ops.utils import as_array, axis_arg, compiled
from loopax.src.tensor import op

_IMPORTED = set(globals())


@op
@compiled("ord", "axis", "keepdims")
def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (NumPy's `ord` semantics); integers as floats."""
    x = as_array(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype("float32")
    return jnp.linalg.norm(x, ord=ord, axis=axis_arg(axis), keepdims=keepdims)


inv = op(compiled()(jnp.linalg.inv))
det = op(compiled()(jnp.linalg.det))
slogdet = op(compiled()(jnp.linalg.slogdet))
eigh = op(compiled()(jnp.linalg.eigh))


@op
@compiled()
def solve(a, b):
    """x with `a @ x = b`."""
    return jnp.linalg.solve(a, b)


@op
@compiled("lower")
def solve_triangular(a, b, lower=False):
    return jax.scipy.linalg.solve_triangular(a, b, lower=lower)


@op
@compiled("upper")
def cholesky(x, upper=False):
    """Lower (or upper) Cholesky factor of a positive-definite `x`."""
    lower = jnp.linalg.cholesky(x)
    return jnp.swapaxes(lower, -1, -2).conj() if upper else lower


@op
@compiled("mode")
def qr(x, mode="reduced"):
    return jnp.linalg.qr(x, mode=mode)


@op
@compiled("full_matrices", "compute_uv")
def svd(x, full_matrices=True, compute_uv=True):
    return jnp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)


@op
@compiled("rcond")
def lstsq(a, b, rcond=None):
    return jnp.linalg.lstsq(a, b, rcond=rcond)[0]


def _check_matrix(x, name):
    if jnp.ndim(x) < 2:
        raise ValueError(f"{name}: `x` must have rank >= 2 (..., rows, columns), got shape "
                         f"{jnp.shape(x)}.")


@op
@compiled("rcond")
def pinv(x, rcond=None):
    """The Moore-Penrose pseudo-inverse of the last two axes, from the SVD;
    singular values below `rcond` times the largest count as zero."""
    _check_matrix(x, "pinv")
    return jnp.linalg.pinv(x, rtol=rcond)


@op
@compiled("tol")
def matrix_rank(x, tol=None):
    """The rank of the last two axes (int32): singular values above `tol`
    (default: a few float epsilons times the largest)."""
    _check_matrix(x, "matrix_rank")
    return jnp.linalg.matrix_rank(x, tol=tol).astype("int32")


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
