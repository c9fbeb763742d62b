"""Keras 2's optimizers (Keras's `keras.optimizers.legacy`): each name raises the
ImportError Keras 3 raises when created; use `loopax.optimizers` instead."""

from loopax.src.optimizers.legacy import LegacyOptimizer as Adagrad
from loopax.src.optimizers.legacy import LegacyOptimizer as Adam
from loopax.src.optimizers.legacy import LegacyOptimizer as Ftrl
from loopax.src.optimizers.legacy import LegacyOptimizer as Optimizer
from loopax.src.optimizers.legacy import LegacyOptimizer as RMSprop
from loopax.src.optimizers.legacy import LegacyOptimizer as SGD
