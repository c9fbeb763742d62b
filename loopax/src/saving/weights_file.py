"""`save_weights` / `load_weights`: a model's variables in a safetensors file.

Keys are structural paths through the model, not the variables' global
names: each sub-layer is named by its class in snake case, numbered among its
siblings as Keras does (`dense`, `dense_1`, ...), then the variable's name:

    dense/kernel, dense/bias, dense_1/kernel, ..., batch_normalization/moving_mean

So a second instance of the same architecture (whose layers got other
automatic names, `dense_7`...) loads the file, and the order of keys in the
file does not matter. A file whose keys or shapes do not match the model is
refused with the list of every missing, unexpected and mis-shaped key.

Any file name works; `.weights.safetensors` is the recommended suffix. A
Keras-style `.weights.h5` name is accepted too, but what loopax writes is
always safetensors; an HDF5 file written by Keras 3 is read (not written) by
`keras_format`.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import stat
import struct
import tempfile
import warnings
import zipfile
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import ml_dtypes
import numpy as np

try:
    import fcntl
except ImportError:   # Windows: no advisory locks, so no cleanup of leftovers
    fcntl = None  # type: ignore[assignment]

from loopax.src import dtypes, serialization
from loopax.src.layers.layer import Layer
from loopax.src.module import Module, _snake_case
from loopax.src.saving import archive, keras_format
from loopax.src.utils import safe_open

if TYPE_CHECKING:
    from loopax.src.layers.layer import Layer
    from loopax.src.state import Variable

FORMAT = "loopax.weights"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
    "I64": np.int64, "U64": np.uint64, "I32": np.int32, "U32": np.uint32,
    "I16": np.int16, "U16": np.uint16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
    "C64": np.complex64,
}


# --------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------

def _unique(name, used):
    n = used.get(name, 0)
    used[name] = n + 1
    return name if n == 0 else f"{name}_{n}"


def _walk(model):
    """(`{id(variable): key}`, `[(prefix, trackable, own variables)]`): the
    structural key of every variable and each trackable with its key prefix,
    walking the model exactly as `Module.variables` does (own variables, then
    each sub-module in attribute order, each reached once)."""
    keys, tree = {}, []
    seen = {id(model)}

    def visit(mod, prefix):
        if isinstance(mod, Module):
            own, subs = mod._direct(seen)
        else:  # a trackable such as a SeedGenerator
            own = [v for v in mod.variables if id(v) not in seen]
            seen.update(id(v) for v in own)
            subs = []
        tree.append((prefix, mod, own))
        used = {}
        for var in own:
            keys[id(var)] = prefix + _unique(var.name, used)
        for sub in subs:
            visit(sub, prefix + _unique(_snake_case(type(sub).__name__), used) + "/")

    visit(model, "")
    return keys, tree


def weight_keys(model: Layer) -> list[str]:
    """One structural key per entry of `model.weights`, in that order."""
    return variable_keys(model, model.weights)


def variable_keys(model: Layer, variables: Iterable[Variable]) -> list[str]:
    """The structural keys of `variables` of `model` (weights, or others such
    as SeedGenerator states: `dropout/seed_generator/seed_generator_state`)."""
    keys, _ = _walk(model)
    return [keys.get(id(v), v.path) for v in variables]


def layer_tree(model: Layer) -> list[tuple[str, object]]:
    """`[(key prefix, layer or trackable)]` of the model and everything in it."""
    return [(prefix, mod) for prefix, mod, _ in _walk(model)[1]]


# Where the arrays of a layer that overrides `save_own_variables` go:
# "<layer prefix>_own_/<store key>".
OWN_STORE = "_own_/"


def _own_store_layers(model):
    """`[(prefix, layer, ids of its own weights)]` for layers whose class
    overrides `save_own_variables` / `load_own_variables` (Keras's hooks)."""
    from_base = {"save_own_variables": Layer.save_own_variables,
                 "load_own_variables": Layer.load_own_variables}
    out = []
    for prefix, mod, own in _walk(model)[1]:
        if isinstance(mod, Layer) and any(getattr(type(mod), name) is not base
                                          for name, base in from_base.items()):
            out.append((prefix, mod, {id(v) for v in own}))
    return out
# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

WEIGHTS_METADATA = {"format": FORMAT, "version": "1"}
_DTYPE_NAMES = {np.dtype(dtype): name for name, dtype in _DTYPES.items()}


class SafetensorsLayout:
    """The safetensors form of `{key: array}`: its header, then each array's bytes.

    `write(stream)` streams it (the header, then the arrays in key order, each
    written from its own memory: no copy of the whole file is made, where
    `safetensors.numpy.save` builds the file as one bytes object); `nbytes` is
    the file's size, known before writing (a zip entry needs it for ZIP64).
    The bytes are those the safetensors library reads (tests/saving/test_weights_file.py).
    """

    def __init__(self, arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
        self.arrays = {key: _little_endian(arrays[key]) for key in sorted(arrays)}
        header: dict[str, Any] = {"__metadata__": dict(metadata)} if metadata else {}
        offset = 0
        for key, array in self.arrays.items():
            if array.dtype not in _DTYPE_NAMES:
                raise TypeError(f"weight {key!r}: dtype {array.dtype} cannot be saved "
                                f"(safetensors holds {', '.join(_DTYPES)}).")
            header[key] = {"dtype": _DTYPE_NAMES[array.dtype], "shape": list(array.shape),
                           "data_offsets": [offset, offset + array.nbytes]}
            offset += array.nbytes
        text = json.dumps(header, separators=(",", ":")).encode()
        self.header = text + b" " * (-len(text) % 8)   # the data starts 8-byte aligned
        self.nbytes = 8 + len(self.header) + offset

    def write(self, stream: IO[bytes]) -> None:
        stream.write(struct.pack("<Q", len(self.header)))
        stream.write(self.header)
        for array in self.arrays.values():
            if array.size:
                stream.write(np.ascontiguousarray(array).reshape(-1).view(np.uint8).data)


def _little_endian(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    if array.dtype.byteorder == ">":
        return array.astype(array.dtype.newbyteorder("<"))
    return array


def weight_arrays(model: Layer) -> dict[str, np.ndarray]:
    """`{key: array}`: what a weights file holds (keyed as `expected_weights`)."""
    custom = _own_store_layers(model)
    skip = set().union(*(own for _, _, own in custom))
    arrays = {key: np.asarray(var.value) for key, var in zip(weight_keys(model), model.weights)
              if id(var) not in skip}
    for prefix, layer, _ in custom:
        store: dict = {}
        layer.save_own_variables(store)
        for key, value in store.items():
            arrays[f"{prefix}{OWN_STORE}{key}"] = np.asarray(value)
    return arrays


def expected_weights(model: Layer) -> dict[str, tuple[int, ...]]:
    """`{key: shape}` of the arrays `weight_arrays(model)` gives: what a
    weights file for this model must hold, known before anything is read."""
    custom = _own_store_layers(model)
    skip = set().union(*(own for _, _, own in custom))
    shapes = {key: tuple(var.shape) for key, var in zip(weight_keys(model), model.weights)
              if id(var) not in skip}
    for prefix, layer, _ in custom:
        store: dict = {}
        layer.save_own_variables(store)
        shapes.update({f"{prefix}{OWN_STORE}{key}": tuple(np.shape(value))
                       for key, value in store.items()})
    return shapes


# The safetensors library's own limit on a header.
MAX_HEADER_BYTES = 100_000_000
# Bytes of header allowed per tensor (key, dtype, shape, offsets) and in all.
_HEADER_BYTES_PER_TENSOR = 2048
_HEADER_SLACK = 64 * 2**10
_LARGEST_ITEMSIZE = 8


def weights_size_limit(shapes: dict) -> int:
    """The most bytes a safetensors file holding `shapes` can take: its header
    and every element at the largest item size (float64)."""
    elements = sum(math.prod(shape) for shape in shapes.values())
    return header_size_limit(len(shapes)) + 8 + _LARGEST_ITEMSIZE * elements


def header_size_limit(n_tensors: int) -> int:
    return min(MAX_HEADER_BYTES, _HEADER_SLACK + _HEADER_BYTES_PER_TENSOR * n_tensors)


def read_safetensors(data: bytes, where: str) -> dict[str, np.ndarray]:
    """{key: array} from safetensors bytes (bfloat16 included)."""
    stream = io.BytesIO(data)
    header = read_header(stream, where, min(len(data), MAX_HEADER_BYTES))
    return read_arrays(stream, header, set(header), where)


def read_header(stream: IO[bytes], where: str, max_header_bytes: int) -> dict[str, tuple]:
    """`{key: (dtype name, shape, byte size)}` in storage order, from the header
    of the safetensors `stream` (left at the start of the data); every field
    checked, so that a lying header is refused before any data is read."""
    return read_header_and_metadata(stream, where, max_header_bytes)[0]


def dtype_of(name: str) -> np.dtype:
    """The NumPy dtype of a safetensors dtype name a checked header holds ("F32")."""
    return np.dtype(_DTYPES[name])


def read_header_and_metadata(stream: IO[bytes], where: str,
                             max_header_bytes: int) -> tuple[dict[str, tuple], dict[str, str]]:
    """`read_header`'s map and the header's `__metadata__` (`{}` if none), both from
    one read of the header: a reader that needs both never reads two versions of a
    file replaced in between."""
    head = archive.read_exactly(stream, 8, where, None)
    if bytes(head) == _HDF5_SIGNATURE:
        raise ValueError(
            f"{where} is an HDF5 file (Keras .h5). loopax reads weights it wrote itself "
            "(safetensors). Load it with Keras and copy the arrays over with "
            "model.set_weights(keras_model.get_weights()).")
    (size,) = struct.unpack("<Q", head)
    if size > max_header_bytes:
        raise ValueError(f"{where} is not a safetensors weights file for this model: its "
                         f"header declares {size} bytes (at most {max_header_bytes} expected).")
    text = archive.read_exactly(stream, size, where, None)
    try:
        header = json.loads(bytes(text))
    except (RecursionError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{where} is not a safetensors weights file (its header is not "
                         f"JSON: {str(e)[:200]}).") from None
    if not isinstance(header, dict):
        raise ValueError(f"{where} is not a safetensors weights file (its header is not a "
                         "JSON object).")
    metadata = header.pop("__metadata__", None) or {}
    if not (isinstance(metadata, dict)
            and all(isinstance(v, str) for v in metadata.values())):
        raise ValueError(f"{where} is not a valid safetensors file: its __metadata__ is not "
                         "a map of strings.")
    entries = [_header_entry(key, value, where) for key, value in header.items()]
    entries.sort(key=lambda e: e[3])
    out, offset = {}, 0
    for key, dtype, shape, begin, end in entries:
        if begin != offset:
            raise ValueError(f"{where} is not a valid safetensors file: the data of "
                             f"{serialization.quoted(key)} starts at byte {begin}, not {offset}.")
        out[key] = (dtype, shape, end - begin)
        offset = end
    return out, metadata


def _header_entry(key, value, where):
    """(key, dtype, shape, begin, end) of one header entry, or a ValueError."""
    label = f"{where}: weight {serialization.quoted(key)}"
    if not isinstance(value, dict):
        raise ValueError(f"{label} has no description in the header.")
    dtype, shape, offsets = value.get("dtype"), value.get("shape"), value.get("data_offsets")
    if dtype not in _DTYPES:
        raise ValueError(f"{label} has unsupported dtype {serialization.quoted(dtype)}.")
    if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
        raise ValueError(f"{label} has an invalid shape {serialization.quoted(shape)}.")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
        raise ValueError(f"{label} has invalid data offsets {serialization.quoted(offsets)}.")
    begin, end = offsets
    nbytes = math.prod(shape) * np.dtype(_DTYPES[dtype]).itemsize
    if end - begin != nbytes:
        raise ValueError(f"{label} declares shape {tuple(shape)} {dtype} ({nbytes} bytes) but "
                         f"{end - begin} bytes of data; the file is damaged.")
    return key, dtype, tuple(shape), begin, end


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_arrays(stream: IO[bytes], header: dict[str, tuple], wanted: Iterable[str],
                where: str) -> dict[str, np.ndarray]:
    """The arrays of `wanted` keys, read one at a time in storage order from
    `stream` (at the start of the data); the others are read past, not kept.
    The stream must end after the last (a zip entry's CRC is checked there)."""
    out = {}
    for key, (dtype, shape, nbytes) in header.items():
        if key in wanted:
            data = archive.read_exactly(stream, nbytes, where, None)
            out[key] = np.frombuffer(data, dtype=_DTYPES[dtype]).reshape(shape)
        else:
            archive.skip(stream, nbytes, where, None)
    archive.check_end(stream, where, None)
    return out


def read_weights_for(model: Layer, stream: IO[bytes], where: str, max_bytes: int,
                     skip_mismatch: bool = False, hint: str | None = None,
                     ) -> dict[str, np.ndarray]:
    """The weights of `model` from the safetensors `stream` (at most `max_bytes`):
    the header is compared with the model (keys, shapes) before any array is
    read, so a file that does not fit costs only its header."""
    expected = expected_weights(model)
    header_limit = min(max_bytes, MAX_HEADER_BYTES if skip_mismatch else
                       header_size_limit(len(expected)))
    header = read_header(stream, where, header_limit)
    declared = {key: shape for key, (_, shape, _) in header.items()}
    wanted = check_match(model, expected, declared, where, skip_mismatch, hint)
    return read_arrays(stream, header, wanted, where)


def _check_writable(filepath, overwrite):
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists; pass overwrite=True to replace it.")
    directory = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(directory, exist_ok=True)


def save_weights(model: Layer, filepath: str | os.PathLike, overwrite: bool = True) -> None:
    filepath = os.fspath(filepath)
    _check_writable(filepath, overwrite)
    layout = SafetensorsLayout(weight_arrays(model), WEIGHTS_METADATA)
    with atomic_write(filepath) as f:
        layout.write(f)


def _current_umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_current_umask()   # what open(path, "w") would give


@contextlib.contextmanager
def atomic_write(filepath: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary file that replaces `filepath` in one step when the block ends.

    It is written under a unique temporary name in the same directory
    (`<name>.<8 random characters>.tmp`), so concurrent writers (threads,
    processes) never share a file and readers see the old file or the new one,
    never a part; it is fsynced before `os.replace`. If the block raises, the
    temporary file is removed and `filepath` is left as it was. The writer holds
    an OS lock on its temporary file, which a killed process loses: the next
    write of the same `filepath` removes such leftovers (and only those)."""
    directory = os.path.dirname(os.path.abspath(filepath))
    prefix = os.path.basename(filepath) + "."
    remove_stale_temporaries(directory, prefix)
    fd, tmp = _locked_temporary(directory, prefix)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
            if fcntl is not None:   # renamed while locked: no cleanup can take it first
                _publish(tmp, filepath)
        if fcntl is None:           # Windows renames closed files only
            _publish(tmp, filepath)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def _publish(tmp, filepath):
    os.chmod(tmp, _FILE_MODE)
    os.replace(tmp, filepath)


_TEMPORARY_SUFFIX = ".tmp"
# tempfile.mkstemp's names: 8 characters from this set between prefix and suffix.
_RANDOM_PART = "[a-z0-9_]{8}"


def _locked_temporary(directory, prefix):
    """(fd, path) of a new temporary file that this process holds an exclusive
    `flock` on (none where the OS has no fcntl)."""
    while True:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=_TEMPORARY_SUFFIX)
        if fcntl is None:
            return fd, tmp
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.stat(tmp), os.fstat(fd)):
                return fd, tmp
        except FileNotFoundError:
            pass
        os.close(fd)   # a concurrent cleanup took it between mkstemp and flock: again


def remove_stale_temporaries(directory: str, prefix: str) -> None:
    """Removes the temporary files `atomic_write` left for one target (name
    `prefix` + 8 random characters + ".tmp") whose writer is gone: a live
    writer holds a lock on its file, and a killed one released it."""
    if fcntl is None:
        return
    pattern = re.compile(re.escape(prefix) + _RANDOM_PART + re.escape(_TEMPORARY_SUFFIX))
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if pattern.fullmatch(name):
            _remove_if_unlocked(os.path.join(directory, name))


def _remove_if_unlocked(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return                      # gone already, a symlink, or not ours to open
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        opened = os.fstat(fd)
        if os.path.samestat(os.stat(path), opened) and stat.S_ISREG(opened.st_mode):
            os.remove(path)
    except OSError:
        pass                        # locked: its writer is alive
    finally:
        os.close(fd)


def load_weights(model: Layer, filepath: str | os.PathLike, skip_mismatch: bool = False) -> None:
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"No weights file at {filepath!r}.")
    if os.path.isdir(
        filepath
    ):  # OrbaxCheckpoint's folder (imported here: it builds on this module)
        from loopax.src.saving import checkpoint_folders
        return checkpoint_folders.load_weights(model, filepath, skip_mismatch=skip_mismatch)
    # One open file: the format is told from, and the weights read from, one version of
    # the path (another process may replace it while this one loads).
    with safe_open.open_regular(filepath, "a weights file") as f:
        head = f.read(8)
        f.seek(0)
        if head == _HDF5_SIGNATURE:
            return keras_format.load_h5_weights(model, f, filepath, skip_mismatch)
        if head[:4] == b"PK\x03\x04":
            with archive.open_archive(filepath, file=f) as zf:
                names = zf.namelist()
                if WEIGHTS_IN_ARCHIVE not in names and keras_format.is_keras_archive(names):
                    return keras_format.load_archive_weights(model, zf, filepath,
                                                             skip_mismatch)
                arrays = read_weights_from_archive(model, zf, filepath, skip_mismatch)
        else:
            arrays = read_weights_for(model, f, filepath, os.fstat(f.fileno()).st_size,
                                      skip_mismatch)
    assign_weights(model, arrays)


_MAX_LISTED = 20


def _listed(items: Sequence[str]) -> str:
    """The first `_MAX_LISTED` of `items`, each cut, and how many more there are."""
    shown = [serialization.quoted(item) if isinstance(item, str) else str(item)
             for item in items[:_MAX_LISTED]]
    more = f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else ""
    return "[" + ", ".join(shown) + "]" + more


def check_match(model: Layer, expected: dict, declared: dict, where: str,
                skip_mismatch: bool = False, hint: str | None = None) -> set:
    """The keys to read: refuses (or with `skip_mismatch` warns about) a file
    whose `declared` `{key: shape}` differs from the model's `expected` ones.
    `hint` ends the error (the default: how `skip_mismatch` helps)."""
    missing = [k for k in expected if k not in declared]
    unexpected = [k for k in declared if k not in expected]
    mis_shaped = [f"{serialization.cut(k)}: file {declared[k]}, model {expected[k]}"
                  for k in expected if k in declared and declared[k] != expected[k]]
    problems = []
    if missing:
        problems.append(f"missing from the file: {_listed(missing)}")
    if unexpected:
        problems.append(f"in the file but not in the model: {_listed(unexpected)}")
    if mis_shaped:
        problems.append("different shapes: " + "; ".join(mis_shaped[:_MAX_LISTED])
                        + (f" and {len(mis_shaped) - _MAX_LISTED} more"
                           if len(mis_shaped) > _MAX_LISTED else ""))
    if problems:
        message = (f"Weights in {where} do not match model {model.name!r}:\n  "
                   + "\n  ".join(problems))
        if not model.weights:
            message += ("\nThe model has no weights yet: build it first (call it on a "
                        "batch or call model.build(input_shape)).")
        if not skip_mismatch:
            raise ValueError(message + "\n" + (hint or "(load_weights(..., skip_mismatch="
                                                "True) loads the weights that do match.)"))
        warnings.warn(message + "\nLoading only the matching weights.", stacklevel=4)
    return {k for k in expected if declared.get(k) == expected[k]}


def assign_weights(model: Layer, arrays: dict) -> None:
    """Assigns `arrays` (keyed as `expected_weights`, already checked by
    `check_match`) to the model's variables and own-variable stores."""
    custom = _own_store_layers(model)
    skip = set().union(*(own for _, _, own in custom))
    arrays = dict(arrays)
    stores = []
    for prefix, layer, _ in custom:
        start = prefix + OWN_STORE
        stores.append((layer, {key[len(start):]: arrays.pop(key)
                               for key in list(arrays) if key.startswith(start)}))
    for key, var in zip(weight_keys(model), model.weights):
        if id(var) not in skip and key in arrays:
            var.assign(dtypes.asarray(arrays[key], dtype=var.dtype))
    for layer, store in stores:
        layer.load_own_variables(store)


# The entry of a `model.save` archive that holds the weights (see model_file.py).
WEIGHTS_IN_ARCHIVE = "model.weights.safetensors"


def read_weights_from_archive(model: Layer, zf: zipfile.ZipFile, filepath: str,
                              skip_mismatch: bool = False) -> dict:
    """The weights for `model` from the `model.save` zip archive `zf` (its weights
    entry bounded by the model's size)."""
    if WEIGHTS_IN_ARCHIVE not in zf.namelist():
        raise ValueError(f"{filepath} is a zip archive without {WEIGHTS_IN_ARCHIVE}; it "
                         "was not written by loopax.")
    return read_entry_for(model, zf, filepath, skip_mismatch)


def read_entry_for(model: Layer, zf: zipfile.ZipFile, filepath: str,
                   skip_mismatch: bool = False, hint: str | None = None) -> dict:
    """The weights for `model` from the archive `zf`'s weights entry, which may
    be no larger than the model's weights can take (`weights_size_limit`)."""
    limit = weights_size_limit(expected_weights(model))
    where = f"{filepath} ({WEIGHTS_IN_ARCHIVE})"
    if skip_mismatch:   # a partial load may read a larger model's file
        limit = max(limit, zf.getinfo(WEIGHTS_IN_ARCHIVE).file_size)
    with archive.open_entry(zf, WEIGHTS_IN_ARCHIVE, limit, filepath,
                            "the weights of this model") as stream:
        return read_weights_for(model, stream, where, limit, skip_mismatch, hint)
