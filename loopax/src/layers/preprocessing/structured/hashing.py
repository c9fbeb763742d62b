"""Hashing layer and the string hashes Keras uses (host-side, NumPy).

`fingerprint64(b)` is FarmHash's Fingerprint64 (what TensorFlow's
`to_hash_bucket_fast`, and so Keras's `Hashing`, uses); `siphash(key, b)`
is SipHash-2-4 (`to_hash_bucket_strong`, Keras's `Hashing(salt=...)`).
Both on `bytes`, in pure Python integers: strings are hashed in the data
pipeline on the host, as in Keras.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.layers import symbolic
from loopax.src.layers.layer import Layer
from loopax.src.layers.preprocessing.structured.categorical import (
    check_output_mode,
    encode_categorical,
)
from loopax.src.tensor import unwrap

_M64 = (1 << 64) - 1
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _u64(b, i):
    return int.from_bytes(b[i:i + 8], "little")


def _u32(b, i):
    return int.from_bytes(b[i:i + 4], "little")


def _rot(v, shift):
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M64


def _shift_mix(v):
    return v ^ (v >> 47)


def _hash16(u, v, mul):
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _hash_0_to_16(b):
    n = len(b)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_u64(b, 0) + _K2) & _M64
        c = _u64(b, n - 8)
        return _hash16((_rot(c, 37) * mul + a) & _M64, ((_rot(a, 25) + c) * mul) & _M64, mul)
    if n >= 4:
        return _hash16(n + (_u32(b, 0) << 3), _u32(b, n - 4), _K2 + n * 2)
    if n:
        y = (b[0] + (b[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (b[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
    return _K2


def _hash_17_to_32(b):
    n, mul = len(b), _K2 + len(b) * 2
    a = (_u64(b, 0) * _K1) & _M64
    c = _u64(b, 8)
    d = (_u64(b, n - 8) * mul) & _M64
    e = (_u64(b, n - 16) * _K2) & _M64
    return _hash16((_rot((a + c) & _M64, 43) + _rot(d, 30) + e) & _M64,
                   (a + _rot((c + _K2) & _M64, 18) + d) & _M64, mul)


def _hash_33_to_64(b):
    n, mul = len(b), _K2 + len(b) * 2
    a = (_u64(b, 0) * _K2) & _M64
    c = _u64(b, 8)
    d = (_u64(b, n - 8) * mul) & _M64
    e = (_u64(b, n - 16) * _K2) & _M64
    y = (_rot((a + c) & _M64, 43) + _rot(d, 30) + e) & _M64
    z = _hash16(y, (a + _rot((c + _K2) & _M64, 18) + d) & _M64, mul)
    f = (_u64(b, 16) * mul) & _M64
    g = _u64(b, 24)
    h = ((y + _u64(b, n - 32)) * mul) & _M64
    i = ((z + _u64(b, n - 24)) * mul) & _M64
    return _hash16((_rot((f + g) & _M64, 43) + _rot(h, 30) + i) & _M64,
                   (f + _rot((g + a) & _M64, 18) + h) & _M64, mul)


def _weak32(b, i, a, c):
    w, x, y, z = _u64(b, i), _u64(b, i + 8), _u64(b, i + 16), _u64(b, i + 24)
    a = (a + w) & _M64
    c = _rot((c + a + z) & _M64, 21)
    first = a
    a = (a + x + y) & _M64
    c = (c + _rot(a, 44)) & _M64
    return (a + z) & _M64, (c + first) & _M64


def fingerprint64(b: bytes) -> int:
    """FarmHash Fingerprint64 of `b` (an unsigned 64-bit int)."""
    n = len(b)
    if n <= 16:
        return _hash_0_to_16(b)
    if n <= 32:
        return _hash_17_to_32(b)
    if n <= 64:
        return _hash_33_to_64(b)
    seed = 81
    y = (seed * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v, w = (0, 0), (0, 0)
    x = (seed * _K2 + _u64(b, 0)) & _M64
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    s = 0
    while True:
        x = (_rot((x + y + v[0] + _u64(b, s + 8)) & _M64, 37) * _K1) & _M64
        y = (_rot((y + v[1] + _u64(b, s + 48)) & _M64, 42) * _K1) & _M64
        x ^= w[1]
        y = (y + v[0] + _u64(b, s + 40)) & _M64
        z = (_rot((z + w[0]) & _M64, 33) * _K1) & _M64
        v = _weak32(b, s, (v[1] * _K1) & _M64, (x + w[0]) & _M64)
        w = _weak32(b, s + 32, (z + w[1]) & _M64, (y + _u64(b, s + 16)) & _M64)
        z, x = x, z
        s += 64
        if s == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    s = last64
    w = ((w[0] + ((n - 1) & 63)) & _M64, w[1])
    v = ((v[0] + w[0]) & _M64, v[1])
    w = ((w[0] + v[0]) & _M64, w[1])
    x = (_rot((x + y + v[0] + _u64(b, s + 8)) & _M64, 37) * mul) & _M64
    y = (_rot((y + v[1] + _u64(b, s + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * 9) & _M64
    y = (y + v[0] * 9 + _u64(b, s + 40)) & _M64
    z = (_rot((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak32(b, s, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak32(b, s + 32, (z + w[1]) & _M64, (y + _u64(b, s + 16)) & _M64)
    z, x = x, z
    return _hash16((_hash16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M64,
                   (_hash16(v[1], w[1], mul) + x) & _M64, mul)


def siphash(key, b: bytes) -> int:
    """SipHash-2-4 of `b` under `key = (k0, k1)` (two unsigned 64-bit ints)."""
    k0, k1 = (int(k) & _M64 for k in key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(count):
        for _ in range(count):
            v[0] = (v[0] + v[1]) & _M64
            v[1] = _rot(v[1], 64 - 13) ^ v[0]
            v[0] = _rot(v[0], 64 - 32)
            v[2] = (v[2] + v[3]) & _M64
            v[3] = _rot(v[3], 64 - 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _M64
            v[3] = _rot(v[3], 64 - 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _M64
            v[1] = _rot(v[1], 64 - 17) ^ v[2]
            v[2] = _rot(v[2], 64 - 32)

    n = len(b)
    padded = b + b"\0" * (7 - n % 8) + bytes([n & 0xFF])
    for i in range(0, len(padded), 8):
        m = _u64(padded, i)
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def as_bytes(value) -> bytes:
    """How Keras feeds a value to the string hash: str/bytes as UTF-8 bytes,
    an integer (or a float, truncated) as its decimal digits."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (float, np.floating)):
        value = int(value)
    return str(int(value)).encode("ascii")


def exact_host_values(x):
    """`x` as a NumPy array that stays exact through a layer call: integer arrays
    become object arrays of Python ints (the call's conversion to JAX arrays
    would cut int64 values to int32). Symbolic and traced values pass as they are."""
    if isinstance(x, jax.core.Tracer) or symbolic.is_symbolic(x):
        return x
    x = np.asarray(unwrap(x))
    return x.astype(object) if x.dtype.kind in "iu" else x


def hash_to_bins(values, num_bins, salt=None):
    """Bucket of each element of `values` (a NumPy array): hash % num_bins."""
    values = np.asarray(values)
    if salt is None:
        hashed = [fingerprint64(as_bytes(v)) % num_bins for v in values.ravel().tolist()]
    else:
        hashed = [siphash(salt, as_bytes(v)) % num_bins for v in values.ravel().tolist()]
    return np.asarray(hashed, dtype=np.int64).reshape(values.shape)


@export("loopax.layers.Hashing")
class Hashing(Layer):
    """Hashes strings or integers into `num_bins` buckets (FarmHash
    Fingerprint64, or keyed SipHash when `salt` is given, as Keras).

    With `mask_value`, that value maps to 0 and everything else to
    `1 + hash % (num_bins - 1)`. `output_mode`: "int", "one_hot",
    "multi_hot" or "count". Runs on the host (NumPy) in the data pipeline.

    Input: strings or integers of any shape. Output: bin indices of the same shape
    (int64 by default) with `output_mode="int"`, else encoded as by
    `CategoryEncoding` with depth `num_bins` (float32 by default).

    Args:
        num_bins: The number of bins (counting the mask bin), a positive int.
        mask_value: A value that maps to bin 0, or None (the default).
        salt: An int or a pair of ints keying SipHash, or None for Fingerprint64.
        output_mode: `"int"` (the default), `"one_hot"`, `"multi_hot"` or `"count"`.
        sparse: Must be False.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `num_bins` is not a positive int, a bad `salt` or `output_mode`,
            or `sparse=True`.
    """

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False,
                 **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(**kwargs)
        if not isinstance(num_bins, (int, np.integer)) or num_bins <= 0:
            raise ValueError(f"Hashing: `num_bins` must be a positive int, got {num_bins!r}.")
        self.output_mode = check_output_mode(output_mode, ("int", "one_hot", "multi_hot",
                                                           "count"), "Hashing")
        if sparse:
            raise ValueError("Hashing: `sparse=True` is not supported; use sparse=False.")
        if salt is not None:
            if isinstance(salt, (tuple, list)) and len(salt) == 2:
                salt = [int(s) for s in salt]
            elif isinstance(salt, int):
                salt = [salt, salt]
            else:
                raise ValueError(f"Hashing: `salt` must be an int or a pair of ints, "
                                 f"got {salt!r}.")
        self.num_bins, self.mask_value, self.salt, self.sparse = num_bins, mask_value, salt, \
            sparse
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        return super().__call__(exact_host_values(inputs), *args, **kwargs)

    def call(self, inputs):
        values = np.asarray(unwrap(inputs))
        if self.output_mode == "one_hot" and values.ndim and values.shape[-1] == 1:
            values = values[..., 0]
        bins = self.num_bins
        masked = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            masked = values == np.asarray(self.mask_value, values.dtype)
        indices = hash_to_bins(values, bins, self.salt)
        if masked is not None:
            indices = np.where(masked, 0, indices + 1)
        if self.output_mode == "int":
            return jnp.asarray(np.asarray(indices, self.dtype))
        return encode_categorical(jnp.asarray(indices, "int32"), self.output_mode,
                                  self.num_bins, self.dtype)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt,
                "mask_value": self.mask_value, "output_mode": self.output_mode,
                "sparse": self.sparse}
