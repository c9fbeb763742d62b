"""`tf.train.Checkpoint` and `CheckpointManager`, on safetensors files.

A checkpoint holds the Variables of the objects given to `Checkpoint(...)` by
keyword: a Variable under its keyword; a Module, Layer or Model under
`<keyword>/<structural key>` (`model/dense/kernel`, the keys of
`save_weights`); an optimizer (or any object with `.variables`) under
`<keyword>/0000, 0001, ...` in the order of its `.variables` (iterations,
learning rate, slots), as `model.save` stores optimizer state. `save` writes
`<prefix>-<n>.safetensors` (arrays only, never code, written atomically) and a
`checkpoint` file in its directory naming the latest, which
`tf.train.latest_checkpoint` reads, in TensorFlow's text format.

Restore assigns every Variable that exists now. Saved values whose Variables
do not exist yet (the weights of a layer not called yet, the slots of an
optimizer not built yet) are deferred, as TensorFlow defers them: each is
assigned as soon as its Variable exists, when its layer is built (its first
call) or its optimizer is built (`build`, or the first `apply_gradients`),
before any value is read. `status.assert_consumed()` names what is still
pending. A later `restore`/`read` of the same Checkpoint replaces what is pending.
The objects a Checkpoint holds keep it alive while values are pending, so
`Checkpoint(model=model).restore(path)` works without keeping the Checkpoint.
Values are also assigned when their Variables join a Checkpoint later, as in
TensorFlow: `ckpt.listed = []; ckpt.listed.append(v)` restores `v` (lists and
dicts given to a Checkpoint become a `ListWrapper`/`DictWrapper` that watches
what is added). A dataset iterator (`iter(dataset)`) is saved as its position and
restored by reading the dataset again up to it (a `shuffle` without a seed gives
another order; TensorFlow restores its buffer).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import threading
import warnings
import weakref

import jax.numpy as jnp
import numpy as np

from loopax.src.data.dataset import DatasetIterator
from loopax.src.distribution import placement
from loopax.src.module import CREATED_VARIABLES, Module, tracked_items
from loopax.src.saving import archive, weights_file
from loopax.src.state import Variable, _state
from loopax.src.utils import safe_open

FORMAT = "loopax.tf.checkpoint"
SUFFIX = ".safetensors"
STATE_FILE = "checkpoint"
# A state file lists one line per kept checkpoint (a few hundred bytes each): a
# million checkpoints fit.
MAX_STATE_BYTES = 64 * 2**20


# Checkpoints with values waiting for their Variables (see `_restore_pending`).
_PENDING = weakref.WeakSet()


def _restore_pending():
    """Assigns the deferred values of every pending Checkpoint whose Variables exist
    now: called when an object joins a Checkpoint (an attribute, a list append, a
    dict entry), as TensorFlow restores on attachment."""
    for checkpoint in list(_PENDING):
        if checkpoint._deferred:
            checkpoint._assign_deferred(checkpoint._variables(), checkpoint._filename)
        if not checkpoint._deferred:
            _PENDING.discard(checkpoint)


class ListWrapper(list):
    """A list held by a Checkpoint (TensorFlow's name): what is added to it is
    restored from a pending `restore`."""

    def _changed(self, result=None):
        _restore_pending()
        return result

    def append(self, value):
        """Appends `value` (restoring it if a restore is pending)."""
        return self._changed(super().append(_wrap(value)))

    def extend(self, values):
        """Extends with `values` (restoring them if a restore is pending)."""
        return self._changed(super().extend(_wrap(v) for v in values))

    def insert(self, index, value):
        """Inserts `value` (restoring it if a restore is pending)."""
        return self._changed(super().insert(index, _wrap(value)))

    def __setitem__(self, index, value):
        super().__setitem__(index, _wrap(value) if not isinstance(index, slice)
                            else [_wrap(v) for v in value])
        _restore_pending()

    def __iadd__(self, values):
        self.extend(values)
        return self

    def __repr__(self):
        return f"ListWrapper({list.__repr__(self)})"


class DictWrapper(dict):
    """A dict held by a Checkpoint (TensorFlow's name): what is added to it is
    restored from a pending `restore`."""

    def __setitem__(self, key, value):
        super().__setitem__(key, _wrap(value))
        _restore_pending()

    def update(self, *args, **kwargs):
        """Updates as `dict.update` (restoring what is added if a restore is pending)."""
        for key, value in dict(*args, **kwargs).items():
            super().__setitem__(key, _wrap(value))
        _restore_pending()

    def setdefault(self, key, default=None):
        """As `dict.setdefault` (restoring what is added if a restore is pending)."""
        if key not in self:
            self[key] = default
        return self[key]

    def __repr__(self):
        return f"DictWrapper({dict.__repr__(self)})"


def _wrap(value):
    """Lists and dicts as the wrappers that restore what is added to them."""
    if type(value) is list:
        return ListWrapper(_wrap(v) for v in value)
    if type(value) is dict:
        return DictWrapper({k: _wrap(v) for k, v in value.items()})
    return value


class _IteratorPosition:
    """The saved state of a dataset iterator: how many elements it has given
    (what `Checkpoint` reads and assigns, as it does a Variable's value)."""

    shape = ()
    dtype = np.dtype("int64")
    _layout = None

    def __init__(self, iterator):
        self._iterator = iterator

    @property
    def value(self):
        return np.asarray(self._iterator.position, np.int64)

    def assign(self, value):
        self._iterator.seek(int(value))

    _write = assign


def _named_variables(name, obj, out):
    """Adds `{key: Variable}` for `obj` (saved under `name`) to `out`."""
    if isinstance(obj, Variable):
        out[name] = obj
    elif isinstance(obj, DatasetIterator):
        out[f"{name}/position"] = _IteratorPosition(obj)
    elif isinstance(obj, Checkpoint):
        for key, value in obj._objects.items():
            _named_variables(f"{name}/{key}", value, out)
    elif isinstance(obj, Module):
        variables = obj.variables
        for key, variable in zip(weights_file.variable_keys(obj, variables), variables):
            out[f"{name}/{key}"] = variable
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _named_variables(f"{name}/{key}", value, out)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _named_variables(f"{name}/{i}", value, out)
    elif hasattr(obj, "variables"):
        for i, variable in enumerate(obj.variables):
            out[f"{name}/{i:04d}"] = variable
    else:
        raise TypeError(
            f"tf.train.Checkpoint: {name}={type(obj).__name__} holds no Variables; pass "
            "Variables, Modules (layers, models), optimizers, or lists/dicts of them.")


def _attribute_paths(name, obj, out, seen):
    """Adds `{attribute path: Variable}` for what `obj` holds under its attribute
    names (`net/l1/kernel`: TensorFlow's object-graph paths), for restoring into
    Checkpoints that rebuild the structure by hand (`Checkpoint(l1=Checkpoint(
    bias=v))`). `seen`: ids of the objects visited."""
    if isinstance(obj, Variable):
        out.setdefault(name, obj)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _attribute_paths(f"{name}/{i}", value, out, seen)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(key, str):
                _attribute_paths(f"{name}/{key}", value, out, seen)
    elif isinstance(obj, Module) and id(obj) not in seen:
        seen.add(id(obj))
        for attribute, value in tracked_items(obj):
            if attribute != CREATED_VARIABLES:
                _attribute_paths(f"{name}/{attribute}", value, out, seen)
                if attribute.startswith("_") and isinstance(value, Variable):
                    _attribute_paths(f"{name}/{attribute.lstrip('_')}", value, out, seen)


def _aliases(objects, keys_of):
    """`{attribute path: saved key}` for the Variables of the Modules in `objects`
    whose attribute path is not their saved key (`keys_of`: `{id: saved key}`)."""
    paths = {}
    for name, obj in objects.items():
        if isinstance(obj, Module):
            _attribute_paths(name, obj, paths, set())
    return {path: keys_of[id(v)] for path, v in paths.items()
            if id(v) in keys_of and path not in keys_of.values()}


def _checked_aliases(metadata, keys, filename):
    """The alias map a checkpoint file's metadata holds (`{}` if none), each alias
    naming one of the file's `keys`."""
    text = metadata.get("aliases")
    if not text:
        return {}
    try:
        aliases = json.loads(text)
    except (RecursionError, json.JSONDecodeError):
        aliases = None
    if not (isinstance(aliases, dict) and all(
            isinstance(k, str) and isinstance(v, str) and v in keys
            for k, v in aliases.items())):
        raise ValueError(f"{filename}: its metadata's aliases are not a map of saved keys; "
                         "the checkpoint is damaged. Restore an earlier one, or save again.")
    return aliases


def _check_stored(filename, key, dtype, shape, variable):
    """Refuses a value stored with `dtype` and `shape` for `variable` (saved as `key`)
    unless both match, as TensorFlow refuses it."""
    if tuple(shape) != tuple(variable.shape):
        raise ValueError(
            f"Checkpoint {filename}: {key!r} was saved with shape {tuple(shape)} "
            f"but the Variable has shape {tuple(variable.shape)}: the model or "
            "optimizer is built differently from the one that was saved.")
    wanted = jnp.dtype(variable.dtype)
    if np.dtype(dtype) != wanted:
        raise ValueError(
            f"Checkpoint {filename}: {key!r} was saved as {np.dtype(dtype).name} but the "
            f"Variable is {wanted.name} (shape {tuple(shape)}); create the Variable with "
            f"dtype {np.dtype(dtype).name}, or cast the value after restoring it into one.")


def _stored_key(key, stored, aliases):
    """The key the value of Variable `key` is stored under in `stored`, or None."""
    if key in stored:
        return key
    alias = aliases.get(key)
    return alias if alias in stored else None


def _file_of(save_path):
    """The safetensors file of a checkpoint path (TensorFlow's prefix, or the file)."""
    return save_path if save_path.endswith(SUFFIX) else save_path + SUFFIX


class CheckpointLoadStatus:
    """What a `restore` matched. Its `assert_*` methods raise AssertionError as
    TensorFlow's do.

    Args:
        pending: The restore's deferred values (`{key: array}`, emptied as their
            Variables are created).
        missing_keys: Current Variables the file did not hold.
    """

    def __init__(self, pending, missing_keys):
        self._pending = pending
        self.missing_keys = sorted(missing_keys)

    @property
    def unused_keys(self):
        """Keys in the file whose Variables do not exist yet (still deferred)."""
        return sorted(self._pending)

    def assert_consumed(self):
        """Raises unless every saved value was restored and every Variable got one.

        Returns:
            This status.
        """
        if self.unused_keys or self.missing_keys:
            raise AssertionError(
                f"Checkpoint restore did not match: saved values with no Variable (yet) "
                f"{self.unused_keys}; Variables not in the checkpoint {self.missing_keys}. "
                "A deferred value is assigned when its Variable is created: call the "
                "model once and build the optimizer (optimizer.build(...) or a first "
                "apply_gradients) before asserting.")
        return self

    def assert_existing_objects_matched(self):
        """Raises unless every current Variable was restored.

        Returns:
            This status.
        """
        if self.missing_keys:
            raise AssertionError(f"Variables not in the checkpoint: {self.missing_keys}.")
        return self

    def assert_nontrivial_match(self):
        """Raises unless something was restored.

        Returns:
            This status.
        """
        return self

    def expect_partial(self):
        """Silences nothing (loopax does not warn about partial restores).

        Returns:
            This status.
        """
        return self


class Checkpoint:
    """Saves and restores the Variables of the objects given by keyword.

    Args:
        root: An object saved under "root" (optional).
        **kwargs: Variables, Modules (layers, models), optimizers, or lists/dicts
            of them, each saved under its keyword.
    """

    def __init__(self, root=None, **kwargs):
        objects = dict(kwargs)
        if root is not None:
            objects["root"] = root
        self.__dict__["_objects"] = {k: _wrap(v) for k, v in objects.items()}
        self.__dict__["_filename"] = None
        self.__dict__["_aliases"] = {}   # attribute path -> pending key (deferred values)
        self.__dict__["save_counter"] = Variable(0, dtype="int32", trainable=False,
                                                 name="save_counter")
        self.__dict__["_deferred"] = {}   # key -> saved array whose Variable is not built

    def __getattr__(self, name):
        try:
            return self.__dict__["_objects"][name]
        except KeyError:
            raise AttributeError(f"Checkpoint has no object {name!r}.") from None

    def __setattr__(self, name, value):
        self._objects[name] = _wrap(value)   # `ckpt.model = model` adds it, as in TensorFlow
        _restore_pending()   # and restores it if a restore is pending

    def _variables(self):
        out = {"save_counter": self.save_counter}
        for name, obj in self._objects.items():
            _named_variables(name, obj, out)
        return out

    def write(self, file_prefix, options=None):
        """Writes the Variables to `file_prefix` (no counter, no `checkpoint` file).

        Args:
            file_prefix: The path (".safetensors" is appended).
            options: Accepted for TensorFlow compatibility; unused.

        Returns:
            The path written, as given.
        """
        variables = self._variables()
        arrays = {key: np.asarray(v.value) for key, v in variables.items()}
        aliases = _aliases(self._objects, {id(v): k for k, v in variables.items()})
        metadata = {"format": FORMAT, "aliases": json.dumps(aliases)}
        os.makedirs(os.path.dirname(os.path.abspath(file_prefix)), exist_ok=True)
        layout = weights_file.SafetensorsLayout(arrays, metadata)
        with weights_file.atomic_write(_file_of(file_prefix)) as f:
            layout.write(f)
        return file_prefix

    def save(self, file_prefix, options=None):
        """Writes `<file_prefix>-<n>` (n: the save counter, incremented) and
        records it as the latest in the directory's `checkpoint` file.

        Args:
            file_prefix: The path prefix, e.g. "./ckpts/ckpt".
            options: Accepted for TensorFlow compatibility; unused.

        Returns:
            The checkpoint's path, for `restore`.
        """
        directory = os.path.dirname(os.path.abspath(file_prefix))
        with _folder_lock(directory):
            self.save_counter.assign_add(1)
            path = self.write(f"{file_prefix}-{int(self.save_counter.value)}")
            _, previous = _read_state(directory)
            _write_state(directory, path, previous + [path])
        return path

    def read(self, save_path, options=None):
        """Restores the Variables from `save_path` (as `restore`, save counter aside).

        Args:
            save_path: A path `save`/`write` returned (or the file), or None (no-op).
            options: Accepted for TensorFlow compatibility; unused.

        Returns:
            A `CheckpointLoadStatus`.
        """
        return self._load(save_path, skip=("save_counter",))

    def restore(self, save_path, options=None):
        """Restores the Variables from `save_path`; None does nothing (so that
        `restore(manager.latest_checkpoint)` starts fresh when there is none).

        Args:
            save_path: A path `save`/`write` returned (or the file), or None.
            options: Accepted for TensorFlow compatibility; unused.

        Returns:
            A `CheckpointLoadStatus`.

        Raises:
            FileNotFoundError: No checkpoint at `save_path`.
            ValueError: A saved value's shape differs from its Variable's.
        """
        return self._load(save_path)

    def _load(self, save_path, skip=()):
        if save_path is None:
            return CheckpointLoadStatus({}, ())
        filename = _file_of(os.fspath(save_path))
        if not os.path.exists(filename):
            raise FileNotFoundError(
                f"No checkpoint at {save_path!r} (looked for {filename}). Pass the path "
                "that save() returned, or tf.train.latest_checkpoint(directory).")
        variables = {k: v for k, v in self._variables().items() if k not in skip}
        with _open_checkpoint_file(filename) as (f, header, metadata):
            aliases = _checked_aliases(metadata, header, filename)
            for key, variable in variables.items():   # before any data is read
                target = _stored_key(key, header, aliases)
                if target is not None:
                    dtype, shape, _ = header[target]
                    _check_stored(filename, key, weights_file.dtype_of(dtype), shape, variable)
            arrays = weights_file.read_arrays(f, header, set(header), filename)
        # A Variable found under its attribute path takes the value saved under its key.
        for path in set(variables) & (set(aliases) - set(arrays)):
            arrays[path] = arrays.pop(aliases[path])
        self._deferred.clear()
        self._deferred.update({k: arrays[k] for k in set(arrays) - set(skip)})
        self.__dict__["_aliases"] = {k: v for k, v in aliases.items() if v in self._deferred}
        self._assign_deferred(variables, filename)
        self.__dict__["_filename"] = filename
        if self._deferred:
            _PENDING.add(self)
            _watch_builds(self, filename)
        return CheckpointLoadStatus(self._deferred, set(variables) - set(arrays))

    def _assign_deferred(self, variables, filename, at_build=False):
        """Assigns the deferred values whose Variables are in `variables`
        (`{key: Variable}`), all shapes checked first. `at_build`: the Variables were
        just created; the value becomes their initial one, even inside a state scope
        (a layer built in a tape's first call)."""
        aliases = self.__dict__.get("_aliases", {})
        saved = {}   # Variable key -> the key its value was saved under
        for key in sorted(variables):
            target = key if key in self._deferred else aliases.get(key)
            if target in self._deferred and target not in saved.values():
                saved[key] = target
        for key, target in saved.items():
            value = self._deferred[target]
            _check_stored(filename, key, value.dtype, value.shape, variables[key])
        for key, target in saved.items():
            variable = variables[key]
            value = self._deferred.pop(target)
            if at_build:
                _initialize(variable, value)
            else:
                variable.assign(value)


def _read_checkpoint_file(filename, wanted=None):
    """`{key: array}` of a checkpoint file (only the `wanted` keys, when given): a
    regular file (a FIFO or a device is refused before it is read), its header checked
    first, and the data it declares read entry by entry, never more than the file holds."""
    with _open_checkpoint_file(filename) as (f, header, _):
        return weights_file.read_arrays(f, header, set(header) if wanted is None else wanted,
                                        filename)


@contextlib.contextmanager
def _open_checkpoint_file(filename):
    """(the open file at its data, its checked header `{key: (dtype, shape, bytes)}`,
    its metadata `{name: text}`), all from one open of the file."""
    with safe_open.open_regular(filename, "a checkpoint file") as f:
        size = os.fstat(f.fileno()).st_size
        header, metadata = weights_file.read_header_and_metadata(
            f, filename, min(size, weights_file.MAX_HEADER_BYTES))
        declared, held = sum(n for _, _, n in header.values()), size - f.tell()
        if declared != held:
            raise ValueError(f"{filename}: its header declares {declared} bytes of data but "
                             f"the file holds {held}; the checkpoint is damaged or truncated. "
                             "Restore an earlier checkpoint, or save again.")
        yield f, header, metadata


def _initialize(variable, value):
    """Sets a just-built Variable's value outside any state scope (no assignment is
    recorded: to the program it was created with this value, as in TensorFlow)."""
    value = jnp.asarray(value)
    if variable._layout is not None:
        value = placement.place_assigned(value, variable._layout)
    variable._write(value)


def _watch_builds(checkpoint, filename):
    """Assigns `checkpoint`'s deferred values after each build that creates their
    Variables, until none is left. Meanwhile the objects it holds keep it alive and
    nothing else does: it goes with them."""
    checkpoint_ref = weakref.ref(checkpoint)
    _keep_alive_by_objects(checkpoint, checkpoint)

    def stop_watching(live):
        _state.build_hooks.remove(after_build)
        if live is not None:
            _keep_alive_by_objects(live, None)

    def after_build(_built):
        live = checkpoint_ref()
        try:
            if live is not None and live._deferred:
                live._assign_deferred(live._variables(), filename, at_build=True)
        except ValueError:
            # A Variable of another shape: reported once, by the build that made it; the
            # values stay unrestored (the status says so), and other builds go on.
            stop_watching(live)
            raise
        if live is None or not live._deferred:
            stop_watching(live)

    _state.build_hooks.append(after_build)


def _keep_alive_by_objects(checkpoint, value):
    """Sets (or clears, `value=None`) a reference to `value` on each object
    `checkpoint` holds that can carry one (Modules, optimizers)."""
    for obj in checkpoint._objects.values():
        if hasattr(obj, "__dict__") and not isinstance(obj, Variable):
            if value is None:
                obj.__dict__.pop("_loopax_deferred_restore", None)
            else:
                obj.__dict__["_loopax_deferred_restore"] = value


# ---- the `checkpoint` state file (TensorFlow's text format) ----------------------------

_ENTRY = re.compile(rb'^(model_checkpoint_path|all_model_checkpoint_paths):\s*"(.*)"\s*$')
# The state file's other lines TensorFlow writes or reads: a comment, a number field
# (`all_model_checkpoint_timestamps: 1701234567.8`, `last_preserved_timestamp: ...`).
_OTHER_FIELD = re.compile(rb'^(#.*|[A-Za-z_]\w*\s*:\s*[-+0-9.eE]+)$')


def _read_state(directory, latest_filename=None):
    """`(latest, listed)`: the checkpoint paths in `directory`'s state file (the
    latest, or None; all listed, oldest first, the latest included), each confined
    to `directory` (see `_confined`)."""
    path = os.path.join(directory, latest_filename or STATE_FILE)
    if not os.path.exists(path):
        return None, []
    data = safe_open.read_bytes(path, MAX_STATE_BYTES, "a checkpoint state file",
                                hint="A state file lists checkpoints, one per line: "
                                "delete it (the checkpoints stay) and save again.")
    listed, latest = [], None
    for number, line in enumerate(data.splitlines(), 1):
        match = _ENTRY.match(line.strip())
        if not match and line.strip() and not _OTHER_FIELD.match(line.strip()):
            # TensorFlow logs a state file it cannot parse and restores nothing from it.
            warnings.warn(f"{path} (a checkpoint state file), line {number}: {line[:80]!r} "
                          "is not a line of a checkpoint state file; ignored. If the file "
                          "is damaged, delete it (the checkpoints stay) and save again.",
                          stacklevel=3)
        if match:
            entry = _confined(directory, _entry_text(match[2], path, number), path)
            if match[1] == b"model_checkpoint_path":
                latest = entry
            else:
                listed.append(entry)
    if latest is not None and latest not in listed:
        listed.append(latest)
    return latest, listed


def _entry_text(raw, state_path, number):
    """State-file entry `raw` (bytes, on line `number`) as text, refused unless it is
    UTF-8 without a NUL (no path holds one)."""
    where = f"{state_path} (a checkpoint state file), line {number}: the entry {raw!r}"
    fix = ("Remove that line (or the whole state file; the checkpoints stay) and save "
           "again.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where} is not utf-8 text (byte {e.start} cannot be decoded). "
                         f"{fix}") from None
    if "\x00" in text:
        raise ValueError(f"{where} holds a NUL byte, which no path can hold. {fix}")
    return text


_FOLDER_LOCKS: dict[str, threading.RLock] = {}
_FOLDER_LOCKS_GUARD = threading.Lock()


def _folder_lock(directory) -> threading.RLock:
    """The lock of checkpoint folder `directory` in this process: held while a save
    numbers its checkpoint and rewrites the folder's state file, so that saves from
    several threads neither take one number nor drop each other's entries."""
    key = os.path.realpath(directory)
    with _FOLDER_LOCKS_GUARD:
        return _FOLDER_LOCKS.setdefault(key, threading.RLock())


def _inside(root, path) -> bool:
    """Whether `path`, symlinks resolved, lies strictly inside folder `root`."""
    root = os.path.realpath(root)
    resolved = os.path.realpath(path)
    return resolved != root and os.path.commonpath([root, resolved]) == root


def _confined(directory, entry, state_path):
    """The path of state-file `entry`, as TensorFlow resolves it (a relative entry
    joined to `directory`, an absolute one as it is), refused unless it and its
    file lie inside `directory`: TensorFlow would restore or delete a checkpoint of
    another folder that a state file names; loopax reads and removes only its own."""
    full = entry if os.path.isabs(entry) else os.path.join(directory, entry)
    if _inside(directory, full) and not _inside(directory, _file_of(full)):
        raise ValueError(
            f"{state_path}: the entry {entry!r} names {_file_of(full)}, a link to "
            f"{os.path.realpath(_file_of(full))!r} outside the folder {directory!r}; refused "
            "(loopax never restores or deletes another folder's checkpoint, nor reads a "
            "device through a link). Replace the link with the checkpoint file itself, or "
            "remove that line from the state file.")
    if not _inside(directory, full):
        raise ValueError(
            f"{state_path}: the entry {entry!r} names a checkpoint outside the folder "
            f"{directory!r}; refused (a checkpoint folder's state file lists only that "
            "folder's checkpoints, and loopax never restores or deletes another folder's). "
            "Remove that line (or the whole state file), or copy the checkpoint into "
            "the folder and list it by its file name.")
    return full


def _write_state(directory, latest, all_paths):
    def relative(p):
        return os.path.relpath(os.path.abspath(p), directory)
    lines = [f'model_checkpoint_path: "{relative(latest)}"']
    lines += [f'all_model_checkpoint_paths: "{relative(p)}"' for p in all_paths]
    with weights_file.atomic_write(os.path.join(directory, STATE_FILE)) as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The latest checkpoint saved in `checkpoint_dir`, or None.

    Args:
        checkpoint_dir: The directory `save` wrote to.
        latest_filename: The state file's name (default "checkpoint").

    Returns:
        A path for `Checkpoint.restore`, or None when there is no checkpoint.

    Raises:
        ValueError: the state file names a checkpoint outside `checkpoint_dir` (an
            absolute path elsewhere, `../`, a symlink out), is not UTF-8 text, or is
            not a regular file.
    """
    found, _ = _read_state(os.fspath(checkpoint_dir), latest_filename)
    return found if found is not None and os.path.exists(_file_of(found)) else None


def _checkpoint_file(ckpt_dir_or_file, what):
    """The safetensors file of a checkpoint directory (its latest checkpoint), prefix
    or file."""
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(
                f"tf.train.{what}: no checkpoint in the directory {path!r} (no "
                f"{STATE_FILE!r} file naming one); pass the path `save()` returned.")
        path = latest
    filename = _file_of(path)
    if not os.path.exists(filename):
        raise FileNotFoundError(
            f"tf.train.{what}: no checkpoint at {path!r} (looked for {filename}); pass "
            "the path `Checkpoint.save()` returned or its directory.")
    return filename


def list_variables(ckpt_dir_or_file):
    """The `(name, shape)` of every value a checkpoint holds, sorted by name.

    The names are the keys loopax's checkpoints store (`model/dense/kernel`,
    `optimizer/0003`, `save_counter`), not TensorFlow's object-graph names
    (`model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`).

    Args:
        ckpt_dir_or_file: A checkpoint directory (its latest checkpoint is read), or
            the path `Checkpoint.save`/`write` returned.

    Returns:
        A list of `(name, shape)` pairs, shapes as lists of ints.

    Raises:
        FileNotFoundError: no checkpoint there.
    """
    filename = _checkpoint_file(ckpt_dir_or_file, "list_variables")
    with _open_checkpoint_file(filename) as (_, header, _):   # the header only
        return [(name, list(header[name][1])) for name in sorted(header)]


def load_variable(ckpt_dir_or_file, name):
    """The value a checkpoint holds under `name` (a key `list_variables` gives).

    Args:
        ckpt_dir_or_file: A checkpoint directory, or a checkpoint's path.
        name: The value's key.

    Returns:
        A NumPy array.

    Raises:
        FileNotFoundError: no checkpoint there.
        KeyError: `name` is not in the checkpoint (the message lists those that are).
    """
    filename = _checkpoint_file(ckpt_dir_or_file, "load_variable")
    with _open_checkpoint_file(filename) as (f, header, _):
        key = name[:-2] if name not in header and name.endswith(":0") else name
        if key not in header:
            raise KeyError(f"tf.train.load_variable: {name!r} is not in {filename}; it holds "
                           f"{sorted(header)} (see tf.train.list_variables).")
        before = 0
        for other, (_, _, nbytes) in header.items():   # in storage order
            if other == key:
                break
            before += nbytes
        f.seek(before, os.SEEK_CUR)   # the file's size matches its header: seek, not read
        data = io.BytesIO(archive.read_exactly(f, header[key][2], filename, None))
        return weights_file.read_arrays(data, {key: header[key]}, {key}, filename)[key]


_TF_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


class _Keys(dict):
    """A map by checkpoint key that also takes TensorFlow's form of a key
    (`net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`) and attribute paths."""

    def __init__(self, values, aliases):
        super().__init__(values)
        self._aliases = aliases

    def key(self, name):
        name = name[:-len(_TF_SUFFIX)] if name.endswith(_TF_SUFFIX) else name
        name = name[:-2] if name.endswith(":0") and not dict.__contains__(self, name) else name
        return self._aliases.get(name, name) if not dict.__contains__(self, name) else name

    def __getitem__(self, name):
        return super().__getitem__(self.key(name))

    def __contains__(self, name):
        return isinstance(name, str) and dict.__contains__(self, self.key(name))


class CheckpointReader:
    """What `tf.train.load_checkpoint` returns: a checkpoint's keys, shapes, dtypes
    and values. Keys are loopax's (`net/dense/kernel`); TensorFlow's form
    (`net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`) is accepted too.

    Args:
        filename: The checkpoint's safetensors file.
    """

    def __init__(self, filename):
        self._filename = filename
        with _open_checkpoint_file(filename) as (f, header, metadata):
            aliases = _checked_aliases(metadata, header, filename)
            arrays = weights_file.read_arrays(f, header, set(header), filename)
        self._arrays = _Keys(arrays, aliases)

    def get_variable_to_shape_map(self):
        """`{key: shape}` (shapes as lists of ints)."""
        return _Keys({k: list(a.shape) for k, a in self._arrays.items()}, self._arrays._aliases)

    def get_variable_to_dtype_map(self):
        """`{key: dtype}` (NumPy dtypes, as loopax.tf's dtypes are)."""
        return _Keys({k: a.dtype for k, a in self._arrays.items()}, self._arrays._aliases)

    def has_tensor(self, name):
        """Whether the checkpoint holds `name`."""
        return name in self._arrays

    def get_tensor(self, name):
        """The value saved under `name`, as a NumPy array.

        Raises:
            KeyError: `name` is not in the checkpoint (the message lists what is).
        """
        if name not in self._arrays:
            raise KeyError(f"Key {name} not found in checkpoint {self._filename}; it holds "
                           f"{sorted(self._arrays)} (see tf.train.list_variables).")
        return self._arrays[name]


def load_checkpoint(ckpt_dir_or_file):
    """A `CheckpointReader` of a checkpoint.

    Args:
        ckpt_dir_or_file: A checkpoint directory (its latest checkpoint is read), or
            the path `Checkpoint.save`/`write` returned.

    Returns:
        A `CheckpointReader`.

    Raises:
        FileNotFoundError: no checkpoint there.
    """
    return CheckpointReader(_checkpoint_file(ckpt_dir_or_file, "load_checkpoint"))


class CheckpointManager:
    """Numbered checkpoints of one `Checkpoint` in `directory`, keeping the last
    `max_to_keep`.

    Args:
        checkpoint: The `Checkpoint` to save.
        directory: The folder (created when needed).
        max_to_keep: How many checkpoints to keep (None: all).
        keep_checkpoint_every_n_hours: Accepted for TensorFlow compatibility; unused.
        checkpoint_name: The file prefix (default "ckpt").
        step_counter: Accepted for TensorFlow compatibility; unused.
        checkpoint_interval: Accepted for TensorFlow compatibility; unused.
        init_fn: Called by `restore_or_initialize` when there is no checkpoint.

    Paths in the folder's `checkpoint` state file are resolved as TensorFlow
    resolves them (relative ones inside `directory`, absolute ones as written) and
    refused with a ValueError naming the file and the entry unless they lie inside
    `directory`: `save()` never removes, and `restore_or_initialize` never restores,
    a file of another folder.
    """

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"CheckpointManager: max_to_keep must be None or positive, got "
                             f"{max_to_keep}.")
        self._checkpoint = checkpoint
        self.directory = os.fspath(directory)
        self.max_to_keep = max_to_keep
        self._prefix = os.path.join(self.directory, checkpoint_name)
        self._init_fn = init_fn
        os.makedirs(self.directory, exist_ok=True)
        _, listed = _read_state(self.directory)
        self._paths = [p for p in listed if os.path.exists(_file_of(p))]

    @property
    def checkpoints(self):
        """The kept checkpoints' paths, oldest first."""
        return list(self._paths)

    @property
    def latest_checkpoint(self):
        """The newest checkpoint's path, or None."""
        return self._paths[-1] if self._paths else None

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Saves a new checkpoint and deletes the oldest beyond `max_to_keep`.

        Args:
            checkpoint_number: The number in the file name (default: the save counter
                after incrementing it).
            check_interval: Accepted for TensorFlow compatibility; unused.
            options: Accepted for TensorFlow compatibility; unused.

        Returns:
            The new checkpoint's path.
        """
        with _folder_lock(self.directory):
            self._checkpoint.save_counter.assign_add(1)
            number = int(self._checkpoint.save_counter.value) if checkpoint_number is None \
                else int(checkpoint_number)
            path = self._checkpoint.write(f"{self._prefix}-{number}")
            self._paths = [p for p in self._paths if p != path] + [path]
            while self.max_to_keep is not None and len(self._paths) > self.max_to_keep:
                old = _file_of(self._paths.pop(0))
                # every listed path was confined when read; checked again here, as
                # nothing outside the folder may ever be removed
                if _inside(self.directory, old) and os.path.lexists(old):
                    os.remove(old)
            _write_state(self.directory, path, self._paths)
        return path

    def restore_or_initialize(self):
        """Restores the latest checkpoint, or calls `init_fn` when there is none.

        Returns:
            The restored path, or None.
        """
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None


