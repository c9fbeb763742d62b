"""Host-side data: `Dataset` (the `tf.data.Dataset` that `loopax.tf.data` names and the
data utilities return) and `StringTensor` (string tensors, which never enter XLA)."""
