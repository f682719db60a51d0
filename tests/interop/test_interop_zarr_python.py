"""zarr-python 3.1 <-> zarr3_backend, both directions, bit-exactly.

Arrays come from :mod:`interop_cases`; each test writes a case with one
implementation into ``tmp_path`` and reads it back with the other.  Groups,
attributes, implicit groups and consolidated metadata are checked too.
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
    write_ours,
    write_zarr_python,
)

import zarr3_backend
from zarr3_backend.store import make_store

zarr = pytest.importorskip("zarr")

pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning"),
]


# ---------------------------------------------------------------- arrays


@pytest.mark.parametrize("case", params("zarr_python->ours"))
def test_zarr_python_writes_we_read(case: Any, tmp_path: Path) -> None:
    write_zarr_python(case, tmp_path / "a")
    array = zarr3_backend.open_array(str(tmp_path / "a"))
    check_properties(array, case)
    check_reads(array, case.expected(), f"{case.id}: zarr3_backend reading zarr-python")


@pytest.mark.parametrize("case", params("ours->zarr_python"))
def test_we_write_zarr_python_reads(case: Any, tmp_path: Path) -> None:
    write_ours(case, tmp_path / "a")
    array = zarr.open_array(str(tmp_path / "a"), mode="r")
    assert array.shape == case.shape
    stored = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert canonical_codecs(stored["codecs"], case.dtype) == canonical_codecs(case.codecs, case.dtype)
    assert canonical_key_encoding(stored["chunk_key_encoding"]) == case.chunk_key_encoding
    parsed = array.metadata.to_dict()
    assert canonical_codecs(parsed["codecs"], case.dtype) == canonical_codecs(case.codecs, case.dtype)
    if case.attributes is not None:
        assert array.attrs.asdict() == dict(case.attributes)
    if case.dimension_names is not None:
        assert tuple(array.metadata.dimension_names) == case.dimension_names
    expected = case.expected()
    assert_same(array[...], expected, f"{case.id}: zarr-python reading zarr3_backend [...]")
    if expected.ndim:
        sel = tuple(slice(1, None, 2) for _ in expected.shape)
        assert_same(array[sel], expected[sel], f"{case.id}: zarr-python reading zarr3_backend [1::2]")


UPDATE_CASES = [  # sharded and 0-d cases: partial updates of foreign shards / single chunks
    p for p in params("zarr_python->ours") if p.values[0].shards is not None or not p.values[0].shape
]


@pytest.mark.parametrize("case", UPDATE_CASES)
def test_we_update_zarr_python_array(case: Any, tmp_path: Path) -> None:
    """Partial writes into chunks and shards zarr-python wrote; zarr-python reads the result."""
    write_zarr_python(case, tmp_path / "a")
    sel, values = case.update()
    zarr3_backend.open_array(str(tmp_path / "a"), mode="r+")[sel] = values
    array = zarr.open_array(str(tmp_path / "a"), mode="r")
    assert_same(array[...], case.expected_after_update(), f"{case.id}: after our update")


@pytest.mark.parametrize("shards", [None, (4, 6)], ids=["unsharded", "sharded"])
def test_zarr_python_reads_our_default_codecs(shards: tuple[int, ...] | None, tmp_path: Path) -> None:
    """Default codecs (zstd then crc32c, inside the shards too): zarr-python reads them and finds no flaw."""
    values = np.random.default_rng(3).random((9, 12)).astype("float32")
    ours = zarr3_backend.create_array(
        str(tmp_path / "f"), shape=values.shape, dtype="float32", chunks=(2, 3), shards=shards
    )
    ours[...] = values
    text = zarr3_backend.create_array(
        str(tmp_path / "s"), shape=(5,), dtype=str, chunks=(2,), shards=None if shards is None else (4,)
    )
    text[...] = ["a", "", "ccc", "dé", "e"]
    codecs = ours.metadata.codecs[0]["configuration"]["codecs"] if shards else ours.metadata.codecs
    assert [c["name"] for c in codecs] == ["bytes", "zstd", "crc32c"]
    assert_same(
        zarr.open_array(str(tmp_path / "f"), mode="r")[...], values, "zarr-python reading our default codecs"
    )
    assert zarr.open_array(str(tmp_path / "s"), mode="r")[...].tolist() == ["a", "", "ccc", "dé", "e"]


def test_engine_zarr_reads_to_zarr3_defaults(tmp_path: Path) -> None:
    """A dataset written with to_zarr3's default codecs (checksummed) reads back through xarray's zarr engine."""
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset(
        {
            "t": (("x", "y"), np.random.default_rng(4).random((6, 8)).astype("float32")),
            "name": (("x",), np.array(["a", "bb", "c", "d", "e", "ff"], dtype=object)),
        },
        coords={"x": np.arange(6), "y": np.linspace(0, 1, 8)},
    )
    ds.to_zarr3(tmp_path / "d.zarr", encoding={"t": {"chunks": (2, 4), "shards": (6, 8)}})
    stored = zarr3_backend.open_array(tmp_path / "d.zarr", "x").metadata.codecs
    assert [c["name"] for c in stored] == ["bytes", "zstd", "crc32c"]
    back = xr.open_dataset(tmp_path / "d.zarr", engine="zarr").load()
    xr.testing.assert_identical(back, ds)


def test_resize_and_attributes_both_ways(tmp_path: Path) -> None:
    data = np.arange(35, dtype="int32").reshape(7, 5)
    ours = zarr3_backend.create_array(
        str(tmp_path / "ours"), shape=(7, 5), dtype="int32", chunks=(3, 2), fill_value=-1
    )
    ours[...] = data
    ours.resize((9, 3))
    ours.attrs["note"] = "resized"
    theirs = zarr.open_array(str(tmp_path / "ours"), mode="r+")
    expected = np.full((9, 3), -1, dtype="int32")
    expected[:7] = data[:, :3]
    assert_same(theirs[...], expected, "zarr-python reading our resized array")
    assert theirs.attrs.asdict() == {"note": "resized"}
    theirs.resize((4, 6))
    theirs.attrs["more"] = [1]
    reopened = zarr3_backend.open_array(str(tmp_path / "ours"))
    expected = np.full((4, 6), -1, dtype="int32")
    expected[:, :3] = data[:4, :3]
    assert_same(reopened[...], expected, "zarr3_backend reading zarr-python's resized array")
    assert dict(reopened.attrs) == {"note": "resized", "more": [1]}


def test_we_write_zarr_json_zarr_python_parses(tmp_path: Path) -> None:
    """Every field of our zarr.json survives zarr-python's parse + re-serialise."""
    zarr3_backend.create_array(
        str(tmp_path / "a"),
        shape=(5, 4),
        dtype="float32",
        chunks=(2, 2),
        fill_value=np.float32("nan"),
        compressors=[{"name": "gzip", "configuration": {"level": 1}}],
        dimension_names=("y", "x"),
        attributes={"units": "m", "list": [1, 2]},
    )
    stored = json.loads((tmp_path / "a" / "zarr.json").read_text())
    parsed = zarr.open_array(str(tmp_path / "a"), mode="r").metadata.to_dict()
    for key in (
        "zarr_format",
        "node_type",
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "dimension_names",
    ):
        assert _jsonable(parsed[key]) == stored[key], key


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# ---------------------------------------------------------------- hierarchies

TREE = {
    "": {"title": "root", "n": 1},
    "a": {"kind": "group", "nested": {"x": [1, 2, None]}},
    "a/b": {"deep": True},
    "a/b/c": {},
}
TREE_ARRAYS = {
    "a/b/arr": (np.arange(12, dtype="int16").reshape(3, 4), {"units": "K"}),
    "top": (np.ones(3), {}),
}


def _write_tree_zarr_python(root: Path) -> None:
    for path, attrs in TREE.items():
        zarr.create_group(str(root), path=path, attributes=attrs, overwrite=not path)
    for path, (data, attrs) in TREE_ARRAYS.items():
        array = zarr.create_array(
            str(root),
            name=path,
            shape=data.shape,
            dtype=data.dtype,
            chunks=(2,) * data.ndim,
            attributes=attrs,
        )
        array[...] = data


def _write_tree_ours(root: Path) -> None:
    for path, attrs in TREE.items():
        zarr3_backend.create_group(str(root), path, attributes=attrs, overwrite=not path)
    for path, (data, attrs) in TREE_ARRAYS.items():
        array = zarr3_backend.create_array(
            str(root), path, shape=data.shape, dtype=data.dtype, chunks=(2,) * data.ndim, attributes=attrs
        )
        array[...] = data


def test_zarr_python_hierarchy_we_read(tmp_path: Path) -> None:
    _write_tree_zarr_python(tmp_path)
    root = zarr3_backend.open_group(str(tmp_path))
    _check_tree_ours(root)


def _check_tree_ours(root: Any) -> None:
    assert dict(root.attrs) == TREE[""]
    assert set(root.members()) == {"a", "top"}
    assert set(root["a"].members()) == {"b"}
    assert set(root["a/b"].members()) == {"c", "arr"}
    for path, attrs in TREE.items():
        if path:
            assert dict(root[path].attrs) == attrs, path
    for path, (data, attrs) in TREE_ARRAYS.items():
        node = root[path]
        assert dict(node.attrs) == attrs
        assert_same(node[...], data, path)


def test_we_write_hierarchy_zarr_python_reads(tmp_path: Path) -> None:
    _write_tree_ours(tmp_path)
    root = zarr.open_group(str(tmp_path), mode="r")
    assert root.attrs.asdict() == TREE[""]
    assert {name for name, _ in root.members()} == {"a", "top"}
    assert {name for name, _ in root["a/b"].members()} == {"c", "arr"}
    for path, attrs in TREE.items():
        if path:
            assert root[path].attrs.asdict() == attrs, path
    for path, (data, attrs) in TREE_ARRAYS.items():
        assert root[path].attrs.asdict() == attrs
        assert_same(root[path][...], data, path)


def _hide_nested_metadata(root: Path) -> None:
    """Rename every non-root zarr.json so only consolidated metadata can answer."""
    for path in root.rglob("*/zarr.json"):
        path.rename(path.with_suffix(".hidden"))


@pytest.mark.invalid_store  # damaged on purpose
def test_consolidated_metadata_from_zarr_python(tmp_path: Path) -> None:
    _write_tree_zarr_python(tmp_path)
    zarr.consolidate_metadata(str(tmp_path))
    assert "consolidated_metadata" in json.loads((tmp_path / "zarr.json").read_text())
    _hide_nested_metadata(tmp_path)
    root = zarr3_backend.open_group(str(tmp_path))
    _check_tree_ours(root)


@pytest.mark.invalid_store  # damaged on purpose
def test_we_consolidate_zarr_python_reads(tmp_path: Path) -> None:
    _write_tree_ours(tmp_path)
    zarr3_backend.consolidate_metadata(make_store(str(tmp_path)))
    _hide_nested_metadata(tmp_path)
    root = zarr.open_consolidated(str(tmp_path), mode="r")
    assert {name for name, _ in root.members(max_depth=None)} == {"a", "a/b", "a/b/c", "a/b/arr", "top"}
    assert root["a/b"].attrs.asdict() == TREE["a/b"]
    assert_same(root["a/b/arr"][...], TREE_ARRAYS["a/b/arr"][0], "zarr-python reading via our consolidation")


def test_implicit_groups(tmp_path: Path) -> None:
    """An array whose parents have no zarr.json: both sides can still open the array.

    The spec (v3 core) no longer defines implicit groups; zarr-python 3.1 does
    not list them, so only direct array access is required to agree.
    """
    data = np.arange(6, dtype="uint8")
    zarr.create_array(str(tmp_path / "x" / "y" / "arr"), shape=(6,), dtype="uint8", chunks=(4,))[...] = data
    assert not (tmp_path / "x" / "zarr.json").exists()
    assert_same(zarr3_backend.open_array(str(tmp_path), "x/y/arr")[...], data, "ours reading zarr-python")
    zarr3_backend.create_array(str(tmp_path / "p" / "q"), shape=(6,), dtype="uint8", chunks=(4,))[...] = data
    assert_same(zarr.open_array(str(tmp_path), path="p/q", mode="r")[...], data, "zarr-python reading ours")
