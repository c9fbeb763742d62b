"""Knowledge distillation (Keras's `keras.distillation`)."""

from loopax.src.distillation.distillation_loss import (
    DistillationLoss,
    FeatureDistillation,
    LogitsDistillation,
)
from loopax.src.distillation.distiller import Distiller
