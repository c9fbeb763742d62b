"""`loopax.utils.get_file(..., extract=True)`, as Keras 3.15.1 (where it puts the
archive and the folder, the name taken from `origin`), with extraction keeping
every member inside its folder: absolute paths, `..`, links out and devices are
skipped with a warning; an archive declaring more than the bound is refused. No
network: `origin` is a local `file://` URL."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import struct
import tarfile
import threading
import zipfile

import pytest

import loopax
from loopax.src.utils import file_utils


def _tar(path, members):
    """members: (name, kind, payload) with kind file / symlink / fifo / hardlink."""
    with tarfile.open(path, "w:gz") as archive:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(payload)
                archive.addfile(info, io.BytesIO(payload))
                continue
            info.type = {"symlink": tarfile.SYMTYPE, "fifo": tarfile.FIFOTYPE,
                         "hardlink": tarfile.LNKTYPE, "device": tarfile.CHRTYPE}[kind]
            info.linkname = payload or ""
            archive.addfile(info)
    return path


def test_extract_keeps_members_inside_and_matches_keras_layout(tmp_path):
    victim = tmp_path / "victim.txt"
    archive = _tar(tmp_path / "data.tar.gz", [
        ("data/a.txt", "file", b"a"),
        ("data/sub/b.txt", "file", b"b"),
        ("data/link_in", "symlink", "a.txt"),
        ("../../victim.txt", "file", b"owned"),
        ("/tmp/abs_victim.txt", "file", b"owned"),
        ("data/link_out", "symlink", "../../../../etc/passwd"),
        ("data/abs_link", "symlink", "/etc/passwd"),
        ("data/fifo", "fifo", None),
        ("data/dev", "device", None),
        ("data/hard_out", "hardlink", "../../victim.txt"),
    ])
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    with pytest.warns(UserWarning, match="skipped member") as warned:
        folder = loopax.utils.get_file("data.tar.gz", origin=archive.as_uri(), extract=True,
                                       file_hash=digest, cache_dir=str(tmp_path / "cache"))
    # Keras 3.15.1: fname "data.tar.gz" -> the archive kept as data.tar.gz, the folder
    # data_extracted, next to it in <cache_dir>/datasets
    assert folder == str(tmp_path / "cache" / "datasets" / "data_extracted")
    assert os.path.exists(tmp_path / "cache" / "datasets" / "data.tar.gz")
    found = sorted(os.path.relpath(os.path.join(r, f), folder)
                   for r, dirs, files in os.walk(folder) for f in files + dirs)
    assert found == ["data", "data/a.txt", "data/link_in", "data/sub", "data/sub/b.txt"]
    assert open(os.path.join(folder, "data", "link_in")).read() == "a"
    assert not victim.exists() and not os.path.exists("/tmp/abs_victim.txt")
    assert len(warned) == 7


def test_zip_members_climbing_out_are_skipped_and_the_name_comes_from_origin(tmp_path):
    source = tmp_path / "src" / "pack.zip"
    source.parent.mkdir()
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("ok/x.txt", "x")
        zf.writestr("../evil.txt", "owned")
    with pytest.warns(UserWarning, match=r"skipped member '../evil.txt'"):
        folder = loopax.utils.get_file(origin=source.as_uri(), extract=True,
                                       cache_dir=str(tmp_path / "cache"))
    # Keras: without fname the folder is the URL's file name, the archive <name>_archive
    assert folder == str(tmp_path / "cache" / "datasets" / "pack.zip")
    assert open(os.path.join(folder, "ok", "x.txt")).read() == "x"
    assert not (tmp_path / "cache" / "evil.txt").exists()


def test_an_archive_declaring_too_much_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(file_utils, "MAX_EXTRACTED_BYTES", 1000)
    archive = _tar(tmp_path / "big.tar.gz", [("a", "file", b"x" * 600),
                                             ("b", "file", b"x" * 600)])
    with pytest.raises(ValueError, match=r"big.tar.gz declares more than 1000 bytes"):
        loopax.utils.get_file("big.tar.gz", origin=archive.as_uri(), extract=True,
                              cache_dir=str(tmp_path / "cache"))
    assert not (tmp_path / "cache" / "datasets" / "big_extracted").exists()


def test_without_extract_it_is_the_old_get_file(tmp_path):
    source = tmp_path / "f.bin"
    source.write_bytes(b"abc")
    path = loopax.utils.get_file("f.bin", source.as_uri(), cache_dir=str(tmp_path / "c"))
    assert open(path, "rb").read() == b"abc"
    with pytest.raises(ValueError, match="not a path"):
        loopax.utils.get_file("a/b.bin", source.as_uri(), cache_dir=str(tmp_path / "c"))


def test_a_fifo_in_the_cache_is_refused_when_hashed_without_blocking(tmp_path):
    cache = tmp_path / "c" / "datasets"
    cache.mkdir(parents=True)
    os.mkfifo(cache / "f.bin")
    source = tmp_path / "f.bin"
    source.write_bytes(b"abc")
    outcome = []

    def call():
        try:
            loopax.utils.get_file("f.bin", source.as_uri(), cache_dir=str(tmp_path / "c"),
                                  file_hash=hashlib.sha256(b"abc").hexdigest())
        except Exception as e:  # noqa: BLE001 - the outcome is asserted below
            outcome.append(e)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # it blocked on the FIFO: let it go, then fail
        with open(cache / "f.bin", "wb"):
            pass
        worker.join(timeout=5)
        pytest.fail("hashing a FIFO in the cache blocked")
    assert len(outcome) == 1 and isinstance(outcome[0], ValueError), outcome
    assert "is a FIFO" in str(outcome[0]) and "f.bin" in str(outcome[0])


@pytest.mark.parametrize("damage", ["tar-truncated", "tar-declares-more", "zip-bad-crc",
                                    "zip-truncated-member"])
def test_a_damaged_archive_is_refused_naming_it(tmp_path, damage):
    """The old code let tarfile's ReadError, zipfile's BadZipFile or an EOFError out,
    naming neither the archive nor the fix (#34's attacker rerun)."""
    if damage.startswith("tar"):
        archive = _tar(tmp_path / "data.tar.gz", [("data/a.txt", "file", b"a" * 5000),
                                                 ("data/b.txt", "file", b"b" * 5000)])
        raw = bytearray(gzip.decompress(archive.read_bytes()))
        if damage == "tar-truncated":
            raw = raw[:700]
        else:   # the first member declares 16 GiB that the stream does not hold
            raw[124:136] = b"%011o\x00" % (16 * 2**30)
            raw[148:156] = b" " * 8
            raw[148:155] = b"%06o\x00" % sum(raw[:512])
        archive.write_bytes(gzip.compress(bytes(raw)))
        name = "data.tar.gz"
    else:
        archive = tmp_path / "data.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("data/a.txt", b"a" * 5000)
        raw = bytearray(archive.read_bytes())
        if damage == "zip-bad-crc":
            raw[raw.index(b"PK\x01\x02") + 16] ^= 0xFF        # the central directory's CRC
        else:   # the deflated data cut short, the directory as it was
            start = raw.index(b"PK\x03\x04") + 30 + len("data/a.txt")
            end = raw.index(b"PK\x01\x02")
            raw[start:end] = raw[start:start + 4]
            directory = raw.index(b"PK\x01\x02")
            raw[-6:-2] = struct.pack("<I", directory)          # where the directory starts
            raw[directory + 42:directory + 46] = struct.pack("<I", 0)
        archive.write_bytes(bytes(raw))
        name = "data.zip"
    with pytest.raises(ValueError, match=rf"{name} is not a whole (tar|zip) archive") as info:
        loopax.utils.get_file(name, origin=archive.as_uri(), extract=True,
                              cache_dir=str(tmp_path / "cache"))
    assert "force_download=True" in str(info.value)
    leftovers = os.listdir(tmp_path / "cache" / "datasets")
    assert leftovers == [name], leftovers    # the archive, no half-extracted folder
