"""`get_file`: download a file once into loopax's cache, checking its hash, and
extract an archive keeping every member inside its folder.

The cache is `$LOOPAX_HOME/<cache_subdir>` (default `~/.loopax/datasets`).
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import urllib.parse
import urllib.request
import warnings
import zipfile
import zlib

from loopax.src.api_export import export
from loopax.src.utils import safe_open


def loopax_home() -> str:
    """`$LOOPAX_HOME`, or `~/.loopax`."""
    return os.path.expanduser(os.environ.get("LOOPAX_HOME") or os.path.join("~", ".loopax"))


def sha256_of(path, chunk_size=1 << 20, algorithm="sha256") -> str:
    """The hex digest of the file at `path` (`algorithm`: "sha256" or "md5"); a
    FIFO or device at `path` is refused (ValueError) without blocking."""
    digest = hashlib.new(algorithm)
    with safe_open.open_regular(path, "a cached download to hash") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _urlretrieve(url, destination):
    """Downloads `url` to `destination` (tests replace this function)."""
    with urllib.request.urlopen(url, timeout=60) as response, open(destination, "wb") as f:
        while True:
            chunk = response.read(1 << 20)
            if not chunk:
                break
            f.write(chunk)


# The most bytes `get_file(..., extract=True)` writes from one archive (declared by
# its members and counted as they are written): past it, the archive is refused.
MAX_EXTRACTED_BYTES = 16 * 2**30


@export("loopax.utils.get_file")
def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False):
    """The local path of `fname`, downloading it from `origin` if it is not cached
    (Keras's `keras.utils.get_file`, same arguments).

    Args:
        fname: the file name in the cache (no directory part); default: the last
            part of `origin`'s path.
        origin: the URL to download from (`file://` URLs too).
        untar: deprecated in Keras for `extract`; extracts a tar archive.
        md5_hash: deprecated in Keras for `file_hash`.
        file_hash: the expected sha256 (64 hex digits) or md5 (32, the form of
            Keras's published application weights). A cached file that does not
            match is downloaded again; a download that does not match is deleted
            and raises ValueError.
        cache_subdir: sub-directory of the cache.
        hash_algorithm: "auto" (by `file_hash`'s length), "sha256" or "md5".
        extract: extract the archive (tar, tar.gz, tar.bz2, zip) into a folder and
            return the folder. Every member is kept inside it: a member whose path
            is absolute or climbs out (`..`), a link pointing out of the folder, a
            device or a FIFO is skipped with a warning (as Keras skips them); an
            archive declaring or writing more than `MAX_EXTRACTED_BYTES` is refused.
        archive_format: "auto" (tar, then zip), "tar", "zip", or None (no extraction).
        cache_dir: the cache root (default `loopax_home()`).
        force_download: download even if the file is cached.

    Returns:
        The file's local path (with `extract`, the extracted folder's), a str.

    Raises:
        OSError: the download failed.
        ValueError: the downloaded file does not match `file_hash`, `fname` has a
            directory part, or an archive to extract is too large.
    """
    if origin is None:
        raise ValueError("get_file: pass `origin`, the URL of the file to download.")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    directory = os.path.join(cache_dir or loopax_home(), cache_subdir)
    os.makedirs(directory, exist_ok=True)
    named = bool(fname)
    fname = os.fspath(fname) if fname else os.path.basename(
        urllib.parse.urlsplit(origin).path)
    if not fname:
        raise ValueError(f"get_file: no file name in origin={origin!r}; pass `fname`.")
    if os.sep in fname or (os.altsep and os.altsep in fname):
        raise ValueError(f"get_file: `fname` must be a file name, not a path "
                         f"(fname={fname!r}); put its folder in `cache_dir`.")
    extraction_dir = None
    if extract or untar:     # where Keras puts the archive and the folder
        if named and "." in fname:
            path = os.path.join(directory, fname)
            extraction_dir = os.path.join(directory, f"{fname[:fname.find('.')]}_extracted")
        else:
            path = os.path.join(directory, f"{fname}_archive")
            extraction_dir = os.path.join(directory, fname)
    else:
        path = os.path.join(directory, fname)
    if hash_algorithm == "auto":
        algorithm = "md5" if file_hash is not None and len(file_hash) == 32 else "sha256"
    else:
        algorithm = hash_algorithm
    if force_download or not os.path.exists(path) or (
            file_hash is not None and sha256_of(path, algorithm=algorithm) != file_hash):
        _download(origin, path, file_hash, algorithm)
    if extraction_dir is None:
        return path
    if not extract_archive(path, extraction_dir, "tar" if untar else archive_format):
        warnings.warn(f"get_file: {path} is not a tar or zip archive; nothing was "
                      "extracted.", stacklevel=2)
    return extraction_dir


def _download(origin, path, file_hash, algorithm):
    partial = path + ".part"
    try:
        _urlretrieve(origin, partial)
    except Exception as e:
        if os.path.exists(partial):
            os.remove(partial)
        raise OSError(f"Could not download {origin} to {path}: {e}. Check the network, or "
                      "download the file yourself and pass its local path.") from e
    if file_hash is not None:
        got = sha256_of(partial, algorithm=algorithm)
        if got != file_hash:
            os.remove(partial)
            raise ValueError(
                f"The file downloaded from {origin} has {algorithm} {got}, not the expected "
                f"{file_hash}; it was deleted. The download may be corrupt or tampered "
                "with: try again, or fetch the file yourself and pass its path.")
    os.replace(partial, path)


def extract_archive(file_path, path=".", archive_format="auto") -> bool:
    """Extracts the tar or zip archive `file_path` into folder `path`, every member
    kept inside it (see `get_file`). Returns whether it was an archive."""
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format))
    file_path, path = os.fspath(file_path), os.fspath(path)
    for kind in formats:
        if kind not in ("tar", "zip"):
            raise ValueError(f"archive_format must be 'auto', 'tar', 'zip' or None; got "
                             f"{kind!r}.")
        if (tarfile.is_tarfile if kind == "tar" else zipfile.is_zipfile)(file_path):
            _extract_confined(file_path, path, kind)
            return True
    return False


def _member_parts(name):
    """The path parts of an archive member, or None if it is absolute or climbs out."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return None
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    return None if not parts or ".." in parts else parts


def _inside(root, path) -> bool:
    root, path = os.path.realpath(root), os.path.realpath(path)
    return path == root or os.path.commonpath([root, path]) == root


def _extract_confined(file_path, target, kind):
    """Writes the members into a temporary folder next to `target`, then moves it
    into place (a failed extraction leaves no half folder)."""
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(dir=parent, prefix=".extracting-")
    try:
        with safe_open.open_regular(file_path, "an archive to extract") as f:
            if kind == "tar":
                with tarfile.open(fileobj=f) as archive:
                    _extract_members(file_path, staging, _tar_members(archive))
            else:
                with zipfile.ZipFile(f) as archive:
                    _extract_members(file_path, staging, _zip_members(archive))
        if os.path.isdir(target):
            shutil.rmtree(target)
        os.replace(staging, target)
    except _DAMAGED_ARCHIVE as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise ValueError(
            f"{file_path} is not a whole {kind} archive ({type(error).__name__}: {error}); "
            "nothing was extracted. It may be truncated or damaged: download it again "
            "(get_file(..., force_download=True)), and pass file_hash= to check it.") from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


# What tarfile, zipfile and their decompressors raise for a truncated or damaged archive.
_DAMAGED_ARCHIVE = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error,
                    gzip.BadGzipFile, lzma.LZMAError)


def _tar_members(archive):
    """(name, kind, size, link, open) of each tar member; kind: file/dir/link/other."""
    for info in archive:
        if info.isdir():
            yield info.name, "dir", 0, None, None
        elif info.issym():
            yield info.name, "link", 0, info.linkname, None
        elif info.isfile() or info.islnk():
            link = info.linkname if info.islnk() else None
            if link is not None and _member_parts(link) is None:
                yield info.name, "other", 0, None, None
                continue
            yield (info.name, "file", info.size, None,
                   lambda info=info: archive.extractfile(info))
        else:
            yield info.name, "other", 0, None, None


def _zip_members(archive):
    for info in archive.infolist():
        mode = (info.external_attr >> 16) & 0o170000
        if info.is_dir():
            yield info.filename, "dir", 0, None, None
        elif mode == stat.S_IFLNK:
            yield info.filename, "link", 0, archive.read(info)[:4096].decode(
                "utf-8", "replace"), None
        elif mode in (0, stat.S_IFREG):
            yield info.filename, "file", info.file_size, None, lambda info=info: archive.open(info)
        else:
            yield info.filename, "other", 0, None, None


def _extract_members(file_path, root, members):
    written = 0
    for name, kind, size, link, opener in members:
        parts = _member_parts(name)
        destination = os.path.join(root, *parts) if parts else None
        if parts is None or not _inside(root, os.path.dirname(destination)):
            _skip(file_path, name, "its path leaves the folder")
            continue
        if kind == "other":
            _skip(file_path, name, "it is a device, a FIFO or a link out of the archive")
            continue
        if kind == "dir":
            os.makedirs(destination, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        if kind == "link":
            resolved = os.path.normpath(os.path.join(os.path.dirname(destination), link))
            if os.path.isabs(link) or not _inside(root, resolved):
                _skip(file_path, name, f"it links out of the folder (to {link!r})")
                continue
            if os.path.lexists(destination):
                os.remove(destination)
            os.symlink(link, destination)
            continue
        written += size
        if written > MAX_EXTRACTED_BYTES:
            raise ValueError(f"{file_path} declares more than {MAX_EXTRACTED_BYTES} bytes "
                             "of members; refused (an archive bomb, or not the archive "
                             "meant).")
        if os.path.lexists(destination):
            os.remove(destination)       # never write through a link an earlier member made
        with opener() as source, open(destination, "xb") as out:
            left = size
            while True:
                chunk = source.read(min(1 << 20, left + 1))
                if not chunk:
                    break
                left -= len(chunk)
                if left < 0:
                    raise ValueError(f"{file_path}: member {name!r} holds more than the "
                                     f"{size} bytes it declares; refused.")
                out.write(chunk)


def _skip(file_path, name, why):
    warnings.warn(f"get_file: skipped member {name!r} of {file_path}: {why}.", stacklevel=4)
