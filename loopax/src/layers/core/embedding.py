"""`Embedding`: integer indices to rows of a trainable table (optionally
`mask_zero`, LoRA and quantization, as Keras's)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import constraints, initializers, quantizers, regularizers
from loopax.src.api_export import export
from loopax.src.layers import quantization
from loopax.src.layers.argument_checks import positive_int
from loopax.src.layers.layer import Layer
from loopax.src.quantizers import quantization_config
from loopax.src.tensor import unwrap


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
