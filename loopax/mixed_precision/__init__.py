"""Mixed precision (Keras names): dtype policies and loss scaling.

    loopax.mixed_precision.set_global_policy("mixed_bfloat16")
"""

from loopax.src.mixed_precision import (
    DTypePolicy,
    Policy,
    dtype_policy,
    global_policy,
    set_dtype_policy,
    set_global_policy,
)
from loopax.src.optimizers.loss_scale_optimizer import LossScaleOptimizer

__all__ = ["DTypePolicy", "LossScaleOptimizer", "Policy", "dtype_policy", "global_policy",
           "set_dtype_policy", "set_global_policy"]
