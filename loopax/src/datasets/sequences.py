"""The word-index processing `imdb` and `reuters` share (Keras's conventions):
shift every index by `index_from`, prepend `start_char`, drop sequences of
`maxlen` or more, and replace indices outside `[skip_top, num_words)` by `oov_char`."""

from __future__ import annotations

import numpy as np


def shift_and_start(sequences, start_char, index_from):
    """Each sequence's indices plus `index_from`, after `start_char` (if not None)."""
    head = [] if start_char is None else [start_char]
    return [head + [w + index_from for w in seq] for seq in sequences]


def drop_long(maxlen, sequences, labels):
    """The sequences shorter than `maxlen` (strictly) and their labels."""
    kept = [i for i, seq in enumerate(sequences) if len(seq) < maxlen]
    return [sequences[i] for i in kept], [labels[i] for i in kept]


def limit_vocabulary(sequences, num_words, skip_top, oov_char):
    """Indices outside `[skip_top, num_words)` become `oov_char` (or are removed if
    it is None); `num_words=None` keeps everything up to the largest index."""
    if not num_words:
        num_words = max(max(seq) for seq in sequences if seq)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in seq]
                for seq in sequences]
    return [[w for w in seq if skip_top <= w < num_words] for seq in sequences]


def object_array(sequences):
    """A 1-D object array of lists (NumPy would make a 2-D array of equal-length lists)."""
    out = np.empty(len(sequences), dtype=object)
    out[:] = sequences
    return out
