"""`keras.preprocessing.sequence`."""

from loopax.src.utils.sequence_utils import pad_sequences

__all__ = ["pad_sequences"]
