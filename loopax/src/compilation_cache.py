"""JAX's persistent compilation cache, on by default: a second run of a script compiles
nothing it compiled before.

A short script spends most of its first epoch compiling (the train step, the evaluation
step, initializers, small eager ops). JAX can keep compiled programs on disk, keyed by
the program, the jax/jaxlib version and the device, so a rerun loads them instead. loopax
switches that on at import, in `$LOOPAX_HOME/cache/jax` (default `~/.loopax/cache/jax`),
bounded to `DEFAULT_MAX_SIZE_BYTES` with least-recently-used eviction. Each folder loopax
creates on the way there (`$LOOPAX_HOME` included) is created 0700.

* `LOOPAX_COMPILATION_CACHE=0` (or `false`/`off`) leaves it off; a path puts it there.
* A directory set for JAX itself (`JAX_COMPILATION_CACHE_DIR` or
  `jax.config.update("jax_compilation_cache_dir", ...)` before importing loopax) is left
  as the user set it.
* A directory that cannot be written leaves the cache off with a warning, never an error.
  An entry JAX cannot read (truncated, garbage) makes it warn and compile again; an entry
  written by another jax version is never read (the version is part of the key).
* A directory holding anything but regular files (a FIFO, a link to a device, a folder
  other than XLA's GPU autotuning folder, whose files are checked too) leaves the cache
  off with one warning naming it: JAX opens entries by name, so a FIFO
  would block the process for ever and a device would be read without end. The check is
  made when the cache is switched on; the folder being private (below), only its owner can
  add such an entry later.

Trust: an entry is a compiled program, and JAX runs the one stored under a key without
checking it against the program it was compiled from (JAX offers no such check): an
entry swapped by whoever can write the directory is run as is, and can change results
(`x * 3` computed for `x + 1`). So the directory is trusted only as far as it is private:
loopax creates it readable and writable by its owner only (0700), and leaves the cache off
with a warning when the directory is not owned by the current user or another user can
write it (group- or world-writable). See docs/design.md, "Compiling: what, when, and kept
where", and docs/saving.md, "The compilation cache".
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import warnings

import jax
from jax.experimental.compilation_cache import compilation_cache as _jax_cache

from loopax.src.api_export import export

__all__ = ["DEFAULT_MAX_SIZE_BYTES", "clear_compilation_cache", "compilation_cache_dir",
           "disable_compilation_cache", "enable_compilation_cache"]

DEFAULT_MAX_SIZE_BYTES = 1024**3
_OFF = ("0", "false", "off", "no")


def _default_dir() -> str:
    home = os.environ.get("LOOPAX_HOME") or os.path.join("~", ".loopax")
    return os.path.join(os.path.expanduser(home), "cache", "jax")


@export("loopax.config.compilation_cache_dir")
def compilation_cache_dir() -> str | None:
    """Returns the directory compiled programs are kept in, or None when the cache is off."""
    return jax.config.jax_compilation_cache_dir


@export("loopax.config.enable_compilation_cache")
def enable_compilation_cache(directory: str | None = None,
                             max_size_bytes: int = DEFAULT_MAX_SIZE_BYTES) -> bool:
    """Keeps every compiled program in `directory` (default `$LOOPAX_HOME/cache/jax`) so
    that later runs load it instead of compiling it again.

    Args:
        directory: where to keep them; created if missing.
        max_size_bytes: the bound on the directory's size; the least recently used
            programs are removed past it. -1 for no bound.

    Returns:
        True if the cache is on; False (with a warning) if `directory` cannot be written,
        is not owned by the current user, another user can write it, or it holds an entry
        that is not a regular file (a FIFO, a device, a link, a folder).
    """
    directory = os.path.abspath(os.path.expanduser(directory or _default_dir()))
    if not _writable(directory) or not _private(directory) or not _entries_regular(directory):
        return False
    jax.config.update("jax_compilation_cache_max_size", int(max_size_bytes))
    # Every program, however quick to compile: a short script's compile time is many
    # small programs (JAX's default keeps only those compiling for over a second).
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _jax_cache.set_cache_dir(directory)
    _jax_cache.reset_cache()  # takes effect even after programs were compiled
    return True


@export("loopax.config.disable_compilation_cache")
def disable_compilation_cache() -> None:
    """Stops reading and writing compiled programs on disk (what is there stays)."""
    jax.config.update("jax_compilation_cache_dir", None)
    _jax_cache.reset_cache()


@export("loopax.config.clear_compilation_cache")
def clear_compilation_cache() -> None:
    """Deletes the programs kept in the cache directory (the cache stays on)."""
    directory = compilation_cache_dir()
    if directory is None:
        return
    for entry in os.listdir(directory):
        path = os.path.join(directory, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
    _jax_cache.reset_cache()


def configure_from_environment() -> None:
    """Called once at `import loopax`: on by default, as `LOOPAX_COMPILATION_CACHE` says."""
    setting = os.environ.get("LOOPAX_COMPILATION_CACHE", "").strip()
    if setting.lower() in _OFF or jax.config.jax_compilation_cache_dir is not None:
        return
    enable_compilation_cache(setting or None)


def compile_seconds_saved() -> float:
    """The compile time the cache has saved this thread so far, in seconds: for each
    program loaded instead of compiled, about what compiling it took when it was
    stored, less the load. A first call's timing adds the difference over the call,
    so a rerun estimates a program's compile (the execution planner weighs a fused
    loop's against it) about as the first run measured it.

    JAX keeps a program's compile time in whole seconds, rounded down: the estimate
    is that plus half a second."""
    return getattr(_this_thread, "seconds_saved", 0.0)


def programs_compiled() -> int:
    """How many programs this thread has compiled or loaded from the cache so far:
    a timing that spans one is not the time of the steps it ran."""
    return getattr(_this_thread, "programs", 0)


_this_thread = threading.local()   # the two counts above
_HALF_OF_THE_ROUNDING = 0.5


def _on_duration_event(event: str, seconds: float, **kwargs) -> None:
    if event == "/jax/compilation_cache/compile_time_saved_sec":   # stored - load
        saved = max(seconds + _HALF_OF_THE_ROUNDING, 0.0)
        _this_thread.seconds_saved = compile_seconds_saved() + saved
    elif event == "/jax/core/compile/backend_compile_duration":
        _this_thread.programs = programs_compiled() + 1


jax.monitoring.register_event_duration_secs_listener(_on_duration_event)


def _private(directory: str) -> bool:
    """Whether only the current user can write `directory` (its owner, no group or
    world write bit); warns and returns False otherwise."""
    info = os.stat(directory)
    problem = None
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        problem = f"it is owned by another user (uid {info.st_uid}, not {os.getuid()})"
    elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = (f"other users can write it (mode {stat.S_IMODE(info.st_mode):o}), and "
                   "a program stored there is run as is")
    if problem is None:
        return True
    warnings.warn(
        f"loopax: the compilation cache stays off: {directory!r} is not private: {problem}. "
        f"Make it yours and private (chmod 700 {directory!r}), point LOOPAX_COMPILATION_CACHE "
        "at a private directory, or set LOOPAX_COMPILATION_CACHE=0 to silence this.",
        stacklevel=3)
    return False


# Folders XLA keeps in the cache directory itself (on GPUs, its autotuning results; see
# `jax_persistent_cache_enable_xla_caches`): their entries are checked like the others.
_XLA_CACHE_FOLDERS = ("xla_gpu_per_fusion_autotune_cache_dir",)


def _first_odd_entry(directory: str, nested: bool = False) -> os.DirEntry | None:
    """The first entry of `directory` that is not a regular file (symlinks are not),
    looking into XLA's own cache folders (`_XLA_CACHE_FOLDERS`) at the top level."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                continue
            if not nested and entry.name in _XLA_CACHE_FOLDERS \
                    and entry.is_dir(follow_symlinks=False):
                odd = _first_odd_entry(entry.path, nested=True)
                if odd is None:
                    continue
                return odd
            return entry
    return None


def _entries_regular(directory: str) -> bool:
    """Whether every entry of `directory` is a regular file (not a symlink); warns and
    returns False otherwise. JAX opens entries by name, so a FIFO would block it and a
    link to a device would be read forever."""
    odd = _first_odd_entry(directory)
    if odd is None:
        return True
    name = os.path.relpath(odd.path, directory)
    warnings.warn(
        f"loopax: the compilation cache stays off: {directory!r} holds {name!r}, which "
        f"is {_kind_of(odd)}, not a regular file (JAX could block or never finish reading "
        f"it). Remove it (or clear the folder), point LOOPAX_COMPILATION_CACHE at another "
        "folder, or set LOOPAX_COMPILATION_CACHE=0 to silence this.", stacklevel=3)
    return False


def _kind_of(entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return f"a symbolic link (to {os.readlink(entry.path)!r})"
    mode = entry.stat(follow_symlinks=False).st_mode
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _make_private_folders(directory: str) -> None:
    """Creates `directory` and each missing folder above it 0700 (`os.makedirs` gives
    those above the umask's mode); existing folders keep theirs."""
    missing = []
    while not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode=0o700)
        except FileExistsError:    # made meanwhile by another process: left as it is
            if not os.path.isdir(folder):
                raise


def _writable(directory: str) -> bool:
    try:
        _make_private_folders(directory)
        probe = os.path.join(directory, f".loopax-probe-{os.getpid()}")
        with open(probe, "wb"):
            pass
        os.remove(probe)
        return True
    except OSError as error:
        warnings.warn(
            f"loopax: the compilation cache stays off: {directory!r} cannot be written "
            f"({error.strerror or error}). Point LOOPAX_COMPILATION_CACHE (or LOOPAX_HOME) "
            f"at a writable directory, or set LOOPAX_COMPILATION_CACHE=0 to silence this.",
            stacklevel=3)
        return False
