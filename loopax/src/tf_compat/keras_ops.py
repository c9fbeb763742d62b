"""Every loopax op under its Keras name (what `loopax.ops` exports), for the
tf_compat modules (src modules do not import the public package)."""

from loopax.src.ops.core import *  # noqa: F403
from loopax.src.ops.linalg import *  # noqa: F403
from loopax.src.ops.math import *  # noqa: F403
from loopax.src.ops.nn import *  # noqa: F403
from loopax.src.ops.numpy import *  # noqa: F403
