"""`tf.nn`: activations, the `*_cross_entropy_with_logits` losses, `l2_loss`,
convolutions and pooling with TensorFlow's signatures and defaults."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src import random as loopax_random
from loopax.src.tf_compat import core
from loopax.src.tf_compat import keras_ops as ops
from loopax.src.tf_compat.tensors import (
    as_tensor,
    as_tensors,
    axis_arg,
    document_module,
    static_ints,
    tf_op,
)

relu = core._unary(ops.relu)
relu6 = core._unary(ops.relu6)
elu = core._unary(ops.elu)
selu = core._unary(ops.selu)
sigmoid = core.sigmoid
tanh = core.tanh
softplus = core._unary(ops.softplus)
softsign = core._unary(ops.softsign)
swish = silu = core._unary(ops.silu)


def gelu(features, approximate=False, name=None):
    """GELU; exact (erf) by default, as TensorFlow (Keras's default is the tanh form)."""
    return as_tensor(ops.gelu(features, approximate=approximate))


def leaky_relu(features, alpha=0.2, name=None):
    """x where x > 0, else alpha * x."""
    return as_tensor(ops.leaky_relu(features, negative_slope=alpha))


def softmax(logits, axis=None, name=None):
    """exp(logits) normalized along `axis` (default last)."""
    return as_tensor(ops.softmax(logits, axis=-1 if axis is None else axis_arg(axis)))


def log_softmax(logits, axis=None, name=None):
    """log(softmax(logits)) along `axis` (default last), computed stably."""
    return as_tensor(ops.log_softmax(logits, axis=-1 if axis is None else axis_arg(axis)))


def _check_keywords(fn_name, labels, logits):
    if labels is None or logits is None:
        raise ValueError(f"tf.nn.{fn_name} needs both `labels=` and `logits=` (pass them "
                         "by keyword, as TensorFlow requires).")


@tf_op
def _sigmoid_cross_entropy(labels, logits):
    labels = labels.astype(logits.dtype)
    return jnp.maximum(logits, 0) - logits * labels + jnp.log1p(jnp.exp(-jnp.abs(logits)))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise binary cross-entropy of `labels` in [0, 1] and `logits`
    (max(x, 0) - x * z + log(1 + exp(-|x|)), stable for large logits)."""
    _check_keywords("sigmoid_cross_entropy_with_logits", labels, logits)
    return _sigmoid_cross_entropy(labels, logits)


@tf_op
def _softmax_cross_entropy(labels, logits, axis):
    return -jnp.sum(labels.astype(logits.dtype) * jax.nn.log_softmax(logits, axis=axis),
                    axis=axis)


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None):
    """Cross-entropy of probability `labels` and `logits` along `axis`, one value
    per example."""
    _check_keywords("softmax_cross_entropy_with_logits", labels, logits)
    return _softmax_cross_entropy(labels, logits, axis_arg(axis))


@tf_op
def _sparse_softmax_cross_entropy(labels, logits):
    log_p = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(log_p, labels.astype(jnp.int32)[..., None], axis=-1)
    return -picked[..., 0]


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Cross-entropy of integer class `labels` (shape batch) and `logits`
    (batch + [classes]), one value per example."""
    _check_keywords("sparse_softmax_cross_entropy_with_logits", labels, logits)
    return _sparse_softmax_cross_entropy(labels, logits)


@tf_op
def _weighted_cross_entropy(labels, logits, pos_weight):
    labels = labels.astype(logits.dtype)
    log_weight = 1 + (pos_weight - 1) * labels
    return (1 - labels) * logits + log_weight * (
        jnp.log1p(jnp.exp(-jnp.abs(logits))) + jnp.maximum(-logits, 0))


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """Sigmoid cross-entropy with the positive term weighted by `pos_weight`."""
    return _weighted_cross_entropy(labels, logits, pos_weight)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    return as_tensor(ops.divide(ops.sum(ops.square(t)), 2))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    return as_tensor(_l2_normalize(x, axis_arg(axis if dim is None else dim), epsilon))


@tf_op
def _l2_normalize(x, axis, epsilon):
    return x * jax.lax.rsqrt(jnp.maximum(jnp.sum(jnp.square(x), axis, keepdims=True), epsilon))


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of `x` over `axes`."""
    return as_tensors(ops.moments(x, axes=list(static_ints(axes, "moments(axes=)")),
                                  keepdims=keepdims))


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + variance_epsilon) * scale + offset."""
    inv = ops.rsqrt(ops.add(variance, variance_epsilon))
    if scale is not None:
        inv = ops.multiply(inv, scale)
    out = ops.multiply(ops.subtract(x, mean), inv)
    return as_tensor(out if offset is None else ops.add(out, offset))


def bias_add(value, bias, data_format=None, name=None):
    """`value` + `bias` along the channel axis (last for NHWC, 1 for NC...)."""
    if data_format is not None and data_format.startswith("NC"):
        bias = ops.reshape(bias, (-1,) + (1,) * (len(value.shape) - 2))
    return as_tensor(ops.add(value, bias))


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes each entry with probability `rate`, scaling the rest by 1 / (1 - rate)."""
    return as_tensor(loopax_random.dropout(x, rate, noise_shape=noise_shape, seed=seed))


def _spatial(value, rank, what):
    """A TF stride/dilation argument (int, [s] * rank, or [1, s..., 1]) as a rank-tuple."""
    if value is None:
        return 1
    values = static_ints([value] if isinstance(value, int) else value, what)
    if len(values) == 1:
        return values * rank
    if len(values) == rank + 2:
        return values[1:-1]
    return values


def _data_format(data_format):
    return "channels_first" if data_format and data_format.startswith("NC") else "channels_last"


def convolution(input, filters, strides=None, padding="VALID", data_format=None,
                dilations=None, name=None):
    """N-D convolution of `input` (NHWC by default) with `filters` (spatial..., in,
    out), `padding` "SAME" or "VALID"."""
    rank = len(filters.shape) - 2
    return as_tensor(ops.conv(input, filters, strides=_spatial(strides, rank, "strides"),
                              padding=padding.lower(), data_format=_data_format(data_format),
                              dilation_rate=_spatial(dilations, rank, "dilations")))


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,
           name=None):
    """2-D convolution; see `convolution`."""
    return convolution(input, filters, strides, padding, data_format, dilations)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,
           name=None):
    """1-D convolution; see `convolution`."""
    return convolution(input, filters, stride, padding, data_format, dilations)


def _pool(pool):
    def tf_pool(input, ksize, strides, padding, data_format=None, name=None):
        rank = len(input.shape) - 2
        return as_tensor(pool(input, _spatial(ksize, rank, "ksize"),
                              _spatial(strides, rank, "strides"), padding.lower(),
                              _data_format(data_format)))
    tf_pool.__doc__ = f"{pool.__name__} over windows `ksize` with `strides`, NHWC by default."
    return tf_pool


max_pool = max_pool2d = max_pool1d = _pool(ops.max_pool)
avg_pool = avg_pool2d = avg_pool1d = _pool(ops.average_pool)


def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of `params` at `ids` (tf.gather along axis 0)."""
    return core.gather(params, ids)


def top_k(input, k=1, sorted=True, index_type=None, name=None):
    """(values, indices) of the `k` largest entries along the last axis."""
    return as_tensors(ops.top_k(input, int(k), sorted=sorted))


def in_top_k(targets, predictions, k, name=None):
    """Whether each target class is among the `k` largest predictions of its row.
    (TF 2 argument order: targets first.)"""
    return as_tensor(ops.in_top_k(targets, predictions, int(k)))


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """sum(per_example_loss * sample_weight) / global_batch_size (default: the
    number of examples), as tf.nn.compute_average_loss with one replica."""
    loss = per_example_loss
    if sample_weight is not None:
        loss = ops.multiply(loss, sample_weight)
    if global_batch_size is None:
        global_batch_size = loss.shape[0] if len(loss.shape) else 1
    return as_tensor(ops.divide(ops.sum(loss), global_batch_size))


def scale_regularization_loss(regularization_loss):
    """The regularization loss itself (one replica)."""
    return as_tensor(ops.sum(regularization_loss))


document_module(globals())
