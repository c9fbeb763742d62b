"""What quantized layers share (`layer.quantize(mode)`, Keras's scheme).

int8: weights abs-max quantized per output channel, `kernel_scale` beside
them; inputs abs-max quantized per row too when the config has an activation
quantizer (the int8 default), the product computed in int32 and divided by
both scales. int4: the same with values in [-8, 7] packed two per byte, per
channel, or in groups of `block_size` rows with a zero point (`kernel_zero`,
`g_idx`). Gradients reach the inputs through the dequantized weights (the
quantized ones do not train). float8: the float weights stay; inputs and
weights pass through float8 rounding with delayed scales.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import mixed_precision
from loopax.src import quantizers as q
from loopax.src.quantizers import gptq


def config_entry(layer) -> dict:
    """`{"quantization_config": ...}` for `get_config` once the layer has one
    (a loaded layer then computes as the quantized one did), else `{}`."""
    config = layer.quantization_config
    return {} if config is None else {"quantization_config": q.serialize(config)}


def forget_weight(layer, variable):
    """Drops `variable` from what `layer` created (before its quantized form replaces it)."""
    for key in ("_created_variables", "_trainable_weights_created"):
        kept = [v for v in layer.__dict__.get(key, []) if v is not variable]
        layer.__dict__[key] = kept


def order_weights(layer, order):
    """Puts `layer`'s created weights in `order` (names; others keep their place
    after): a layer quantized in place lists its weights as one built quantized."""
    created = layer.__dict__.get("_created_variables", [])
    rank = {name: i for i, name in enumerate(order)}
    created.sort(key=lambda v: rank.get(v.name, len(order)))


def block_size_of(layer, config=None):
    """int4's block size: from `config` when quantizing, else from the layer's
    Int4DTypePolicy (a loaded layer); None means one scale per channel."""
    if isinstance(config, q.Int4QuantizationConfig):
        size = config.block_size
    else:
        size = getattr(layer.dtype_policy, "block_size", None)
    return None if size is None or size == -1 else size


def policy_for(layer, mode, config):
    """The quantized policy `layer` takes after `quantize(mode, config)`."""
    if mode == "int4":
        mode = f"int4/{block_size_of(layer, config) or -1}"
    elif mode in CALIBRATED_MODES:
        mode = config.dtype_policy_string()
    return mixed_precision.get(f"{mode}_from_{layer.dtype_policy.name}")


def int8_weight(layer, name, shape):
    return layer.add_weight(shape, "zeros", dtype="int8", trainable=False, name=name)


def scale_weight(layer, name, shape):
    return layer.add_weight(shape, "ones", trainable=False, name=name)


def group_index_weight(layer, length, block_size):
    """Keras's `g_idx`: the group of each position (saved with the weights)."""
    return layer.add_weight(
        (length,), lambda shape, dtype: jnp.arange(length, dtype="float32") // block_size,
        dtype="float32", trainable=False, name="g_idx")


def float8_weights(layer):
    """The six scale and amax-history weights of float8 training (float32 always)."""
    length = getattr(layer.dtype_policy, "amax_history_length",
                     mixed_precision.QuantizedFloat8DTypePolicy.default_amax_history_length)
    for prefix in ("inputs", "kernel", "outputs_grad"):
        for name, shape, initial in ((f"{prefix}_scale", (), "ones"),
                                     (f"{prefix}_amax_history", (length,), "zeros")):
            variable = layer.add_weight(shape, initial, dtype="float32", name=name,
                                        autocast=False)
            variable.overwrite_with_gradient = True
            setattr(layer, name, variable)


def _zero_cotangent(x):
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.zeros_like(x)
    return np.zeros(x.shape, dtype=jax.dtypes.float0)


def matmul_dequantized_gradient(forward, dequantize, x, *weights, product=None):
    """`forward(x, *weights)` whose gradient reaches `x` as through
    `x @ dequantize(*weights)` (`product(upstream, kernel)` gives that gradient
    for another contraction); the (quantized) weights get none."""

    @jax.custom_vjp
    def run(x, *weights):
        return forward(x, *weights)

    def fwd(x, *weights):
        return run(x, *weights), weights

    def bwd(weights, upstream):
        kernel = dequantize(*weights).astype(upstream.dtype)
        grad = upstream @ kernel.T if product is None else product(upstream, kernel)
        return (grad,) + tuple(_zero_cotangent(w) for w in weights)

    run.defvjp(fwd, bwd)
    return run(x, *weights)


def scaled_matmul(x, kernel, kernel_scale, inputs_quantizer, compute_dtype):
    """`x @ kernel / kernel_scale` with `kernel` integer; with `inputs_quantizer`
    the inputs are quantized per row too and the product is taken in int32."""
    output_scale = kernel_scale
    if inputs_quantizer is not None:
        x, inputs_scale = inputs_quantizer(x, axis=-1)
        output_scale = output_scale * inputs_scale
        y = jnp.matmul(x, kernel, preferred_element_type=jnp.int32)
    else:
        y = jnp.matmul(x, kernel.astype(x.dtype))
    return y.astype(compute_dtype) / output_scale


# The largest finite float8 values (ml_dtypes.finfo(...).max).
_E4M3_MAX, _E5M2_MAX = 448.0, 57344.0


def _float8_qdq(x, scale, history, dtype, dtype_max, compute_dtype, training):
    """`x` through float8 rounding at `scale`; the gradient passes through and,
    in training, the "gradients" of `scale`/`history` are their next values
    (delayed scaling: the optimizer writes them in, as Keras's
    `overwrite_with_gradient` variables)."""

    @jax.custom_vjp
    def run(x, scale, history):
        return q.quantize_and_dequantize(x, scale, dtype, compute_dtype)

    def fwd(x, scale, history):
        return run(x, scale, history), (x, scale, history)

    def bwd(saved, upstream):
        x, scale, history = saved
        if not training:   # the "gradients" written in leave them as they are
            return upstream, scale, history
        new_scale = q.compute_float8_scale(jnp.max(history, axis=0), scale, dtype_max)
        return upstream, new_scale, q.compute_float8_amax_history(x, history)

    run.defvjp(fwd, bwd)
    return run(x, scale, history)


def _float8_grad_qdq(y, scale, history, compute_dtype):
    """`y` unchanged; its incoming gradient goes through e5m2 rounding, and the
    "gradients" of `scale`/`history` are their next values (as above)."""

    @jax.custom_vjp
    def run(y, scale, history):
        return y

    def fwd(y, scale, history):
        return y, (scale, history)

    def bwd(saved, upstream):
        scale, history = saved
        new_scale = q.compute_float8_scale(jnp.max(history, axis=0), scale, _E5M2_MAX)
        qdq = q.quantize_and_dequantize(upstream, scale, "float8_e5m2", compute_dtype)
        return qdq, new_scale, q.compute_float8_amax_history(upstream, history)

    run.defvjp(fwd, bwd)
    return run(y, scale, history)


def float8_matmul(layer, x, kernel, training, product=jnp.matmul):
    """Keras's float8 product (`product(x, kernel)`, a matmul or an einsum):
    inputs and kernel rounded through e4m3 at their delayed scales, the
    output's gradient through e5m2."""
    compute = layer.compute_dtype
    x = _float8_qdq(x, layer.inputs_scale.value, layer.inputs_amax_history.value,
                    "float8_e4m3fn", _E4M3_MAX, compute, training)
    kernel = _float8_qdq(kernel, layer.kernel_scale.value, layer.kernel_amax_history.value,
                         "float8_e4m3fn", _E4M3_MAX, compute, training)
    y = product(x, kernel)
    return _float8_grad_qdq(y, layer.outputs_grad_scale.value,
                            layer.outputs_grad_amax_history.value, compute)


def float8_bias(layer, bias):
    """Keras rounds a float32 bias through bfloat16 under float8 (for XLA's fusion)."""
    if layer.compute_dtype == "float32":
        return bias.astype(jnp.bfloat16).astype(bias.dtype)
    return bias


# ---- gptq / awq: the layer keeps its float kernel until the model's calibration
# (`loopax.src.models.calibration.quantize_model`) replaces it by grid values.
CALIBRATED_MODES = ("gptq", "awq")


def calibrated_settings(layer, config=None):
    """`(weight_bits, group_size)` from a GPTQConfig/AWQConfig, else from the
    layer's GPTQDTypePolicy/AWQDTypePolicy (a layer rebuilt from a saved config)."""
    if isinstance(config, (q.GPTQConfig, q.AWQConfig)):
        return config.weight_bits, config.group_size
    policy = layer.dtype_policy
    if not isinstance(policy, (mixed_precision.GPTQDTypePolicy,
                               mixed_precision.AWQDTypePolicy)):
        raise ValueError(f"Layer {layer.name!r}: GPTQ/AWQ need the weight_bits and group_size "
                         "of a GPTQConfig/AWQConfig or of a GPTQDTypePolicy/AWQDTypePolicy "
                         "('gptq/<bits>/<group>_from_<policy>'); got "
                         f"dtype_policy={policy.name!r}.")
    return policy.weight_bits, policy.group_size


def calibrated_weights(layer, mode, kernel_shape, config=None, zero_name="kernel_zero"):
    """Adds GPTQ's or AWQ's weights for a float kernel of `kernel_shape` (Keras's
    names and shapes): `quantized_kernel` ("kernel", `(columns, rows)` uint8,
    packed to `ceil(columns / 2)` rows at 4 bits), `kernel_scale` and
    `kernel_zero` `(columns, n_groups)`, AWQ's `awq_scales` `(rows,)`, `g_idx`
    `(rows,)`; the layer computes with its float kernel until calibrated."""
    bits, group_size = calibrated_settings(layer, config)
    rows, columns = gptq.matrix_shape(kernel_shape)
    groups = gptq.group_count(rows, group_size)
    layer._grid_columns, layer._grid_kernel_shape = columns, tuple(kernel_shape)
    packed = (columns + 1) // 2 if bits == 4 else columns
    layer.quantized_kernel = layer.add_weight((packed, rows), "zeros", dtype="uint8",
                                              trainable=False, name="kernel")
    layer.kernel_scale = scale_weight(layer, "kernel_scale", (columns, groups))
    layer.kernel_zero = layer.add_weight((columns, groups), "zeros", dtype="uint8",
                                         trainable=False, name=zero_name)
    if mode == "awq":
        layer.awq_scales = scale_weight(layer, "awq_scales", (rows,))
    layer.g_idx = layer.add_weight((rows,), "zeros", dtype="float32", trainable=False,
                                   name="g_idx")
    setattr(layer, f"is_{mode}_calibrated", False)


def finish_calibration(layer, values):
    """Writes the calibrated values in (`{weight attribute: value}`) and drops
    the float kernel (`layer.kernel` then names the stored grid values, as the
    saved layer's)."""
    for name, value in values.items():
        getattr(layer, name).assign(value)
    forget_weight(layer, layer.kernel)
    layer.kernel = layer.quantized_kernel
    setattr(layer, f"is_{layer.quantization_mode}_calibrated", True)


def calibrated_kernel(layer):
    """The kernel a GPTQ/AWQ layer computes with: the float one until
    calibrated, then its grid values dequantized (AWQ: divided by
    `awq_scales`), in the float kernel's shape."""
    mode = layer.quantization_mode
    if not getattr(layer, f"is_{mode}_calibrated"):
        return layer.kernel.value
    bits, _ = calibrated_settings(layer, layer.quantization_config)
    kernel = gptq.dequantized_kernel(layer, layer._grid_columns, bits)
    if mode == "awq":
        kernel = kernel / layer.awq_scales.value[:, None]
    return kernel.reshape(layer._grid_kernel_shape).astype(layer.compute_dtype)
