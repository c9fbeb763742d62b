"""Public optimizers API (Keras names): `loopax.optimizers.Adam`, `get`, `schedules`."""

from loopax.optimizers import legacy, schedules
from loopax.src.optimizers import (
                                   ALL_OPTIMIZERS,
                                   SGD,
                                   Adadelta,
                                   Adafactor,
                                   Adagrad,
                                   Adam,
                                   Adamax,
                                   AdamW,
                                   Ftrl,
                                   Lamb,
                                   Lion,
                                   LossScaleOptimizer,
                                   MultiOptimizer,
                                   Muon,
                                   Nadam,
                                   Optax,
                                   Optimizer,
                                   OptimizerMap,
                                   RMSprop,
                                   ScheduleFreeAdamW,
                                   deserialize,
                                   get,
                                   serialize,
)
