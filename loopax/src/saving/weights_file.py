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
import os
import tempfile
import warnings
import zipfile

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import safetensors
from safetensors import numpy as safetensors_numpy

from loopax.src.layers.layer import Layer
from loopax.src.module import Module, _snake_case
from loopax.src.saving import keras_format

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


def weight_keys(model) -> list[str]:
    """One structural key per entry of `model.weights`, in that order."""
    return variable_keys(model, model.weights)


def variable_keys(model, variables) -> list[str]:
    """The structural keys of `variables` of `model` (weights, or others such
    as SeedGenerator states: `dropout/seed_generator/seed_generator_state`)."""
    keys, _ = _walk(model)
    return [keys.get(id(v), v.path) for v in variables]


def layer_tree(model) -> list[tuple[str, object]]:
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

def weights_to_bytes(model) -> bytes:
    custom = _own_store_layers(model)
    skip = set().union(*(own for _, _, own in custom))
    arrays = {key: np.asarray(var.value) for key, var in zip(weight_keys(model), model.weights)
              if id(var) not in skip}
    for prefix, layer, _ in custom:
        store = {}
        layer.save_own_variables(store)
        for key, value in store.items():
            arrays[f"{prefix}{OWN_STORE}{key}"] = np.asarray(value)
    return safetensors_numpy.save(arrays, metadata={"format": FORMAT, "version": "1"})


def read_safetensors(data: bytes, where: str) -> dict[str, np.ndarray]:
    """{key: array} from safetensors bytes (bfloat16 included)."""
    if data[:8] == _HDF5_SIGNATURE:
        raise ValueError(
            f"{where} is an HDF5 file (Keras .h5). loopax reads weights it wrote itself "
            "(safetensors). Load it with Keras and copy the arrays over with "
            "model.set_weights(keras_model.get_weights()).")
    try:
        entries = safetensors.deserialize(bytes(data))
    except Exception as e:
        raise ValueError(f"{where} is not a safetensors weights file ({e}).") from None
    out = {}
    for key, entry in entries:
        if entry["dtype"] not in _DTYPES:
            raise ValueError(f"{where}: weight {key!r} has unsupported dtype {entry['dtype']}.")
        out[key] = np.frombuffer(entry["data"], dtype=_DTYPES[entry["dtype"]]).reshape(
            entry["shape"])
    return out


def _check_writable(filepath, overwrite):
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists; pass overwrite=True to replace it.")
    directory = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(directory, exist_ok=True)


def save_weights(model, filepath, overwrite=True):
    filepath = os.fspath(filepath)
    _check_writable(filepath, overwrite)
    data = weights_to_bytes(model)
    with atomic_write(filepath) as f:
        f.write(data)


def _current_umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_current_umask()   # what open(path, "w") would give


@contextlib.contextmanager
def atomic_write(filepath):
    """A binary file that replaces `filepath` in one step when the block ends.

    It is written under a unique temporary name in the same directory, so
    concurrent writers (threads, processes) never share a file and readers
    see the old file or the new one, never a part; it is fsynced before
    `os.replace`. If the block raises, the temporary file is removed and
    `filepath` is left as it was."""
    directory = os.path.dirname(os.path.abspath(filepath))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(filepath) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, filepath)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def load_weights(model, filepath, skip_mismatch=False):
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"No weights file at {filepath!r}.")
    if keras_format.is_keras_file(filepath):
        return keras_format.load_weights(model, filepath, skip_mismatch=skip_mismatch)
    if _is_zip(filepath):
        arrays = read_weights_from_archive(filepath)
    else:
        with open(filepath, "rb") as f:
            arrays = read_safetensors(f.read(), filepath)
    assign_weights(model, arrays, filepath, skip_mismatch=skip_mismatch)


def _is_zip(filepath) -> bool:
    with open(filepath, "rb") as f:
        return f.read(4) == b"PK\x03\x04"


def assign_weights(model, arrays: dict, where: str, skip_mismatch=False):
    """Assigns `arrays` (keyed as `weight_keys`) to the model's variables after
    checking that keys and shapes match one to one."""
    custom = _own_store_layers(model)
    skip = set().union(*(own for _, _, own in custom))
    arrays = dict(arrays)
    stores = []
    for prefix, layer, _ in custom:
        start = prefix + OWN_STORE
        stores.append((layer, {key[len(start):]: arrays.pop(key)
                               for key in list(arrays) if key.startswith(start)}))
    keys = weight_keys(model)
    variables = {key: var for key, var in zip(keys, model.weights) if id(var) not in skip}
    keys = list(variables)
    missing = [k for k in keys if k not in arrays]
    unexpected = [k for k in arrays if k not in variables]
    mis_shaped = [f"{k}: file {tuple(arrays[k].shape)}, model {variables[k].shape}"
                  for k in keys if k in arrays and tuple(arrays[k].shape) != variables[k].shape]
    problems = []
    if missing:
        problems.append(f"missing from the file: {missing}")
    if unexpected:
        problems.append(f"in the file but not in the model: {unexpected}")
    if mis_shaped:
        problems.append("different shapes: " + "; ".join(mis_shaped))
    if problems:
        message = (f"Weights in {where} do not match model {model.name!r}:\n  "
                   + "\n  ".join(problems))
        if not model.weights:
            message += ("\nThe model has no weights yet: build it first (call it on a "
                        "batch or call model.build(input_shape)).")
        if not skip_mismatch:
            raise ValueError(message + "\n(load_weights(..., skip_mismatch=True) loads "
                             "the weights that do match.)")
        warnings.warn(message + "\nLoading only the matching weights.", stacklevel=3)
    for key, var in variables.items():
        if key in arrays and tuple(arrays[key].shape) == var.shape:
            var.assign(jnp.asarray(arrays[key], dtype=var.dtype))
    for layer, store in stores:
        layer.load_own_variables(store)


# The entry of a `model.save` archive that holds the weights (see model_file.py).
WEIGHTS_IN_ARCHIVE = "model.weights.safetensors"


def read_weights_from_archive(filepath) -> dict:
    """The weights of a `model.save` zip archive, by key."""
    with zipfile.ZipFile(filepath) as zf:
        if WEIGHTS_IN_ARCHIVE not in zf.namelist():
            raise ValueError(f"{filepath} is a zip archive without {WEIGHTS_IN_ARCHIVE}; it "
                             "was not written by loopax.")
        return read_safetensors(zf.read(WEIGHTS_IN_ARCHIVE), filepath)
