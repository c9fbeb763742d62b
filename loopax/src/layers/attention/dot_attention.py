"""`Attention` (Luong-style, dot product) and `AdditiveAttention`
(Bahdanau-style), with Keras's names, weights and masking.

Both are called on `[query, value]` or `[query, value, key]` (key defaults to
value): query `(batch, Tq, dim)`, value/key `(batch, Tv, dim)`; the output is
`(batch, Tq, dim)`, and `return_attention_scores=True` also returns the
`(batch, Tq, Tv)` attention distribution. Masks of the inputs (from
`Embedding(mask_zero=True)`, `Masking`, or `mask=[query_mask, value_mask]`)
work as in Keras: masked value steps get no attention, masked query steps
give zeros, and the query mask is the output's mask. `use_causal_mask=True`
lets position i attend only to positions <= i.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.tensor import unwrap

# What Keras subtracts from the scores of masked positions (float32).
_LARGE = 1.0e9


def _check_inputs(layer, inputs, mask=None):
    name = type(layer).__name__
    if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3:
        raise ValueError(f"{name} layer {layer.name!r} must be called on a list of inputs, "
                         f"namely [query, value] or [query, value, key]; got {inputs!r:.120}.")
    if mask is not None and (not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3):
        raise ValueError(f"{name} layer {layer.name!r}: `mask` must be a list "
                         f"[query_mask, value_mask]; got {mask!r:.120}.")


@export("loopax.layers.Attention")
class Attention(Layer):
    """Dot-product attention: `softmax(query @ key^T [* scale]) @ value`.

    Args:
        use_scale: learn a scalar `scale` multiplying the scores.
        score_mode: "dot" (`query @ key^T`) or "concat"
            (`concat_score_weight * sum(tanh(query + key))`).
        dropout: dropout rate on the attention distribution (training only).
        seed: seed of that dropout.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Call on `[query, value]` or `[query, value, key]`: query `(batch, Tq, dim)`,
    value/key `(batch, Tv, dim)`; the output is `(batch, Tq, dim)`, plus the
    `(batch, Tq, Tv)` attention distribution with `return_attention_scores=True`.
    `use_causal_mask=True` lets position i attend only to positions <= i.

    Raises:
        ValueError: an unknown `score_mode`, `dropout` outside [0, 1), or (when
            called) inputs that are not `[query, value(, key)]`.
    """

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Attention: score_mode must be 'dot' or 'concat'; got "
                             f"{score_mode!r}.")
        if not 0 <= dropout < 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1); got {dropout}.")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        self.dropout, self.seed = float(dropout), seed
        if self.dropout > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.scale = None
        self.concat_score_weight = None

    def build(self, input_shape):
        _check_inputs(self, input_shape)
        if self.use_scale:
            self.scale = self.add_weight((), "ones", name="scale")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight((), "ones", name="concat_score_weight")
        self.built = True

    def _scores(self, query, key):
        """(batch, Tq, Tv) scores."""
        if self.score_mode == "dot":
            scores = query @ jnp.swapaxes(key, -2, -1)
            return scores * self.scale.value if self.scale is not None else scores
        summed = query[..., :, None, :] + key[..., None, :, :]
        if self.scale is not None:
            summed = self.scale.value * summed
        return self.concat_score_weight.value * jnp.sum(jnp.tanh(summed), axis=-1)

    def call(self, inputs, mask=None, training=False, return_attention_scores=False,
             use_causal_mask=False):
        _check_inputs(self, inputs, mask)
        query, value = unwrap(inputs[0]), unwrap(inputs[1])
        key = unwrap(inputs[2]) if len(inputs) > 2 else value
        query_mask = unwrap(mask[0]) if mask is not None else None
        value_mask = unwrap(mask[1]) if mask is not None else None
        scores = self._scores(query, key)
        allowed = None                                  # (batch or 1, Tq or 1, Tv)
        if value_mask is not None:
            allowed = jnp.asarray(value_mask, bool)[..., None, :]
        if use_causal_mask:
            tq, tv = scores.shape[-2:]
            causal = jnp.tril(jnp.ones((tq, tv), bool))[None]
            allowed = causal if allowed is None else allowed & causal
        if allowed is not None:
            scores = jnp.where(allowed, scores, scores - _LARGE)
        weights = jax.nn.softmax(scores, axis=-1)
        attended = weights
        if training and self.dropout > 0:
            attended = random.dropout(weights, self.dropout, seed=self.seed_generator)
        output = attended @ value
        if query_mask is not None:
            output = jnp.where(jnp.asarray(query_mask, bool)[..., None], output, 0)
        if return_attention_scores:
            return output, weights
        return output

    def compute_mask(self, inputs, mask=None):
        if mask is None or mask[0] is None:
            return None
        return mask[0]

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


@export("loopax.layers.AdditiveAttention")
class AdditiveAttention(Attention):
    """Additive attention: scores `sum(scale * tanh(query + key), axis=-1)`
    with a learned per-feature `scale` (of size dim) when `use_scale`.

    Called like `Attention`: `[query, value]` or `[query, value, key]`, query
    `(batch, Tq, dim)`, value/key `(batch, Tv, dim)` -> `(batch, Tq, dim)`.

    Args:
        use_scale: Learn `scale` (default True); without it the scores are
            `sum(tanh(query + key), axis=-1)`.
        dropout: Dropout rate on the attention distribution, in [0, 1) (training only).
        **kwargs: Base layer arguments (`seed`, `name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `dropout` outside [0, 1), or (when called) inputs that are not
            `[query, value(, key)]`.
    """

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        _check_inputs(self, input_shape)
        if self.use_scale:
            self.scale = self.add_weight((input_shape[0][-1],), "glorot_uniform", name="scale")
        self.built = True

    def _scores(self, query, key):
        summed = jnp.tanh(query[..., :, None, :] + key[..., None, :, :])
        if self.scale is not None:
            summed = self.scale.value * summed
        return jnp.sum(summed, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.pop("score_mode")
        return config
