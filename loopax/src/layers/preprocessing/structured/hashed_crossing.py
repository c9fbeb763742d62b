"""HashedCrossing: crosses categorical features with the hashing trick, with
TensorFlow's `sparse.cross_hashed` hash (what Keras 3's layer runs), on the
host in the data pipeline."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.preprocessing.structured.categorical import (
    check_output_mode,
    encode_categorical,
)
from loopax.src.layers.preprocessing.structured.hashing import exact_host_values, fingerprint64

_M64 = (1 << 64) - 1
_CROSS_SEED = 0xDECAFCAFFE          # TensorFlow's default hash_key for cross_hashed
_CAT_MUL = 0xC6A4A7935BD1E995
_INT64_MAX = (1 << 63) - 1


def _shift_mix(v):
    return v ^ (v >> 47)


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TensorFlow's `FingerprintCat64`: combines two 64-bit fingerprints."""
    result = fp1 ^ _CAT_MUL
    result ^= (_shift_mix((fp2 * _CAT_MUL) & _M64) * _CAT_MUL) & _M64
    result = (result * _CAT_MUL) & _M64
    return _shift_mix((_shift_mix(result) * _CAT_MUL) & _M64)


def _feature_fingerprint(value) -> int:
    """An integer feature is its own 64-bit value; a string its Fingerprint64."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, bytes):
        return fingerprint64(value)
    return int(value) & _M64


def cross_hash(values, num_bins: int) -> int:
    """The bin of one crossed tuple of features (`num_bins=0`: the raw hash
    modulo 2**63 - 1, as TensorFlow)."""
    crossed = _CROSS_SEED
    for value in values:
        crossed = fingerprint_cat64(crossed, _feature_fingerprint(value))
    return crossed % (num_bins or _INT64_MAX)


@export("loopax.layers.HashedCrossing")
class HashedCrossing(Layer):
    """Crosses two or more categorical features: `hash(features) % num_bins`,
    with the hash of TensorFlow's `tf.sparse.cross_hashed` (so the bins are
    Keras's). Integer features are hashed by value, strings by FarmHash
    Fingerprint64. Runs on the host (NumPy) in the data pipeline, not inside
    a compiled model (Keras on JAX cannot compile it either).

    Input: a list/tuple of >= 2 integer or string features of one shape:
    `()`, `(batch,)` or `(batch, 1)`.
    Output: bin indices of that shape (int64 by default) with
    `output_mode="int"`; with "one_hot", `(batch, num_bins)` (`(1, num_bins)`
    for scalars, as Keras), float32 by default.

    Args:
        num_bins: The number of bins, a positive int.
        output_mode: `"int"` (the default) or `"one_hot"`.
        sparse: Must be False (Keras allows True on TensorFlow only).
        **kwargs: Base layer arguments (`name`, `dtype`).

    Raises:
        ValueError: a bad `num_bins`/`output_mode`, `sparse=True`, or (when
            called) not a list of >= 2 features, features of other shapes or
            ranks, or features that are not integers or strings.
    """

    def __init__(self, num_bins, output_mode="int", sparse=False, **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(**kwargs)
        if isinstance(num_bins, bool) or not isinstance(num_bins, (int, np.integer)) \
                or num_bins <= 0:
            raise ValueError(f"HashedCrossing: `num_bins` must be a positive int, "
                             f"got {num_bins!r}.")
        self.output_mode = check_output_mode(output_mode, ("int", "one_hot"), "HashedCrossing")
        if sparse:
            raise ValueError("HashedCrossing: `sparse=True` needs Keras's TensorFlow backend; "
                             "use sparse=False.")
        self.num_bins, self.sparse = int(num_bins), sparse
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple)):
            inputs = type(inputs)(exact_host_values(x) for x in inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        features = self._checked_features(inputs)
        shape = features[0].shape
        rows = zip(*(f.ravel().tolist() for f in features))
        bins = np.asarray([cross_hash(row, self.num_bins) for row in rows], np.int64)
        bins = bins.reshape(shape)
        if self.output_mode == "int":
            return jnp.asarray(bins.astype(self.dtype))
        bins = bins.reshape(-1)   # (batch,); a scalar is a batch of one (Keras: (1, num_bins))
        return encode_categorical(jnp.asarray(bins, "int32"), "one_hot", self.num_bins,
                                  self.dtype)

    def _checked_features(self, inputs):
        """The features as NumPy arrays, or a clear error naming what is wrong."""
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"HashedCrossing {self.name!r} crosses a list or tuple of at least "
                             f"two features; got {type(inputs).__name__}. Call it as "
                             "layer((feature_a, feature_b)).")
        if any(isinstance(x, jax.core.Tracer) for x in inputs):
            raise TypeError(f"HashedCrossing {self.name!r} runs on the host, not inside "
                            "compiled code (a functional model, fit's step): apply it to the "
                            "data before fit (on NumPy arrays or in the dataset's map).")
        features = [np.asarray(x) for x in inputs]
        shape = features[0].shape
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise ValueError(f"HashedCrossing {self.name!r}: features must have shape (), "
                             f"(batch,) or (batch, 1); got {shape}.")
        if any(f.shape != shape for f in features):
            raise ValueError(f"HashedCrossing {self.name!r}: all features must have the same "
                             f"shape; got {[f.shape for f in features]}.")
        for f in features:
            if not all(isinstance(v, (str, bytes)) or (isinstance(v, (int, np.integer))
                       and not isinstance(v, (bool, np.bool_))) for v in f.ravel().tolist()):
                raise ValueError(f"HashedCrossing {self.name!r}: features must be integers or "
                                 f"strings; got dtype {f.dtype}. Cast floats to int or str.")
        return features

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins,
                "output_mode": self.output_mode, "sparse": self.sparse}
