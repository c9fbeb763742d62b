"""Quantizers and quantization configs (Keras's `keras.quantizers`)."""

from loopax.src.quantizers import (
    AbsMaxQuantizer,
    AWQConfig,
    Float8QuantizationConfig,
    GPTQConfig,
    Int4QuantizationConfig,
    Int8QuantizationConfig,
    QuantizationConfig,
    Quantizer,
    abs_max_quantize,
    abs_max_quantize_grouped_with_zero_point,
    compute_float8_amax_history,
    compute_float8_scale,
    deserialize,
    fake_quant_with_min_max_vars,
    get,
    pack_int4,
    quantize_and_dequantize,
    serialize,
    unpack_int4,
)

__all__ = ["AWQConfig", "AbsMaxQuantizer", "Float8QuantizationConfig", "GPTQConfig",
           "Int4QuantizationConfig",
           "Int8QuantizationConfig", "QuantizationConfig", "Quantizer", "abs_max_quantize",
           "abs_max_quantize_grouped_with_zero_point", "compute_float8_amax_history",
           "compute_float8_scale", "deserialize", "fake_quant_with_min_max_vars", "get",
           "pack_int4", "quantize_and_dequantize", "serialize", "unpack_int4"]
