"""Integrity by default: every byte of every chunk, shard and shard index a default write stores is checksummed.

Each test writes a small store with default codecs, then flips each byte of each stored object
(``zarr.json`` documents aside) in turn: reading the array it belongs to must raise
:class:`ChecksumError` naming the object's key, and ``validate_store(deep=True)`` must report an
error for that key.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import ChecksumError, Zarr3Error
from zarr3_backend.validate import validate_store

pytestmark = pytest.mark.invalid_store  # every test leaves a byte flipped at some point


def write_core(root: Path, sharded: bool) -> None:
    group = zarr3_backend.create_group(root)
    floats = group.create_array(
        "f",
        shape=(8, 6),
        dtype="float32",
        chunks=(2, 3) if sharded else (4, 3),
        shards=(4, 6) if sharded else None,
    )
    floats[...] = np.arange(48).reshape(8, 6) / 7
    group.create_array("s", shape=(4,), dtype=str, chunks=(2,), shards=(4,) if sharded else None)[...] = [
        "a",
        "bb",
        "ccc",
        "dddd",
    ]


def write_to_zarr3(root: Path, sharded: bool) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat"), np.random.default_rng(0).random((8, 6)).astype("float32")),
            "name": (("lat",), np.array(["a", "bb", "ccc", "d", "e", "f"], dtype=object)),
        },
        coords={"time": np.arange(8), "lat": np.linspace(0, 5, 6)},
    )
    encoding = {"t2m": {"chunks": (2, 3), "shards": (4, 6)}} if sharded else {"t2m": {"chunks": (4, 3)}}
    ds.to_zarr3(root, encoding=encoding)


def stored_objects(root: Path) -> list[Path]:
    """Every stored chunk or shard (everything but ``zarr.json`` documents)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "zarr.json")


def array_of(root: Path, obj: Path) -> str:
    """The path of the array ``obj`` belongs to (its nearest ancestor holding a ``zarr.json``)."""
    parent = obj.parent
    while not (parent / "zarr.json").exists():
        parent = parent.parent
    return parent.relative_to(root).as_posix()


@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
@pytest.mark.parametrize("write", [write_core, write_to_zarr3], ids=["create_array", "to_zarr3"])
def test_every_flipped_byte_raises_a_checksum_error_naming_the_key(
    write: Callable[[Path, bool], None],
    sharded: bool,
    tmp_path: Path,
) -> None:
    root = tmp_path / "s.zarr"
    write(root, sharded)
    objects = stored_objects(root)
    assert (
        len(objects) >= 3 and validate_store(root, deep=True) == []
    )  # default codecs: no integrity warning either
    for obj in objects:
        key = obj.relative_to(root).as_posix()
        array = array_of(root, obj)
        original = obj.read_bytes()
        for i in range(len(original)):
            damaged = bytearray(original)
            damaged[i] ^= 0xFF
            obj.write_bytes(bytes(damaged))
            with pytest.raises(ChecksumError) as raised:
                zarr3_backend.open_array(root, array)[...]  # a fresh array: no cached shard index
            assert key in str(raised.value), (key, i, raised.value)
            assert isinstance(raised.value, Zarr3Error)
        obj.write_bytes(original)


@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
@pytest.mark.parametrize("write", [write_core, write_to_zarr3], ids=["create_array", "to_zarr3"])
def test_validate_deep_reports_every_flipped_byte(
    write: Callable[[Path, bool], None], sharded: bool, tmp_path: Path
) -> None:
    root = tmp_path / "s.zarr"
    write(root, sharded)
    for obj in stored_objects(root):
        key = obj.relative_to(root).as_posix()
        original = obj.read_bytes()
        for i in range(len(original)):
            damaged = bytearray(original)
            damaged[i] ^= 0x01
            obj.write_bytes(bytes(damaged))
            problems = validate_store(root, deep=True)
            assert [(p.key, p.check, p.severity) for p in problems] == [(key, "chunks", "error")], (
                key,
                i,
                problems,
            )
            assert "checksum mismatch" in problems[0].message
        obj.write_bytes(original)
