"""`tf.strings` and string tensors on the host.

Strings are `StringTensor`s (loopax.src.data.strings): NumPy object arrays of
UTF-8 `bytes`, never sent to XLA. These ops run in NumPy and Python, with
TensorFlow's semantics (byte-wise by default, `unit="UTF8_CHAR"` /
`encoding="utf-8"` where TensorFlow offers them); their numeric results
(`length`, `to_number`, `regex_full_match`) are ordinary Tensors. Ops whose
TensorFlow result is a RaggedTensor (`split`, `unicode_split` of a batch) return
a `RaggedStrings`: rows of unequal length with `to_list()`, `to_tensor()`,
indexing and iteration. Regular expressions are Python's `re` on bytes, after
translating RE2's POSIX classes (`[[:punct:]]`, ...) and `\\1`-style rewrites.

`tf.constant`, `tf.convert_to_tensor` and the shape ops (`reshape`,
`expand_dims`, `squeeze`, `concat`, `stack`, `unstack`, `gather`, `tile`,
`transpose`, `reverse`, `boolean_mask`, `identity`, `shape`, `size`, `rank`,
`equal`, `not_equal`) take string tensors too: `host_aware` gives each a NumPy
path for them.
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.data.strings import StringTensor, as_bytes_array, is_text
from loopax.src.state import Variable
from loopax.src.tensor import EagerTensor, Tensor
from loopax.src.tf_compat import dtypes
from loopax.src.tf_compat.errors import errors
from loopax.src.tf_compat.tensors import HostValueNeeded, document

string = dtypes.string


def _strings(x, what="input"):
    try:
        return as_bytes_array(x)
    except TypeError:
        raise TypeError(f"tf.strings: `{what}` must be a string tensor (or str/bytes, lists "
                        f"of them); got {type(x).__name__}. Convert numbers with "
                        "tf.strings.as_string.") from None


def _host_numbers(value, op, what="input"):
    """`value` (numbers) as a NumPy array; a TypeError naming `op` when it is computed
    inside a compiled function, where no number is known until the program runs."""
    if isinstance(value, (Tensor, Variable)):
        value = value.value
    if isinstance(value, jax.core.Tracer):
        raise HostValueNeeded(
            f"tf.strings.{op}: `{what}` is computed inside a compiled tf.function, and "
            "strings are made on the host from known values (XLA computes on numbers "
            f"only). Return the numbers and call tf.strings.{op} outside the function, or "
            "run it as Python with @tf.function(jit_compile=False).")
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _map(fn, array, otype=object):
    out = np.empty(array.shape, dtype=otype)
    for index, v in np.ndenumerate(array):
        out[index] = fn(v)
    return out


def _wrap(array):
    """A NumPy result as a StringTensor (text) or a Tensor (numbers)."""
    array = np.asarray(array)
    if array.dtype == object:
        return StringTensor(array)
    if array.dtype == np.int64:
        array = array.astype(np.int32)
    elif array.dtype == np.float64:
        array = array.astype(np.float32)
    return EagerTensor(jnp.asarray(array))


class RaggedStrings:
    """Rows of strings of unequal length: what TensorFlow returns as a RaggedTensor
    from `tf.strings.split`/`unicode_split` of a batch.

    Args:
        rows: A list of 1-D object arrays of bytes (or, nested, of RaggedStrings).
    """

    def __init__(self, rows):
        self._rows = list(rows)

    @property
    def shape(self):
        return (len(self._rows), None)

    @property
    def dtype(self):
        return string

    def __len__(self):
        return len(self._rows)

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            row = self._rows[index]
            return row if isinstance(row, RaggedStrings) else StringTensor(row)
        return RaggedStrings(self._rows[index])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def to_list(self):
        """The rows as nested Python lists of `bytes`."""
        return [row.to_list() if isinstance(row, RaggedStrings) else list(row)
                for row in self._rows]

    def row_lengths(self):
        """The length of each row, a Tensor."""
        return EagerTensor(jnp.asarray(np.array([len(r) for r in self._rows], np.int32)))

    @property
    def flat_values(self):
        """All the strings, row after row, a StringTensor."""
        rows = [r.flat_values.numpy() if isinstance(r, RaggedStrings) else r
                for r in self._rows]
        return StringTensor(np.concatenate(rows) if rows else np.empty(0, object))

    def to_tensor(self, default_value=b"", shape=None):
        """The rows padded at the end with `default_value` into a StringTensor."""
        width = max((len(r) for r in self._rows), default=0)
        if shape is not None and shape[-1] is not None:
            width = int(shape[-1])
        out = np.full((len(self._rows), width), as_bytes_array(default_value)[()],
                      dtype=object)
        for i, row in enumerate(self._rows):
            row = row[:width]
            out[i, :len(row)] = row
        return StringTensor(out)

    def numpy(self):
        out = np.empty(len(self._rows), dtype=object)
        out[:] = [np.asarray(r, dtype=object) for r in self._rows]
        return out

    def __repr__(self):
        return f"<tf.RaggedTensor {self.to_list()}>"


def _ragged(array, split_one):
    """`split_one(bytes) -> list of bytes` over `array`: a 1-D StringTensor for a
    scalar, RaggedStrings for higher ranks."""
    if array.ndim == 0:
        return StringTensor(_row(split_one(array[()])))
    if array.ndim == 1:
        return RaggedStrings(_row(split_one(v)) for v in array)
    return RaggedStrings(_ragged(sub, split_one) for sub in array)


def _row(parts):
    out = np.empty(len(parts), dtype=object)
    out[:] = list(parts)
    return out


# ---- case, whitespace, joining ------------------------------------------------------

_ASCII_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = bytes.maketrans(b"abcdefghijklmnopqrstuvwxyz", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _case(table, unicode_case):
    def convert(input, encoding="", name=None):  # TensorFlow's name
        array = _strings(input)
        if encoding:
            if encoding.lower().replace("-", "") != "utf8":
                raise ValueError(f"tf.strings: encoding must be '' (ASCII) or 'utf-8'; got "
                                 f"{encoding!r}.")
            return StringTensor(_map(lambda v: unicode_case(v.decode("utf-8", "replace"))
                                     .encode("utf-8"), array))
        return StringTensor(_map(lambda v: v.translate(table), array))
    return convert


lower = _case(_ASCII_LOWER, str.lower)
lower.__doc__ = ("`input` lower-cased: ASCII letters only (TensorFlow's default), or all "
                 "of Unicode with `encoding='utf-8'`.")
upper = _case(_ASCII_UPPER, str.upper)
upper.__doc__ = ("`input` upper-cased: ASCII letters only (TensorFlow's default), or all "
                 "of Unicode with `encoding='utf-8'`.")
lower.__name__ = lower.__qualname__ = "lower"
upper.__name__ = upper.__qualname__ = "upper"


def strip(input, name=None):
    """`input` without leading and trailing whitespace."""
    return StringTensor(_map(lambda v: v.strip(b" \t\n\v\f\r"), _strings(input)))


def join(inputs, separator="", name=None):
    """The strings of `inputs` (a list of string tensors, broadcast together)
    joined elementwise with `separator`."""
    parts = [_strings(x, "inputs") for x in inputs]
    if not parts:
        raise ValueError("tf.strings.join: `inputs` must hold at least one tensor.")
    sep = _strings(separator, "separator")[()]
    parts = np.broadcast_arrays(*parts)
    out = np.empty(parts[0].shape, dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = sep.join(p[index] for p in parts)
    return StringTensor(out)


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """The strings of `inputs` joined along `axis` (None: all) with `separator`."""
    array = _strings(inputs, "inputs")
    sep = _strings(separator, "separator")[()]
    if axis is None:
        out = np.empty((1,) * array.ndim if keepdims else (), dtype=object)
        out[...] = sep.join(array.reshape(-1).tolist())
        return StringTensor(out)
    axis = int(np.asarray(axis)) % array.ndim
    moved = np.moveaxis(array, axis, -1)
    out = np.empty(moved.shape[:-1], dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = sep.join(moved[index].tolist())
    if keepdims:
        out = np.expand_dims(out, axis)
    return StringTensor(out)


# ---- splitting -------------------------------------------------------------------------

def split(input, sep=None, maxsplit=-1, name=None):
    """`input` split at `sep` (None: runs of whitespace, empty parts dropped) at
    most `maxsplit` times (-1: all): a 1-D string tensor for a scalar, a
    `RaggedStrings` of rows for a batch."""
    array = _strings(input)
    separator = None if sep is None else _strings(sep, "sep")[()]
    if separator == b"":
        separator = None
    count = -1 if maxsplit is None else int(maxsplit)
    return _ragged(array, lambda v: v.split(separator, count))


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,
                  name=None):
    """`input` split into its characters (each a UTF-8 string): a 1-D string tensor
    for a scalar, a `RaggedStrings` for a batch."""
    mode = _utf8_mode("unicode_split", input_encoding, errors)
    return _ragged(_strings(input), lambda v: [c.encode("utf-8")
                                               for c in v.decode("utf-8", mode)])


def bytes_split(input, name=None):
    """`input` split into its bytes (each a 1-byte string): a 1-D string tensor for
    a scalar, a `RaggedStrings` for a batch."""
    return _ragged(_strings(input), lambda v: [v[i:i + 1] for i in range(len(v))])


class RaggedNumbers(RaggedStrings):
    """Rows of numbers of unequal length (TensorFlow's int32 RaggedTensor from
    `tf.strings.unicode_decode` of a batch)."""

    @property
    def dtype(self):
        return dtypes.int32

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            row = self._rows[index]
            return row if isinstance(row, RaggedStrings) else _wrap(row)
        return type(self)(self._rows[index])

    def to_list(self):
        """The rows as nested Python lists of numbers."""
        return [row.to_list() if isinstance(row, RaggedStrings) else np.asarray(row).tolist()
                for row in self._rows]

    def to_tensor(self, default_value=0, shape=None):
        """The rows padded at the end with `default_value` into a Tensor."""
        width = max((len(r) for r in self._rows), default=0)
        if shape is not None and shape[-1] is not None:
            width = int(shape[-1])
        out = np.full((len(self._rows), width), default_value, dtype=np.int32)
        for i, row in enumerate(self._rows):
            row = row[:width]
            out[i, :len(row)] = row
        return _wrap(out)


def _utf8_mode(op, input_encoding, errors):
    if input_encoding.upper().replace("-", "") != "UTF8":
        raise ValueError(f"tf.strings.{op}: loopax reads UTF-8 only; got "
                         f"input_encoding={input_encoding!r}.")
    mode = {"replace": "replace", "ignore": "ignore", "strict": "strict"}.get(errors)
    if mode is None:
        raise ValueError(f"tf.strings.{op}: errors must be 'replace', 'ignore' or "
                         f"'strict'; got {errors!r}.")
    return mode


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,
                   replace_control_characters=False, name=None):
    """Each string's Unicode code points, int32: a 1-D Tensor for a scalar, a
    `RaggedNumbers` of rows for a batch."""
    mode = _utf8_mode("unicode_decode", input_encoding, errors)

    def points(v):
        text = v.decode("utf-8", mode)
        out = [replacement_char if c == "\ufffd" and mode == "replace" else ord(c)
               for c in text]
        if replace_control_characters:
            out = [replacement_char if c < 32 or 127 <= c < 160 else c for c in out]
        return np.asarray(out, np.int32)

    def rows(array):
        if array.ndim == 1:
            return RaggedNumbers(points(v) for v in array)
        return RaggedNumbers(rows(sub) for sub in array)

    array = _strings(input)
    if array.ndim == 0:
        return _wrap(points(array[()]))
    return rows(array)


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533,
                   name=None):
    """Code points (a 1-D int tensor, or rows of them) back into UTF-8 strings."""
    _utf8_mode("unicode_encode", output_encoding, errors)
    if isinstance(input, RaggedStrings):
        return StringTensor(_row([unicode_encode(r, output_encoding).numpy()
                                  for r in input]))
    points = _host_numbers(input, "unicode_encode")
    if points.ndim == 1:
        return StringTensor("".join(chr(int(c)) for c in points).encode("utf-8"))
    return StringTensor(_row([unicode_encode(r, output_encoding).numpy() for r in points]))


# ---- lengths and substrings -----------------------------------------------------------

def _check_unit(unit):
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"tf.strings: unit must be 'BYTE' or 'UTF8_CHAR'; got {unit!r}.")


def length(input, unit="BYTE", name=None):
    """The length of each string in bytes (or, with `unit="UTF8_CHAR"`, characters),
    an int32 Tensor."""
    _check_unit(unit)
    count = len if unit == "BYTE" else (lambda v: len(v.decode("utf-8", "replace")))
    return _wrap(_map(count, _strings(input), np.int32))


def substr(input, pos, len, unit="BYTE", name=None):
    """The substring of each string from `pos` (negative: from the end) of length
    `len` (cut at the string's end); `pos` and `len` broadcast against `input`."""
    _check_unit(unit)
    array = _strings(input)
    pos_, len_ = (_host_numbers(v, "substr", what) for v, what in ((pos, "pos"), (len, "len")))
    array, pos_, len_ = np.broadcast_arrays(array, pos_, len_)
    out = np.empty(array.shape, dtype=object)
    for index in np.ndindex(array.shape):
        value = array[index]
        text = value if unit == "BYTE" else value.decode("utf-8", "replace")
        start, size = int(pos_[index]), int(len_[index])
        n = builtin_len(text)
        if start < 0:
            start += n
        if not 0 <= start <= n:
            raise errors.InvalidArgumentError(
                f"tf.strings.substr: pos {int(pos_[index])} is out of range for the string "
                f"{value!r} of length {n}.")
        piece = text[start:start + max(size, 0)]
        out[index] = piece if unit == "BYTE" else piece.encode("utf-8")
    return StringTensor(out)


builtin_len = len


# ---- regular expressions --------------------------------------------------------------

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
    "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}


@functools.lru_cache(maxsize=256)
def _compile(pattern):
    """An RE2 pattern (bytes) as a compiled Python bytes regex."""
    text = pattern.decode("utf-8")
    text = re.sub(r"\[:(\^?)([a-z]+):\]", lambda m: _posix_class(m.group(1), m.group(2)), text)
    try:
        return re.compile(text.encode("utf-8"))
    except re.error as e:
        raise errors.InvalidArgumentError(f"Invalid regular expression {pattern!r}: {e}") \
            from None


def _posix_class(negated, name):
    if name not in _POSIX:
        raise errors.InvalidArgumentError(f"Unknown POSIX class [:{name}:] in a regular "
                                          "expression.")
    if negated:
        raise errors.InvalidArgumentError("Negated POSIX classes ([:^name:]) are not "
                                          "supported; negate the bracket ([^[:name:]]).")
    return _POSIX[name]


def _rewrite(template):
    """RE2's rewrite string (`\\0`..`\\9` groups, `\\\\` a backslash) as a function
    of a match."""
    pieces = re.split(rb"(\\[0-9\\])", template)

    def expand(match):
        out = []
        for piece in pieces:
            if len(piece) == 2 and piece[:1] == b"\\":
                out.append(b"\\" if piece == b"\\\\" else match.group(int(piece[1:])) or b"")
            else:
                out.append(piece)
        return b"".join(out)
    return expand


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):
    """Each string with the matches of `pattern` (RE2 syntax) replaced by `rewrite`
    (`\\1` for a group); only the first match with `replace_global=False`."""
    regex = _compile(_strings(pattern, "pattern")[()])
    expand = _rewrite(_strings(rewrite, "rewrite")[()])
    count = 0 if replace_global else 1
    return StringTensor(_map(lambda v: regex.sub(expand, v, count=count), _strings(input)))


def regex_full_match(input, pattern, name=None):
    """Whether each whole string matches `pattern` (RE2 syntax), a bool Tensor."""
    regex = _compile(_strings(pattern, "pattern")[()])
    return _wrap(_map(lambda v: regex.fullmatch(v) is not None, _strings(input), bool))


# ---- numbers ---------------------------------------------------------------------------

def to_number(string_tensor, out_type=dtypes.float32, name=None):
    """Each string parsed as a number of `out_type` (float32 by default); a string
    that is not a number raises InvalidArgumentError, as TensorFlow."""
    out_type = np.dtype(out_type)
    parse = float if out_type.kind == "f" else int

    def convert(v):
        try:
            return parse(v.decode("utf-8").strip())
        except ValueError:
            raise errors.InvalidArgumentError(
                "StringToNumberOp could not correctly convert string: "
                f"{v.decode('utf-8', 'replace')}"
            ) from None
    values = _map(convert, _strings(string_tensor, "string_tensor"))
    return Tensor(jnp.asarray(np.asarray(values, dtypes.storage_dtype(out_type))))


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",
              name=None):
    """Each number as a string, formatted as TensorFlow's AsString: floats `%f`
    (6 decimals, or `precision`), `%e` with `scientific`, `%g` with `shortest`;
    integers `%d`; bools `true`/`false`; padded on the left to `width` with
    `fill` (a space by default)."""
    value = input._loopax_value if isinstance(input, StringTensor) else \
        _host_numbers(input, "as_string")
    if value.dtype == object:
        raise TypeError("tf.strings.as_string: `input` is already a string tensor.")
    if scientific and shortest:
        raise ValueError("tf.strings.as_string: pass at most one of `scientific` and "
                         "`shortest`.")
    if value.dtype.kind == "f" or value.dtype == jnp.bfloat16:
        p = "" if precision is None or precision < 0 else f".{int(precision)}"
        spec = f"%{p}{'e' if scientific else 'g' if shortest else 'f'}"
        value = value.astype(np.float64)

        def one(v):
            return spec % v
    elif value.dtype == bool:
        def one(v):
            return "true" if v else "false"
    elif value.dtype.kind in "iu":
        def one(v):
            return "%d" % v
    else:
        raise TypeError(f"tf.strings.as_string: cannot format dtype {value.dtype}.")
    pad = fill or " "

    def formatted(v):
        text = one(v)
        if width is not None and width > 0:
            text = text.rjust(int(width), pad) if pad == " " or not text.startswith("-") \
                else "-" + text[1:].rjust(int(width) - 1, pad)
        return text.encode("utf-8")
    return StringTensor(_map(formatted, value))


def _number_text(v):
    """A number as TensorFlow prints it in tensors: integers plainly, floats in the
    shortest form that reads back as the same float32 (`2`, `2.5`, `1e-07`)."""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (bytes, np.bytes_)):
        return '"' + v.decode("utf-8", "replace") + '"'
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    if not np.isfinite(f):
        return {True: "inf", False: "-inf"}[f > 0] if np.isinf(f) else "nan"
    for digits in range(6, 18):
        text = "%.*g" % (digits, f)
        if np.float32(text) == np.float32(f):
            return text
    return repr(f)


def _summarized(array, summarize, indent=0):
    """`array` printed as TensorFlow prints a tensor's values (NumPy's layout)."""
    if array.ndim == 0:
        return _number_text(array[()])
    n = array.shape[0]
    rows = range(n)
    if summarize is not None and summarize >= 0 and n > 2 * summarize:
        rows = list(range(summarize)) + [None] + list(range(n - summarize, n))
    items = ["..." if i is None else _summarized(array[i, ...], summarize, indent + 1)
             for i in rows]
    sep = " " if array.ndim == 1 else "\n" * (array.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(items) + "]"


def _tensor_text(value, summarize):
    if isinstance(value, StringTensor):
        value = value.numpy()
    elif isinstance(value, (Tensor, Variable, jax.core.Tracer)):
        value = _host_numbers(value, "format", "inputs")
    elif isinstance(value, (str, bytes)):
        return value if isinstance(value, str) else value.decode("utf-8", "replace")
    array = np.asarray(value)
    return _summarized(array, summarize)


def format(template, inputs, placeholder="{}", summarize=3, name=None):
    """`template` with each `placeholder` replaced by the next tensor of `inputs`,
    printed as TensorFlow prints tensors (`[1 2 3]`, at most `summarize` entries
    at each end of an axis, then `...`)."""
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    pieces = template.split(placeholder)
    if builtin_len(pieces) - 1 != builtin_len(inputs):
        raise ValueError(f"tf.strings.format: the template has {builtin_len(pieces) - 1} "
                         f"placeholders ({placeholder!r}) but {builtin_len(inputs)} inputs "
                         "were given.")
    out = pieces[0]
    for value, piece in zip(inputs, pieces[1:]):
        out += _tensor_text(value, summarize) + piece
    return StringTensor(out)


# ---- the shape ops on strings ---------------------------------------------------------------

def _has_strings(values):
    for v in values:
        if isinstance(v, (StringTensor, RaggedStrings)):
            return True
        if isinstance(v, (list, tuple)) and _has_strings(v):
            return True
    return False


def _host(x):
    if isinstance(x, StringTensor):
        return x._loopax_value
    if isinstance(x, (Tensor, Variable)):
        return np.asarray(x.numpy())
    if isinstance(x, (str, bytes)):
        return as_bytes_array(x)
    if isinstance(x, (list, tuple)):
        return [_host(v) for v in x]
    return x


def host_aware(fn, numpy_fn):
    """`fn` (a loopax.tf op) with a NumPy path: called with a string tensor among its
    arguments, it runs `numpy_fn` on their arrays and returns a StringTensor (or a
    Tensor for numeric results)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _has_strings(args) or _has_strings(kwargs.values()):
            kwargs.pop("name", None)
            return _wrap(numpy_fn(*[_host(a) for a in args],
                                  **{k: _host(v) for k, v in kwargs.items()}))
        return fn(*args, **kwargs)
    return wrapper


def _np_gather(params, indices, axis=None, batch_dims=0, validate_indices=None):
    if batch_dims:
        raise NotImplementedError("tf.gather of strings with batch_dims: gather each row.")
    return np.take(params, np.asarray(indices), axis=0 if axis is None else int(axis))


def _np_shape(input, out_type=None):
    return np.asarray(np.shape(input), np.int32)


def _np_unstack(value, num=None, axis=0):
    return [StringTensor(v) for v in np.moveaxis(value, axis, 0)]


def _np_boolean_mask(tensor, mask, axis=None):
    mask = np.asarray(mask, bool)
    axis = 0 if axis is None else int(axis)
    return tensor.reshape(tensor.shape[:axis] + (-1,) + tensor.shape[axis + mask.ndim:])[
        (slice(None),) * axis + (mask.reshape(-1),)]


def _np_transpose(a, perm=None, conjugate=False):
    return np.transpose(a, perm)


def _np_reverse(tensor, axis):
    return np.flip(tensor, tuple(np.atleast_1d(np.asarray(axis)).tolist()))


NUMPY_PATHS = {
    "expand_dims": lambda input, axis: np.expand_dims(input, int(axis)),
    "reshape": lambda tensor, shape: np.reshape(tensor, tuple(np.asarray(shape).tolist())),
    "squeeze": lambda input, axis=None: np.squeeze(input, None if axis is None else tuple(
        np.atleast_1d(np.asarray(axis)).tolist())),
    "concat": lambda values, axis: np.concatenate([np.atleast_1d(v) for v in values], int(axis)),
    "stack": lambda values, axis=0: np.stack(values, int(axis)),
    "unstack": _np_unstack,
    "gather": _np_gather,
    "tile": lambda input, multiples: np.tile(input, tuple(np.asarray(multiples).tolist())),
    "transpose": _np_transpose,
    "reverse": _np_reverse,
    "boolean_mask": _np_boolean_mask,
    "identity": lambda input: np.array(input, dtype=object),
    "shape": _np_shape,
    "size": lambda input, out_type=None: np.asarray(np.size(input), np.int32),
    "rank": lambda input: np.asarray(np.ndim(input), np.int32),
    "equal": lambda x, y: np.equal(as_bytes_array(x), as_bytes_array(y)),
    "not_equal": lambda x, y: np.not_equal(as_bytes_array(x), as_bytes_array(y)),
}


def text_constant(constant):
    """`tf.constant` that makes a StringTensor of text (str, bytes, lists of them,
    NumPy text arrays)."""
    @functools.wraps(constant)
    def wrapper(value, dtype=None, shape=None, name=None):
        if is_text(value) or (dtype is not None and np.dtype(dtype) == string
                              and isinstance(value, (StringTensor, str, bytes, list, tuple,
                                                     np.ndarray))):
            array = as_bytes_array(value)
            if shape is not None:
                array = np.broadcast_to(array, tuple(np.asarray(shape).tolist())).copy()
            return StringTensor(array)
        return constant(value, dtype=dtype, shape=shape, name=name)
    return wrapper


def text_convert_to_tensor(convert):
    """`tf.convert_to_tensor` that keeps StringTensors and converts text."""
    @functools.wraps(convert)
    def wrapper(value, dtype=None, dtype_hint=None, name=None):
        if is_text(value):
            if dtype is not None and np.dtype(dtype) != string:
                raise ValueError(f"convert_to_tensor: text cannot be converted to dtype "
                                 f"{np.dtype(dtype).name}; use tf.strings.to_number.")
            return StringTensor(value)
        return convert(value, dtype=dtype, dtype_hint=dtype_hint, name=name)
    return wrapper


_ARGS = {
    "input": "A string tensor (or str/bytes, nested lists of them).",
    "inputs": "String tensors (a list for `join`; one tensor for `reduce_join`).",
    "encoding": "'' (ASCII letters only, TensorFlow's default) or 'utf-8'.",
    "separator": "The string put between joined strings.",
    "axis": "The axis to join along (None: all).", "keepdims": "Keep the joined axis.",
    "sep": "The separator (None: runs of whitespace).",
    "maxsplit": "The most splits per string (-1: no limit).",
    "input_encoding": "The encoding of `input` ('UTF-8').",
    "errors": "'replace' (the default), 'ignore' or 'strict' for invalid UTF-8.",
    "replacement_char": "The code point put for invalid bytes (unicode_decode; "
                        "unicode_split uses U+FFFD).",
    "replace_control_characters": "Replace C0/C1 control characters too.",
    "output_encoding": "The encoding of the result ('UTF-8').",
    "unit": "'BYTE' (the default) or 'UTF8_CHAR'.",
    "pos": "The first position (negative: from the end), broadcast against `input`.",
    "len": "The length of each substring, broadcast against `input`.",
    "pattern": "A regular expression (RE2 syntax).",
    "rewrite": "The replacement (`\\1` for the first group).",
    "replace_global": "Replace every match (False: the first only).",
    "string_tensor": "A string tensor.", "out_type": "The numeric dtype (float32 default).",
    "precision": "Digits after the point (-1: 6).", "scientific": "Use `%e`.",
    "shortest": "Use `%g`.", "width": "Pad to this width (-1: no padding).",
    "fill": "The padding character (default a space).",
    "template": "A string with `placeholder`s.",
    "placeholder": "The placeholder (default '{}').",
    "summarize": "Entries shown at each end of an axis (-1: all).",
    "name": "Accepted for TensorFlow compatibility; unused.",
}
for _fn in (lower, upper, strip, join, reduce_join, split, unicode_split, length, substr,
            bytes_split, unicode_decode, unicode_encode,
            regex_replace, regex_full_match, to_number, as_string,
            format):
    document(_fn, **_ARGS)
del _fn
