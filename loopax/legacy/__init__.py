"""Keras 2 compatibility: `loopax.legacy.saving` (Keras's `keras.legacy`)."""

from loopax.legacy import saving
