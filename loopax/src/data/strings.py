"""`StringTensor`: TensorFlow's `tf.string` tensors, held on the host.

XLA computes on numbers only, so strings never enter a compiled program: a
StringTensor holds a NumPy object array of `bytes` (UTF-8, as TensorFlow's
string tensors hold bytes) and every string op (`tf.strings.*`, indexing,
`+`, `==`, `tf.reshape`/`expand_dims`/`concat`/... of strings) runs in NumPy.
Iterating a dataset of text, `Dataset.map` functions, `TextVectorization` and
`StringLookup` all take them. A StringTensor given to a JAX computation (a
`jax.numpy` function, a compiled `loopax.function`, a model's step) raises a
TypeError that says to map the text to numbers first.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from loopax.src.tensor import EagerTensor, Tensor

STRING = np.dtype(object)   # `tf.string`: the dtype of a StringTensor's array


def is_string_array(x) -> bool:
    """Whether `x` is a NumPy array of text (`str`/`bytes` dtypes, or objects that
    are all `str`/`bytes`; an empty object array counts)."""
    if not isinstance(x, np.ndarray):
        return False
    if x.dtype.kind in "SU":
        return True
    if x.dtype != object:
        return False
    return all(isinstance(v, (bytes, str)) for v in x.flat)


def _encode(v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")   # bytes a decode kept, given back
    if isinstance(v, np.bytes_):
        return bytes(v)
    raise TypeError(f"A string tensor holds text only; got {type(v).__name__} {v!r}. "
                    "Convert numbers with tf.strings.as_string.")


def as_bytes_array(value) -> np.ndarray:
    """`value` (str, bytes, nested lists of them, a NumPy text array, a
    StringTensor) as an object array of `bytes`."""
    if isinstance(value, StringTensor):
        return value._loopax_value
    if isinstance(value, (str, bytes)):
        out = np.empty((), dtype=object)
        out[()] = _encode(value)
        return out
    array = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if array.dtype.kind == "U" or array.dtype.kind == "S" or array.dtype == object:
        out = np.empty(array.shape, dtype=object)
        for index, v in np.ndenumerate(array):
            out[index] = _encode(v)
        return out
    raise TypeError(f"Expected text, got an array of dtype {array.dtype}; convert numbers "
                    "with tf.strings.as_string.")


def is_text(value) -> bool:
    """Whether `value` is text a StringTensor can hold: a str/bytes, a (nested)
    list of them, a NumPy text array or a StringTensor."""
    if isinstance(value, (StringTensor, str, bytes)):
        return True
    if isinstance(value, np.ndarray):
        return is_string_array(value)
    if isinstance(value, (list, tuple)) and value:
        return all(is_text(v) for v in value)
    return False


def string_error(what):
    """The TypeError for a string tensor reaching `what` (a JAX computation)."""
    return TypeError(
        f"{what} got a string tensor: strings stay on the host (XLA computes on numbers "
        "only), so they cannot enter a JAX computation, a compiled function or a model's "
        "step. Map the text to numbers first, in the input pipeline: "
        "tf.strings.to_number, a TextVectorization or StringLookup layer in Dataset.map, "
        "or NumPy.")


class StringTensor(EagerTensor):
    """A tensor of strings (`tf.string`), held on the host as a NumPy object array
    of UTF-8 `bytes`.

    `.numpy()` gives that array (a `bytes` object for a scalar, as TensorFlow);
    indexing, iteration, `len`, `+` (concatenation) and `==`/`!=` work as on
    TensorFlow's string tensors. Build one with `tf.constant("text")` or
    `tf.constant(["a", "b"])`.

    Args:
        value: Text: a str, bytes, nested lists of them, or a NumPy text array.
    """

    __slots__ = ()

    def __init__(self, value):
        self._loopax_value = as_bytes_array(value)

    @property
    def shape(self) -> tuple:
        return tuple(self._loopax_value.shape)

    @property
    def dtype(self):
        return STRING

    @property
    def ndim(self) -> int:
        return self._loopax_value.ndim

    def numpy(self):
        """The strings as a NumPy object array of `bytes` (a `bytes` for a scalar)."""
        value = self._loopax_value
        return value[()] if value.ndim == 0 else value.copy()

    def __array__(self, dtype=None, copy=None):
        return self._loopax_value if dtype is None else self._loopax_value.astype(dtype)

    @property
    def __jax_array__(self):
        raise string_error("A JAX computation")

    def __getitem__(self, index):
        if isinstance(index, Tensor):
            index = np.asarray(index)
        elif isinstance(index, tuple):
            index = tuple(np.asarray(i) if isinstance(i, Tensor) else i for i in index)
        return StringTensor(self._loopax_value[index])

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("Cannot iterate over a scalar string tensor.")
        for i in range(len(self)):
            yield self[i]

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a scalar string tensor.")
        return self.shape[0]

    def __bool__(self):
        if self._loopax_value.size != 1:
            raise ValueError("The truth value of a string tensor with more than one "
                             "element is ambiguous.")
        return bool(self._loopax_value.reshape(-1)[0])

    def __eq__(self, other):
        from_other = _other_bytes(other)
        if from_other is None:
            return EagerTensor(jnp.zeros(self.shape, bool))
        return EagerTensor(jnp.asarray(np.equal(self._loopax_value, from_other), bool))

    def __ne__(self, other):
        from_other = _other_bytes(other)
        if from_other is None:
            return EagerTensor(jnp.ones(self.shape, bool))
        return EagerTensor(jnp.asarray(np.not_equal(self._loopax_value, from_other), bool))

    __hash__ = object.__hash__

    def __add__(self, other):
        return StringTensor(np.asarray(self._loopax_value + as_bytes_array(other), object))

    def __radd__(self, other):
        return StringTensor(np.asarray(as_bytes_array(other) + self._loopax_value, object))

    def __format__(self, spec):
        return format(str(self), spec) if spec else super().__format__(spec)

    def _loopax_repr(self):
        value = self._loopax_value
        shown = repr(value[()]) if value.ndim == 0 else np.array2string(
            value, separator=" ", formatter={"object": repr}, threshold=1000)
        return f"Tensor({shown}, shape={self.shape}, dtype=string)"

    def _not_numeric(name):
        def refuse(self, *args, **kwargs):
            raise TypeError(f"`{name}` of a string tensor: strings support `+` "
                            "(concatenation), `==`, `!=`, indexing and the tf.strings ops; "
                            "convert to numbers with tf.strings.to_number first.")
        return refuse

    for _name in ("sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lt", "le",
                  "gt", "ge", "neg", "abs", "invert", "float", "int", "index"):
        locals()[f"__{_name}__"] = _not_numeric(_name)
    for _name in ("sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"):
        locals()[f"__r{_name}__"] = _not_numeric(_name)
    del _name, _not_numeric


def _other_bytes(other):
    try:
        return as_bytes_array(other)
    except TypeError:
        return None


__all__ = ["STRING", "StringTensor", "as_bytes_array", "is_string_array", "is_text",
           "string_error"]
