"""`loopax.ops`: Keras-3 `keras.ops` names over JAX.

Every op accepts NumPy and JAX arrays, Python scalars, Variables and
Tensors; returns a `jax.Array` (a `Tensor` while a GradientTape records it).
Sub-namespaces as in Keras: `loopax.ops.numpy`, `.nn`, `.linalg`, `.math`,
`.core`, `.image`.
"""

from loopax.src.custom_gradient import custom_gradient
from loopax.src.ops import core, image, linalg, math, nn, numpy
from loopax.src.ops.core import *  # noqa: F403
from loopax.src.ops.einops import *  # noqa: F403
from loopax.src.ops.linalg import *  # noqa: F403
from loopax.src.ops.math import *  # noqa: F403
from loopax.src.ops.nn import *  # noqa: F403
from loopax.src.ops.numpy import *  # noqa: F403
