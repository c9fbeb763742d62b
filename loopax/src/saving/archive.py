"""Reading zip archives (model files) as untrusted data: bounded, and with errors
that name the file.

Every entry is read through `read_entry` with a limit set by its role (the
config is small; the weights are as large as the model they fill): an entry
that declares or inflates past its limit is refused after at most `limit + 1`
bytes were decompressed, so a zip bomb costs neither memory nor time. Errors of
the zip, zlib, bz2 and lzma layers (a bit flip, a truncated file) become a
ValueError that names the file and the entry and says the file is corrupt.
"""

from __future__ import annotations

import contextlib
import json
import lzma
import os
import struct
import zipfile
import zlib
from typing import IO, Any, Iterator

from loopax.src.serialization import quoted
from loopax.src.utils import memory_utils, safe_open
from loopax.src.utils.safe_open import json_depth

# The largest config.json (or Keras config) read: a model's description, with a
# StringLookup vocabulary of a million tokens in it, fits many times over.
MAX_CONFIG_BYTES = 64 * 2**20
# Nesting deeper than this is not a model config (a model nested 20 levels deep
# uses about 100); it would otherwise end in a RecursionError.
MAX_CONFIG_DEPTH = 200
# Read in chunks of this size, so a bounded entry never needs a second copy.
CHUNK_BYTES = 2**20
# What zipfile and its decompressors raise on damaged data (bz2: OSError).
DAMAGE = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, struct.error,
           NotImplementedError, OSError, UnicodeDecodeError)


def corrupt(filepath: str | os.PathLike, entry: str | None, error: BaseException) -> ValueError:
    """The error for a damaged archive: names the file, the entry and the cause."""
    where = f"{filepath}" + (f" (entry {quoted(entry)})" if entry else "")
    return ValueError(f"{where} is corrupt or truncated: {type(error).__name__}: "
                      f"{str(error)[:200]}. Save the model again, or copy the file again.")


@contextlib.contextmanager
def open_archive(filepath: str | os.PathLike, what: str = "a zip archive",
                 file: IO[bytes] | None = None) -> Iterator[zipfile.ZipFile]:
    """`zipfile.ZipFile` of the regular file `filepath` (a FIFO or a device is
    refused before anything is read), its damage reported as `corrupt`. `file`:
    `filepath` already open (a reader that opens a path once reads one version of it)."""
    with contextlib.ExitStack() as stack:
        if file is None:
            file = stack.enter_context(safe_open.open_regular(filepath, what))
        try:
            zf = zipfile.ZipFile(file)
        except DAMAGE as e:
            raise corrupt(filepath, None, e) from None
        with zf:
            yield zf


def check_declared_size(zf: zipfile.ZipFile, name: str, limit: int, filepath: str,
                        role: str) -> None:
    """Refuses entry `name` when its declared size is over `limit` bytes."""
    size = zf.getinfo(name).file_size
    if size > limit:
        raise ValueError(f"{filepath}: entry {quoted(name)} declares {size} bytes, more than "
                         f"{role} can need ({limit} bytes); refused (a damaged file or a zip "
                         "bomb).")


# Deflate, bzip2 and LZMA inflate at most about this many times (deflate's
# limit is 1032:1; runs of one byte in bzip2/LZMA stay under it in practice).
MAX_INFLATION = 1100
# Weights a loaded model may create beyond those its file holds (seed states,
# a layer's own small tables).
BUILD_SLACK_BYTES = 64 * 2**20


def entry_bytes_bound(zf: zipfile.ZipFile, name: str) -> int:
    """The most bytes entry `name` can yield: its declared size, and no more
    than its stored bytes inflate to."""
    info = zf.getinfo(name)
    stored = info.compress_size
    if info.compress_type != zipfile.ZIP_STORED:
        stored *= MAX_INFLATION
    return min(info.file_size, stored)


def build_budget(zf: zipfile.ZipFile, name: str, filepath: str,
                 ) -> contextlib.AbstractContextManager[None]:
    """`memory_utils.weight_budget` for building the model whose weights are
    entry `name`: what that entry can hold, plus `BUILD_SLACK_BYTES`."""
    held = entry_bytes_bound(zf, name) if name in zf.namelist() else 0
    return memory_utils.weight_budget(
        held + BUILD_SLACK_BYTES,
        f"{filepath}'s weights entry {quoted(name)} can hold ({held:,} bytes): its config "
        "describes a model larger than its weights (a damaged or edited file)")


@contextlib.contextmanager
def open_entry(zf: zipfile.ZipFile, name: str, limit: int, filepath: str,
               role: str) -> Iterator[IO[bytes]]:
    """A stream of entry `name`, after its declared size was checked against
    `limit` (zipfile never yields more than the declared size). Read it with
    `read_exactly` / `skip`, which report damage as `corrupt`."""
    check_declared_size(zf, name, limit, filepath, role)
    try:
        stream = zf.open(name)
    except DAMAGE as e:
        raise corrupt(filepath, name, e) from None
    with stream:
        yield stream


def read_entry(zf: zipfile.ZipFile, name: str, limit: int, filepath: str,
               role: str) -> bytearray:
    """The bytes of entry `name`, at most `limit` (see `open_entry`), read in
    chunks to the end so that zipfile checks the CRC."""
    with open_entry(zf, name, limit, filepath, role) as stream:
        return read_exactly(stream, zf.getinfo(name).file_size, filepath, name, to_end=True)


def read_exactly(stream: IO[bytes], size: int, filepath: str, name: str | None,
                 to_end: bool = False) -> bytearray:
    """`size` bytes of `stream`, read in chunks into one buffer; with `to_end`
    the stream must end there (which makes zipfile check the CRC)."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    done = 0
    try:
        while done < size:
            chunk = stream.read(min(CHUNK_BYTES, size - done))
            if not chunk:
                raise EOFError(f"the data ends after {done} of {size} bytes")
            view[done:done + len(chunk)] = chunk
            done += len(chunk)
    except DAMAGE as e:
        raise corrupt(filepath, name, e) from None
    if to_end:
        check_end(stream, filepath, name)
    return buffer


def skip(stream: IO[bytes], size: int, filepath: str, name: str | None) -> None:
    """Reads past `size` bytes of `stream` in chunks (decompressing them)."""
    try:
        while size > 0:
            chunk = stream.read(min(CHUNK_BYTES, size))
            if not chunk:
                raise EOFError(f"the data ends {size} bytes early")
            size -= len(chunk)
    except DAMAGE as e:
        raise corrupt(filepath, name, e) from None


def check_end(stream: IO[bytes], filepath: str, name: str | None) -> None:
    """The stream must end here; for a zip entry, reaching the end checks its CRC."""
    try:
        extra = stream.read(1)
    except DAMAGE as e:
        raise corrupt(filepath, name, e) from None
    if extra:
        raise corrupt(filepath, name, ValueError("data after its declared end"))


def copy_entry(zf: zipfile.ZipFile, name: str, out: IO[bytes], limit: int, filepath: str,
               role: str) -> None:
    """Streams entry `name` (at most `limit` bytes) into the open file `out`."""
    with open_entry(zf, name, limit, filepath, role) as stream:
        while True:
            try:
                chunk = stream.read(CHUNK_BYTES)
            except DAMAGE as e:
                raise corrupt(filepath, name, e) from None
            if not chunk:
                return
            out.write(chunk)


def parse_json(data: bytes | bytearray, filepath: str, name: str = "config.json") -> Any:
    """`json.loads(data)`, refusing what is not UTF-8 JSON or nests deeper than
    `MAX_CONFIG_DEPTH`, with an error naming the file."""
    try:
        value = json.loads(data)
    except (RecursionError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{filepath}: {name} is not JSON ({type(e).__name__}: "
                         f"{str(e)[:200]}); the file is damaged or not a model file.") from None
    depth = json_depth(value)
    if depth > MAX_CONFIG_DEPTH:
        raise ValueError(f"{filepath}: {name} nests lists and dicts {depth} deep, more than a "
                         f"model config does ({MAX_CONFIG_DEPTH}); refused.")
    return value
