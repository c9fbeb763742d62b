"""Public learning-rate schedules (Keras names)."""

from loopax.src.optimizers.schedules import (
                                             CosineDecay,
                                             CosineDecayRestarts,
                                             ExponentialDecay,
                                             InverseTimeDecay,
                                             LearningRateSchedule,
                                             LinearWarmup,
                                             PiecewiseConstantDecay,
                                             PolynomialDecay,
                                             deserialize,
                                             serialize,
)
