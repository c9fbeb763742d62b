"""MultiHeadAttention (Vaswani et al., 2017), with Keras' names and shapes,
and what it shares with GroupedQueryAttention (`_QueryValueAttention`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from loopax.src import constraints, initializers, random, regularizers
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import positive_int
from loopax.src.layers.core.einsum_dense import EinsumDense
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.masking import get_keras_mask
from loopax.src.naming import name_scope
from loopax.src.tensor import unwrap


def _padding_mask(query, value, key, query_mask, value_mask, key_mask, attention_mask):
    """`attention_mask` combined (and) with the padding masks of the inputs, as
    Keras: the query's (B, T) -> (B, T, 1), the value's and the key's (B, S) ->
    (B, 1, S); masks attached to the tensors (`_keras_mask`) are used when
    none is passed. A key that is the value adds nothing."""
    query_mask = get_keras_mask(query) if query_mask is None else query_mask
    value_mask = get_keras_mask(value) if value_mask is None else value_mask
    if key is not None and key is not value and key_mask is None:
        key_mask = get_keras_mask(key)
    elif key is None or key is value:
        key_mask = None
    batch = unwrap(query).shape[0]
    padding = None
    for mask, axis in ((query_mask, -1), (value_mask, -2), (key_mask, -2)):
        if mask is not None:
            mask = jnp.expand_dims(jnp.asarray(unwrap(mask), bool).reshape(batch, -1), axis)
            padding = mask if padding is None else padding & mask
    if padding is None:
        return attention_mask
    if attention_mask is None:
        return padding
    return jnp.asarray(unwrap(attention_mask), bool) & padding


def _allowed_positions(attention_mask, t, s, use_causal_mask=False, sliding_window=None):
    """Where each of T queries may attend among S keys: boolean, broadcasting
    to (batch, heads, T, S), or None for everywhere. `attention_mask` is
    (T, S), (batch, T, S) or (batch, heads, T, S); the causal mask keeps
    keys j <= i, a sliding window keys with |i - j| < window."""
    allowed = None
    if attention_mask is not None:
        allowed = jnp.asarray(unwrap(attention_mask)).astype(bool)
        while allowed.ndim < 4:
            allowed = allowed[..., None, :, :]
    rows, cols = jnp.arange(t)[:, None], jnp.arange(s)[None, :]
    for use, band in ((use_causal_mask, lambda: rows >= cols),
                      (sliding_window is not None, lambda: abs(rows - cols) < sliding_window)):
        if use:
            allowed = band() if allowed is None else allowed & band()
    return allowed


class _QueryValueAttention(Layer):
    """The base of MultiHeadAttention and GroupedQueryAttention: built from
    the shapes of query, value and key at the first call; EinsumDense
    projections sharing the initializers, regularizers, constraints and dtype
    policy; attention over projected heads; the query's mask is the output's.

    `activity_regularizer` regularizes each projection's output, as Keras;
    `regularize_output` also regularizes the layer's own (Keras's
    GroupQueryAttention does, its MultiHeadAttention does not).
    """

    def __init__(self, dropout=0.0, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 seed=None, regularize_output=False, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer if regularize_output
                         else None, **kwargs)
        if not 0 <= dropout < 1:
            raise ValueError(f"{type(self).__name__}: `dropout` must be in [0, 1), got "
                             f"{dropout}.")
        self.dropout, self.use_bias, self.seed = float(dropout), use_bias, seed
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.projection_activity_regularizer = regularizers.get(activity_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        if self.dropout > 0:
            self.seed_generator = random.SeedGenerator(seed)

    def __call__(self, query, value=None, key=None, **kwargs):
        # The base class builds from the first argument only; the projections
        # need the shapes of all three.
        if value is None:
            raise TypeError(f"{type(self).__name__} {self.name!r} needs `value` as well as "
                            "`query`: call layer(query, value) (self-attention: "
                            "layer(x, x)).")
        if not self.built:
            self.build(query.shape, value.shape, None if key is None else key.shape)
        return super().__call__(query, value, key, **kwargs)

    def _projection(self, name, equation, output_shape, bias_axes, input_shape,
                    activation=None):
        """An EinsumDense sub-layer `name`, built for `input_shape`."""
        with name_scope(self.name, caller=self):
            layer = EinsumDense(
                equation, output_shape, activation=activation,
                bias_axes=bias_axes if self.use_bias else None, name=name,
                dtype=self.dtype_policy, kernel_initializer=self.kernel_initializer,
                bias_initializer=self.bias_initializer,
                kernel_regularizer=self.kernel_regularizer,
                bias_regularizer=self.bias_regularizer,
                activity_regularizer=self.projection_activity_regularizer,
                kernel_constraint=self.kernel_constraint, bias_constraint=self.bias_constraint)
            layer.build(input_shape)
        return layer

    def _attend(self, query, key, value, allowed, zero_masked, training):
        """`softmax(q kᵀ / sqrt(head size)) v` per head: query (B, T, N, H),
        key (B, S, N, H), value (B, S, N, H_v) -> `(context (B, T, N, H_v),
        probabilities (B, N, T, S))`.

        A query with no allowed key attends uniformly, as Keras's fused
        attention; with `zero_masked` (Keras's explicit softmax path, taken
        with dropout or returned scores) it gets zeros instead."""
        scores = jnp.einsum("btnh,bsnh->bnts", query * (1.0 / math.sqrt(query.shape[-1])), key)
        if allowed is not None:
            scores = jnp.where(allowed, scores, jnp.finfo(scores.dtype).min)
        probs = jax.nn.softmax(scores, axis=-1)
        if allowed is not None and zero_masked:
            probs = jnp.where(allowed, probs, 0.0)
        attended = probs
        if training and self.dropout > 0:
            attended = random.dropout(probs, self.dropout, seed=self.seed_generator)
        return jnp.einsum("bnts,bsnh->btnh", attended, value), probs

    def compute_mask(self, inputs, mask=None):
        """The query's mask is the output's (as Keras)."""
        return mask

    def get_config(self):
        return {**super().get_config(), "dropout": self.dropout, "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(
                    self.projection_activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "seed": self.seed}


@export("loopax.layers.MultiHeadAttention")
class MultiHeadAttention(_QueryValueAttention):
    """Multi-head scaled dot-product attention.

    `layer(query, value, key=None, attention_mask=None, ...)` with query
    `(batch, T, query_dim)`, value `(batch, S, value_dim_in)`, key (default:
    value) `(batch, S, key_dim_in)`; output `(batch, T, output_dim)`
    (`output_dim` = query_dim unless `output_shape` is given). EinsumDense
    sub-layers `query`, `key`, `value` project to `(num_heads, key_dim)` /
    `(num_heads, value_dim)`, `attention_output` maps back.

    Args:
        num_heads: number of heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default `key_dim`).
        dropout: dropout rate on the attention probabilities (training only).
        use_bias: whether the projections add a bias (default True).
        output_shape: last size of the output (an int or a 1-tuple).
        attention_axes: None (attend over all axes between batch and
            features; inputs of rank > 3 are flattened there).
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: those of the
            projections.
        activity_regularizer: applied to each projection's output (as Keras).
        seed: seed of the dropout.
    """

    row_wise = True

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 seed=None, **kwargs):
        super().__init__(dropout=dropout, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         seed=seed, **kwargs)
        num_heads = positive_int(num_heads, "num_heads", "MultiHeadAttention")
        key_dim = positive_int(key_dim, "key_dim", "MultiHeadAttention")
        if attention_axes is not None:
            raise NotImplementedError(
                "MultiHeadAttention: only attention_axes=None (attend over every axis "
                "between batch and features) is supported.")
        if isinstance(output_shape, (list, tuple)):
            if len(output_shape) != 1:
                raise NotImplementedError("MultiHeadAttention: `output_shape` must be an int "
                                          f"or a 1-tuple, got {output_shape!r}.")
            output_shape = output_shape[0]
        self.num_heads, self.key_dim = num_heads, key_dim
        self.value_dim = value_dim if value_dim is not None else key_dim
        self._output_shape, self.attention_axes = output_shape, attention_axes

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        for what, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) < 3 or shape[-1] is None:
                raise ValueError(
                    f"MultiHeadAttention {self.name!r}: `{what}` must have shape "
                    f"(batch, ..., features) of rank >= 3 with known features; got {tuple(shape)}.")
        if len(query_shape) != len(value_shape):
            raise ValueError(f"MultiHeadAttention {self.name!r}: query {tuple(query_shape)} "
                             f"and value {tuple(value_shape)} must have the same rank.")
        heads, kd, vd = self.num_heads, self.key_dim, self.value_dim
        out_dim = self._output_shape or query_shape[-1]
        # Inputs of rank > 3 are flattened to (batch, positions, features) first.
        flat = lambda shape: (None, None, shape[-1])
        self._query_dense = self._projection("query", "...d,dnh->...nh", (heads, kd), "nh",
                                             flat(query_shape))
        self._key_dense = self._projection("key", "...d,dnh->...nh", (heads, kd), "nh",
                                           flat(key_shape))
        self._value_dense = self._projection("value", "...d,dnh->...nh", (heads, vd), "nh",
                                             flat(value_shape))
        self._output_dense = self._projection("attention_output", "...nh,nhd->...d", out_dim,
                                              "d", (None, None, heads, vd))
        self.input_spec = InputSpec(ndim=len(query_shape), axes={-1: query_shape[-1]})
        self.built = True

    @property
    def query_dense(self):
        return self._query_dense

    @property
    def key_dense(self):
        return self._key_dense

    @property
    def value_dense(self):
        return self._value_dense

    @property
    def output_dense(self):
        return self._output_dense

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        attention_mask = _padding_mask(query, value, key, query_mask, value_mask, key_mask,
                                       attention_mask)
        query, value = unwrap(query), unwrap(value)
        key = value if key is None else unwrap(key)
        batch_q, batch_v = query.shape[:-1], value.shape[:-1]
        # Attend over every axis between batch and features: flatten them.
        q = self._query_dense(query.reshape(query.shape[0], -1, query.shape[-1]))
        k = self._key_dense(key.reshape(key.shape[0], -1, key.shape[-1]))
        v = self._value_dense(value.reshape(value.shape[0], -1, value.shape[-1]))
        t, s = q.shape[1], k.shape[1]
        if attention_mask is not None and query.ndim > 3 and jnp.ndim(unwrap(attention_mask)) > 3:
            attention_mask = unwrap(attention_mask).reshape(query.shape[0], t, s)
        allowed = _allowed_positions(attention_mask, t, s, use_causal_mask)
        # Keras takes its explicit softmax path with dropout, returned scores
        # or several attention axes.
        zero_masked = self.dropout > 0 or return_attention_scores or query.ndim > 3
        context, probs = self._attend(q, k, v, allowed, zero_masked, training)
        output = self._output_dense(context)
        output = output.reshape(batch_q + output.shape[-1:])
        if return_attention_scores:
            return output, probs.reshape(probs.shape[:2] + batch_q[1:] + batch_v[1:])
        return output

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "output_shape": None if self._output_shape is None else (self._output_shape,),
                "attention_axes": self.attention_axes}
