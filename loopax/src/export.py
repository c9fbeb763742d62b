"""`loopax.export`: a model's inference functions as StableHLO (`jax.export`),
run back without the model's Python code (Keras's `keras.export.ExportArchive`).

An archive file is a zip of `manifest.json`, one serialized `jax.export.Exported`
per endpoint (StableHLO plus its calling convention) and `variables.npz`, the
values of the tracked variables. Each endpoint takes those values as its first
argument, so they are stored once for all endpoints. A `None` axis of an input
signature becomes a symbolic size (`batch` for axis 0, shared by every input;
`d0`, `d1`, ... elsewhere). Serializing needs the `flatbuffers` package (the
`export` extra).

Not supported: the TF SavedModel format (needs TensorFlow), endpoints that
update variables (their assignments are dropped: export inference
functions), random ops without a tracked seed generator, and string inputs.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import zipfile

import jax
import numpy as np
from jax import export as jax_export

from loopax.src import dtypes, tree
from loopax.src.api_export import export
from loopax.src.saving.archive import open_archive, parse_json, read_entry
from loopax.src.state import Variable, pure
from loopax.src.utils import safe_open

FORMAT = "loopax-export"
VERSION = 1


def _variables_of(resource):
    variables = getattr(resource, "variables", None)
    if variables is None or not all(isinstance(v, Variable) for v in variables):
        raise TypeError(f"ExportArchive.track: expected a loopax Layer or Model (something with "
                        f"`variables`), got {type(resource).__name__}.")
    return list(variables)


def _abstract(spec, scope, counter):
    """A `jax.ShapeDtypeStruct` for one input spec (None sizes symbolic)."""
    if isinstance(spec, jax.ShapeDtypeStruct):
        return spec
    shape, dtype = getattr(spec, "shape", None), getattr(spec, "dtype", None)
    if shape is None:
        raise TypeError(
            f"ExportArchive: an input_signature entry must have a `shape` and a `dtype` (a "
            f"loopax.Input, an array, a jax.ShapeDtypeStruct); got {spec!r:.80}.")
    dtype = dtypes.standardize(dtype) if dtype is not None else dtypes.floatx()
    if all(d is not None for d in shape):
        return jax.ShapeDtypeStruct(tuple(int(d) for d in shape), dtype)
    dims = [("batch" if axis == 0 else f"d{next(counter)}") if d is None else str(int(d))
            for axis, d in enumerate(shape)]
    return jax.ShapeDtypeStruct(jax_export.symbolic_shape(", ".join(dims), scope=scope), dtype)


def _default_signature(resource):
    """`[inputs]` of a model with symbolic inputs (a functional model), else None."""
    inputs = getattr(resource, "inputs", None)
    if not inputs:
        return None
    return [inputs[0] if len(inputs) == 1 else list(inputs)]


@export("loopax.export.ExportArchive")
class ExportArchive:
    """Collects a model's inference functions ("endpoints") and writes them as
    StableHLO with the variables' values; `loopax.export.load` runs them back.

        archive = loopax.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint("serve", model.__call__,
                             input_signature=[loopax.Input((3,))])
        archive.write_out("model.export")
        loopax.export.load("model.export").serve(x)
    """

    def __init__(self):
        self._variables = []
        self._endpoints = {}
        self._collections = {}

    def track(self, resource):
        """Makes the variables of `resource` (a layer or model) available to endpoints.

        Args:
            resource: A loopax Layer or Model.

        Raises:
            TypeError: `resource` has no loopax variables.
        """
        known = {id(v) for v in self._variables}
        self._variables += [v for v in _variables_of(resource) if id(v) not in known]

    def add_endpoint(self, name, fn, input_signature=None, platforms=None):
        """Traces `fn` on `input_signature` and keeps it as StableHLO under `name`.

        Args:
            name: The endpoint's name (an identifier: the reloaded archive's method).
            fn: A function of the inputs reading only tracked variables.
            input_signature: One spec per positional argument of `fn` (nested lists
                and dicts allowed): `loopax.Input(...)` tensors, arrays, or
                `jax.ShapeDtypeStruct`s; None sizes become symbolic.
            platforms: The platforms to compile for (e.g. `("cpu", "cuda")`); default
                the current backend's.

        Returns:
            The `jax.export.Exported` of the endpoint.

        Raises:
            ValueError: the name is not an identifier or is taken, no signature is
                given, or `fn` reads a variable that no `track` call covered.
        """
        self._check_name(name)
        if input_signature is None:
            raise ValueError(f"ExportArchive.add_endpoint({name!r}): pass `input_signature`, "
                             "one spec per argument, e.g. [loopax.Input((3,))].")
        scope, counter = jax_export.SymbolicScope(), itertools.count()
        specs = tree.map_structure(lambda s: _abstract(s, scope, counter),
                                   list(input_signature))
        variables = list(self._variables)

        def untracked(variable):
            raise ValueError(
                f"ExportArchive endpoint {name!r} reads variable {variable.path!r}, which no "
                "tracked layer or model holds. Call `archive.track(layer_or_model)` for it "
                "first (a random op needs a seeded `loopax.random.SeedGenerator` there).")

        run = pure(fn, variables, on_missing=untracked)

        def endpoint(values, *args):
            return run(values, *args)[0]

        value_specs = [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in variables]
        exported = jax_export.export(jax.jit(endpoint), platforms=platforms)(
            value_specs, *specs)
        self._endpoints[name] = exported
        return exported

    def track_and_add_endpoint(self, name, resource, input_signature=None, **kwargs):
        """`track(resource)` then `add_endpoint(name, resource, input_signature)`; a
        functional model's own inputs are the default signature.

        Args:
            name: The endpoint's name.
            resource: A loopax Layer or Model, called on the inputs.
            input_signature: As for `add_endpoint`; default the model's inputs.
            **kwargs: `platforms`, as for `add_endpoint`.

        Returns:
            The `jax.export.Exported` of the endpoint.
        """
        self.track(resource)
        signature = input_signature or _default_signature(resource)
        return self.add_endpoint(name, resource, signature, **kwargs)

    def add_variable_collection(self, name, variables):
        """Stores `variables`' values, read back as the list `reloaded.<name>`.

        Args:
            name: The collection's name (an identifier).
            variables: A list of loopax Variables.
        """
        self._check_name(name)
        self._collections[name] = list(variables)

    def _check_name(self, name):
        if not (isinstance(name, str) and name.isidentifier()) or name.startswith("_") \
                or name == "endpoints":
            raise ValueError(f"ExportArchive: the name {name!r} must be a Python identifier "
                             "not starting with '_' and other than 'endpoints' (it becomes an "
                             "attribute when reloaded).")
        if name in self._endpoints or name in self._collections:
            raise ValueError(f"ExportArchive: {name!r} is already an endpoint or a variable "
                             "collection; pick another name.")

    def write_out(self, filepath, verbose=True):
        """Writes the archive file: the endpoints and the variables' current values.

        Args:
            filepath: The file to write (`str` or path).
            verbose: Whether to print the endpoints and their signatures.

        Raises:
            ValueError: no endpoint was added.
        """
        if not self._endpoints:
            raise ValueError("ExportArchive.write_out: add an endpoint first "
                             "(`add_endpoint` or `track_and_add_endpoint`).")
        arrays = {f"v{i}": np.asarray(v.value) for i, v in enumerate(self._variables)}
        collections = {}
        for name, variables in self._collections.items():
            collections[name] = [f"{name}_{i}" for i in range(len(variables))]
            arrays.update({key: np.asarray(v.value)
                           for key, v in zip(collections[name], variables)})
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        manifest = {"format": FORMAT, "version": VERSION, "variables": len(self._variables),
                    "endpoints": sorted(self._endpoints), "collections": collections}
        with zipfile.ZipFile(filepath, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest))
            zf.writestr("variables.npz", buffer.getvalue())
            for name, exported in self._endpoints.items():
                zf.writestr(f"endpoints/{name}.jax_exported", _serialize(exported))
        if verbose:
            for name, exported in self._endpoints.items():
                inputs = ", ".join(str(a) for a in exported.in_avals[len(self._variables):])
                outputs = ", ".join(str(a) for a in exported.out_avals)
                print(f"Endpoint {name!r}: ({inputs}) -> ({outputs}) on "
                      f"{', '.join(exported.platforms)}")


def _serialize(exported):
    try:
        return bytes(exported.serialize())
    except ImportError as e:
        raise ImportError(f"ExportArchive.write_out needs the `flatbuffers` package ({e}); "
                          "install it: pip install 'loopax[export]'.") from None


@export("loopax.export.ReloadedArchive")
class ReloadedArchive:
    """An archive read back by `load`: each endpoint is a method, each variable
    collection a list of arrays.

    Args:
        endpoints: `{name: jax.export.Exported}`.
        values: The tracked variables' values, passed to every endpoint.
        collections: `{name: [arrays]}`.
    """

    def __init__(self, endpoints, values, collections):
        self._endpoints = endpoints
        self._values = values
        for name, exported in endpoints.items():
            setattr(self, name, self._caller(exported))
        for name, arrays in collections.items():
            setattr(self, name, arrays)

    def _caller(self, exported):
        def call(*args):
            return exported.call(self._values, *args)
        return call

    @property
    def endpoints(self):
        """The endpoint names."""
        return sorted(self._endpoints)


@export("loopax.export.load")
def load(filepath):
    """Reads an archive that `ExportArchive.write_out` wrote.

    Args:
        filepath: The archive file.

    Returns:
        A `ReloadedArchive`: `reloaded.<endpoint>(*inputs)` runs the StableHLO.

    Raises:
        ValueError: the file is not such an archive, or is damaged.
    """
    filepath = os.fspath(filepath)
    safe_open.require_regular(filepath, "an export archive")
    limit = os.path.getsize(filepath)   # stored entries: none is larger than the file
    with open_archive(filepath, "an export archive") as zf:
        names = set(zf.namelist())
        if "manifest.json" not in names:
            raise ValueError(f"{filepath} is not a loopax export archive (no manifest.json); "
                             "write one with loopax.export.ExportArchive.write_out.")
        manifest = parse_json(read_entry(zf, "manifest.json", limit, filepath, "the manifest"),
                              filepath, "manifest.json")
        _check_manifest(manifest, names, filepath)
        arrays = _read_variables(zf, limit, filepath)
        keys = [f"v{i}" for i in range(manifest["variables"])]
        keys += [key for collection in manifest["collections"].values() for key in collection]
        missing = sorted(set(keys) - set(arrays))
        if missing:
            raise _damaged(filepath, f"variables.npz lacks the arrays {missing[:10]} that "
                                     "manifest.json names")
        values = [arrays[f"v{i}"] for i in range(manifest["variables"])]
        collections = {name: [arrays[key] for key in keys]
                       for name, keys in manifest["collections"].items()}
        endpoints = {}
        for name in manifest["endpoints"]:
            entry = f"endpoints/{name}.jax_exported"
            blob = read_entry(zf, entry, limit, filepath, "an endpoint")
            endpoints[name] = _deserialize(blob, filepath, entry, len(values))
            _check_variables(values, endpoints[name], name, filepath)
    return ReloadedArchive(endpoints, values, collections)


def _check_variables(values, exported, endpoint, filepath):
    """Refuses a stored variable whose shape or dtype is not the one `endpoint` takes
    it as (found at load, not at the first call)."""
    for i, (value, aval) in enumerate(zip(values, exported.in_avals)):
        if tuple(value.shape) != tuple(aval.shape) or np.dtype(value.dtype) != aval.dtype:
            raise _damaged(filepath, f"the variable v{i} is stored in variables.npz as "
                                     f"{tuple(value.shape)} {value.dtype}, but the endpoint "
                                     f"{endpoint!r} takes it as {tuple(aval.shape)} "
                                     f"{aval.dtype}")


def _damaged(filepath, what) -> ValueError:
    return ValueError(f"{filepath} is a damaged export archive: {what}. Write it again with "
                      "loopax.export.ExportArchive.write_out (or copy it again).")


def _is_name_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_manifest(manifest, names, filepath):
    """Refuses a manifest that is not the one `write_out` writes, or names entries
    the archive lacks, naming the file and the field."""
    if not isinstance(manifest, dict):
        raise _damaged(filepath, "manifest.json is not a JSON object")
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ValueError(f"{filepath}: an export archive of format "
                         f"{manifest.get('format')!r} version {manifest.get('version')!r}; "
                         f"this loopax reads {FORMAT!r} version {VERSION}.")
    count = manifest.get("variables")
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 10**7:
        raise _damaged(filepath, f"manifest.json's 'variables' is {str(count)[:50]!r}, not a "
                                 "count")
    endpoints = manifest.get("endpoints")
    if not _is_name_list(endpoints) or not endpoints:
        raise _damaged(filepath, "manifest.json's 'endpoints' is not a list of names")
    for name in endpoints:
        if not name.isidentifier():
            raise _damaged(filepath, f"the endpoint name {name[:50]!r} is not an identifier")
        if f"endpoints/{name}.jax_exported" not in names:
            raise _damaged(filepath, f"manifest.json names the endpoint {name!r} but the "
                                     f"archive has no endpoints/{name}.jax_exported")
    collections = manifest.get("collections")
    if not isinstance(collections, dict) or not all(
            isinstance(k, str) and k.isidentifier() and _is_name_list(v)
            for k, v in collections.items()):
        raise _damaged(filepath, "manifest.json's 'collections' is not a dict of names to "
                                 "lists of array names")
    if "variables.npz" not in names:
        raise _damaged(filepath, "it has no variables.npz")


def _read_variables(zf, limit, filepath):
    """The arrays of the archive's `variables.npz`, read with the bounded zip reader
    (each at most the archive's own size: `write_out` stores them uncompressed, so
    a deflated array inflating past that is refused)."""
    data = read_entry(zf, "variables.npz", limit, filepath, "the variables")
    where = f"{filepath} (variables.npz)"
    arrays = {}
    try:
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as inner:
            for member in inner.namelist():
                raw = read_entry(inner, member, limit, where, "a variable")
                if not member.endswith(".npy"):
                    continue
                arrays[member[:-len(".npy")]] = np.lib.format.read_array(
                    io.BytesIO(bytes(raw)), allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, EOFError, OSError) as e:
        if str(e).startswith(where):
            raise
        raise _damaged(filepath, f"variables.npz cannot be read ({type(e).__name__}: "
                                 f"{str(e)[:200]})") from None
    return arrays


def _deserialize(blob, filepath, entry, n_values):
    """The `jax.export.Exported` of endpoint `entry`, its StableHLO parsed now (a
    damaged one is found at load, not at the first call)."""
    try:
        exported = jax_export.deserialize(bytearray(blob))
        exported.mlir_module()            # parses the serialized StableHLO
    except Exception as e:   # flatbuffers, MLIR and JAX raise many types for bad bytes
        raise _damaged(filepath, f"{entry} is not a serialized JAX program "
                                 f"({type(e).__name__}: {str(e)[:200]})") from None
    if len(exported.in_avals) < n_values:
        raise _damaged(filepath, f"{entry} takes {len(exported.in_avals)} inputs, fewer than "
                                 f"the archive's {n_values} variables")
    return exported
