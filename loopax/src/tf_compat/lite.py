"""`tf.lite` as a save-then-call round trip on `loopax.export`.

`TFLiteConverter.from_keras_model(model).convert()` returns bytes: not a
TFLite flatbuffer but a loopax export archive (the model's inference call as
StableHLO plus its weights), which `Interpreter(model_content=...)` runs with
TFLite's calling convention (`allocate_tensors`, `get_input_details`,
`set_tensor`, `invoke`, `get_tensor`). The bytes run where loopax runs; for
phones and microcontrollers convert with TensorFlow itself. Quantization
options are accepted and ignored (the numbers stay float), with a warning.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import warnings

import jax
import numpy as np

from loopax.src import export as _export
from loopax.src.saving.archive import parse_json
from loopax.src.utils import safe_open

# The most bytes `Interpreter(model_path=...)` reads (the whole file is held in memory).
MAX_MODEL_BYTES = 2**33

_ENDPOINT, _ANY_BATCH = "serving_default", "serving_any_batch"
_MAGIC = b"loopax-lite-1\n"   # then the header's length (8 bytes), the header, the archive


class Optimize:
    """`tf.lite.Optimize` (accepted; loopax does not quantize)."""
    DEFAULT = "DEFAULT"
    OPTIMIZE_FOR_SIZE = "OPTIMIZE_FOR_SIZE"
    OPTIMIZE_FOR_LATENCY = "OPTIMIZE_FOR_LATENCY"
    EXPERIMENTAL_SPARSITY = "EXPERIMENTAL_SPARSITY"


class OpsSet:
    """`tf.lite.OpsSet` (accepted; the program is StableHLO either way)."""
    TFLITE_BUILTINS = "TFLITE_BUILTINS"
    SELECT_TF_OPS = "SELECT_TF_OPS"
    TFLITE_BUILTINS_INT8 = "TFLITE_BUILTINS_INT8"


class TargetSpec:
    def __init__(self):
        self.supported_ops = {OpsSet.TFLITE_BUILTINS}
        self.supported_types = []


class TFLiteConverter:
    """Converts a Keras model (its inference call) to bytes `Interpreter` runs."""

    def __init__(self, model, input_signature=None):
        self._model, self._signature = model, input_signature
        self.optimizations = []
        self.target_spec = TargetSpec()
        self.representative_dataset = None
        self.inference_input_type = self.inference_output_type = None
        self.allow_custom_ops = False
        self.experimental_new_converter = True

    @classmethod
    def from_keras_model(cls, model):
        return cls(model)

    @classmethod
    def from_concrete_functions(cls, funcs, trackable_obj=None):
        raise NotImplementedError(
            "tf.lite.TFLiteConverter.from_concrete_functions: loopax converts Keras models "
            "only (TFLiteConverter.from_keras_model(model)); for a tf.Module's functions use "
            "tf.saved_model.save / tf.saved_model.load.")

    @classmethod
    def from_saved_model(cls, saved_model_dir, signature_keys=None, tags=None):
        raise NotImplementedError(
            "tf.lite.TFLiteConverter.from_saved_model: loopax does not convert saved "
            "directories; load it with tf.saved_model.load and call its signatures, or "
            "convert the Keras model itself with TFLiteConverter.from_keras_model(model).")

    def convert(self):
        """The model's inference call as bytes (a loopax export archive)."""
        if self.optimizations or self.representative_dataset is not None:
            warnings.warn("tf.lite.TFLiteConverter: loopax does not quantize; the converted "
                          "model computes in its own float dtype (optimizations and "
                          "representative_dataset are ignored).", stacklevel=2)
        model = self._model
        inputs = getattr(model, "inputs", None)
        if not inputs:
            raise ValueError(
                "tf.lite.TFLiteConverter.from_keras_model: the model has no known input "
                "shape; build it with an Input (keras.Input((4,)) first in a Sequential, or "
                "a functional model) before converting.")
        # TFLite fixes a None batch size to 1 (resize_tensor_input changes it).
        specs = [jax.ShapeDtypeStruct(tuple(1 if d is None else int(d) for d in t.shape),
                                      t.dtype) for t in inputs]
        archive = _export.ExportArchive()
        archive.track(model)
        single = len(specs) == 1
        call = ((lambda x: model(x, training=False)) if single
                else (lambda *x: model(list(x), training=False)))
        exported = archive.add_endpoint(_ENDPOINT, call, specs)
        # the signature runner takes any batch size, as TFLite's resizes its inputs
        archive.add_endpoint(_ANY_BATCH, call, list(inputs))
        header = json.dumps({
            "input_names": [getattr(t, "name", None) or f"input_{i}"
                            for i, t in enumerate(inputs)],
            "inputs": [{"shape": list(s.shape), "dtype": np.dtype(s.dtype).name}
                       for s in specs],
            "outputs": [{"shape": list(a.shape), "dtype": np.dtype(a.dtype).name}
                        for a in exported.out_avals]}).encode()
        buffer = io.BytesIO()
        archive.write_out(buffer, verbose=False)
        return _MAGIC + len(header).to_bytes(8, "little") + header + buffer.getvalue()


class Interpreter:
    """Runs bytes from `TFLiteConverter.convert()` (loopax's format, see the module
    docstring); a real .tflite flatbuffer raises an error naming what to use.

    Args:
        model_path: a file holding the bytes.
        model_content: the bytes.
    """

    def __init__(self, model_path=None, model_content=None, experimental_delegates=None,
                 num_threads=None, **kwargs):
        if (model_path is None) == (model_content is None):
            raise ValueError("tf.lite.Interpreter: pass exactly one of model_path and "
                             "model_content.")
        if model_content is None:
            model_content = safe_open.read_bytes(
                model_path, MAX_MODEL_BYTES, "a tf.lite model file",
                "It is not a model that tf.lite.TFLiteConverter wrote here.")
        content = bytes(model_content)
        if content[4:8] == b"TFL3":
            raise ValueError(
                "tf.lite.Interpreter: this is a TensorFlow Lite flatbuffer, which loopax "
                "cannot run. Run it with TensorFlow Lite (tflite_runtime), or convert the "
                "Keras model with loopax.tf.lite.TFLiteConverter.from_keras_model(model) "
                "and run those bytes here.")
        if not content.startswith(_MAGIC) or len(content) < len(_MAGIC) + 8:
            raise ValueError("tf.lite.Interpreter: the model content is not bytes that "
                             "loopax.tf.lite.TFLiteConverter.convert() produced.")
        size = int.from_bytes(content[len(_MAGIC):len(_MAGIC) + 8], "little")
        start = len(_MAGIC) + 8
        if size > min(len(content) - start, 1 << 20):
            raise ValueError("tf.lite.Interpreter: the model content is damaged (its header "
                             "is longer than the content).")
        header = parse_json(content[start:start + size], "model_content", "the header")
        fd, path = tempfile.mkstemp(suffix=".export")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content[start + size:])
            self._archive = _export.load(path)
        finally:
            os.remove(path)
        self._call = getattr(self._archive, _ENDPOINT)
        self._any_batch = getattr(self._archive, _ANY_BATCH)
        self._input_names = list(header["input_names"])
        self._inputs = [np.zeros(x["shape"], x["dtype"]) for x in header["inputs"]]
        self._out_avals = [jax.ShapeDtypeStruct(tuple(x["shape"]), x["dtype"])
                           for x in header["outputs"]]
        self._outputs = None
        self._allocated = False

    def allocate_tensors(self):
        self._allocated = True

    def _details(self, index, name, value_shape, dtype):
        shape = np.array(value_shape, np.int32)
        signature = shape.copy()
        if index < len(self._inputs) and len(signature):
            signature[0] = -1
        return {"name": name, "index": index, "shape": shape, "shape_signature": signature,
                "dtype": np.dtype(dtype).type, "quantization": (0.0, 0),
                "quantization_parameters": {"scales": np.zeros(0, np.float32),
                                            "zero_points": np.zeros(0, np.int32),
                                            "quantized_dimension": 0},
                "sparsity_parameters": {}}

    def get_input_details(self):
        return [self._details(i, f"serving_default_inputs_{i}:0", x.shape, x.dtype)
                for i, x in enumerate(self._inputs)]

    def get_output_details(self):
        first = len(self._inputs)
        return [self._details(first + i, f"StatefulPartitionedCall:{i}", a.shape, a.dtype)
                for i, a in enumerate(self._out_avals)]

    def _check_allocated(self, what):
        if not self._allocated:
            raise RuntimeError(f"tf.lite.Interpreter.{what}: call allocate_tensors() first.")

    def resize_tensor_input(self, input_index, tensor_size, strict=False):
        raise NotImplementedError(
            "tf.lite.Interpreter.resize_tensor_input: the converted program has fixed input "
            "shapes (batch 1); call the Keras model, or tf.saved_model.save/load for "
            "any batch size.")

    def set_tensor(self, tensor_index, value):
        self._check_allocated("set_tensor")
        if not 0 <= tensor_index < len(self._inputs):
            raise ValueError(f"tf.lite.Interpreter.set_tensor: {tensor_index} is not an input "
                             f"index (inputs are 0..{len(self._inputs) - 1}).")
        want = self._inputs[tensor_index]
        value = np.asarray(value)
        if value.shape != want.shape:
            raise ValueError(f"Cannot set tensor: Dimension mismatch. Got {value.shape} but "
                             f"expected {want.shape} for input {tensor_index}.")
        if value.dtype != want.dtype:
            raise ValueError(f"Cannot set tensor: Got value of type {value.dtype.name} but "
                             f"expected type {want.dtype.name} for input {tensor_index}.")
        self._inputs[tensor_index] = value

    def invoke(self):
        self._check_allocated("invoke")
        self._outputs = [np.asarray(a) for a in
                         jax.tree_util.tree_leaves(self._call(*self._inputs))]

    def get_signature_list(self):
        """{'serving_default': {'inputs': [...], 'outputs': ['output_0', ...]}}."""
        return {_ENDPOINT: {"inputs": list(self._input_names),
                            "outputs": [f"output_{i}" for i in range(len(self._out_avals))]}}

    def get_signature_runner(self, signature_key=None):
        """The model as a function of keyword arguments (any batch size) returning
        {'output_0': array, ...}, as TFLite's signature runner."""
        if signature_key not in (None, _ENDPOINT):
            raise ValueError(f"tf.lite.Interpreter.get_signature_runner: no signature "
                             f"{signature_key!r}; the converted model has {_ENDPOINT!r}.")
        return _SignatureRunner(self)

    def get_tensor(self, tensor_index):
        first = len(self._inputs)
        if tensor_index < first:
            return self._inputs[tensor_index].copy()
        if self._outputs is None:
            raise ValueError("tf.lite.Interpreter.get_tensor: call invoke() first.")
        return self._outputs[tensor_index - first].copy()


__all__ = ["Interpreter", "Optimize", "OpsSet", "TFLiteConverter"]


class _SignatureRunner:
    """`Interpreter.get_signature_runner()`: keyword arguments in, a dict out."""

    def __init__(self, interpreter):
        self._interpreter = interpreter

    def get_input_details(self):
        details = self._interpreter.get_input_details()
        return dict(zip(self._interpreter._input_names, details))

    def get_output_details(self):
        details = self._interpreter.get_output_details()
        return {f"output_{i}": d for i, d in enumerate(details)}

    def __call__(self, **inputs):
        names = self._interpreter._input_names
        if len(names) == 1 and len(inputs) == 1:
            # one input: any keyword (Keras names input tensors differently across
            # versions and backends: keras_tensor_15, input_layer, ...)
            values = list(inputs.values())
        else:
            unknown = sorted(set(inputs) - set(names))
            missing = [n for n in names if n not in inputs]
            if unknown or missing:
                raise ValueError(f"tf.lite signature runner: the inputs are {names}; got "
                                 f"{sorted(inputs)}.")
            values = [inputs[n] for n in names]
        arrays = [np.asarray(v, dtype=x.dtype) for v, x in zip(values,
                                                                self._interpreter._inputs)]
        outputs = jax.tree_util.tree_leaves(self._interpreter._any_batch(*arrays))
        return {f"output_{i}": np.asarray(o) for i, o in enumerate(outputs)}
