"""`loopax.export.load` refuses, at load and naming the archive, a variable stored with
another shape or dtype than the archive's endpoints take it, and a member whose bytes
do not match their CRC."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

pytest.importorskip("flatbuffers")

import loopax


@pytest.fixture(scope="module")
def archive_entries(tmp_path_factory):
    layer = loopax.layers.Dense(3)
    layer.build((None, 4))
    archive = loopax.export.ExportArchive()
    archive.track(layer)
    archive.add_endpoint("serve", layer.call, input_signature=[loopax.Input((4,))])
    path = tmp_path_factory.mktemp("export") / "good.export"
    archive.write_out(str(path), verbose=False)
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _write(path, entries):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return str(path)


def _with_variables(entries, **replaced):
    with np.load(io.BytesIO(entries["variables.npz"])) as npz:
        arrays = {key: npz[key] for key in npz.files}
    arrays.update(replaced)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return dict(entries, **{"variables.npz": buffer.getvalue()})


def _kernel_key(entries):
    with np.load(io.BytesIO(entries["variables.npz"])) as npz:
        return next(key for key in npz.files if npz[key].shape == (4, 3))


@pytest.mark.parametrize("value, stored", [
    (np.zeros((4, 2), "float32"), r"\(4, 2\) float32"),
    (np.zeros((3, 4), "float32"), r"\(3, 4\) float32"),
    (np.zeros((4, 3), "int32"), r"\(4, 3\) int32")],
    ids=["fewer_columns", "transposed", "int32"])
def test_a_variable_stored_unlike_the_endpoint_takes_it_is_refused_at_load(
        tmp_path, archive_entries, value, stored):
    key = _kernel_key(archive_entries)
    path = _write(tmp_path / "bad.export",
                  _with_variables(archive_entries, **{key: value}))
    with pytest.raises(ValueError, match=rf"bad\.export.*variable {key} .*{stored}.*'serve'"
                                         r".*\(4, 3\) float32"):
        loopax.export.load(path)


@pytest.mark.parametrize("member", ["manifest.json", "variables.npz",
                                    "endpoints/serve.jax_exported"])
def test_a_member_with_a_bad_crc_names_the_archive(tmp_path, archive_entries, member):
    path = tmp_path / "flipped.export"
    _write(path, archive_entries)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    data = bytearray(path.read_bytes())
    name_length = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28],
                                 "little")
    extra_length = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30],
                                  "little")
    start = info.header_offset + 30 + name_length + extra_length
    # the last byte: for the manifest, inside the JSON text, and the JSON stays valid
    position = start + info.file_size - 2 if member == "manifest.json" else \
        start + info.file_size // 2
    data[position] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"flipped\.export.*{member}.*(CRC|crc)"):
        loopax.export.load(str(path))
