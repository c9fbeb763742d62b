"""The one way loopax opens a file it reads: a regular file only, read within a
byte budget.

`open_regular(path, what)` opens without blocking and refuses what is not a
regular file (a FIFO, a character or block device such as a symlink to
`/dev/zero`, a socket, a directory) before anything is read: `open()` on a FIFO
would wait forever, and a device never ends. The check is made on the opened
descriptor (`fstat`), so the file checked is the file read. `read_bytes`,
`read_text` and `read_json` read at most `limit` bytes, a budget each caller
derives from what it expects there (a state file of a few lines, a vocabulary,
a text sample cut at `max_length`), and refuse a file over it after reading at
most `limit + 1` bytes. Every refusal names the file, what it was read as, and
the fix.
"""

from __future__ import annotations

import io
import json
import os
import stat

# Read in chunks of this size, so that a budget is never exceeded by a large read.
CHUNK_BYTES = 2**20
# Lists and dicts nested deeper than this are not data loopax reads (a word
# index or a config nests a few levels); they would end in a RecursionError.
MAX_JSON_DEPTH = 200

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def _kind(mode) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def not_regular(path, what, kind) -> ValueError:
    return ValueError(
        f"{os.fspath(path)} ({what}) is {kind}, not a regular file; refused (reading it "
        "could block forever or never end). Pass the path of the file itself.")


def open_regular(path, what="file"):
    """`open(path, "rb")`, refused unless `path` (symlinks followed) is a regular
    file; a FIFO is refused without waiting for a writer.

    Args:
        path: The file.
        what: What the file is read as, for errors ("a checkpoint state file").

    Raises:
        FileNotFoundError: no file at `path`.
        ValueError: `path` is a FIFO, a device, a socket or a directory.
    """
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise not_regular(path, what, "a directory") from None
    except OSError as e:
        if e.errno is not None and os.path.exists(path) and not isinstance(
                e, (FileNotFoundError, PermissionError)):
            raise not_regular(path, what, _kind(os.stat(path).st_mode)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(path, what, _kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def require_regular(path, what="file"):
    """Refuses `path` (symlinks followed) unless it is a regular file, before a
    reader that opens it by name (zipfile, h5py, wave) can block on it.

    Raises:
        FileNotFoundError: no file at `path`.
        ValueError: a FIFO, a device, a socket or a directory.
    """
    mode = os.stat(os.fspath(path)).st_mode
    if not stat.S_ISREG(mode):
        raise not_regular(path, what, _kind(mode))


def over_budget(path, what, size, limit, hint="") -> ValueError:
    return ValueError(
        f"{os.fspath(path)} ({what}) holds {size} bytes or more, more than loopax reads "
        f"for it ({limit} bytes); refused (a damaged file, or not the file meant)."
        + (f" {hint}" if hint else ""))


def read_stream(f, limit, path, what, hint="", truncate=False) -> bytes:
    """At most `limit` bytes of the open binary stream `f`, refused (after reading
    `limit + 1`) when there is more; with `truncate`, its first `limit` bytes."""
    out = io.BytesIO()
    left = limit if truncate else limit + 1
    while left > 0:
        chunk = f.read(min(CHUNK_BYTES, left))
        if not chunk:
            break
        out.write(chunk)
        left -= len(chunk)
    if out.tell() > limit:
        raise over_budget(path, what, out.tell(), limit, hint)
    return out.getvalue()


def read_bytes(path, limit, what="file", hint="", truncate=False) -> bytes:
    """The bytes of the regular file `path`, at most `limit`.

    Args:
        path: The file.
        limit: The most bytes read.
        what: What the file is read as, for errors.
        hint: Appended to the over-budget error (how to raise the budget).
        truncate: Return the first `limit` bytes of a longer file instead of
            refusing it (a text sample cut at `max_length`).

    Raises:
        ValueError: not a regular file, or (without `truncate`) over `limit`.
    """
    with open_regular(path, what) as f:
        if truncate:
            return read_stream(f, limit, path, what, truncate=True)
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise over_budget(path, what, size, limit, hint)
        return read_stream(f, limit, path, what, hint)


def decode(data, path, what, encoding="utf-8") -> str:
    """`data.decode(encoding)`, its error naming the file and `encoding`."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{os.fspath(path)} ({what}) is not {encoding} text: byte {e.start} "
            f"({data[e.start:e.start + 1]!r}) cannot be decoded; re-save the file as "
            f"{encoding}.") from None
    except LookupError:
        raise ValueError(f"Unknown text encoding {encoding!r} for {os.fspath(path)}.") \
            from None


def read_text(path, limit, what="file", encoding="utf-8", hint="") -> str:
    """The text of the regular file `path` (at most `limit` bytes, `encoding`)."""
    return decode(read_bytes(path, limit, what, hint), path, what, encoding)


def parse_json(data, path, what="file"):
    """`json.loads(data)`: refuses what is not JSON, or nests deeper than
    `MAX_JSON_DEPTH`, with an error naming the file."""
    try:
        value = json.loads(data)
    except (RecursionError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{os.fspath(path)} ({what}) is not JSON ({type(e).__name__}: "
                         f"{str(e)[:200]}); the file is damaged or not the file meant.") \
            from None
    depth = json_depth(value)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{os.fspath(path)} ({what}) nests lists and dicts {depth} deep, "
                         f"more than such a file does ({MAX_JSON_DEPTH}); refused.")
    return value


def read_json(path, limit, what="file", hint=""):
    """The JSON value of the regular file `path` (at most `limit` bytes)."""
    return parse_json(read_bytes(path, limit, what, hint), path, what)


def json_depth(value) -> int:
    """How deeply lists and dicts nest in `value` (iteratively: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest
