"""`loopax.saving.KerasFileEditor`: inspect and edit the weights in a model or
weights file, as Keras 3's editor does, then write them as a `.weights.h5`.

The weights are held as a nested dict, one level per object, as Keras's editor
shows them: a Keras 3 file (`.keras` or `.weights.h5`) and a loopax `.keras`
archive give Keras's layout (`{"layers": {"dense": {"0": kernel, "1": bias}}}`;
the loopax archive's model is rebuilt from its config to place each weight
where Keras puts it), a loopax weights file (safetensors) its own keys split at
"/" (`{"dense": {"kernel": ..., "bias": ...}}`). `save` writes Keras's HDF5
layout (Keras and loopax load it) or, for a loopax weights file, safetensors
again. As every reader in `saving/`, nothing in a file is run or followed: HDF5
links other than hard links, external or virtual data and non-numeric datasets
are refused.
"""

from __future__ import annotations

import io
import os
import warnings
from typing import TYPE_CHECKING

import numpy as np
from safetensors import numpy as safetensors_numpy

from loopax.src.api_export import export
from loopax.src.saving import archive, keras_format, model_file, weights_file
from loopax.src.serialization import quoted

if TYPE_CHECKING:
    from loopax.src.models.model import Model

# HDF5 datasets may be stored compressed: the arrays a file may declare, as a
# multiple of its size (plus a margin), so a small file cannot inflate without end.
_MAX_INFLATION = 64
_INFLATION_MARGIN_BYTES = 16 * 2**20


@export("loopax.saving.KerasFileEditor")
class KerasFileEditor:
    """Inspects and edits the weights in a `.keras` or `.weights.h5` file.

    Useful to adapt a saved file after changing a model's architecture: rename,
    delete or add objects (layers) and weights, check the result against a
    model with `compare`, then `save` it and load it with `load_weights`.

    Args:
        filepath: A `.keras` file (Keras 3's or loopax's), a Keras 3
            `.weights.h5` file, or a loopax weights file (`.weights.h5` or
            `.weights.safetensors`).

    Attributes:
        weights_dict: The weights, as nested dicts of NumPy arrays.
        config, metadata: The `.keras` file's config and metadata (None for a
            weights file).
        object_metadata: `{path: HDF5 attributes}` of the objects that have some.

    Example:

    ```python
    editor = loopax.saving.KerasFileEditor("model.keras")
    editor.summary()
    editor.rename_object("dense_3", "dense_4")
    editor.add_weights("layers/dense_4", {"1": np.zeros(10, "float32")})
    editor.save("edited.weights.h5")
    model.load_weights("edited.weights.h5")
    ```
    """

    def __init__(self, filepath):
        self.filepath = os.fspath(filepath)
        self.config = None
        self.metadata = None
        self.object_metadata = {}
        self._layout = "keras"
        if not os.path.isfile(self.filepath):
            raise FileNotFoundError(f"KerasFileEditor: no file at {self.filepath!r}.")
        if self.filepath.endswith(".keras"):
            self.weights_dict = self._read_archive()
        elif self.filepath.endswith((".weights.h5", ".weights.safetensors")):
            self.weights_dict = self._read_weights_file()
        else:
            raise ValueError(
                f"KerasFileEditor: expected a `.keras`, `.weights.h5` or "
                f"`.weights.safetensors` file. Received: filepath={self.filepath}")
        print(f"Keras model file '{self.filepath}'")
        if self.metadata:
            print(_describe_metadata(self.metadata))

    # ---- reading ---------------------------------------------------------
    def _read_archive(self):
        with archive.open_archive(self.filepath) as zf:
            names = zf.namelist()
            self.config = _read_json(zf, keras_format.CONFIG, self.filepath, names)
            self.metadata = _read_json(zf, "metadata.json", self.filepath, names)
            if keras_format.is_keras_archive(names) and \
                    weights_file.WEIGHTS_IN_ARCHIVE not in names:
                limit = zf.getinfo(keras_format.WEIGHTS).file_size
                with keras_format._damage_named(self.filepath, keras_format.WEIGHTS), \
                        archive.open_entry(zf, keras_format.WEIGHTS, limit, self.filepath,
                                           "the weights") as stream, \
                        keras_format.open_h5(stream, self.filepath) as h5file:
                    return self._read_h5(h5file)
        return _keras_layout_of_loopax_archive(self.filepath)

    def _read_weights_file(self):
        with open(self.filepath, "rb") as f:
            head = f.read(8)
        if head == keras_format.HDF5_SIGNATURE:
            with keras_format._damage_named(self.filepath, None), \
                    open(self.filepath, "rb") as f, \
                    keras_format.open_h5(f, self.filepath) as h5file:
                return self._read_h5(h5file)
        self._layout = "loopax"
        with open(self.filepath, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            header = weights_file.read_header(
                f, self.filepath, min(size, weights_file.MAX_HEADER_BYTES))
            declared, held = sum(n for _, _, n in header.values()), size - f.tell()
            if declared != held:
                raise ValueError(f"{self.filepath}: the safetensors header declares {declared} "
                                 f"bytes of weights but the file holds {held}; the file is "
                                 "damaged.")
            arrays = weights_file.read_arrays(f, header, set(header), self.filepath)
        tree = {}
        for key, value in arrays.items():
            _set_path(tree, key.split("/"), value)
        return tree

    def _read_h5(self, h5file):
        """The weights of a Keras HDF5 layout: a group's `vars` subgroup holds
        its own weights (shown in the group itself, as Keras's editor does),
        other subgroups its sub-objects (empty ones left out). The arrays may
        take at most `_MAX_INFLATION` times the bytes the file takes on disk."""
        file_bytes = os.path.getsize(self.filepath)
        budget = [_MAX_INFLATION * file_bytes + _INFLATION_MARGIN_BYTES]
        seen = set()
        return _h5_group(h5file, "", self.filepath, self.object_metadata, seen, budget)

    # ---- inspecting ------------------------------------------------------
    def summary(self) -> None:
        """Prints the objects and weights of the file, as a tree."""
        print("Weights structure")
        for line in _tree_lines(self.weights_dict, "  "):
            print(line)

    def compare(self, reference_model: Model) -> dict:
        """Compares the file's weights with a model's: objects or weights that
        one has and the other lacks, and shapes that differ, each printed. A Keras
        file's optimizer state is left out (loopax models load no Keras optimizer).

        Args:
            reference_model: A built loopax model (or layer).

        Returns:
            `{"status": "success" | "error", "error_count": n, "match_count": m}`.
        """
        print("Running comparison")
        reference = self._spec_of(reference_model)
        # A Keras file's optimizer state: loopax loads no Keras optimizer, nothing to match.
        saved = {k: v for k, v in self.weights_dict.items()
                 if not (k == "optimizer" and self._layout == "keras")}
        checked: set = set()
        errors, matches = _compare(saved, reference, "", "saved file", "reference model",
                                   checked)
        more, _ = _compare(reference, saved, "", "reference model", "saved file", checked)
        errors += more
        print("─────────────────────")
        if errors == 0:
            print("Comparison successful: saved file is compatible with the reference model")
            print(f"    Found {matches} matching weight{'' if matches == 1 else 's'}")
        else:
            print(f"Found {errors} error{'' if errors == 1 else 's'}: saved file is not "
                  "compatible with the reference model")
        return {"status": "success" if errors == 0 else "error",
                "error_count": errors, "match_count": matches}

    def _spec_of(self, model):
        """`model`'s weights as shapes, in the file's layout."""
        if not getattr(model, "weights", None):
            raise ValueError(f"KerasFileEditor.compare: model {getattr(model, 'name', model)!r} "
                             "has no weights yet; build it first (call it on a batch or "
                             "model.build(input_shape)).")
        spec = {}
        if self._layout == "loopax":
            for key, var in zip(weights_file.weight_keys(model), model.weights):
                _set_path(spec, key.split("/"), _Shape(var.shape))
        else:
            for path, var, _ in keras_format.keras_weight_paths(model):
                _set_path(spec, _object_path(path), _Shape(var.shape))
        return spec

    # ---- editing ---------------------------------------------------------
    def rename_object(self, object_name: str, new_name: str) -> None:
        """Renames an object (e.g. a layer).

        Args:
            object_name: Its name (`"dense_2"`, which must occur once in the
                file) or its path (`"layers/dense_2"`).
            new_name: The new name (a name, not a path).
        """
        parent, key = self._find(object_name, new_name=new_name)
        if new_name in parent and new_name != key:
            warnings.warn(f"KerasFileEditor.rename_object: {new_name!r} already exists next "
                          f"to {object_name!r} and is replaced by it (as Keras does); "
                          "delete_object it first to make that explicit.", stacklevel=2)
        parent[new_name] = parent.pop(key)

    def delete_object(self, object_name: str) -> None:
        """Removes an object (e.g. a layer) and its weights.

        Args:
            object_name: Its name (occurring once in the file) or its path.
        """
        parent, key = self._find(object_name)
        del parent[key]

    def add_object(self, object_path: str, weights: dict) -> None:
        """Adds an object (e.g. a layer) with its weights.

        Args:
            object_path: Its full path (`"layers/dense_2"`); the part before the
                last "/" must exist in the file.
            weights: `{weight name: array}`, e.g. `{"0": kernel, "1": bias}`.
        """
        weights = _check_weights(weights, "add_object")
        *parents, name = object_path.split("/")
        parent = self._walk(parents, object_path)
        if name in parent:
            warnings.warn(f"KerasFileEditor.add_object: {object_path!r} already exists and "
                          "is replaced (as Keras does); use add_weights to add to it.",
                          stacklevel=2)
        parent[name] = weights

    def delete_weight(self, object_name: str, weight_name: str) -> None:
        """Removes one weight of an object.

        Args:
            object_name: The object's name (occurring once) or path.
            weight_name: The weight's name in it (e.g. `"0"`).
        """
        parent, key = self._find(object_name)
        obj = parent[key]
        if not isinstance(obj, dict) or weight_name not in obj:
            found = list(obj) if isinstance(obj, dict) else []
            raise ValueError(f"KerasFileEditor.delete_weight: no weight {weight_name!r} in "
                             f"object {object_name!r}. Weights found: {found}")
        del obj[weight_name]

    def add_weights(self, object_name: str, weights: dict) -> None:
        """Adds weights to an existing object.

        Args:
            object_name: The object's name (occurring once) or path.
            weights: `{weight name: array}`.
        """
        weights = _check_weights(weights, "add_weights")
        parent, key = self._find(object_name)
        obj = parent[key]
        if not isinstance(obj, dict):
            raise ValueError(f"KerasFileEditor.add_weights: {object_name!r} is a weight, not "
                             "an object; pass the path of the object that holds it.")
        replaced = sorted(set(weights) & set(obj))
        if replaced:
            warnings.warn(f"KerasFileEditor.add_weights: {object_name!r} already has "
                          f"weight(s) {replaced}; they are replaced (as Keras does).",
                          stacklevel=2)
        obj.update(weights)

    def _find(self, name, new_name=None):
        """`(parent dict, key)` of the object `name` (a path, or a name that
        occurs exactly once anywhere in the file)."""
        if new_name is not None and "/" in new_name:
            raise ValueError(f"KerasFileEditor: the new name must be a name, not a path. "
                             f"Received: new_name={new_name!r}")
        if "/" in name:
            *parents, key = name.split("/")
            parent = self._walk(parents, name)
            if key not in parent:
                raise ValueError(_not_found(name, "/".join(parents), key, parent))
            return parent, key
        places = list(_occurrences(self.weights_dict, name, ""))
        if not places:
            raise ValueError(f"KerasFileEditor: {name!r} does not appear in the file; "
                             "editor.summary() lists its objects and weights.")
        if len(places) > 1:
            paths = [f"{path}/{name}".lstrip("/") for path, _ in places]
            raise ValueError(f"KerasFileEditor: {name!r} occurs {len(places)} times in the "
                             f"file ({paths}); pass the path of the one you mean.")
        return places[0][1], name

    def _walk(self, parts, full_path):
        node = self.weights_dict
        for depth, part in enumerate(parts):
            child = node.get(part) if isinstance(node, dict) else None
            if not isinstance(child, dict):
                raise ValueError(_not_found(full_path, "/".join(parts[:depth]), part, node))
            node = child
        return node

    # ---- writing ---------------------------------------------------------
    def save(self, filepath: str | os.PathLike) -> None:
        """Writes the edited weights to a `.weights.h5` file (Keras's HDF5
        layout, or safetensors for a loopax weights file, which may also be named
        `.weights.safetensors`); `model.load_weights(filepath)` loads it.

        Args:
            filepath: The file to write (replaced if it exists).
        """
        filepath = os.fspath(filepath)
        suffixes = (".weights.h5",) if self._layout == "keras" else (
            ".weights.h5", ".weights.safetensors")
        if not filepath.endswith(suffixes):
            raise ValueError(f"KerasFileEditor.save: expected a file name ending in "
                             f"{' or '.join(suffixes)}. Received: filepath={filepath}")
        data = _h5_bytes(self.weights_dict) if self._layout == "keras" else \
            _safetensors_bytes(self.weights_dict)
        with weights_file.atomic_write(filepath) as f:
            f.write(data)

    def resave_weights(self, filepath: str | os.PathLike) -> None:
        """`save(filepath)` (Keras's earlier name)."""
        self.save(filepath)


class _Shape:
    """A weight of a reference model in `compare`: its shape only."""

    def __init__(self, shape):
        self.shape = tuple(shape)


def _read_json(zf, name, filepath, names):
    if name not in names:
        return None
    data = archive.read_entry(zf, name, archive.MAX_CONFIG_BYTES, filepath, "a model config")
    return archive.parse_json(data, filepath, name)


def _keras_layout_of_loopax_archive(filepath):
    """A loopax `.keras` archive's weights where Keras would save them: its
    model is rebuilt from the config (registered classes only, as load_model)."""
    model = model_file.load_model(filepath, compile=False)
    tree = {}
    for path, var, _ in keras_format.keras_weight_paths(model):
        _set_path(tree, _object_path(path), np.asarray(var.value))
    return _sorted(tree)


def _sorted(tree):
    """`tree` with each level in HDF5's order (names sorted), as a Keras file lists it."""
    return {key: _sorted(value) if isinstance(value, dict) else value
            for key, value in sorted(tree.items())}


def _object_path(h5_path):
    """`layers/dense/vars/0` -> `["layers", "dense", "0"]` (the editor's view)."""
    parts = h5_path.split("/")
    return parts[:-2] + parts[-1:] if len(parts) >= 2 and parts[-2] == "vars" else parts


def _set_path(tree, parts, value):
    node = tree
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _h5_group(group, path, where, metadata, seen, budget):
    """`{name: array or dict}` of an HDF5 group (see `KerasFileEditor._read_h5`)."""
    h5py = keras_format._h5py()
    address = h5py.h5o.get_info(group.id).addr
    if address in seen:
        raise ValueError(f"{where}: {quoted(path or '/')} is linked twice in the file; "
                         "not a Keras weights file.")
    seen.add(address)
    if group.attrs:
        metadata[path or "/"] = {k: group.attrs[k] for k in group.attrs}
    out = {}
    names = list(group.keys())
    for name in (["vars"] if "vars" in names else []) + [n for n in names if n != "vars"]:
        child_path = f"{path}/{name}".lstrip("/")
        if not keras_format._hard_link(group, name, where, child_path.split("/")):
            continue
        child = group[name]
        if isinstance(child, h5py.Group):
            inner = _h5_group(child, child_path, where, metadata, seen, budget)
            if name == "vars":
                out.update(inner)
            elif inner:
                out[name] = inner
        elif isinstance(child, h5py.Dataset):
            out[name] = _read_dataset(child, child_path, where, budget)
    return out


def _read_dataset(ds, path, where, budget):
    keras_format._check_dataset(ds, path, where)
    keras_format._check_storage(ds, path, where)
    nbytes = int(ds.size) * ds.dtype.itemsize
    budget[0] -= nbytes
    if budget[0] < 0:
        raise ValueError(f"{where}: dataset {path!r} takes the arrays past "
                         f"{_MAX_INFLATION} times the file's size; refused (a damaged file "
                         "or a compression bomb).")
    return ds[()]


def _tree_lines(tree, prefix):
    lines = []
    items = list(tree.items())
    for i, (key, value) in enumerate(items):
        last = i == len(items) - 1
        connector = "└─ " if last else "├─ "
        if isinstance(value, dict):
            lines.append(f"{prefix}{connector}{key}")
            lines.extend(_tree_lines(value, prefix + ("    " if last else "│   ")))
        else:
            lines.append(f"{prefix}{connector}{key}: shape={tuple(value.shape)}, "
                         f"dtype={value.dtype}")
    return lines


def _describe_metadata(metadata):
    if "keras_version" in metadata:
        return (f"Saved with Keras {metadata['keras_version']} - date: "
                f"{metadata.get('date_saved')}")
    return "Saved with " + ", ".join(f"{k}={v}" for k, v in metadata.items()
                                     if isinstance(v, (str, int, float)))


def _compare(target, reference, path, target_name, reference_name, checked):
    """`(errors, matches)` of `target` against `reference` (nested dicts of
    arrays or shapes); each error printed, its path added to `checked` so the
    reverse comparison does not count it again."""
    errors = matches = 0
    for key, ref_value in reference.items():
        inner = f"{path}/{key}"
        if inner in checked:
            continue
        if key not in target:
            errors += 1
            checked.add(inner)
            kind = "Object" if isinstance(ref_value, dict) else "Weight"
            print(f"...{kind} {inner} present in {reference_name}, missing from {target_name}")
            if isinstance(ref_value, dict):
                print(f"    In {reference_name}, {inner} contains the following keys: "
                      f"{list(ref_value)}")
        elif isinstance(ref_value, dict) or isinstance(target[key], dict):
            if not (isinstance(ref_value, dict) and isinstance(target[key], dict)):
                errors += 1
                checked.add(inner)
                print(f"...{inner} is an object in one and a weight in the other")
                continue
            e, m = _compare(target[key], ref_value, inner, target_name, reference_name,
                            checked)
            errors, matches = errors + e, matches + m
        elif tuple(target[key].shape) != tuple(ref_value.shape):
            errors += 1
            checked.add(inner)
            print(f"...Weight shape mismatch for {inner}\n    In {reference_name}: "
                  f"shape={tuple(ref_value.shape)}\n    In {target_name}: "
                  f"shape={tuple(target[key].shape)}")
        else:
            matches += 1
    return errors, matches


def _occurrences(tree, name, path):
    """`(path, parent dict)` of every key `name` in `tree`, at any depth."""
    if name in tree:
        yield path, tree
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _occurrences(value, name, f"{path}/{key}")


def _not_found(full_path, parent_path, key, parent):
    keys = list(parent) if isinstance(parent, dict) else []
    where = f"under {parent_path!r}" if parent_path else "at the top of the file"
    return (f"KerasFileEditor: path {full_path!r} not found: no object {key!r} {where} "
            f"(it has: {keys[:20]}{' ...' if len(keys) > 20 else ''}).")


def _check_weights(weights, method):
    if not isinstance(weights, dict):
        raise ValueError(f"KerasFileEditor.{method}: `weights` must be a dict of weight "
                         "names (usually '0', '1', ...) to arrays. Received: "
                         f"type(weights)={type(weights).__name__}")
    return {str(k): np.asarray(v) for k, v in weights.items()}


def _h5_bytes(tree):
    """Keras's HDF5 layout of `tree`: each object's own weights in `<path>/vars`."""
    h5py = keras_format._h5py()
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5file:
        _write_h5(h5file, tree, "")
    return buffer.getvalue()


def _write_h5(h5file, tree, path):
    own = {k: v for k, v in tree.items() if not isinstance(v, dict)}
    if own:
        group = h5file.require_group(f"{path}/vars" if path else "vars")
        for key, value in own.items():
            group[key] = np.asarray(value)
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            _write_h5(h5file, value, f"{path}/{key}" if path else key)


def _safetensors_bytes(tree):
    arrays = {}

    def flatten(node, prefix):
        for key, value in node.items():
            if isinstance(value, dict):
                flatten(value, f"{prefix}{key}/")
            else:
                arrays[f"{prefix}{key}"] = np.ascontiguousarray(value)
    flatten(tree, "")
    return safetensors_numpy.save(arrays, metadata={"format": weights_file.FORMAT,
                                                    "version": "1"})
