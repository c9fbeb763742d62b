"""Linear-algebra ops (`keras.ops.linalg`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg

from loopax.src.array_types import Array, ArrayLike, Axis
from loopax.src.ops.utils import as_array, axis_arg, compiled
from loopax.src.tensor import op

_IMPORTED = set(globals())


@op
@compiled("ord", "axis", "keepdims")
def norm(x: ArrayLike, ord: Any = None, axis: Axis = None, keepdims: bool = False) -> Array:
    """Vector or matrix norm (NumPy's `ord` semantics); integers as floats.

    Args:
        x: Input array.
        ord: The norm's order (`None`, `'fro'`, `'nuc'`, `inf`, an int).
        axis: An int (vector norms) or a pair (matrix norms); None uses all of `x`.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The norms, a float array.
    """
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
def solve(a: ArrayLike, b: ArrayLike) -> Array:
    """x with `a @ x = b`.

    Args:
        a: Square matrices `(..., n, n)`.
        b: `(..., n)` or `(..., n, k)`.

    Returns:
        `x`, of `b`'s shape.
    """
    return jnp.linalg.solve(a, b)


@op
@compiled("lower")
def solve_triangular(a: ArrayLike, b: ArrayLike, lower: bool = False) -> Array:
    """`x` with `a @ x = b` for a triangular `a`.

    Args:
        a: Triangular matrices `(..., n, n)`.
        b: `(..., n)` or `(..., n, k)`.
        lower: Whether `a` is lower triangular.

    Returns:
        `x`, of `b`'s shape.
    """
    return jax.scipy.linalg.solve_triangular(a, b, lower=lower)


@op
@compiled("upper")
def cholesky(x: ArrayLike, upper: bool = False) -> Array:
    """Lower (or upper) Cholesky factor of a positive-definite `x`.

    Args:
        x: Positive-definite matrices `(..., n, n)`.
        upper: Return the upper factor `U` (`x = Uᵀ U`) instead of the lower `L`.

    Returns:
        `(..., n, n)` triangular factors.
    """
    lower = jnp.linalg.cholesky(x)
    return jnp.swapaxes(lower, -1, -2).conj() if upper else lower


@op
@compiled("mode")
def qr(x: ArrayLike, mode: str = "reduced") -> tuple[Array, Array]:
    """The QR decomposition `x = q @ r`.

    Args:
        x: Matrices `(..., m, n)`.
        mode: `"reduced"` (`q`: `(..., m, k)`, `k = min(m, n)`) or `"complete"`.

    Returns:
        `(q, r)`.
    """
    return jnp.linalg.qr(x, mode=mode)


@op
@compiled("full_matrices", "compute_uv")
def svd(x: ArrayLike, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """The singular value decomposition `x = u @ diag(s) @ v`.

    Args:
        x: Matrices `(..., m, n)`.
        full_matrices: Full-size `u` and `v` (else reduced to `k = min(m, n)`).
        compute_uv: Also return `u` and `v`.

    Returns:
        `(u, s, v)`, or `s` alone with `compute_uv=False`.
    """
    return jnp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)


@op
@compiled("rcond")
def lstsq(a: ArrayLike, b: ArrayLike, rcond: float | None = None) -> Array:
    """The least-squares solution of `a @ x = b`.

    Args:
        a: Matrix `(m, n)`.
        b: `(m,)` or `(m, k)`.
        rcond: Cut-off for small singular values (None: machine precision).

    Returns:
        `x`, `(n,)` or `(n, k)`.
    """
    return jnp.linalg.lstsq(a, b, rcond=rcond)[0]


def _check_matrix(x, name):
    if jnp.ndim(x) < 2:
        raise ValueError(f"{name}: `x` must have rank >= 2 (..., rows, columns), got shape "
                         f"{jnp.shape(x)}.")


@op
@compiled("rcond")
def pinv(x, rcond=None):
    """The Moore-Penrose pseudo-inverse of the last two axes, from the SVD.

    Args:
        x: Matrices `(..., m, n)`.
        rcond: Relative cut-off: singular values below `rcond` times the
            largest count as zero (None: `10 * max(m, n)` times float
            epsilon).

    Returns:
        `(..., n, m)` pseudo-inverses.

    Raises:
        ValueError: `x` has rank below 2.
    """
    _check_matrix(x, "pinv")
    return jnp.linalg.pinv(x, rtol=rcond)


@op
@compiled("tol")
def matrix_rank(x, tol=None):
    """The rank of matrices: the number of singular values above a tolerance.

    Args:
        x: Matrices `(..., m, n)`.
        tol: The absolute tolerance (None: the largest singular value times
            float epsilon times `max(m, n)`).

    Returns:
        An int32 array `(...)` of ranks.

    Raises:
        ValueError: `x` has rank below 2.
    """
    _check_matrix(x, "matrix_rank")
    return jnp.linalg.matrix_rank(x, tol=tol).astype("int32")


@op
@compiled("upper")
def cholesky_inverse(x: ArrayLike, upper: bool = False) -> Array:
    """The inverse of `A` from its Cholesky factor `x` (`A = x x^H`, or `x^H x`
    when `upper`).

    Args:
        x: Triangular factors, shape `(..., n, n)`.
        upper: `x` is upper triangular (default: lower).

    Returns:
        `A^-1`, shape `(..., n, n)`.
    """
    x = as_array(x)
    identity = jnp.broadcast_to(jnp.eye(x.shape[-1], dtype=x.dtype), x.shape)
    inverse_factor = jax.scipy.linalg.solve_triangular(x, identity, lower=not upper)
    conjugate_transpose = jnp.swapaxes(inverse_factor, -1, -2).conj()
    if upper:
        return inverse_factor @ conjugate_transpose
    return conjugate_transpose @ inverse_factor


@op
def eig(x: ArrayLike) -> tuple[Array, Array]:
    """Eigenvalues and right eigenvectors of square matrices (JAX: CPU only).

    Args:
        x: Matrices `(..., n, n)`.

    Returns:
        `(values (..., n), vectors (..., n, n))`, complex; column `i` of
        `vectors` belongs to `values[..., i]`.
    """
    return jnp.linalg.eig(as_array(x))


@op
@compiled()
def lu_factor(x: ArrayLike) -> tuple[Array, Array]:
    """LU factorization with partial pivoting, as `scipy.linalg.lu_factor`.

    Args:
        x: Matrices `(..., n, n)`, batched over leading axes.

    Returns:
        `(lu, pivots)`: L below the diagonal (unit diagonal implied) and U on
        and above it, `(..., n, n)`; the row swapped with each row, `(..., n)`.
    """
    x = as_array(x)
    factor = jax.scipy.linalg.lu_factor
    for _ in range(x.ndim - 2):
        factor = jax.vmap(factor)
    return factor(x)


def jvp(fun, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative of `fun` at `primals` along `tangents`.

    Args:
        fun: A function of arrays.
        primals: A tuple of `fun`'s arguments.
        tangents: A tuple of directions, one per primal (same shapes).
        has_aux: `fun` returns `(output, aux)`; aux is passed through.

    Returns:
        `(fun(*primals), J @ tangents)`, plus `aux` third with `has_aux`.
    """
    return jax.jvp(fun, tuple(primals), tuple(tangents), has_aux=has_aux)


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
