"""GroupedQueryAttention (Ainslie et al., 2023): attention whose key and
value heads are shared by groups of query heads, with Keras's names."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import positive_int
from loopax.src.layers.attention.multi_head_attention import (
    _allowed_positions,
    _padding_mask,
    _QueryValueAttention,
)
from loopax.src.layers.layer import InputSpec
from loopax.src.tensor import unwrap


@export("loopax.layers.GroupQueryAttention")
class GroupedQueryAttention(_QueryValueAttention):
    """Grouped-query attention (`keras.layers.GroupQueryAttention`).

    Query is projected to `num_query_heads` heads, key and value to
    `num_key_value_heads` heads, each of size `head_dim`; every key/value head
    serves `num_query_heads // num_key_value_heads` consecutive query heads
    (1 key/value head: multi-query attention; as many as query heads:
    multi-head attention). Sub-layers (EinsumDense) `query`, `key`, [`gate`,]
    `value` and `attention_output`, as Keras.

    Called as `layer(query, value, key=None, query_mask=None, value_mask=None,
    key_mask=None, attention_mask=None, return_attention_scores=False,
    training=None, use_causal_mask=False)`: query `(batch, T, dim)`, value and
    key (default: value) `(batch, S, dim_v)`; `attention_mask` (bool,
    `(batch, T, S)`, `(T, S)` or `(batch, num_query_heads, T, S)`) is True
    where a query may attend; masks attached to the inputs (`Embedding(
    mask_zero=True)`, `Masking`) are and-ed in. The output is `(batch, T, dim)`,
    plus the `(batch, num_query_heads, T, S)` attention probabilities with
    `return_attention_scores=True`; it carries the query's mask.

    Args:
        head_dim: Size of each head.
        num_query_heads: Number of query heads.
        num_key_value_heads: Number of key/value heads; divides `num_query_heads`.
        dropout: Dropout rate on the attention probabilities (training only), in [0, 1).
        use_bias: Whether the projections add a bias (default True).
        sliding_window: None, or a positive int w: query i attends only to keys j with
            |i - j| < w (with `use_causal_mask`: the w - 1 keys before it and itself).
        flash_attention: Accepted for Keras compatibility (XLA picks the kernel); True
            refuses dropout and returned scores, as Keras.
        kernel_initializer: Initializer of the projection kernels.
        bias_initializer: Initializer of the projection biases.
        kernel_regularizer: Regularizer of the projection kernels, or None.
        bias_regularizer: Regularizer of the projection biases, or None.
        activity_regularizer: Applied to each projection's output and to the layer's
            output (as Keras), or None.
        kernel_constraint: Constraint of the projection kernels, or None.
        bias_constraint: Constraint of the projection biases, or None.
        use_gate: Multiply the attended values by `sigmoid(gate(query))` before the
            output projection (gated attention).
        seed: Seed of the dropout.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Raises:
        ValueError: a size that is not a positive int, `num_query_heads` not a multiple
            of `num_key_value_heads`, `dropout` outside [0, 1), a bad `sliding_window`,
            `flash_attention=True` with dropout; when called, inputs not of rank 3, or
            `return_attention_scores` with `flash_attention=True`.
    """

    row_wise = True

    def __init__(self, head_dim: int, num_query_heads: int, num_key_value_heads: int,
                 dropout: float = 0.0, use_bias: bool = True, sliding_window: int | None = None,
                 flash_attention: bool | None = None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 use_gate: bool = False, seed: int | None = None, **kwargs):
        super().__init__(dropout=dropout, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         seed=seed, regularize_output=True, **kwargs)
        owner = "GroupQueryAttention"
        self.head_dim = positive_int(head_dim, "head_dim", owner)
        self.num_query_heads = positive_int(num_query_heads, "num_query_heads", owner)
        self.num_key_value_heads = positive_int(num_key_value_heads, "num_key_value_heads",
                                                owner)
        if self.num_query_heads % self.num_key_value_heads:
            raise ValueError(
                f"{owner}: `num_query_heads` ({num_query_heads}) must be a multiple of "
                f"`num_key_value_heads` ({num_key_value_heads}): each key/value head serves "
                "a group of query heads.")
        if sliding_window is not None:
            sliding_window = positive_int(sliding_window, "sliding_window", owner)
        if flash_attention and self.dropout > 0:
            raise ValueError(f"{owner}: flash_attention=True does not support dropout; "
                             "set dropout=0.0 or flash_attention=None.")
        self.sliding_window, self.flash_attention = sliding_window, flash_attention
        self.use_gate = bool(use_gate)

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        for what, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) != 3 or shape[-1] is None:
                raise ValueError(
                    f"GroupQueryAttention {self.name!r}: `{what}` must have shape (batch, "
                    f"length, features) with known features; got {tuple(shape)}.")
        heads, groups, size = self.num_query_heads, self.num_key_value_heads, self.head_dim
        self._query_dense = self._projection("query", "bqm,muh->bquh", (None, heads, size),
                                             "uh", query_shape)
        self._key_dense = self._projection("key", "bkm,mvh->bkvh", (None, groups, size), "vh",
                                           key_shape)
        self._gate_dense = None
        if self.use_gate:
            self._gate_dense = self._projection("gate", "bqm,muh->bquh", (None, heads, size),
                                                "uh", query_shape, activation="sigmoid")
        self._value_dense = self._projection("value", "bkm,mvh->bkvh", (None, groups, size),
                                             "vh", value_shape)
        self._output_dense = self._projection("attention_output", "bquh,uhm->bqm",
                                              (None, query_shape[-1]), "m",
                                              (None, None, heads, size))
        self.input_spec = InputSpec(ndim=3, axes={-1: query_shape[-1]})
        self.built = True

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        if self.flash_attention and return_attention_scores:
            raise ValueError(f"GroupQueryAttention {self.name!r}: flash_attention=True cannot "
                             "return attention scores; use flash_attention=None.")
        attention_mask = _padding_mask(query, value, key, query_mask, value_mask, key_mask,
                                       attention_mask)
        query, value = unwrap(query), unwrap(value)
        key = value if key is None else unwrap(key)
        repeats = self.num_query_heads // self.num_key_value_heads
        q = self._query_dense(query)                                   # (B, T, heads, size)
        k = jnp.repeat(self._key_dense(key), repeats, axis=2)         # (B, S, heads, size)
        v = jnp.repeat(self._value_dense(value), repeats, axis=2)
        allowed = _allowed_positions(attention_mask, q.shape[1], k.shape[1], use_causal_mask,
                                     self.sliding_window)
        # Keras takes its explicit softmax path with dropout or returned scores.
        zero_masked = self.dropout > 0 or return_attention_scores
        context, probs = self._attend(q, k, v, allowed, zero_masked, training)
        if self._gate_dense is not None:
            context = context * self._gate_dense(query)
        output = self._output_dense(context)
        return (output, probs) if return_attention_scores else output

    def get_config(self):
        return {**super().get_config(), "head_dim": self.head_dim,
                "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads,
                "sliding_window": self.sliding_window, "flash_attention": self.flash_attention,
                "use_gate": self.use_gate}


# Keras's other name for it (`keras.layers.GroupQueryAttention`).
serialization.register_builtins("layer", {"GroupQueryAttention": GroupedQueryAttention})
