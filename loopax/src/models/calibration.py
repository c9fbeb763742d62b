"""Calibration shared by GPTQ and AWQ (`model.quantize("gptq" | "awq", config=...)`).

After `Model.quantize` gives every Dense/EinsumDense layer the method's
weights (still computing with the float kernel), `quantize_model`:

1. cuts `num_samples` windows of `sequence_length` tokens from the config's
   `dataset` (`calibration_windows`) and runs them through `pre_block_layers`;
2. for each of `sequential_blocks`, records the inputs of the block's
   Dense/EinsumDense layers while the block runs on every window (each
   layer's statistic: GPTQ's Hessian, AWQ's largest activation per channel),
   then quantizes those layers (`gptq.quantize_layer` / `awq.quantize_layer`);
3. feeds the block's outputs, computed with its quantized layers, to the next block.
"""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp
import numpy as np

from loopax.src.layers.core.dense import Dense
from loopax.src.layers.core.einsum_dense import EinsumDense
from loopax.src.quantizers import awq, gptq
from loopax.src.tensor import unwrap


def _method(mode):
    """`(statistic class, layer quantizer)` of a calibrated mode."""
    if mode == "gptq":
        return gptq.HessianEstimate, gptq.quantize_layer
    return awq.ActivationMaxima, awq.quantize_layer


def _tokens(item, tokenizer):
    if isinstance(item, str):
        tokenize = getattr(tokenizer, "tokenize", tokenizer)
        return np.asarray(unwrap(tokenize(item))).reshape(-1)
    return np.asarray(unwrap(item)).reshape(-1).astype(np.int32, copy=False)


def calibration_windows(tokenizer, sequence_length, dataset, num_samples, seed=42):
    """`(num_samples, 1, sequence_length)` int32 windows cut from the tokens of
    `dataset`'s items laid end to end (repeated when too short), at evenly
    strided starts from an offset derived from `seed` as Keras derives it
    (Python's `hash`: fixed within a process, set PYTHONHASHSEED to fix it
    across processes)."""
    if not hasattr(dataset, "__iter__") or isinstance(dataset, (str, bytes)):
        raise TypeError("The calibration `dataset` must be an iterable (a list of strings, "
                        "a generator, or a NumPy array of token ids); got "
                        f"{type(dataset).__name__}.")
    items = list(dataset)
    if not items:
        raise ValueError("The calibration `dataset` is empty; pass calibration samples.")
    tokens = np.concatenate([_tokens(item, tokenizer) for item in items]).astype(np.int32)
    needed = num_samples * sequence_length
    if tokens.size < needed:
        tokens = np.tile(tokens, math.ceil(needed / max(1, tokens.size)))
    last_start = tokens.size - sequence_length
    if last_start < 0:
        raise ValueError(f"Not enough calibration tokens to form one sample of "
                         f"sequence_length={sequence_length} (have {tokens.size}).")
    stride = max(1, (last_start + 1) // num_samples)
    offset = abs(hash(("gptq-calib", seed))) % (last_start + 1) if last_start > 0 else 0
    starts = (offset + np.arange(num_samples, dtype=np.int64) * stride) % (last_start + 1)
    windows = np.lib.stride_tricks.sliding_window_view(tokens, sequence_length)[starts]
    return windows.astype(np.int32)[:, None, :]


def calibration_structure(model, config):
    """The `{"pre_block_layers", "sequential_blocks"}` the config's method
    calibrates `model` with: the config's, else
    `model.get_quantization_layer_structure(mode)`.

    Raises:
        ValueError: no dataset or tokenizer, no structure, or no sequential blocks.
    """
    mode, kind = config.mode, type(config).__name__
    if config.dataset is None or config.tokenizer is None:
        raise ValueError(f"{mode.upper()} quantization requires a dataset and a tokenizer: "
                         f"pass {kind}(dataset=..., tokenizer=...) (for token-id arrays any "
                         "callable, e.g. `lambda x: x`, as Keras requires one).")
    structure = config.quantization_layer_structure
    if structure is None:
        structure = model.get_quantization_layer_structure(mode)
    if structure is None:
        raise ValueError(
            f"For mode='{mode}', a valid quantization structure must be provided either via "
            "`config.quantization_layer_structure` or by overriding "
            "`model.get_quantization_layer_structure(mode)`. The structure should be a "
            "dictionary with keys 'pre_block_layers' and 'sequential_blocks'.")
    if not structure.get("sequential_blocks"):
        raise ValueError(f"{mode.upper()}: quantization_layer_structure has no "
                         "'sequential_blocks' to quantize; list the model's repeated blocks "
                         "(or its Dense layers) there.")
    return structure


def _layers_to_calibrate(block, mode):
    return [layer for layer in block._layers_tree()
            if isinstance(layer, (Dense, EinsumDense)) and not layer.layers
            and layer.quantization_mode == mode
            and not getattr(layer, f"is_{mode}_calibrated", False)]


class _RecordInputs:
    """While active, each layer's `call` first adds its input to its statistic."""

    def __init__(self, statistics):
        self.statistics = statistics

    def __enter__(self):
        for layer, statistic in self.statistics:
            original = layer.call

            def call(*args, _original=original, _statistic=statistic, **kwargs):
                _statistic.update(unwrap(args[0] if args else kwargs["inputs"]))
                return _original(*args, **kwargs)

            layer.__dict__["call"] = call

    def __exit__(self, *exc):
        for layer, _ in self.statistics:
            layer.__dict__.pop("call", None)


def _with_batch_axis(x):
    x = unwrap(x)
    return x[None] if jnp.ndim(x) == 2 else x


def quantize_model(config, structure, selected=lambda layer: True):
    """Calibrates the layers of `structure["sequential_blocks"]` in order (see
    the module doc; `calibration_structure` checks the arguments); only the
    layers `selected(layer)` accepts (`Model.quantize`'s `filters`)."""

    statistic_class, quantize_layer = _method(config.mode)
    windows = calibration_windows(config.tokenizer, config.sequence_length, config.dataset,
                                  config.num_samples)[:config.num_samples]
    inputs = []
    for window in windows:
        x = jnp.asarray(window, jnp.int32)
        for layer in structure.get("pre_block_layers", []):
            x = unwrap(layer(x))
        inputs.append(x)
    blocks = structure["sequential_blocks"]
    for index, block in enumerate(blocks):
        layers = [layer for layer in _layers_to_calibrate(block, config.mode)
                  if selected(layer)]
        if layers:
            statistics = [(layer, statistic_class(gptq.matrix_shape(layer.kernel.shape)[0]))
                          for layer in layers]
            with _RecordInputs(statistics):
                for x in inputs:
                    block(_with_batch_axis(x))
            for layer, statistic in statistics:
                quantize_layer(layer, statistic, config)
        if index < len(blocks) - 1:
            inputs = [unwrap(block(_with_batch_axis(x)))[0] for x in inputs]


def warn_uncalibrated(layers, mode):
    """Warns, naming them, about `mode` layers no sequential block reached: they
    keep computing with their float kernel (as in Keras, which says nothing)."""
    left = [layer.name for layer in layers
            if layer.quantization_mode == mode
            and not getattr(layer, f"is_{mode}_calibrated", True)]
    if left:
        warnings.warn(
            f"{mode.upper()}: layers {left} got {mode} weights but are in none of the "
            "structure's 'sequential_blocks', so they were not calibrated: they still compute "
            "with their float kernels, and a model holding them saves a file that does not "
            "load. Add them to a block, or leave them "
            "out with `quantize(..., filters=...)`.", stacklevel=3)
