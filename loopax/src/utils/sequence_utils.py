"""`pad_sequences`: a list of sequences as one padded array."""

from __future__ import annotations

import numpy as np

from loopax.src.api_export import export


@export("loopax.utils.pad_sequences")
def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre",
                  truncating="pre", value=0.0):
    """Pads (or truncates) each sequence to `maxlen` (default: the longest).

    Args:
        sequences: A list of sequences (lists or arrays; items may be arrays too).
        maxlen: The output length; None (the default) is the longest sequence's.
        dtype: The output dtype (default "int32").
        padding: "pre" (the default: pad at the start) or "post" (at the end).
        truncating: "pre" (the default: drop from the start) or "post" (from the end).
        value: The padding value (default 0.0).

    Returns:
        A NumPy array of shape `(len(sequences), maxlen, *item_shape)`.

    Raises:
        ValueError: `padding` or `truncating` is not "pre" or "post".
    """
    for arg, val in (("padding", padding), ("truncating", truncating)):
        if val not in ("pre", "post"):
            raise ValueError(f"pad_sequences: {arg} must be 'pre' or 'post', got {val!r}.")
    seqs = [np.asarray(s) for s in sequences]
    lengths = [len(s) for s in seqs]
    if maxlen is None:
        maxlen = max(lengths, default=0)
    item_shape = next((s.shape[1:] for s in seqs if len(s)), ())
    out = np.full((len(seqs), maxlen) + tuple(item_shape), value, dtype=dtype)
    for i, s in enumerate(seqs):
        if not len(s) or maxlen == 0:
            continue
        s = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        if padding == "post":
            out[i, :len(s)] = s
        else:
            out[i, -len(s):] = s
    return out
