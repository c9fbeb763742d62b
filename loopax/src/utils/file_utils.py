"""`get_file`: download a file once into loopax's cache, checking its hash.

The cache is `$LOOPAX_HOME/<cache_subdir>` (default `~/.loopax/datasets`).
"""

from __future__ import annotations

import hashlib
import os
import urllib.request

from loopax.src.api_export import export


def loopax_home() -> str:
    """`$LOOPAX_HOME`, or `~/.loopax`."""
    return os.path.expanduser(os.environ.get("LOOPAX_HOME") or os.path.join("~", ".loopax"))


def sha256_of(path, chunk_size=1 << 20, algorithm="sha256") -> str:
    """The hex digest of the file at `path` (`algorithm`: "sha256" or "md5")."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
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


@export("loopax.utils.get_file")
def get_file(fname, origin, file_hash=None, cache_subdir="datasets", cache_dir=None):
    """The local path of `fname`, downloading it from `origin` if it is not cached.

    Args:
        fname: the file name in the cache.
        origin: the URL to download from.
        file_hash: the expected sha256 (64 hex digits) or md5 (32, the form of
            Keras's published application weights). A cached file that does not
            match is downloaded again; a download that does not match is deleted
            and raises ValueError.
        cache_subdir: sub-directory of the cache.
        cache_dir: the cache root (default `loopax_home()`).

    Returns:
        The file's local path, a str.

    Raises:
        OSError: the download failed.
        ValueError: the downloaded file does not match `file_hash`.
    """
    directory = os.path.join(cache_dir or loopax_home(), cache_subdir)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, fname)
    algorithm = "md5" if file_hash is not None and len(file_hash) == 32 else "sha256"
    if os.path.exists(path) and (file_hash is None
                                 or sha256_of(path, algorithm=algorithm) == file_hash):
        return path
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
    return path
