"""What `loopax.tf` leaves out, and the error a TensorFlow name of it raises."""

from __future__ import annotations

_NO_RAGGED = ("loopax has no ragged or sparse tensors (XLA needs dense, static shapes): "
              "pad to a fixed length with loopax.preprocessing.sequence.pad_sequences "
              "and use a mask (layers.Masking / Embedding(mask_zero=True)), or pass a "
              "dense array.")
_NO_GRAPH = ("loopax runs TensorFlow 2 code only (eager, tf.function): there are no "
             "graphs or sessions; use tf.GradientTape for gradients and tf.function to "
             "compile.")

OUT = {
    "RaggedTensorSpec": _NO_RAGGED, "SparseTensorSpec": _NO_RAGGED,
    "compat": _NO_GRAPH, "Graph": _NO_GRAPH, "Session": _NO_GRAPH,
    "placeholder": _NO_GRAPH, "gradients": _NO_GRAPH,
}


def missing_name(name):
    """The module `__getattr__` of loopax.tf: an AttributeError naming what to use."""
    reason = OUT.get(name)
    if reason is not None:
        raise AttributeError(f"loopax.tf.{name} is not provided: {reason}")
    raise AttributeError(
        f"module 'loopax.tf' has no attribute {name!r}. loopax.tf maps the TensorFlow 2 "
        "names listed in docs/guides/migrating_from_tf_keras.md; for anything else use "
        "the loopax.ops function of the same meaning (Keras 3 names).")
