"""`AWQConfig`: the settings of `model.quantize("awq", config=...)`.

AWQ scales each input channel of a Dense/EinsumDense kernel by a power of
its largest calibration activation (the power found by a grid search) before
grouped 4-bit quantization (`loopax.src.quantizers.awq`).
"""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.mixed_precision.policies import check_awq_weight_bits as check_weight_bits
from loopax.src.mixed_precision.policies import check_group_size
from loopax.src.quantizers.quantization_config import QuantizationConfig


@export("loopax.quantizers.AWQConfig")
class AWQConfig(QuantizationConfig):
    """AWQ post-training quantization (Keras's `keras.quantizers.AWQConfig`).

    Args:
        dataset: Calibration data: an iterable of strings (tokenized with
            `tokenizer`) or of token arrays; None only in saved configs.
        tokenizer: A callable (or an object with `tokenize`) turning a string into
            token ids. Keras requires it even for token arrays (pass `lambda x: x`).
        weight_bits: Bits per weight: 4 only (packed two per byte).
        num_samples: Calibration windows taken from the token stream.
        sequence_length: Tokens per calibration window.
        group_size: Input rows sharing a scale and zero point; -1: all of them.
        num_grid_points: Exponents tried for the channel scales: `i / num_grid_points`
            for i in 0..num_grid_points.
        quantization_layer_structure: `{"pre_block_layers": [...],
            "sequential_blocks": [...]}`; None: `model.get_quantization_layer_structure`.

    Raises:
        ValueError: an argument out of its range (the message names it).
    """

    def __init__(self, dataset, tokenizer, *, weight_bits=4, num_samples=128,
                 sequence_length=512, group_size=128, num_grid_points=20,
                 quantization_layer_structure=None):
        super().__init__()
        check_weight_bits(weight_bits)
        for name, value in (("num_samples", num_samples), ("sequence_length", sequence_length),
                            ("num_grid_points", num_grid_points)):
            if value <= 0:
                raise ValueError(f"AWQConfig: {name} must be a positive integer; got "
                                 f"{name}={value!r}.")
        check_group_size(group_size, "AWQConfig")
        self.dataset, self.tokenizer = dataset, tokenizer
        self.weight_bits, self.num_samples = weight_bits, num_samples
        self.sequence_length, self.group_size = sequence_length, group_size
        self.num_grid_points = num_grid_points
        self.quantization_layer_structure = quantization_layer_structure

    @property
    def mode(self):
        return "awq"

    def get_config(self):
        # As GPTQConfig's: the calibration data and layer structure are not saved.
        return {"dataset": None, "tokenizer": None, "weight_bits": self.weight_bits,
                "num_samples": self.num_samples, "sequence_length": self.sequence_length,
                "group_size": self.group_size, "num_grid_points": self.num_grid_points,
                "quantization_layer_structure": None}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def dtype_policy_string(self):
        """The mode part of the quantized policy's name, `"awq/4/<group_size>"`."""
        return f"awq/{self.weight_bits}/{self.group_size}"
