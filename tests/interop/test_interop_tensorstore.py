"""tensorstore (zarr3 driver) <-> zarr3_backend, both directions, bit-exactly.

tensorstore opens arrays only, and has no string or numpy datetime data
types; those cases are skipped (see :func:`interop_cases.skip_reason`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from interop_cases import (
    assert_same,
    canonical_codecs,
    canonical_key_encoding,
    check_properties,
    check_reads,
    params,
    tensorstore_spec,
    write_ours,
    write_tensorstore,
)

import zarr3_backend

pytestmark = pytest.mark.validate_stores

ts = pytest.importorskip("tensorstore")


@pytest.mark.parametrize("case", params("tensorstore->ours"))
def test_tensorstore_writes_we_read(case: Any, tmp_path: Path) -> None:
    write_tensorstore(case, tmp_path / "a")
    array = zarr3_backend.open_array(str(tmp_path / "a"))
    check_properties(array, case)
    check_reads(array, case.expected(), f"{case.id}: zarr3_backend reading tensorstore")


@pytest.mark.parametrize("case", params("ours->tensorstore"))
def test_we_write_tensorstore_reads(case: Any, tmp_path: Path) -> None:
    write_ours(case, tmp_path / "a")
    array = ts.open(tensorstore_spec(tmp_path / "a"), open=True).result()
    assert tuple(array.shape) == case.shape
    meta = array.spec().to_json()["metadata"]
    assert canonical_codecs(meta["codecs"], case.dtype) == canonical_codecs(case.codecs, case.dtype)
    assert canonical_key_encoding(meta["chunk_key_encoding"]) == case.chunk_key_encoding
    expected = case.expected()
    assert_same(array.read().result(), expected, f"{case.id}: tensorstore reading zarr3_backend [...]")
    if expected.size:  # tensorstore rejects slices starting past the end of an empty dimension
        sel = tuple(slice(1, None, 2) for _ in expected.shape)
        got = array[sel].read().result()
        assert_same(got, expected[sel], f"{case.id}: tensorstore reading zarr3_backend [1::2]")


UPDATE_CASES = [  # sharded and 0-d cases: partial updates of foreign shards / single chunks
    p for p in params("tensorstore->ours") if p.values[0].shards is not None or not p.values[0].shape
]


@pytest.mark.parametrize("case", UPDATE_CASES)
def test_we_update_tensorstore_array(case: Any, tmp_path: Path) -> None:
    """Partial writes into chunks and shards tensorstore wrote; tensorstore reads the result."""
    write_tensorstore(case, tmp_path / "a")
    sel, values = case.update()
    zarr3_backend.open_array(str(tmp_path / "a"), mode="r+")[sel] = values
    array = ts.open(tensorstore_spec(tmp_path / "a"), open=True).result()
    assert_same(array.read().result(), case.expected_after_update(), f"{case.id}: after our update")


@pytest.mark.parametrize("shards", [None, (4, 6)], ids=["unsharded", "sharded"])
def test_tensorstore_reads_our_default_codecs(shards: tuple[int, ...] | None, tmp_path: Path) -> None:
    """Default codecs (zstd then crc32c, inside the shards too) read by tensorstore, which verifies crc32c."""
    values = np.random.default_rng(5).random((9, 12)).astype("float32")
    ours = zarr3_backend.create_array(
        str(tmp_path / "a"), shape=values.shape, dtype="float32", chunks=(2, 3), shards=shards
    )
    ours[...] = values
    codecs = ours.metadata.codecs[0]["configuration"]["codecs"] if shards else ours.metadata.codecs
    assert [c["name"] for c in codecs] == ["bytes", "zstd", "crc32c"]
    array = ts.open(tensorstore_spec(tmp_path / "a"), open=True).result()
    assert_same(array.read().result(), values, "tensorstore reading our default codecs")
    assert_same(
        array[1::2, 2:7].read().result(),
        values[1::2, 2:7],
        "tensorstore reading our default codecs [1::2, 2:7]",
    )


def test_tensorstore_metadata_round_trip(tmp_path: Path) -> None:
    """tensorstore's parse of our zarr.json keeps every field we wrote."""
    zarr3_backend.create_array(
        str(tmp_path / "a"),
        shape=(5, 4),
        dtype="float64",
        chunks=(2, 2),
        fill_value=np.float64("-inf"),
        compressors=[{"name": "zstd", "configuration": {"level": 2, "checksum": True}}],
        dimension_names=("y", None),
        attributes={"units": "m"},
    )
    stored = json.loads((tmp_path / "a" / "zarr.json").read_text())
    meta = ts.open(tensorstore_spec(tmp_path / "a"), open=True).result().spec().to_json()["metadata"]
    for key in ("shape", "data_type", "chunk_grid", "fill_value", "dimension_names", "attributes"):
        assert meta[key] == stored[key], key
    assert canonical_codecs(meta["codecs"], "float64") == canonical_codecs(stored["codecs"], "float64")
