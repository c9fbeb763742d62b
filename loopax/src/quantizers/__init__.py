"""Quantizers, quantization configs and their arithmetic (`keras.quantizers`)."""

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.quantizers.awq_config import AWQConfig
from loopax.src.quantizers.gptq_config import GPTQConfig
from loopax.src.quantizers.quantization_config import (
    QUANTIZATION_MODES,
    Float8QuantizationConfig,
    Int4QuantizationConfig,
    Int8QuantizationConfig,
    QuantizationConfig,
)
from loopax.src.quantizers.quantizers import (
    AbsMaxQuantizer,
    Quantizer,
    abs_max_quantize,
    abs_max_quantize_grouped_with_zero_point,
    compute_float8_amax_history,
    compute_float8_scale,
    dequantize_grouped,
    fake_quant_with_min_max_vars,
    pack_int4,
    quantize_and_dequantize,
    unpack_int4,
)
from loopax.src.utils.registry import Registry, name_table

_REGISTRY = Registry(
    "quantizer",
    name_table([Quantizer, AbsMaxQuantizer, QuantizationConfig, Int8QuantizationConfig,
                Int4QuantizationConfig, Float8QuantizationConfig, GPTQConfig,
                AWQConfig]),
    accepts="a Quantizer or QuantizationConfig instance")


@export("loopax.quantizers.serialize")
def serialize(quantizer):
    """A quantizer or quantization config as a config dict.

    Args:
        quantizer: A `Quantizer` or `QuantizationConfig`.

    Returns:
        `{"class_name", "config"}` (what `deserialize` takes).
    """
    if isinstance(quantizer, (Quantizer, QuantizationConfig)):
        return serialization.serialize(quantizer)
    return _REGISTRY.serialize(quantizer)


@export("loopax.quantizers.deserialize")
def deserialize(config, custom_objects=None):
    """The quantizer or quantization config a `serialize()` result describes.

    Args:
        config: A `serialize()` dict, or a class name.
        custom_objects: `{name: class}` for quantizers of your own.

    Returns:
        The `Quantizer` or `QuantizationConfig`.
    """
    return _REGISTRY.deserialize(config, custom_objects)


@export("loopax.quantizers.get")
def get(identifier, **kwargs):
    """A quantizer (or quantization config) from an identifier.

    Args:
        identifier: None, an instance (returned as is), a config dict, or a
            class name ("AbsMaxQuantizer" or "abs_max_quantizer").
        **kwargs: The constructor arguments when `identifier` is a name.

    Returns:
        The quantizer, or None.

    Raises:
        ValueError: an unknown name.
    """
    if identifier is None:
        return None
    if isinstance(identifier, str):
        return _REGISTRY.lookup(identifier)(**kwargs)
    if isinstance(identifier, (Quantizer, QuantizationConfig)):
        return identifier
    return _REGISTRY.get(identifier)


__all__ = [
    "QUANTIZATION_MODES",
    "AWQConfig",
    "AbsMaxQuantizer",
    "Float8QuantizationConfig",
    "GPTQConfig",
    "Int4QuantizationConfig",
    "Int8QuantizationConfig",
    "QuantizationConfig",
    "Quantizer",
    "abs_max_quantize",
    "abs_max_quantize_grouped_with_zero_point",
    "compute_float8_amax_history",
    "compute_float8_scale",
    "dequantize_grouped",
    "deserialize",
    "fake_quant_with_min_max_vars",
    "get",
    "pack_int4",
    "quantize_and_dequantize",
    "serialize",
    "unpack_int4",
]
