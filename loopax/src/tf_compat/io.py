"""`tf.io`: reading and writing files, raw bytes to numbers, image codecs.

Files are read and written on the host (`read_file` gives a scalar string tensor
of the file's bytes); `decode_raw` turns bytes into numbers with NumPy; the image
codecs are `tf.image`'s (Pillow). TFRecord and `tf.train.Example` protos are
TensorFlow's own formats and stay out: `parse_example`, `TFRecordWriter` and
friends raise an error that names the loopax way (NumPy/`.npz` or
safetensors files read into `tf.data.Dataset.from_tensor_slices`).
"""

from __future__ import annotations

import os

import numpy as np

from loopax.src.data.strings import StringTensor
from loopax.src.tf_compat import dtypes, files, image
from loopax.src.tf_compat.strings import _strings, _wrap
from loopax.src.tf_compat.tensors import document
from loopax.src.utils import safe_open

decode_image = image.decode_image
decode_png = image.decode_png
decode_jpeg = image.decode_jpeg
encode_png = image.encode_png
encode_jpeg = image.encode_jpeg


def _path(filename, op):
    array = _strings(filename, "filename")
    if array.ndim != 0:
        raise ValueError(f"tf.io.{op}: `filename` must be one path (a scalar string); got "
                         f"shape {array.shape}. Map over a dataset of paths instead.")
    return os.fsdecode(array[()])


def read_file(filename, name=None):
    """The contents of the file at `filename`, a scalar string tensor of its bytes."""
    path = _path(filename, "read_file")
    return StringTensor(safe_open.read_bytes(path, files.MAX_FILE_BYTES, "tf.io.read_file",
                                             "Split it into smaller files."))


def write_file(filename, contents, name=None):
    """Writes `contents` (a scalar string tensor or bytes) to `filename`, creating
    the directories above it as TensorFlow does."""
    path = _path(filename, "write_file")
    data = _strings(contents, "contents")
    if data.ndim != 0:
        raise ValueError(f"tf.io.write_file: `contents` must be one string; got shape "
                         f"{data.shape}.")
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data[()])


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """Each string's bytes read as numbers of `out_type`: a string of n bytes gives
    n / itemsize numbers along a new last axis (all strings the same length, or
    `fixed_length` bytes each, cut or zero-padded)."""
    dtype = np.dtype(dtypes.as_dtype(out_type))
    dtype = dtype.newbyteorder("<" if little_endian else ">")
    array = _strings(input_bytes, "input_bytes")
    flat = [bytes(v) for v in array.reshape(-1)]
    if fixed_length is not None:
        size = int(fixed_length)
        flat = [v[:size].ljust(size, b"\0") for v in flat]
    lengths = {len(v) for v in flat}
    if len(lengths) > 1:
        raise ValueError(f"tf.io.decode_raw: the strings of `input_bytes` must all have "
                         f"the same length (got lengths {sorted(lengths)}); pass "
                         f"fixed_length=.")
    width = lengths.pop() if lengths else 0
    if width % dtype.itemsize:
        raise ValueError(f"tf.io.decode_raw: {width} bytes are not a whole number of "
                         f"{dtype.name} values ({dtype.itemsize} bytes each).")
    rows = [np.frombuffer(v, dtype=dtype) for v in flat]
    out = np.stack(rows) if rows else np.empty((0, 0), dtype)
    out = out.reshape(array.shape + (width // dtype.itemsize,)).astype(dtype.newbyteorder("="))
    return _wrap(out)


def decode_base64(input, name=None):
    """Web-safe base64 strings (TensorFlow's alphabet, `-` and `_`) decoded."""
    import base64

    def one(v):
        return base64.urlsafe_b64decode(v + b"=" * (-len(v) % 4))
    array = _strings(input)
    out = np.empty(array.shape, object)
    for index, v in np.ndenumerate(array):
        out[index] = one(v)
    return StringTensor(out)


def encode_base64(input, pad=False, name=None):
    """Strings encoded as web-safe base64 (no `=` padding unless `pad`)."""
    import base64
    array = _strings(input)
    out = np.empty(array.shape, object)
    for index, v in np.ndenumerate(array):
        text = base64.urlsafe_b64encode(v)
        out[index] = text if pad else text.rstrip(b"=")
    return StringTensor(out)


_NO_PROTOS = ("TFRecord files and tf.train.Example protos are TensorFlow's own formats, "
              "which loopax does not read or write (no protobuf runtime). Keep features "
              "as NumPy arrays (np.savez / safetensors files) and load them with "
              "tf.data.Dataset.from_tensor_slices, or read TFRecords once with TensorFlow "
              "and save them as .npz.")
_PROTO_NAMES = ("parse_example", "parse_single_example", "parse_sequence_example",
                "parse_single_sequence_example", "parse_tensor", "serialize_tensor",
                "TFRecordWriter", "TFRecordOptions", "FixedLenFeature",
                "FixedLenSequenceFeature", "VarLenFeature", "RaggedFeature",
                "SparseFeature", "tf_record_iterator", "decode_proto", "encode_proto")


def __getattr__(name):
    if name in _PROTO_NAMES:
        raise AttributeError(f"loopax.tf.io.{name} is not provided: {_NO_PROTOS}")
    raise AttributeError(f"module 'loopax.tf.io' has no attribute {name!r}. loopax.tf.io "
                         "has read_file, write_file, decode_raw, decode_base64/"
                         "encode_base64 and the image codecs (decode_png/jpeg/image, "
                         "encode_png/jpeg); see docs/guides/migrating_from_tf_keras.md.")


_ARGS = {
    "filename": "A path: str, bytes or a scalar string tensor.",
    "contents": "The bytes to write: bytes or a scalar string tensor.",
    "input_bytes": "A string tensor of raw bytes (or bytes, lists of them).",
    "out_type": "The dtype to read the bytes as (tf.uint8, tf.float32, ...).",
    "little_endian": "Read multi-byte numbers as little-endian (the default).",
    "fixed_length": "Read this many bytes of each string (cut or zero-padded).",
    "input": "A string tensor.", "pad": "Keep the `=` padding.",
}
for _fn in (read_file, write_file, decode_raw, decode_base64, encode_base64):
    document(_fn, **_ARGS)
del _fn
