"""`loopax.export.load` validates an archive when it loads it: a manifest that
is not the one `write_out` writes, an endpoint it names but lacks, a
`variables.npz` that is a deflate bomb or lacks an array, a damaged StableHLO
(found at load, not at the first call), a FIFO in place of the file: each a
ValueError naming the file and the fix (the old code raised KeyError,
TypeError, AttributeError, or loaded and failed at the first call)."""

from __future__ import annotations

import io
import json
import os
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
    archive.add_endpoint("serve", layer.call,
                         input_signature=[loopax.Input((4,))])
    path = tmp_path_factory.mktemp("export") / "good.export"
    archive.write_out(str(path))
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _write(path, entries, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return str(path)


def _manifest(entries, **changes):
    manifest = json.loads(entries["manifest.json"])
    manifest.update(changes)
    for key, value in changes.items():
        if value is None:
            del manifest[key]
    return dict(entries, **{"manifest.json": json.dumps(manifest)})


def test_the_untouched_archive_loads_and_runs(tmp_path, archive_entries):
    reloaded = loopax.export.load(_write(tmp_path / "a.export", archive_entries))
    assert np.asarray(reloaded.serve(np.zeros((2, 4), "float32"))).shape == (2, 3)


@pytest.mark.parametrize("changes,match", [
    (dict(collections=None), "'collections'"),
    (dict(collections={"k": [1]}), "'collections'"),
    (dict(variables="2"), "'variables'"),
    (dict(variables=5), r"lacks the arrays \['v2', 'v3', 'v4'\]"),
    (dict(endpoints=None), "'endpoints'"),
    (dict(endpoints=["other"]), "no endpoints/other.jax_exported"),
    (dict(endpoints=["__class__"]), "no endpoints/__class__.jax_exported"),
], ids=["no-collections", "collection-of-ints", "variables-a-string", "variables-too-many",
        "no-endpoints", "endpoint-missing", "endpoint-dunder"])
def test_a_tampered_manifest_is_refused_naming_the_file(tmp_path, archive_entries, changes,
                                                        match):
    path = _write(tmp_path / "a.export", _manifest(archive_entries, **changes))
    with pytest.raises(ValueError, match=match) as info:
        loopax.export.load(path)
    assert path in str(info.value) and "write_out" in str(info.value)


def test_a_manifest_that_is_a_list_is_refused(tmp_path, archive_entries):
    path = _write(tmp_path / "a.export", dict(archive_entries, **{"manifest.json": "[1]"}))
    with pytest.raises(ValueError, match="manifest.json is not a JSON object"):
        loopax.export.load(path)


def test_a_deflate_bomb_in_variables_npz_is_refused(tmp_path, archive_entries):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, v0=np.zeros(50 * 2**20, np.uint8))   # 50 MB in 50 kB
    path = _write(tmp_path / "a.export", dict(archive_entries,
                                              **{"variables.npz": buffer.getvalue()}))
    assert os.path.getsize(path) < 2**20
    with pytest.raises(ValueError, match=r"a.export \(variables.npz\): entry 'v0.npy' declares"):
        loopax.export.load(path)


def test_a_damaged_stablehlo_is_found_at_load(tmp_path, archive_entries):
    blob = bytearray(archive_entries["endpoints/serve.jax_exported"])
    at = blob.index(b"ML\xefR") + 4        # the MLIR bytecode's version, after its magic
    blob[at:at + 16] = b"\xff" * 16
    path = _write(tmp_path / "a.export", dict(archive_entries,
                                              **{"endpoints/serve.jax_exported": bytes(blob)}))
    with pytest.raises(ValueError, match=r"damaged export archive: endpoints/serve.jax_exported "
                                         "is not a serialized JAX program"):
        loopax.export.load(path)


def test_a_truncated_endpoint_is_refused(tmp_path, archive_entries):
    blob = archive_entries["endpoints/serve.jax_exported"]
    path = _write(tmp_path / "a.export", dict(archive_entries,
                                              **{"endpoints/serve.jax_exported": blob[:40]}))
    with pytest.raises(ValueError, match="is not a serialized JAX program"):
        loopax.export.load(path)


def test_a_fifo_in_place_of_the_archive_is_refused(tmp_path):
    os.mkfifo(tmp_path / "a.export")
    with pytest.raises(ValueError, match=r"a.export \(an export archive\) is a FIFO"):
        loopax.export.load(str(tmp_path / "a.export"))
