"""`tf.saved_model.save/load` and `tf.lite` on `loopax.export`.

The format is loopax's own, not TensorFlow's graph format: `save` writes a
directory holding one `loopax.export` archive (`functions.export`: each
function as StableHLO, the variables' values as arrays) and `saved_model.json`
(which endpoint is which function or signature, and which variable is which
attribute). Loading reads those two files and never runs Python code from them.

What is saved, as TensorFlow saves it:
- each `tf.function` attribute of the object (a Module or a Keras model), for
  its `input_signature` or, without one, for each input signature it has been
  called with (arrays only), under its attribute name (`__call__` makes the
  loaded object callable);
- `signatures=` (a tf.function or its `get_concrete_function(...)`, or a dict
  of them) as `loaded.signatures[name]`, called with keyword arguments and
  returning a dict (`output_0`, ... unless the function returns a dict); a Keras
  model gets `serve` (its inference call) and, by default, `serving_default`.
- the variables, as `loaded.variables` / `trainable_variables` and as the
  attributes they were (`loaded.v`), restored with their saved values.
A function that assigns Variables updates the loaded object's variables, so
`loaded.mutate(2.0)` changes what `loaded(x)` computes, as in TensorFlow.
"""

from __future__ import annotations

import inspect
import json
import os
import warnings

import jax
import numpy as np

from loopax.src import export as _export
from loopax.src.models.model import Model
from loopax.src.saving.archive import parse_json
from loopax.src.state import Variable
from loopax.src.tensor import unwrap
from loopax.src.tf_compat.function import TensorSpec, TFFunction
from loopax.src.tf_compat.tensors import as_tensors
from loopax.src.tf_compat.variables import Variable as TFVariable

ARCHIVE, MANIFEST, FORMAT = "functions.export", "saved_model.json", "loopax-saved-model"
_MANIFEST_LIMIT = 16 << 20


def _not_a_loopax_dir(path):
    if os.path.exists(os.path.join(path, "saved_model.pb")) or os.path.exists(
            os.path.join(path, "saved_model.pbtxt")):
        return ValueError(
            f"tf.saved_model.load: {path} is a TensorFlow SavedModel (saved_model.pb, a "
            "TensorFlow graph). loopax does not read TensorFlow graphs; it reads its own "
            "format, which loopax.tf.saved_model.save writes (StableHLO + arrays). Re-save "
            "the model from its code with loopax, or load its weights: a Keras model's "
            "model.save('m.keras') file loads with keras.models.load_model, and "
            "tf.train.Checkpoint files with checkpoint.restore.")
    return ValueError(f"tf.saved_model.load: {path} is not a directory that "
                      f"loopax.tf.saved_model.save wrote (no {MANIFEST}).")


# ---- saving ----------------------------------------------------------------------

def _function_attributes(obj):
    """{attribute name: the instance's tf.function} for each tf.function of `obj`."""
    found = {}
    for klass in reversed(type(obj).__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, TFFunction):
                found[name] = getattr(obj, name)
    for name, value in vars(obj).items():
        if isinstance(value, TFFunction):
            found[name] = value
    return found


def _traced_signatures(function):
    """The input signatures (lists of TensorSpecs) `function` has been called with,
    arrays only (a trace with a Python argument is left out)."""
    signatures = []
    for key in getattr(function._compiled, "_traces", {}):
        treedef, leaves = key[0], key[1:]
        if not all(isinstance(k, tuple) and len(k) == 3 and isinstance(k[0], tuple)
                   for k in leaves):
            continue
        specs = [TensorSpec(shape, dtype) for shape, dtype, _ in leaves]
        args, kwargs = jax.tree_util.tree_unflatten(treedef, specs)
        if not kwargs:
            signatures.append(list(args))
    return signatures


def _specs(signature, where, function=None):
    signature = _with_ranks(list(signature), where, function)
    out = []
    for spec in signature:
        if isinstance(spec, TensorSpec):
            out.append(spec)
        elif hasattr(spec, "shape") and hasattr(spec, "dtype"):
            out.append(TensorSpec(spec.shape, spec.dtype))
        else:
            raise TypeError(f"tf.saved_model.save: {where}: each input must be a "
                            f"tf.TensorSpec (nested signatures are not supported); got "
                            f"{spec!r:.80}.")
    return out


def _with_ranks(signature, where, function):
    """`signature` with each TensorSpec of unknown rank (`TensorSpec(None, ...)`)
    given the shape the function was called with: StableHLO needs the rank."""
    unknown = [i for i, s in enumerate(signature)
               if isinstance(s, TensorSpec) and s.shape.rank is None]
    if not unknown:
        return signature
    traced = [t for t in (_traced_signatures(function) if function is not None else [])
              if len(t) == len(signature) and all(
                  np.dtype(t[i].dtype) == np.dtype(signature[i].dtype) for i in unknown)]
    shapes = {tuple(tuple(t[i].shape) for i in unknown) for t in traced}
    if len(shapes) != 1:
        raise ValueError(
            f"tf.saved_model.save: {where} has a TensorSpec of unknown rank "
            "(tf.TensorSpec(None, ...)); loopax saves StableHLO, which needs the number of "
            "axes. Give the shape with None for unknown sizes (e.g. tf.TensorSpec([None], "
            "tf.float32)), or call the function once with the shape to save before saving"
            + (f" (it was called with {len(shapes)} different shapes)." if shapes else "."))
    (found,) = shapes
    signature = list(signature)
    for i, shape in zip(unknown, found):
        signature[i] = TensorSpec(shape, signature[i].dtype, signature[i].name)
    return signature


def _spec_json(spec, fallback_name):
    return {"shape": [None if d is None else int(d) for d in spec.shape],
            "dtype": np.dtype(spec.dtype).name, "name": spec.name or fallback_name}


def _arg_names(function, count):
    try:
        params = [p.name for p in inspect.signature(function.python_function).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if params and params[0] == "self" and len(params) == count + 1:
        params = params[1:]
    return [params[i] if i < len(params) else f"input_{i}" for i in range(count)]


def _with_state(fn, variables):
    """`fn` returning also every variable's value after it ran (so that a function
    that assigns variables updates the loaded ones)."""
    def endpoint(*args):
        out = fn(*args)
        return out, [v.value for v in variables]
    return endpoint


def _structure(out):
    """'dict', 'tuple', 'list' or 'single': how a signature names the outputs."""
    if isinstance(out, dict):
        return "dict"
    if isinstance(out, (tuple, list)):
        return type(out).__name__
    return "single"


def save(obj, export_dir, signatures=None, options=None):
    """Saves `obj`'s tf.functions, signatures and variables to the directory
    `export_dir` in loopax's format (see the module docstring)."""
    variables = getattr(obj, "variables", None)
    if variables is None or not all(isinstance(v, Variable) for v in variables):
        raise TypeError(f"tf.saved_model.save: expected a tf.Module or a Keras model (an "
                        f"object with `variables`), got {type(obj).__name__}.")
    variables = list(variables)
    archive = _export.ExportArchive()
    archive.track(obj)
    manifest = {"format": FORMAT, "version": 1, "functions": {}, "signatures": {},
                "attributes": {}, "trainable": [bool(v.trainable) for v in variables],
                "names": [v.name for v in variables]}
    count = [0]

    def add(fn, specs, names):
        name = f"f{count[0]}"
        count[0] += 1
        exported = archive.add_endpoint(name, _with_state(fn, variables),
                                        [jax.ShapeDtypeStruct(_shape(s), s.dtype)
                                         if None not in tuple(s.shape) else s for s in specs])
        out, _ = jax.tree_util.tree_unflatten(exported.out_tree,
                                              [0] * exported.out_tree.num_leaves)
        entry = {"endpoint": name, "inputs": [_spec_json(s, n) for s, n in zip(specs, names)],
                 "outputs": _structure(out)}
        if isinstance(out, dict):
            entry["output_keys"] = sorted(out)
        return entry

    for attr, function in _function_attributes(obj).items():
        sigs = ([function.input_signature] if function.input_signature is not None
                else _traced_signatures(function))
        entries = []
        for signature in sigs:
            specs = _specs(signature, f"{attr}'s input_signature", function)
            entries.append(add(function, specs, _arg_names(function, len(specs))))
        if entries:
            manifest["functions"][attr] = entries
    if signatures is None and _is_keras_model(obj):
        serve = _keras_serve_signature(obj)
        if serve is not None:
            manifest["functions"]["serve"] = [add(lambda *x: obj(*x, training=False), serve,
                                                  _input_names(obj, len(serve)))]
            signatures = {"serving_default": ("serve", serve)}
    if signatures is not None:
        if not isinstance(signatures, dict):
            signatures = {"serving_default": signatures}
        for key, function in signatures.items():
            if isinstance(function, tuple):   # the Keras serve function above
                _, specs = function
                fn, names = (lambda *x: obj(*x, training=False)), _input_names(obj, len(specs))
            else:
                if not isinstance(function, TFFunction) or function.input_signature is None:
                    raise ValueError(
                        f"tf.saved_model.save: signature {key!r} must be a tf.function with "
                        "an input_signature (or its get_concrete_function(tf.TensorSpec(...))); "
                        f"got {function!r:.80}.")
                specs = _specs(function.input_signature, f"signature {key!r}", function)
                fn, names = function, _arg_names(function, len(specs))
            manifest["signatures"][key] = add(fn, specs, names)
    if not manifest["functions"] and not manifest["signatures"]:
        # As TensorFlow: a Module without traced tf.functions saves its variables only.
        warnings.warn(
            "tf.saved_model.save: the object has no tf.function with an input_signature or "
            "that has been called, and no `signatures=`: only its variables are saved (the "
            "loaded object has them, but no functions). Decorate a method with "
            "@tf.function(input_signature=[tf.TensorSpec(...)]) or call it once before "
            "saving to save it too.", stacklevel=2)
        archive.add_endpoint("variables_only", _with_state(lambda: (), variables), [])
    ids = {id(v): i for i, v in enumerate(variables)}
    for name, value in vars(obj).items():
        if isinstance(value, Variable) and id(value) in ids and not name.startswith("_"):
            manifest["attributes"][name] = ids[id(value)]
    os.makedirs(export_dir, exist_ok=True)
    archive.write_out(os.path.join(export_dir, ARCHIVE), verbose=False)
    with open(os.path.join(export_dir, MANIFEST), "w") as f:
        json.dump(manifest, f)


def _shape(spec, unknown=None):
    return tuple(unknown if d is None else int(d) for d in spec.shape)


def _is_keras_model(obj):
    return isinstance(obj, Model)


def _keras_serve_signature(model):
    inputs = getattr(model, "inputs", None)
    if inputs:
        return [TensorSpec(tuple(t.shape), t.dtype) for t in inputs]
    return None


def _input_names(model, count):
    """TensorFlow names a Keras model's serving inputs after `call`'s argument."""
    return ["inputs"] if count == 1 else [f"inputs_{i}" for i in range(count)]


# ---- loading ---------------------------------------------------------------------

class _Function:
    """A loaded function: calls the endpoint whose input signature fits."""

    def __init__(self, owner, name, entries):
        self._owner, self._name, self._entries = owner, name, entries

    def _fits(self, entry, args):
        if len(args) != len(entry["inputs"]):
            return False
        for a, spec in zip(args, entry["inputs"]):
            shape = np.shape(a)
            if len(shape) != len(spec["shape"]) or any(
                    d is not None and d != s for d, s in zip(spec["shape"], shape)):
                return False
        return True

    def _convert(self, entry, args):
        return [np.asarray(unwrap(a), dtype=spec["dtype"]) if not isinstance(
            unwrap(a), jax.Array) else unwrap(a).astype(spec["dtype"])
            for a, spec in zip(args, entry["inputs"])]

    def _call_entry(self, entry, args):
        out, new_values = getattr(self._owner._archive, entry["endpoint"])(
            *self._convert(entry, args))
        self._owner._update(new_values)
        return out

    def __call__(self, *args, **kwargs):
        for entry in self._entries:
            names = [spec["name"] for spec in entry["inputs"]]
            bound = list(args) + [kwargs[n] for n in names[len(args):] if n in kwargs]
            if len(bound) == len(names) and len(kwargs) == len(names) - len(args) and \
                    self._fits(entry, bound):
                return as_tensors(self._call_entry(entry, bound))
        wanted = " or ".join(
            "(" + ", ".join(f"{s['name']}: {s['dtype']}{tuple(s['shape'])}"
                            for s in entry["inputs"]) + ")" for entry in self._entries)
        given = ", ".join(f"{np.shape(a)}" for a in args)
        raise ValueError(
            f"Could not find matching concrete function to call loaded function {self._name!r} "
            f"with inputs of shapes ({given}); it was saved for {wanted}. A saved function "
            "runs only for the input signatures it was traced with before saving (give it "
            "an input_signature with None sizes for any size).")


class _Signature(_Function):
    """A loaded signature: keyword arguments in, a dict of outputs out."""

    def __init__(self, owner, name, entry):
        super().__init__(owner, name, [entry])
        self.entry = entry

    @property
    def structured_outputs(self):
        return self.entry.get("output_keys")

    def __call__(self, *args, **kwargs):
        out = super().__call__(*args, **kwargs)
        kind = self.entry.get("outputs")
        if kind == "dict":
            return dict(out)
        if kind in ("tuple", "list"):
            return {f"output_{i}": v for i, v in enumerate(out)}
        return {"output_0": out}


class _Loaded:
    """What `tf.saved_model.load` returns: the saved functions as methods (callable
    when `__call__` was saved), `.signatures`, and the variables."""

    def __init__(self, archive, values, manifest):
        self._archive, self._values = archive, values
        self.variables = [TFVariable(np.asarray(v), name=n, trainable=t) for v, n, t in zip(
            values, manifest["names"], manifest["trainable"])]
        self.trainable_variables = [v for v in self.variables if v.trainable]
        for name, index in manifest["attributes"].items():
            setattr(self, name, self.variables[index])
        self._functions = {name: _Function(self, name, entries)
                           for name, entries in manifest["functions"].items()}
        for name, function in self._functions.items():
            if name != "__call__":
                setattr(self, name, function)
        self.signatures = {key: _Signature(self, key, entry)
                           for key, entry in manifest["signatures"].items()}

    def _update(self, new_values):
        for var, value in zip(self.variables, new_values):
            var.assign(value)
        self._values[:] = list(new_values)   # what the archive passes to the next call

    def __call__(self, *args, **kwargs):
        function = self._functions.get("__call__")
        if function is None:
            raise TypeError("The loaded object is not callable: no __call__ tf.function was "
                            "saved; call one of its functions or .signatures[...].")
        return function(*args, **kwargs)


def load(export_dir, tags=None, options=None):
    """Loads a directory that `tf.saved_model.save` (loopax's) wrote."""
    path = os.fspath(export_dir)
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.isfile(manifest_path):
        raise _not_a_loopax_dir(path)
    with open(manifest_path, "rb") as f:
        data = f.read(_MANIFEST_LIMIT + 1)
    if len(data) > _MANIFEST_LIMIT:
        raise ValueError(f"tf.saved_model.load: {manifest_path} is larger than "
                         f"{_MANIFEST_LIMIT} bytes; it is not a loopax saved model manifest.")
    manifest = parse_json(data, path, MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _not_a_loopax_dir(path)
    archive = _export.load(os.path.join(path, ARCHIVE))
    # The archive passes this list (its tracked variables' values) to every endpoint;
    # the loaded object updates it in place when a function assigns variables.
    values = getattr(archive, "_values", None)
    if not isinstance(values, list) or len(values) != len(manifest.get("names", ())):
        raise ValueError(f"tf.saved_model.load: {path}: the variables of {ARCHIVE} do not "
                         f"match {MANIFEST} (a damaged or mixed-up save).")
    return _Loaded(archive, values, manifest)


def contains_saved_model(export_dir):
    """Whether `export_dir` holds a saved model loopax can load."""
    return os.path.isfile(os.path.join(os.fspath(export_dir), MANIFEST))


__all__ = ["contains_saved_model", "load", "save"]
