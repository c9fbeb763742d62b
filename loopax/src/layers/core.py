"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Embedding,
ActivityRegularization, Identity."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import activations, constraints, initializers, quantizers, random, regularizers
from loopax.src.api_export import export
from loopax.src.layers import quantization
from loopax.src.layers.argument_checks import positive_int, standardize_data_format
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.symbolic import closed_form_output_shape, same_output_shape
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


@export("loopax.layers.Activation")
@closed_form_output_shape
class Activation(Layer):
    """Applies an activation function (a name or a callable).

    Output shape = input shape.

    Args:
        activation: An activation name (`"relu"`) or a callable `f(x) -> y`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    supports_masking = True   # passes its input's mask on

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.built = True  # no weights

    def call(self, inputs):
        return self.activation(unwrap(inputs))

    compute_output_shape = same_output_shape

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


@export("loopax.layers.Dropout")
@closed_form_output_shape
class Dropout(Layer):
    """In training, zeroes each entry with probability `rate` and scales the
    rest by 1 / (1 - rate); the identity otherwise.

    Args:
        rate: in [0, 1).
        noise_shape: shape of the keep mask, broadcast against the input
            (None entries take the input's size), e.g. `(batch, 1, features)`
            drops the same features at every timestep.
        seed: int or None; the layer's `seed_generator` holds the state.
    """

    row_wise = True

    supports_masking = True   # passes its input's mask on

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"Dropout: `rate` must be a number in [0, 1), got {rate!r}.")
        self.rate = float(rate)
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = seed
        if self.rate > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.built = True  # its only state, the seed, exists already

    def call(self, inputs, training=False):
        x = unwrap(inputs)
        if not training or self.rate == 0:
            return x
        return random.dropout(x, self.rate, self._noise_shape(x.shape),
                              seed=self.seed_generator)

    compute_output_shape = same_output_shape

    def _noise_shape(self, shape):
        if self.noise_shape is None:
            return None
        if len(self.noise_shape) != len(shape):
            raise ValueError(f"Dropout {self.name!r}: noise_shape {self.noise_shape} must have "
                             f"the input's rank; the input has shape {tuple(shape)}.")
        return tuple(s if n is None else n for n, s in zip(self.noise_shape, shape))

    def get_config(self):
        return {**super().get_config(), "rate": self.rate,
                "noise_shape": self.noise_shape, "seed": self.seed}


@export("loopax.layers.Flatten")
@closed_form_output_shape
class Flatten(Layer):
    """`(batch, d1, d2, ...)` -> `(batch, d1 · d2 · ...)`.

    With `data_format="channels_first"` the channel axis is moved last first,
    so the order matches a channels-last model.

    Input shape: `(batch, d1, d2, ...)`; a rank-1 input `(batch,)` becomes `(batch, 1)`.
    Output shape: `(batch, d1 · d2 · ...)`.

    Args:
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)
        self.built = True

    def call(self, inputs):
        x = unwrap(inputs)
        if self.data_format == "channels_first" and x.ndim > 2:
            x = jnp.moveaxis(x, 1, -1)
        return x.reshape(x.shape[0], -1)

    def compute_output_shape(self, input_shape):
        """`(batch, d1, d2, ...)` -> `(batch, d1 · d2 · ...)` (None if a size is
        unknown); `(batch,)` -> `(batch, 1)`."""
        rest = tuple(input_shape)[1:]
        size = None if None in rest else math.prod(rest)
        return (input_shape[0], size)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


@export("loopax.layers.Reshape")
@closed_form_output_shape
class Reshape(Layer):
    """`(batch, ...)` -> `(batch, *target_shape)`; one entry may be -1.

    Args:
        target_shape: The output shape without the batch axis: positive sizes and at
            most one -1 (inferred from the input's size).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `target_shape` is malformed, or (when called) the input's size per
            sample does not fit it.
    """

    row_wise = True

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or any(
                d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape: `target_shape` {self.target_shape} may hold positive "
                             "sizes and at most one -1.")
        self.built = True

    def call(self, inputs):
        x = unwrap(inputs)
        return x.reshape((x.shape[0],) + self._resolve(x.shape[1:]))

    def compute_output_shape(self, input_shape):
        """`(batch, ...)` -> `(batch, *target_shape)`, the -1 entry resolved (None
        when the input has an unknown size)."""
        rest = tuple(input_shape)[1:]
        if None in rest:
            return (input_shape[0],) + tuple(None if d == -1 else d for d in self.target_shape)
        return (input_shape[0],) + self._resolve(rest)

    def _resolve(self, input_shape):
        size = math.prod(input_shape)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape and known and size % known == 0:
            return tuple(size // known if d == -1 else d for d in self.target_shape)
        if -1 not in self.target_shape and known == size:
            return self.target_shape
        raise ValueError(f"Reshape {self.name!r}: cannot reshape input of shape "
                         f"(batch, {', '.join(map(str, input_shape))}) ({size} values per "
                         f"sample) to (batch, {', '.join(map(str, self.target_shape))}).")

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


@export("loopax.layers.Embedding")
class Embedding(Layer):
    """Looks up rows of `embeddings` (shape `(input_dim, output_dim)`):
    integer input `(...)` -> output `(..., output_dim)`.

    With `mask_zero=True`, index 0 is padding (`compute_mask` marks it) and
    `input_dim` must count it.

    Indices must be in `[0, input_dim)`. A call on concrete indices (eager)
    checks them and raises naming the layer; so does `fit`/`evaluate` for
    in-memory data when this is the model's first layer. Inside compiled code
    (a traced call) nothing is checked: an index >= input_dim gives a row of
    NaN and a negative one counts from the end, as in Keras on JAX.

    Input shape: `(batch, ...)`, integer indices (floats are cast to int32).
    Output shape: `(batch, ..., output_dim)`, in the layer's compute dtype.

    Args:
        input_dim: The vocabulary size (largest index + 1), a positive int.
        output_dim: The size of each embedding vector, a positive int.
        embeddings_initializer: Initializer of `embeddings` (default `"uniform"`).
        embeddings_regularizer: Regularizer of `embeddings`, or None.
        embeddings_constraint: Constraint on `embeddings`, or None.
        mask_zero: Whether index 0 is padding, masked for the layers after it
            (default False).
        quantization_config: The `loopax.quantizers.QuantizationConfig` a quantized
            layer was quantized with (configs of saved quantized layers carry it).
        activity_regularizer: Regularizer of the output, or None.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `input_dim`/`output_dim` are not positive ints, or (eager) an
            index is outside `[0, input_dim)`.
    """

    row_wise = True

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 activity_regularizer=None, quantization_config=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.quantization_config = quantizers.get(quantization_config)
        self.input_dim = positive_int(input_dim, "input_dim", "Embedding")
        self.output_dim = positive_int(output_dim, "output_dim", "Embedding")
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = mask_zero

    def build(self, input_shape=None):
        if self.quantization_mode in ("int8", "int4"):
            self._build_quantized(self.quantization_mode, None)
        else:
            self.embeddings = self.add_weight(
                (self.input_dim, self.output_dim), self.embeddings_initializer,
                name="embeddings", regularizer=self.embeddings_regularizer,
                constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs):
        indices = unwrap(inputs)
        if not jnp.issubdtype(indices.dtype, jnp.integer):
            indices = indices.astype(jnp.int32)
        if not isinstance(indices, jax.core.Tracer):
            self.check_indices(indices)
        if self.quantization_mode is not None:
            return self._quantized_lookup(indices)
        return jnp.take(self.embeddings.value, indices, axis=0)

    # ---- quantization (`quantize("int8" | "int4")`) ------------------------
    def _build_quantized(self, mode, config):
        """int8: `embeddings` int8 and `embeddings_scale` (input_dim,); int4:
        `embeddings` packed along output_dim, per row `embeddings_scale`
        (input_dim,), or in groups of `block_size` columns `embeddings_scale` /
        `embeddings_zero` (input_dim, n_groups) and `g_idx` (output_dim,)."""
        block = quantization.block_size_of(self, config) if mode == "int4" else None
        self._int4_block_size = block
        columns = self.output_dim if mode == "int8" else (self.output_dim + 1) // 2
        self.embeddings = quantization.int8_weight(self, "embeddings", (self.input_dim, columns))
        scale_shape = (self.input_dim,) if block is None else (
            self.input_dim, -(-self.output_dim // block))
        self.embeddings_scale = quantization.scale_weight(self, "embeddings_scale", scale_shape)
        if block is not None:
            self.embeddings_zero = quantization.int8_weight(self, "embeddings_zero", scale_shape)
            self.g_idx = quantization.group_index_weight(self, self.output_dim, block)

    def _quantized_lookup(self, indices):
        rows = self.embeddings.value
        if self.quantization_mode == "int4":
            rows = quantizers.unpack_int4(rows, self.output_dim, axis=-1)
        rows = jnp.take(rows, indices, axis=0).astype(self.compute_dtype)
        scale = jnp.take(self.embeddings_scale.value, indices, axis=0)
        if self._int4_block_size is None:
            return rows / scale[..., None]
        zero = jnp.take(self.embeddings_zero.value, indices, axis=0)
        return quantizers.dequantize_grouped(rows, scale, zero, self.g_idx.value, axis=-1)

    def _quantize_weights(self, mode, config, type_check):
        self._quantizable(Embedding, mode, type_check, modes=("int8", "int4"))
        self.quantization_config = config
        values = self._quantized_values(mode, config)
        quantization.forget_weight(self, self.embeddings)
        self._build_quantized(mode, config)
        for name, value in values.items():
            getattr(self, name).assign(value)
        self.__dict__["_dtype_policy"] = quantization.policy_for(self, mode, config)

    def _quantized_values(self, mode, config):
        """{weight name: value} of the quantized table (per row, or in groups of columns)."""
        table = self.embeddings.value
        block = quantization.block_size_of(self, config) if mode == "int4" else None
        if block is not None:
            values, scale, zero = quantizers.abs_max_quantize_grouped_with_zero_point(
                table.T, block_size=block, to_numpy=True)
            return {"embeddings": quantizers.pack_int4(values.T, axis=-1)[0],
                    "embeddings_scale": scale.T, "embeddings_zero": zero.T}
        default = quantizers.AbsMaxQuantizer(axis=-1) if mode == "int8" else \
            quantizers.AbsMaxQuantizer(axis=-1, value_range=(-8, 7))
        quantizer = quantization_config.QuantizationConfig.weight_quantizer_or_default(
            config, default)
        values, scale = quantizer(table, to_numpy=True)
        if mode == "int4":
            values = quantizers.pack_int4(values, axis=-1)[0]
        return {"embeddings": values, "embeddings_scale": jnp.squeeze(scale, axis=-1)}

    def check_indices(self, indices, where="input"):
        """A clear error if a concrete `indices` array leaves `[0, input_dim)`."""
        if np.size(indices) == 0:
            return
        xp = np if isinstance(indices, np.ndarray) else jnp   # host data stays on the host
        low, high = int(xp.min(indices)), int(xp.max(indices))
        if low < 0 or high >= self.input_dim:
            raise ValueError(
                f"Embedding layer {self.name!r} has input_dim={self.input_dim}, so its "
                f"indices must be in [0, {self.input_dim}); its {where} has indices from "
                f"{low} to {high}. Give the layer input_dim > {high} (vocabulary size, "
                "counting padding and out-of-vocabulary ids), or re-index the input.")

    def compute_mask(self, inputs, mask=None):
        return unwrap(inputs) != 0 if self.mask_zero else None

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
                "mask_zero": self.mask_zero, **quantization.config_entry(self)}


@export("loopax.layers.ActivityRegularization")
class ActivityRegularization(Layer):
    """Returns its input and adds `l1 · sum|x| + l2 · sum x²` to `losses`.

    Output shape = input shape.

    Args:
        l1: The L1 factor (default 0).
        l2: The L2 factor (default 0).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    supports_masking = True   # passes its input's mask on

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = l1, l2
        self.built = True

    def call(self, inputs):
        return unwrap(inputs)

    def get_config(self):
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}


@export("loopax.layers.Identity")
class Identity(Layer):
    """Returns its input unchanged (a placeholder, e.g. an optional block turned off).

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    supports_masking = True   # passes its input's mask on

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True

    def call(self, inputs):
        return unwrap(inputs)

