"""ReversibleEmbedding: an Embedding that also projects hidden states back to
vocabulary logits (`reverse=True`), as Keras 3's layer of the same name."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.core.embedding import Embedding
from loopax.src.tensor import unwrap


@export("loopax.layers.ReversibleEmbedding")
class ReversibleEmbedding(Embedding):
    """Embedding lookup, or with `reverse=True` a linear map from
    `output_dim` back to `input_dim` (language-model logits).

    The reverse map uses `embeddings` transposed (tied weights, the default)
    or, with `tie_weights=False`, its own trainable `reverse_embeddings`
    `(output_dim, input_dim)`, drawn with `embeddings_initializer`. No bias.

    Input shape: indices `(batch, ...)`; with `reverse=True` hidden states
    `(batch, ..., output_dim)`.
    Output shape: `(batch, ..., output_dim)`; with `reverse=True`
    `(batch, ..., input_dim)` logits (no mask).

    Args:
        input_dim: The vocabulary size, a positive int.
        output_dim: The size of each embedding vector, a positive int.
        tie_weights: Whether the reverse map uses `embeddings` transposed (default True).
        embeddings_initializer, embeddings_regularizer, embeddings_constraint,
            mask_zero: As for `Embedding`.
        reverse_dtype: The dtype the reverse matmul runs in (inputs and kernel
            are cast to it), or None for the compute dtype.
        logit_soft_cap: If set, reverse logits become
            `tanh(logits / logit_soft_cap) * logit_soft_cap`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, input_dim, output_dim, tie_weights=True,
                 embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, reverse_dtype=None,
                 logit_soft_cap=None, **kwargs):
        super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                         embeddings_regularizer=embeddings_regularizer,
                         embeddings_constraint=embeddings_constraint, mask_zero=mask_zero,
                         **kwargs)
        self.tie_weights = tie_weights
        self.reverse_dtype = reverse_dtype
        self.logit_soft_cap = logit_soft_cap
        self._reverse_call = False

    def build(self, input_shape=None):
        super().build(input_shape)
        if not self.tie_weights:
            self.reverse_embeddings = self.add_weight(
                (self.output_dim, self.input_dim), self.embeddings_initializer,
                name="reverse_embeddings")

    def __call__(self, *args, reverse=False, **kwargs):
        # `compute_mask` does not see call arguments: a reverse call has no mask.
        outer, self._reverse_call = self._reverse_call, bool(reverse)
        try:
            return super().__call__(*args, reverse=reverse, **kwargs)
        finally:
            self._reverse_call = outer

    def call(self, inputs, reverse=False):
        if not reverse:
            return super().call(inputs)
        hidden = unwrap(inputs)
        if self.tie_weights:
            kernel = jnp.transpose(self.embeddings.value)
        else:
            kernel = self.reverse_embeddings.value
        if self.reverse_dtype is not None:
            hidden, kernel = hidden.astype(self.reverse_dtype), kernel.astype(self.reverse_dtype)
        logits = jnp.matmul(hidden, kernel)
        if self.logit_soft_cap is not None:
            logits = jnp.tanh(logits / self.logit_soft_cap) * self.logit_soft_cap
        return logits

    def compute_mask(self, inputs, mask=None):
        return None if self._reverse_call else super().compute_mask(inputs, mask)

    def get_config(self):
        return {**super().get_config(), "tie_weights": self.tie_weights,
                "reverse_dtype": self.reverse_dtype, "logit_soft_cap": self.logit_soft_cap}
