"""`GPTQConfig`: the settings of `model.quantize("gptq", config=...)`.

GPTQ quantizes each Dense/EinsumDense kernel column by column, feeding every
column's rounding error forward through the inverse Hessian of the layer's
calibration inputs (`loopax.src.quantizers.gptq`).
"""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.mixed_precision.policies import check_gptq_weight_bits as check_weight_bits
from loopax.src.mixed_precision.policies import check_group_size
from loopax.src.quantizers.quantization_config import QuantizationConfig


@export("loopax.quantizers.GPTQConfig")
class GPTQConfig(QuantizationConfig):
    """GPTQ post-training quantization (Keras's `keras.quantizers.GPTQConfig`).

    Args:
        dataset: Calibration data: an iterable of strings (tokenized with
            `tokenizer`) or of token arrays; None only in saved configs.
        tokenizer: A callable (or an object with `tokenize`) turning a string into
            token ids. Keras requires it even for token arrays (pass `lambda x: x`).
        weight_bits: Bits per weight: 2, 3, 4 (packed two per byte) or 8.
        num_samples: Calibration windows taken from the token stream.
        per_channel: One scale and zero point per output channel (Keras's default).
        sequence_length: Tokens per calibration window.
        hessian_damping: Fraction of the Hessian's mean diagonal added to its
            diagonal before inverting it, in [0, 1].
        group_size: Input rows sharing a scale and zero point; -1: all of them.
        symmetric: Zero point fixed at the middle of the range.
        activation_order: Quantize the columns with the largest Hessian
            diagonal first.
        quantization_layer_structure: `{"pre_block_layers": [...],
            "sequential_blocks": [...]}`; None: `model.get_quantization_layer_structure`.

    Raises:
        ValueError: an argument out of its range (the message names it).
    """

    def __init__(self, dataset, tokenizer, *, weight_bits=4, num_samples=128,
                 per_channel=True, sequence_length=512, hessian_damping=0.01, group_size=128,
                 symmetric=False, activation_order=False, quantization_layer_structure=None):
        super().__init__()
        check_weight_bits(weight_bits)
        if num_samples <= 0:
            raise ValueError(f"GPTQConfig: num_samples must be a positive integer; got "
                             f"num_samples={num_samples!r}.")
        if sequence_length <= 0:
            raise ValueError(f"GPTQConfig: sequence_length must be a positive integer; got "
                             f"sequence_length={sequence_length!r}.")
        if not 0 <= hessian_damping <= 1:
            raise ValueError(f"GPTQConfig: hessian_damping must be between 0 and 1; got "
                             f"hessian_damping={hessian_damping!r}.")
        check_group_size(group_size)
        self.dataset, self.tokenizer = dataset, tokenizer
        self.weight_bits, self.num_samples = weight_bits, num_samples
        self.per_channel, self.sequence_length = per_channel, sequence_length
        self.hessian_damping, self.group_size = hessian_damping, group_size
        self.symmetric, self.activation_order = symmetric, activation_order
        self.quantization_layer_structure = quantization_layer_structure

    @property
    def mode(self):
        return "gptq"

    def get_config(self):
        # The dataset, tokenizer and layer structure serve the one-time
        # calibration only; they are not saved (Keras writes the structure's
        # layers and then fails to save the model).
        return {"dataset": None, "tokenizer": None, "weight_bits": self.weight_bits,
                "num_samples": self.num_samples, "per_channel": self.per_channel,
                "sequence_length": self.sequence_length,
                "hessian_damping": self.hessian_damping, "group_size": self.group_size,
                "symmetric": self.symmetric, "activation_order": self.activation_order,
                "quantization_layer_structure": None}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def dtype_policy_string(self):
        """The mode part of the quantized policy's name, `"gptq/<bits>/<group_size>"`."""
        return f"gptq/{self.weight_bits}/{self.group_size}"
