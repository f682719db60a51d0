"""The xarray adapter's own pieces: path normalisation, ``_FillValue`` decoding, chunk defaults, write plans.

Oracles are xarray's own functions (``_normalize_path``, ``FillValueCoder``);
the last section checks the adapter's shape (one ``Mode`` type, no private
xarray imports); module sizes and positional parameters are checked package-wide
in ``test_layering.py``.
"""

from __future__ import annotations

import ast
import os
import typing
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from xarray.backends.common import _normalize_path
from xarray.backends.zarr import FillValueCoder

import zarr3_backend
from zarr3_backend import api
from zarr3_backend.errors import MetadataError
from zarr3_backend.nodes.creation import TARGET_CHUNK_BYTES, default_chunks
from zarr3_backend.nodes.shard_writes import PartialShardWarning
from zarr3_backend.store import make_store
from zarr3_backend.writes.plan import WriteOptions, WritePlan
from zarr3_backend.xarray.read_encoding import decode_fill_value
from zarr3_backend.xarray.root import normalize_location
from zarr3_backend.xarray.write.encodings import InnerChunksWarning
from zarr3_backend.xarray.write.planner import plan_dataset, to_zarr3

ADAPTER = Path(zarr3_backend.__file__).parent / "xarray_backend"


# --- store locations: same as xarray's _normalize_path ----------------------------------------------------------------

LOCATIONS: list[object] = [
    "data.zarr",
    "./a/../data.zarr",
    "/abs/data.zarr",
    "~/data.zarr",
    "~",
    "",
    ".",
    Path("rel/data.zarr"),
    Path("~/x.zarr"),
    Path("/abs/y.zarr"),
    "s3://bucket/data.zarr",
    "gs://b/d",
    "http://host:8000/d.zarr",
    "https://h/d",
    "file:///tmp/d.zarr",
    "memory://doc/x",
    "simplecache::s3://bucket/d.zarr",
    "zip::file://a.zip",
    "s3+https://odd/d",
    "c:/windows/path",
    "3s://not-a-protocol",
    "a::b",
    "abc:/x",
    "no_scheme:data",
    b"bytes/path",
    None,
    3,
    {"zarr.json": b"{}"},
    make_store("memory://doc/normalize"),
]


@pytest.mark.parametrize("location", LOCATIONS, ids=repr)
def test_locations_normalise_like_xarray(location: object) -> None:
    expected = _normalize_path(location)
    got = normalize_location(location)
    assert type(got) is type(expected) and got == expected
    if not isinstance(location, str | os.PathLike):
        assert got is location  # stores and mappings pass through untouched


def test_open_dataset_accepts_a_home_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    xr.Dataset({"v": ("x", np.arange(3))}).to_zarr3(tmp_path / "h.zarr")
    assert xr.open_dataset("~/h.zarr", engine="zarr3").v.values.tolist() == [0, 1, 2]


# --- _FillValue: decoded by xarray's FillValueCoder --------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, value",
    [
        ("float32", np.nan),
        ("float64", -9999.5),
        ("float64", np.inf),
        ("complex128", 1 - 2j),
        ("int16", -1),
        ("uint8", 255),
        ("bool", True),
        ("int64", -(2**62)),
    ],
)
def test_fill_value_attribute_decodes_as_xarray_does(dtype: str, value: object) -> None:
    array = zarr3_backend.create_array(f"memory://doc/fv-{dtype}", shape=(1,), dtype=dtype, overwrite=True)
    stored = FillValueCoder.encode(value, np.dtype(dtype))
    got, expected = decode_fill_value(stored, array), FillValueCoder.decode(stored, np.dtype(dtype))
    assert type(got) is type(expected)
    np.testing.assert_equal(got, expected)


@pytest.mark.parametrize(
    "dtype, stored",
    [
        ("float64", -9999.0),  # a plain number another tool wrote: kept, not refused
        ("int8", "x"),
        ("<U3", "abc"),  # a type FillValueCoder does not decode
    ],
)
def test_fill_value_attribute_xarray_cannot_decode_is_kept(dtype: str, stored: object) -> None:
    array = zarr3_backend.create_array(
        f"memory://doc/fv-raw-{dtype}", shape=(1,), dtype=dtype, overwrite=True
    )
    assert decode_fill_value(stored, array) == stored


def test_fill_value_of_strings_and_bytes(tmp_path: Path) -> None:
    strings = zarr3_backend.create_array("memory://doc/fv-str", shape=(1,), dtype=str, overwrite=True)
    assert decode_fill_value("n/a", strings) == "n/a"
    raw = zarr3_backend.create_array(
        "memory://doc/fv-bytes",
        shape=(1,),
        dtype="variable_length_bytes",
        serializer={"name": "vlen-bytes"},
        overwrite=True,
    )
    assert decode_fill_value(FillValueCoder.encode(b"\x00ab", np.dtype("S3")), raw) == b"\x00ab"


# --- default chunks: one heuristic for create_array and to_zarr3 -------------------------------------------------------


def test_default_chunks_halve_or_divide_the_largest_dimension() -> None:
    assert default_chunks((1001, 999), 8) == (501, 999)  # create_array: halve, rounding up
    assert default_chunks((1001, 999), 8, dividing=True) == (143, 999)  # inner chunks: tile the shard
    assert default_chunks((10, 0), 8) == (10, 1)
    assert default_chunks((), 8) == ()
    for dividing in (False, True):
        chunks = default_chunks((4096, 3000, 7), 4, dividing=dividing)
        assert np.prod(chunks) * 4 <= TARGET_CHUNK_BYTES
    chunks = default_chunks((2 * 3 * 5 * 7 * 11 * 13, 4096), 8, dividing=True)
    assert all(s % c == 0 for s, c in zip((2 * 3 * 5 * 7 * 11 * 13, 4096), chunks))


def test_create_array_and_to_zarr3_use_the_documented_rule(tmp_path: Path) -> None:
    assert zarr3_backend.create_array(tmp_path / "a.zarr", shape=(1001, 999), dtype="f8").chunks == (501, 999)
    ds = xr.Dataset({"v": (("y", "x"), np.zeros((1001, 999)))})
    ds.to_zarr3(tmp_path / "u.zarr")
    assert zarr3_backend.open_array(tmp_path / "u.zarr", "v").chunks == (501, 999)
    with pytest.warns(InnerChunksWarning, match=r"using inner chunks \(143, 999\)"):
        ds.to_zarr3(tmp_path / "s.zarr", encoding={"v": {"shards": (1001, 999)}})
    assert zarr3_backend.open_array(tmp_path / "s.zarr", "v").chunks == (143, 999)


# --- write plans ---------------------------------------------------------------------------------------------------------


def test_plan_is_data_and_writes_nothing_but_its_checks(tmp_path: Path) -> None:
    store = make_store(str(tmp_path / "p.zarr"))
    ds = xr.Dataset({"v": ("x", np.arange(4.0))}, coords={"x": np.arange(4)})
    plan = plan_dataset(ds, store, "g", encoding={"v": {"chunks": 2}}, options=WriteOptions("w-"))
    assert [(w.name, w.array.path, w.array.chunks) for w in plan.data] == [
        ("v", "g/v", (2,)),
        ("x", "g/x", (4,)),
    ]
    assert list(plan.documents) == ["", "g", "g/v", "g/x"] and plan.defaults == {""}
    assert plan.created == ("g/v", "g/x") and plan.grown == ()
    assert list(store.list_prefix("")) == []


def test_then_keeps_documents_over_later_ancestor_defaults() -> None:
    first = WritePlan(documents={"": {"a": 1}, "g": {"a": 2}}, defaults=frozenset({""}))
    later = WritePlan(
        documents={"": {"default": True}, "g": {"default": True}, "g/c": {"a": 3}},
        defaults=frozenset({"", "g"}),
    )
    merged = first.then(later)
    assert merged.documents == {"": {"a": 1}, "g": {"a": 2}, "g/c": {"a": 3}} and merged.defaults == {""}
    assert first.then(WritePlan(documents={"": {"a": 4}})).documents[""] == {"a": 4}
    assert first.then(WritePlan(documents={"": {"a": 4}})).defaults == frozenset()


def test_tree_in_mode_w_replaces_an_array_and_keeps_every_groups_attributes(tmp_path: Path) -> None:
    path = tmp_path / "t.zarr"
    zarr3_backend.create_array(path, "x/p", shape=(2,), dtype="int8")  # an array where the tree goes
    tree = xr.DataTree.from_dict(
        {
            "/": xr.Dataset(attrs={"level": "root"}),
            "/c": xr.Dataset({"v": ("t", np.arange(3.0))}, attrs={"level": "child"}),
            "/c/d": xr.Dataset(attrs={"level": "grandchild"}),
        }
    )
    tree.to_zarr3(path, mode="w", group="x/p")
    back = xr.open_datatree(path, engine="zarr3", group="x/p")
    assert [back[p].attrs for p in ("/", "/c", "/c/d")] == [
        {"level": "root"},
        {"level": "child"},
        {"level": "grandchild"},
    ]
    xr.testing.assert_identical(back["c"].to_dataset().load(), tree["c"].to_dataset())
    assert isinstance(zarr3_backend.open_group(path, "x"), zarr3_backend.Group)


def test_invalid_array_metadata_in_mode_w_leaves_the_old_store(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": ("x", np.arange(8.0))})
    ds.to_zarr3(tmp_path / "a.zarr")
    with pytest.raises(MetadataError, match="not divisible"):
        ds.to_zarr3(tmp_path / "a.zarr", mode="w", encoding={"v": {"chunks": (3,), "shards": (4,)}})
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), ds)


@pytest.mark.parametrize("call", ["method", "function"])
def test_write_warnings_point_at_the_callers_line(tmp_path: Path, call: str) -> None:
    ds = xr.Dataset({"v": (("t", "x"), np.zeros((2048, 1024)))})

    def write(obj: xr.Dataset, path: Path, **kwargs: object) -> None:
        obj.to_zarr3(path, **kwargs) if call == "method" else to_zarr3(obj, path, **kwargs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write(ds, tmp_path / "a.zarr", encoding={"v": {"shards": (2048, 1024)}})
        write(ds.isel(t=slice(0, 2)).chunk(), tmp_path / "a.zarr", region={"t": slice(0, 2)}, compute=False)
    kinds = {
        w.category: w.filename for w in caught if w.category in (InnerChunksWarning, PartialShardWarning)
    }
    assert kinds == {InnerChunksWarning: __file__, PartialShardWarning: __file__}


# --- the adapter's shape -------------------------------------------------------------------------------------------------


def _modules() -> list[Path]:
    return sorted(ADAPTER.glob("*.py"))


def test_one_write_mode_type_defined_in_api() -> None:
    assert typing.get_args(api.WriteMode) == api.WRITE_MODES == ("w-", "w", "a", "a-", "r+")
    assert typing.get_args(api.Mode) == api.MODES
    modes = [
        f"{path.name}:{node.lineno}"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id.endswith("Mode") for t in node.targets)
    ]
    assert modes == []
    # dask's Delayed (the return type) is imported for type checkers only: dask loads on first use.
    from dask.delayed import Delayed

    assert typing.get_type_hints(to_zarr3, localns={"Delayed": Delayed})["mode"] == api.WriteMode | None


def test_the_package_imports_no_private_xarray_names() -> None:
    private = [
        f"{path.relative_to(ADAPTER.parent)}:{node.lineno} {alias.name}"
        for path in sorted(ADAPTER.parent.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "xarray"
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert private == []
