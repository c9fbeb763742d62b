"""The type aliases loopax's signatures use (annotations only; nothing here runs code).

- `ArrayLike`: what an op or a Variable accepts as an array: a NumPy or JAX array,
  a Python scalar (or nested list), a `Variable` or a `Tensor`.
- `Array`: what an op returns: a `jax.Array` (a `Tensor` while a GradientTape records).
- `DTypeLike`: a dtype or its name (`"float32"`, `jnp.bfloat16`, `np.int32`).
- `Shape`: a shape, `None` for an unknown dimension (symbolic shapes only).
- `Axis`: one axis, a sequence of axes, or `None` for all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, Union

import jax
import numpy as np

if TYPE_CHECKING:   # the classes live in higher layers; only the annotations name them
    from loopax.src.state import Variable
    from loopax.src.tensor import Tensor

ArrayLike = Union[jax.Array, np.ndarray, np.generic, bool, int, float, complex, Sequence,
                  "Variable", "Tensor"]
Array = Union[jax.Array, "Tensor"]
DTypeLike = Union[str, np.dtype, type, None]
Shape = tuple[Union[int, None], ...]
Axis = Union[int, Sequence[int], None]
