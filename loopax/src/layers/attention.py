"""MultiHeadAttention (Vaswani et al., 2017), with Keras' names and shapes."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from loopax.src import constraints, initializers, random, regularizers
from loopax.src.layers.argument_checks import positive_int
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.masking import get_keras_mask
from loopax.src.state import name_scope
from loopax.src.tensor import unwrap


class _Projection(Layer):
    """`einsum(equation, x, kernel) + bias`: the per-head projections of
    MultiHeadAttention (Keras uses EinsumDense for these)."""

    def __init__(self, equation, kernel_shape, bias_shape, weight_args, **kwargs):
        super().__init__(**kwargs)
        self.equation = equation
        self.kernel_shape, self.bias_shape = tuple(kernel_shape), bias_shape
        self._weight_args = weight_args  # initializers, regularizers, constraints

    def build(self, input_shape=None):
        a = self._weight_args
        self.kernel = self.add_weight(self.kernel_shape, a["kernel_initializer"], name="kernel",
                                      regularizer=a["kernel_regularizer"],
                                      constraint=a["kernel_constraint"])
        self.bias = None
        if self.bias_shape is not None:
            self.bias = self.add_weight(self.bias_shape, a["bias_initializer"], name="bias",
                                        regularizer=a["bias_regularizer"],
                                        constraint=a["bias_constraint"])
        self.built = True

    def call(self, inputs):
        y = jnp.einsum(self.equation, unwrap(inputs), self.kernel.value)
        return y + self.bias.value if self.bias is not None else y


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


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention.

    `layer(query, value, key=None, attention_mask=None, ...)` with query
    `(batch, T, query_dim)`, value `(batch, S, value_dim_in)`, key (default:
    value) `(batch, S, key_dim_in)`; output `(batch, T, output_dim)`
    (`output_dim` = query_dim unless `output_shape` is given). Sub-layers
    `query`, `key`, `value` project to `(num_heads, key_dim)` /
    `(num_heads, value_dim)`, `attention_output` maps back.

    Args:
        num_heads: number of heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default `key_dim`).
        dropout: dropout rate on the attention probabilities (training only).
        output_shape: last size of the output (an int or a 1-tuple).
        attention_axes: None (attend over all axes between batch and
            features; inputs of rank > 3 are flattened there).
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 seed=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        num_heads = positive_int(num_heads, "num_heads", "MultiHeadAttention")
        key_dim = positive_int(key_dim, "key_dim", "MultiHeadAttention")
        if attention_axes is not None:
            raise NotImplementedError(
                "MultiHeadAttention: only attention_axes=None (attend over every axis "
                "between batch and features) is supported.")
        if not 0 <= dropout < 1:
            raise ValueError(f"MultiHeadAttention: `dropout` must be in [0, 1), got {dropout}.")
        if isinstance(output_shape, (list, tuple)):
            if len(output_shape) != 1:
                raise NotImplementedError("MultiHeadAttention: `output_shape` must be an int "
                                          f"or a 1-tuple, got {output_shape!r}.")
            output_shape = output_shape[0]
        self.num_heads, self.key_dim = num_heads, key_dim
        self.value_dim = value_dim if value_dim is not None else key_dim
        self.dropout, self.use_bias, self.seed = float(dropout), use_bias, seed
        self._output_shape, self.attention_axes = output_shape, attention_axes
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        if self.dropout > 0:
            with name_scope(self.name):
                self.seed_generator = random.SeedGenerator(seed)

    def __call__(self, query, value=None, key=None, **kwargs):
        # The base class builds from the first argument only; the projections
        # need the shapes of all three.
        if value is None:
            raise TypeError(f"MultiHeadAttention {self.name!r} needs `value` as well as "
                            "`query`: call layer(query, value) (self-attention: "
                            "layer(x, x)).")
        if not self.built:
            self.build(query.shape, value.shape, None if key is None else key.shape)
        return super().__call__(query, value, key, **kwargs)

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
        bias = self.use_bias
        args = {"kernel_initializer": self.kernel_initializer,
                "bias_initializer": self.bias_initializer,
                "kernel_regularizer": self.kernel_regularizer,
                "bias_regularizer": self.bias_regularizer,
                "kernel_constraint": self.kernel_constraint,
                "bias_constraint": self.bias_constraint}
        with name_scope(self.name):
            self._query_dense = _Projection("...d,dnh->...nh", (query_shape[-1], heads, kd),
                                            (heads, kd) if bias else None, args, name="query")
            self._key_dense = _Projection("...d,dnh->...nh", (key_shape[-1], heads, kd),
                                          (heads, kd) if bias else None, args, name="key")
            self._value_dense = _Projection("...d,dnh->...nh", (value_shape[-1], heads, vd),
                                            (heads, vd) if bias else None, args, name="value")
            self._output_dense = _Projection("...nh,nhd->...d", (heads, vd, out_dim),
                                             (out_dim,) if bias else None, args,
                                             name="attention_output")
            for sub in (self._query_dense, self._key_dense, self._value_dense,
                        self._output_dense):
                sub.build()
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
        q = q * (1.0 / math.sqrt(self.key_dim))
        scores = jnp.einsum("btnh,bsnh->bnts", q, k)          # (B, heads, T, S)
        mask = self._mask(attention_mask, use_causal_mask, scores.shape)
        if mask is not None:
            # As Keras: masked positions get a huge negative score (a row with
            # nothing to attend to becomes uniform).
            scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
        probs = jax.nn.softmax(scores, axis=-1)
        attended = probs
        if training and self.dropout > 0:
            attended = random.dropout(probs, self.dropout, seed=self.seed_generator)
        context = jnp.einsum("bnts,bsnh->btnh", attended, v)  # (B, T, heads, value_dim)
        output = self._output_dense(context)
        output = output.reshape(batch_q + output.shape[-1:])
        if return_attention_scores:
            return output, probs.reshape(probs.shape[:2] + batch_q[1:] + batch_v[1:])
        return output

    def compute_mask(self, inputs, mask=None):
        """The query's mask is the output's (as Keras)."""
        return mask

    def _mask(self, attention_mask, use_causal_mask, scores_shape):
        """Boolean (B, 1 or heads, T, S) mask of allowed positions, or None."""
        t, s = scores_shape[-2:]
        mask = None
        if attention_mask is not None:
            mask = unwrap(attention_mask).astype(bool)
            if mask.ndim == 3:  # (B or 1, T or 1, S or 1)
                mask = jnp.broadcast_to(mask, (mask.shape[0], t, s))
            mask = mask.reshape(mask.shape[0], t, s)[:, None]
        if use_causal_mask:
            causal = jnp.tril(jnp.ones((t, s), bool))[None, None]
            mask = causal if mask is None else mask & causal
        return mask

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_shape": None if self._output_shape is None else (self._output_shape,),
                "attention_axes": self.attention_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "seed": self.seed}
