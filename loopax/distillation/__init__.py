"""Knowledge distillation (Keras names): `Distiller` trains a student to match a frozen
teacher with `LogitsDistillation` / `FeatureDistillation` losses (or your own
`DistillationLoss`)."""

from loopax.src.distillation import (
    DistillationLoss,
    Distiller,
    FeatureDistillation,
    LogitsDistillation,
)
