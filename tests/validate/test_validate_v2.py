"""zarr3_backend.validate on Zarr v2 hierarchies: zarr-python's stores pass; each kind of damage is reported with its key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from zarr3_backend.validate import Problem, validate_store

zarr = pytest.importorskip("zarr")
xr = pytest.importorskip("xarray")
numcodecs = pytest.importorskip("numcodecs")

pytestmark = [
    pytest.mark.filterwarnings(
        "ignore::UserWarning"
    ),  # zarr-python's warnings about v2 string and structured types
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def found(problems: list[Problem]) -> list[tuple[str, str, str]]:
    """``(key, check, severity)`` of every problem, in the order reported."""
    return [(p.key, p.check, p.severity) for p in problems]


def write_zarr_python(root: Path) -> None:
    """A v2 hierarchy of every layout: nested groups, both separators, F order, filters, strings, times, structs."""
    group = zarr.open_group(root, mode="w", zarr_format=2, attributes={"title": "v2"})
    c = group.create_array(
        "c_order",
        shape=(7, 5),
        chunks=(3, 2),
        dtype=">i4",
        fill_value=-1,
        compressors=numcodecs.Zlib(level=1),
    )
    c[:5] = np.arange(25).reshape(5, 5)  # the last row of chunks stays missing
    f = group.create_array(
        "sub/deeper/f_order",
        shape=(4, 6),
        chunks=(3, 4),
        dtype="float64",
        order="F",
        chunk_key_encoding={"name": "v2", "separator": "/"},
        filters=[numcodecs.Delta("float64")],
    )
    f[:] = np.arange(24.0).reshape(4, 6)
    text = group.create_array("text", shape=(5,), chunks=(2,), dtype=str)
    text[:] = ["a", "bb", "", "dddd", "e"]
    times = group.create_array(
        "times", shape=(3,), chunks=(2,), dtype="M8[s]", fill_value=np.datetime64(5, "s")
    )
    times[:2] = np.array(["2000-01-01", "NaT"], "M8[s]")
    group.create_array("pairs", shape=(3,), chunks=(2,), dtype=[("a", "<i4"), ("b", "<f8")])[:] = np.zeros(
        3, "i4,f8"
    )
    group.create_array("scalar", shape=(), dtype="uint8", compressors=None)[...] = 3
    group.create_group("empty", attributes={"note": "no members"})


@pytest.mark.parametrize("consolidate", [False, True], ids=["listed", "consolidated"])
def test_zarr_python_v2_hierarchies_have_no_problems(tmp_path: Path, consolidate: bool) -> None:
    write_zarr_python(tmp_path / "s.zarr")
    if consolidate:
        zarr.consolidate_metadata(tmp_path / "s.zarr")
    assert (tmp_path / "s.zarr" / ".zmetadata").exists() == consolidate
    assert validate_store(tmp_path / "s.zarr", deep=True) == []


@pytest.mark.parametrize("consolidated", [False, True], ids=["listed", "consolidated"])
def test_xarray_written_v2_datasets_and_a_root_array_have_no_problems(
    tmp_path: Path, consolidated: bool
) -> None:
    ds = xr.Dataset(
        {"t": (("time", "x"), np.arange(60.0).reshape(6, 10), {"units": "K"})},
        coords={"time": np.arange(6), "x": np.arange(10)},
    )
    ds.chunk({"time": 4}).to_zarr(tmp_path / "ds.zarr", zarr_format=2, consolidated=consolidated)
    assert validate_store(tmp_path / "ds.zarr", deep=True) == []
    zarr.create_array(tmp_path / "a.zarr", shape=(5,), chunks=(2,), dtype="int16", zarr_format=2)[:] = 1
    assert validate_store(tmp_path / "a.zarr", deep=True) == []


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    write_zarr_python(tmp_path / "s.zarr")
    return tmp_path / "s.zarr"


def test_a_flipped_byte_in_a_chunk_is_found_by_the_deep_check(v2: Path) -> None:
    chunk = v2 / "c_order" / "0.0"
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the deflate stream: zlib's adler32 no longer matches
    chunk.write_bytes(bytes(data))
    (v2 / "scalar" / "0").write_bytes(b"")  # one byte expected
    assert validate_store(v2) == []
    problems = validate_store(v2, deep=True)
    assert found(problems) == [("c_order/0.0", "chunks", "error"), ("scalar/0", "chunks", "error")]


def test_a_chunk_key_outside_the_grid_and_stray_keys(v2: Path) -> None:
    shutil.copy(v2 / "c_order" / "0.0", v2 / "c_order" / "3.0")  # grid: 3 x 3 chunks
    shutil.copy(v2 / "c_order" / "0.0", v2 / "c_order" / "0.x")
    (v2 / "notes.txt").write_text("x")
    (v2 / "sub" / "deeper" / "f_order" / "1" / "5").write_bytes(b"")
    problems = validate_store(v2)
    assert found(problems) == [
        ("c_order/0.x", "keys", "warning"),
        ("c_order/3.0", "keys", "error"),
        ("notes.txt", "keys", "warning"),
        ("sub/deeper/f_order/1/5", "keys", "error"),
    ]
    assert problems[1].message == (
        "chunk (3, 0) lies outside the chunk grid (3, 3) of array '/c_order' (shape (7, 5)): "
        "left over from a larger shape, never read"
    )
    assert "stray key in group '/'" in problems[2].message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shape": [7]}, "chunks: expected 1 dimensions like shape, got [3, 2]"),
        ({"dtype": "<q9"}, "dtype: expected a numpy type string such as '<f8' or '|S4', got '<q9'"),
        ({"compressor": {"id": "no-such-codec"}}, "no-such-codec"),
        ({"order": "K"}, "order: expected 'C' or 'F', got 'K'"),
    ],
)
def test_a_bad_zarray_is_reported_with_its_key_and_field(
    v2: Path, change: dict[str, object], message: str
) -> None:
    key = v2 / "c_order" / ".zarray"
    key.write_text(json.dumps({**json.loads(key.read_text()), **change}))
    problems = validate_store(v2, deep=True)
    assert found(problems) == [("c_order/.zarray", "metadata", "error")]  # its chunks are not called stray
    assert problems[0].message.startswith("c_order/.zarray") and message in problems[0].message


def test_undecodable_documents_and_orphans(v2: Path) -> None:
    (v2 / "text" / ".zattrs").write_text("{not json")
    (v2 / "empty" / ".zgroup").write_text('{"zarr_format": 3}')
    (v2 / "orphan").mkdir()
    (v2 / "orphan" / ".zattrs").write_text("{}")
    problems = validate_store(v2, deep=True)
    assert found(problems) == [
        ("empty/.zgroup", "metadata", "error"),
        ("orphan/.zattrs", "keys", "warning"),
        ("text/.zattrs", "metadata", "error"),
    ]
    assert "not valid JSON" in problems[2].message and "expected {'zarr_format': 2}" in problems[0].message


def test_hierarchy_without_zgroups_and_nodes_inside_arrays(v2: Path, tmp_path: Path) -> None:
    (v2 / "sub" / ".zgroup").unlink()
    (v2 / "c_order" / "inner").mkdir()
    shutil.copy(v2 / "empty" / ".zgroup", v2 / "c_order" / "inner" / ".zgroup")
    problems = validate_store(v2)
    assert found(problems) == [
        ("c_order/inner/.zgroup", "hierarchy", "error"),
        ("sub/.zattrs", "keys", "warning"),
        ("sub/.zgroup", "hierarchy", "error"),
    ]
    assert "lies inside array 'c_order'" in problems[0].message
    assert problems[1].message == ".zattrs next to no .zarray or .zgroup: never read"
    assert "no .zgroup at 'sub', which holds 'sub/deeper'" in problems[2].message
    (v2 / ".zgroup").unlink()
    (v2 / ".zattrs").unlink()
    above = validate_store(
        tmp_path
    )  # the directory above stores: only the missing root is reported, not the parents
    assert [p for p in found(above) if p[1] == "hierarchy"][0] == (".zgroup", "hierarchy", "error")


def consolidated_problems(v2: Path) -> list[str]:
    return [
        p.message
        for p in validate_store(v2)
        if (p.key, p.check, p.severity) == (".zmetadata", "consolidated", "error")
    ]


def test_zmetadata_disagreeing_with_the_stored_documents(v2: Path) -> None:
    zarr.consolidate_metadata(v2)
    zarray = v2 / "c_order" / ".zarray"
    zarray.write_text(json.dumps({**json.loads(zarray.read_text()), "shape": [9, 5], "fill_value": 0}))
    (v2 / "text" / ".zattrs").write_text('{"_ARRAY_DIMENSIONS": ["n"]}')
    shutil.rmtree(v2 / "pairs")
    zarr.open_group(v2, mode="a", zarr_format=2, use_consolidated=False).create_array(
        "late", shape=(1,), dtype="i1"
    )
    stale = "(stale: re-run zarr.consolidate_metadata with zarr-python)"
    assert consolidated_problems(v2) == [
        f".zmetadata['c_order/.zarray'] differs from the stored c_order/.zarray in fill_value, shape {stale}",
        f".zmetadata describes 'pairs', which has no .zarray or .zgroup {stale}",
        f".zmetadata['text/.zattrs'] differs from the stored text/.zattrs in _ARRAY_DIMENSIONS {stale}",
        f".zmetadata lacks 'late', which exists {stale}",
    ]
    assert validate_store(v2) == [p for p in validate_store(v2) if p.check == "consolidated"]


def test_a_malformed_zmetadata_is_reported(v2: Path) -> None:
    (v2 / ".zmetadata").write_text('{"zarr_consolidated_format": 1, "metadata": {"../escape/.zarray": {}}}')
    assert len(messages := consolidated_problems(v2)) == 1 and "could escape the store root" in messages[0]
    (v2 / ".zmetadata").write_text('{"metadata": 3}')
    assert (
        len(messages := consolidated_problems(v2)) == 1
        and "expected {'zarr_consolidated_format': 1" in messages[0]
    )
