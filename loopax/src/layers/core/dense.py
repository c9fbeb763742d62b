"""`Dense`: the densely connected layer, `activation(inputs @ kernel + bias)`
(with LoRA and int8/float8 quantization, as Keras's)."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src import activations, constraints, initializers, quantizers, regularizers
from loopax.src.api_export import export
from loopax.src.layers import quantization
from loopax.src.layers.argument_checks import positive_int
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.symbolic import closed_form_output_shape
from loopax.src.quantizers import quantization_config
from loopax.src.tensor import unwrap


@export("loopax.layers.Dense")
@closed_form_output_shape
class Dense(Layer):
    """`activation(inputs @ kernel + bias)` on the last axis.

    Input shape: `(batch, ..., input_dim)` (rank >= 2, `input_dim` known).
    Output shape: `(batch, ..., units)`, in the layer's compute dtype. `kernel` has
    shape `(input_dim, units)`, `bias` `(units,)`.

    Args:
        units: The size of the output's last axis (a positive int).
        activation: An activation name or callable; None (the default) is linear.
        use_bias: Whether to add `bias` (default True).
        kernel_initializer: Initializer of `kernel` (default `"glorot_uniform"`).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        activity_regularizer: Regularizer of the output, or None.
        kernel_constraint: Constraint applied to `kernel` after each update, or None.
        bias_constraint: Constraint applied to `bias` after each update, or None.
        quantization_config: The `loopax.quantizers.QuantizationConfig` a quantized
            layer was quantized with (configs of saved quantized layers carry it).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `units` is not a positive int, or the input's last axis is unknown.
    """

    row_wise = True

    supports_masking = True   # passes its input's mask on

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, quantization_config=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.quantization_config = quantizers.get(quantization_config)
        self.units = positive_int(units, "units", "Dense")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape):
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(f"Dense {self.name!r}: the last axis of the input must be "
                             f"known to build the kernel; got input shape {input_shape}.")
        mode = self.quantization_mode
        if mode in ("int8", "int4"):
            self._build_quantized_kernel(input_dim, mode, None)
        elif mode in quantization.CALIBRATED_MODES:   # rebuilt from a saved config
            quantization.calibrated_weights(self, mode, (input_dim, self.units),
                                            self.quantization_config)
            self.kernel = self.quantized_kernel       # its grid values load next
            setattr(self, f"is_{mode}_calibrated", True)
        else:
            self.kernel = self.add_weight((input_dim, self.units), self.kernel_initializer,
                                          name="kernel", regularizer=self.kernel_regularizer,
                                          constraint=self.kernel_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight((self.units,), self.bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        if mode == "float8":
            quantization.float8_weights(self)
        elif mode is not None:
            quantization.order_weights(self, self._order(mode))
        self.input_spec = InputSpec(min_ndim=2, axes={-1: input_dim})
        self.built = True

    def call(self, inputs, training=None):
        x = unwrap(inputs)
        mode = self.quantization_mode
        if mode is None:
            y = jnp.matmul(x, self.kernel.value)
        elif mode == "float8":
            y = self._float8_matmul(x, training)
        elif mode in quantization.CALIBRATED_MODES:
            y = jnp.matmul(x, quantization.calibrated_kernel(self))
        else:
            y = self._quantized_matmul(x)
        if self.use_bias:
            bias = self.bias.value
            y = y + (quantization.float8_bias(self, bias) if mode == "float8" else bias)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        """`(batch, ..., input_dim)` -> `(batch, ..., units)`."""
        return tuple(input_shape)[:-1] + (self.units,)

    # ---- quantization (`quantize("int8" | "int4" | "float8" | "gptq" | "awq")`) --
    # Keras's order of the weights of each mode (saved files list them so).
    _QUANTIZED_ORDER = ("kernel", "bias", "kernel_scale", "kernel_zero", "g_idx")
    _CALIBRATED_ORDER = ("bias", "kernel", "kernel_scale", "kernel_zero", "awq_scales", "g_idx")

    def _order(self, mode):
        if mode in quantization.CALIBRATED_MODES:
            return self._CALIBRATED_ORDER
        return self._QUANTIZED_ORDER

    def _build_quantized_kernel(self, input_dim, mode, config):
        """int8: `kernel` (input_dim, units) int8 and `kernel_scale` (units,); int4:
        `kernel` packed along units (input_dim, ceil(units / 2)), and per channel
        `kernel_scale` (units,) or in groups `kernel_scale`/`kernel_zero`
        (n_groups, units) and `g_idx` (input_dim,)."""
        if mode == "int8":
            self.kernel = quantization.int8_weight(self, "kernel", (input_dim, self.units))
            self.kernel_scale = quantization.scale_weight(self, "kernel_scale", (self.units,))
            return
        self._int4_block_size = block = quantization.block_size_of(self, config)
        self.kernel = quantization.int8_weight(self, "kernel",
                                               (input_dim, (self.units + 1) // 2))
        scale_shape = (self.units,) if block is None else (-(-input_dim // block), self.units)
        self.kernel_scale = quantization.scale_weight(self, "kernel_scale", scale_shape)
        if block is not None:
            self.kernel_zero = quantization.int8_weight(self, "kernel_zero", scale_shape)
            self.g_idx = quantization.group_index_weight(self, input_dim, block)

    def _inputs_quantizer(self):
        config = self.quantization_config
        if config is None:   # built from a saved quantized policy: Keras's defaults
            config = quantization_config.resolve(self.quantization_mode, None)
        return config.activation_quantizer

    def _quantized_matmul(self, x):
        kernel, scale = self.kernel.value, self.kernel_scale.value
        if self.quantization_mode == "int4":
            kernel = quantizers.unpack_int4(kernel, self.units, axis=-1)
        if getattr(self, "_int4_block_size", None) is not None and \
                self.quantization_mode == "int4":
            def dequantize(kernel, scale, zero, g_idx):
                return quantizers.dequantize_grouped(kernel, scale, zero, g_idx, axis=0)

            def forward(x, *weights):
                return jnp.matmul(x, dequantize(*weights).astype(self.compute_dtype))

            return quantization.matmul_dequantized_gradient(
                forward, dequantize, x, kernel, scale, self.kernel_zero.value,
                self.g_idx.value)
        inputs_quantizer = self._inputs_quantizer()

        def forward(x, kernel, scale):
            return quantization.scaled_matmul(x, kernel, scale, inputs_quantizer,
                                              self.compute_dtype)

        return quantization.matmul_dequantized_gradient(
            forward, lambda kernel, scale: kernel.astype(scale.dtype) / scale, x, kernel, scale)

    def _float8_matmul(self, x, training):
        return quantization.float8_matmul(self, x, self.kernel.value, training)

    def _quantize_weights(self, mode, config, type_check):
        self._quantizable(Dense, mode, type_check,
                          modes=("int8", "int4", "float8", "gptq", "awq"))
        self.quantization_config = config
        if mode == "float8":
            quantization.float8_weights(self)
        elif mode in quantization.CALIBRATED_MODES:   # calibrated later by the model
            quantization.calibrated_weights(self, mode, self.kernel.shape, config)
            quantization.order_weights(self, self._CALIBRATED_ORDER)
        else:
            input_dim = self.kernel.shape[0]
            values = self._quantized_kernel_values(mode, config)
            quantization.forget_weight(self, self.kernel)
            self._build_quantized_kernel(input_dim, mode, config)
            for name, value in values.items():
                getattr(self, name).assign(value)
            quantization.order_weights(self, self._QUANTIZED_ORDER)
        self.__dict__["_dtype_policy"] = quantization.policy_for(self, mode, config)

    def finish_calibration(self, values):
        quantization.finish_calibration(self, values)

    def _quantized_kernel_values(self, mode, config):
        """{weight name: value} of the quantized kernel, computed on the host."""
        kernel = self.kernel.value
        block = quantization.block_size_of(self, config) if mode == "int4" else None
        if block is not None:
            values, scale, zero = quantizers.abs_max_quantize_grouped_with_zero_point(
                kernel, block_size=block, to_numpy=True)
            return {"kernel": quantizers.pack_int4(values, axis=-1)[0], "kernel_scale": scale,
                    "kernel_zero": zero}
        default = quantizers.AbsMaxQuantizer(axis=0) if mode == "int8" else \
            quantizers.AbsMaxQuantizer(axis=0, value_range=(-8, 7))
        quantizer = quantization_config.QuantizationConfig.weight_quantizer_or_default(
            config, default)
        values, scale = quantizer(kernel, to_numpy=True)
        if mode == "int4":
            values = quantizers.pack_int4(values, axis=-1)[0]
        return {"kernel": values, "kernel_scale": jnp.squeeze(scale, axis=0)}

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                **quantization.config_entry(self)}
