"""`tf.linalg`: matrix functions with TensorFlow's conventions (`svd` returns
(s, u, v) with v not transposed; `diag` builds a matrix, `diag_part` reads one)."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.tf_compat import core
from loopax.src.tf_compat import keras_ops as ops
from loopax.src.tf_compat.core import (  # noqa: F401
    einsum,
    eye,
    global_norm,
    matmul,
    norm,
    tensordot,
)
from loopax.src.tf_compat.nn import l2_normalize  # noqa: F401
from loopax.src.tf_compat.tensors import as_tensor, as_tensors, document_module, tf_op

inv = core._unary(ops.inv)
det = core._unary(ops.det)
cholesky = core._unary(ops.cholesky)
logdet = core._unary(ops.logdet)
pinv = core._unary(ops.pinv)


def trace(x, name=None):
    """The sum of the diagonal of each matrix (last two axes)."""
    return as_tensor(ops.trace(x, axis1=-2, axis2=-1))


def matrix_transpose(a, name=None, conjugate=False):
    """`a` with its last two axes swapped."""
    out = ops.swapaxes(a, -1, -2)
    return as_tensor(ops.conj(out) if conjugate else out)


def adjoint(matrix, name=None):
    """The conjugate transpose of each matrix."""
    return matrix_transpose(matrix, conjugate=True)


def solve(matrix, rhs, adjoint=False, name=None):
    """x with matrix @ x = rhs."""
    return as_tensor(ops.solve(matrix_transpose(matrix, conjugate=True) if adjoint else matrix,
                               rhs))


def qr(input, full_matrices=False, name=None):
    """(q, r) of `input` (reduced by default, as TensorFlow)."""
    return as_tensors(ops.qr(input, mode="complete" if full_matrices else "reduced"))


@tf_op
def _svd(tensor, full_matrices, compute_uv):
    if not compute_uv:
        return jnp.linalg.svd(tensor, compute_uv=False)
    u, s, vh = jnp.linalg.svd(tensor, full_matrices=full_matrices)
    return s, u, jnp.conj(jnp.swapaxes(vh, -1, -2))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """(s, u, v) with tensor = u @ diag(s) @ adjoint(v), as TensorFlow (v, not v^H);
    only s when `compute_uv` is False."""
    return _svd(tensor, bool(full_matrices), bool(compute_uv))


def eigh(tensor, name=None):
    """(eigenvalues ascending, eigenvectors) of a self-adjoint matrix."""
    return as_tensors(ops.eigh(tensor))


def diag(diagonal, name=None, k=0, **kwargs):
    """Matrices with `diagonal`'s last axis on their (k-th) diagonal."""
    return as_tensor(_diag(diagonal, int(k)))


@tf_op
def _diag(diagonal, k):
    return jnp.vectorize(lambda d: jnp.diag(d, k), signature="(n)->(m,m)")(diagonal)


def diag_part(input, name=None, k=0, **kwargs):
    """The (k-th) diagonal of each matrix (last two axes)."""
    return as_tensor(ops.diagonal(input, offset=int(k), axis1=-2, axis2=-1))


def band_part(input, num_lower, num_upper, name=None):
    """Each matrix with entries outside the band zeroed (-1: keep that whole triangle)."""
    return as_tensor(_band_part(input, int(num_lower), int(num_upper)))


@tf_op
def _band_part(x, num_lower, num_upper):
    rows = jnp.arange(x.shape[-2])[:, None]
    cols = jnp.arange(x.shape[-1])[None, :]
    keep = jnp.ones(x.shape[-2:], bool)
    if num_lower >= 0:
        keep &= rows - cols <= num_lower
    if num_upper >= 0:
        keep &= cols - rows <= num_upper
    return jnp.where(keep, x, jnp.zeros_like(x))


document_module(globals())
