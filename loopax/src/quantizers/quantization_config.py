"""Quantization configs: which quantizers `quantize(mode, config=...)` uses.

`Int8QuantizationConfig` (weights and, by default, activations abs-max
quantized), `Int4QuantizationConfig` (weights only by default; `block_size`
rows per group with a zero point, or per channel with `block_size=None`/-1),
`Float8QuantizationConfig` (float8 training; no custom quantizers).
`resolve(mode, config)` turns `quantize`'s arguments into one config.
"""

from __future__ import annotations

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.mixed_precision import QUANTIZATION_MODES
from loopax.src.quantizers.quantizers import AbsMaxQuantizer, Quantizer
from loopax.src.utils.registry import Registry, name_table

# The quantizers a config's `weight_quantizer` / `activation_quantizer` may name.
_QUANTIZERS = Registry("quantizer", name_table([Quantizer, AbsMaxQuantizer]),
                       accepts="a Quantizer instance")


def _serialize(quantizer):
    return None if quantizer is None else serialization.serialize(quantizer)


def _deserialize(config):
    return None if config is None else _QUANTIZERS.deserialize(config)


@export("loopax.quantizers.QuantizationConfig")
class QuantizationConfig:
    """Base class of quantization configs: a weight and an activation quantizer
    (either may be None); subclasses name their `mode`.

    Args:
        weight_quantizer: The quantizer of weights, or None (the layer's default).
        activation_quantizer: The quantizer of inputs, or None (not quantized).
    """

    def __init__(self, weight_quantizer=None, activation_quantizer=None):
        self.weight_quantizer = weight_quantizer
        self.activation_quantizer = activation_quantizer

    @property
    def mode(self):
        raise NotImplementedError("Subclasses must implement this property. Do not "
                                  "instantiate QuantizationConfig directly.")

    def get_config(self):
        return {"weight_quantizer": _serialize(self.weight_quantizer),
                "activation_quantizer": _serialize(self.activation_quantizer)}

    @classmethod
    def from_config(cls, config):
        return cls(weight_quantizer=_deserialize(config.get("weight_quantizer")),
                   activation_quantizer=_deserialize(config.get("activation_quantizer")))

    @staticmethod
    def weight_quantizer_or_default(config, default):
        if config is not None and config.weight_quantizer is not None:
            return config.weight_quantizer
        return default

    @staticmethod
    def activation_quantizer_or_default(config, default):
        return config.activation_quantizer if config is not None else default


@export("loopax.quantizers.Int8QuantizationConfig")
class Int8QuantizationConfig(QuantizationConfig):
    """int8 weights and (by default) int8 inputs.

    Args:
        weight_quantizer: A quantizer with int8 output, or None (abs-max per
            output channel).
        activation_quantizer: "default" (an `AbsMaxQuantizer()` on the last
            axis), a quantizer, or None (float inputs).

    Raises:
        ValueError: a `weight_quantizer` whose `output_dtype` is not int8.
    """

    def __init__(self, weight_quantizer=None, activation_quantizer="default"):
        if isinstance(activation_quantizer, str) and activation_quantizer == "default":
            activation_quantizer = AbsMaxQuantizer()
        super().__init__(weight_quantizer, activation_quantizer)
        if weight_quantizer is not None and weight_quantizer.output_dtype != "int8":
            raise ValueError("Int8QuantizationConfig requires a weight_quantizer with "
                             f"output_dtype='int8'. Received: "
                             f"output_dtype={weight_quantizer.output_dtype}")

    @property
    def mode(self):
        return "int8"


@export("loopax.quantizers.Int4QuantizationConfig")
class Int4QuantizationConfig(QuantizationConfig):
    """int4 weights (packed two per byte), inputs not quantized by default.

    Args:
        weight_quantizer: Per-channel only: an abs-max quantizer with
            `value_range=(-8, 7)` and int8 output.
        activation_quantizer: "default" (None) or a quantizer.
        block_size: Rows per group (sub-channel, with a zero point; default 128),
            or None / -1 for one scale per output channel.

    Raises:
        ValueError: a bad `block_size`, custom quantizers with sub-channel
            groups, or a weight quantizer of another range or dtype.
    """

    def __init__(self, weight_quantizer=None, activation_quantizer="default", block_size=128):
        if isinstance(activation_quantizer, str) and activation_quantizer == "default":
            activation_quantizer = None
        super().__init__(weight_quantizer, activation_quantizer)
        if block_size is not None and block_size != -1 and block_size <= 0:
            raise ValueError("block_size must be None, -1, or a positive integer. "
                             f"Received: block_size={block_size}")
        self.block_size = block_size
        if block_size is not None and block_size > 0 and (
                weight_quantizer is not None or self.activation_quantizer is not None):
            raise ValueError(
                "Int4 sub-channel quantization (block_size > 0) does not support custom "
                "quantizers. Either set block_size to None or -1 for per-channel "
                "quantization, or remove the custom quantizer arguments. Received: "
                f"block_size={block_size}")
        if weight_quantizer is not None:
            if tuple(weight_quantizer.value_range) != (-8, 7):
                raise ValueError("Int4QuantizationConfig requires a weight_quantizer with "
                                 "value_range=(-8, 7). Received: "
                                 f"value_range={weight_quantizer.value_range}")
            if weight_quantizer.output_dtype != "int8":
                raise ValueError("Int4QuantizationConfig requires a weight_quantizer with "
                                 "output_dtype='int8'. Received: "
                                 f"output_dtype={weight_quantizer.output_dtype}")

    @property
    def mode(self):
        return "int4"

    def get_config(self):
        return {**super().get_config(), "block_size": self.block_size}

    @classmethod
    def from_config(cls, config):
        return cls(weight_quantizer=_deserialize(config.get("weight_quantizer")),
                   activation_quantizer=_deserialize(config.get("activation_quantizer")),
                   block_size=config.get("block_size"))


@export("loopax.quantizers.Float8QuantizationConfig")
class Float8QuantizationConfig(QuantizationConfig):
    """float8 training (delayed scaling); takes no quantizers."""

    def __init__(self):
        super().__init__(None, None)

    @property
    def mode(self):
        return "float8"

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls()


_DEFAULTS = {"int8": Int8QuantizationConfig, "int4": Int4QuantizationConfig,
             "float8": Float8QuantizationConfig}


def _check_mode(mode):
    if mode is not None and mode not in QUANTIZATION_MODES:
        raise ValueError(f"Invalid quantization mode. Expected one of {QUANTIZATION_MODES}. "
                         f"Received: mode={mode}")


def resolve(mode, config):
    """The config `quantize(mode, config)` means: a default one for `mode`, or
    `config` checked against `mode` (a string `config` is a mode, as in Keras).

    Raises:
        ValueError: an unknown mode, neither given, a config that is not a
            QuantizationConfig or whose mode contradicts `mode`, or "gptq"/"awq"
            without a GPTQConfig/AWQConfig.
    """
    if isinstance(config, str):
        mode, config = config, None
    _check_mode(mode)
    if config is None:
        if mode == "gptq":
            raise ValueError("For GPTQ, you must pass a `GPTQConfig` object in the `config` "
                             "argument: quantize('gptq', config=GPTQConfig(dataset, "
                             "tokenizer, ...)).")
        if mode == "awq":
            raise ValueError("For AWQ, you must pass an `AWQConfig` object in the `config` "
                             "argument: quantize('awq', config=AWQConfig(dataset, "
                             "tokenizer, ...)).")
        if mode is None:
            raise ValueError("You must provide either `mode` or `config` to `quantize`.")
        return _DEFAULTS[mode]()
    if not isinstance(config, QuantizationConfig):
        raise ValueError("Argument `config` must be an instance of `QuantizationConfig`. "
                         f"Received: config={config} (of type {type(config)})")
    if mode is not None and config.mode != mode:
        raise ValueError(f"Contradictory arguments: mode='{mode}' but "
                         f"config.mode='{config.mode}'")
    _check_mode(config.mode)
    return config
