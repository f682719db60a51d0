"""Consolidated metadata never lies: every library write that changes the tree refreshes the consolidated root.

Both engines read through the consolidated root by default, so each test
checks what ``engine="zarr3"`` and ``engine="zarr"`` see after the write.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import zarr3_backend
from zarr3_backend.errors import CodecError

pytestmark = pytest.mark.validate_stores

ENGINES = ("zarr3", "zarr")


def _root_consolidated(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_text())["consolidated_metadata"]["metadata"]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.zarr"
    xr.Dataset({"a": ("x", np.arange(4.0))}, coords={"x": np.arange(4)}).to_zarr3(path)
    assert "consolidated_metadata" in json.loads((path / "zarr.json").read_text())
    return path


@pytest.mark.parametrize("engine", ENGINES)
def test_new_child_group_is_visible_from_the_root(store: Path, engine: str) -> None:
    xr.Dataset({"b": ("y", np.arange(3.0))}).to_zarr3(store, group="child", mode="a")
    assert "child" in _root_consolidated(store) and "child/b" in _root_consolidated(store)
    assert set(xr.open_groups(store, engine=engine)) == {"/", "/child"}
    assert xr.open_datatree(store, engine=engine)["child"].sizes["y"] == 3
    assert xr.open_dataset(store, group="child", engine=engine).sizes["y"] == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_append_inside_a_child_group_is_visible_from_the_root(store: Path, engine: str) -> None:
    xr.Dataset({"b": ("t", np.arange(3.0))}).to_zarr3(store, group="child", mode="a")
    xr.Dataset({"b": ("t", np.arange(2.0))}).to_zarr3(store, group="child", append_dim="t")
    assert _root_consolidated(store)["child/b"]["shape"] == [5]
    tree = xr.open_datatree(store, engine=engine)
    np.testing.assert_array_equal(tree["child"]["b"].values, [0, 1, 2, 0, 1])
    assert xr.open_dataset(store, group="child", engine=engine).sizes["t"] == 5


@pytest.mark.parametrize("engine", ENGINES)
def test_core_api_writes_refresh_the_consolidated_root(store: Path, engine: str) -> None:
    group = zarr3_backend.open_group(store, mode="r+")
    group.create_array("sub/c", shape=(2,), dtype="int8", dimension_names=["z"]).attrs["units"] = "m"
    assert _root_consolidated(store)["sub/c"]["attributes"] == {"units": "m"}
    array = zarr3_backend.open_array(store, "a", mode="r+")
    array.resize(6)
    array.attrs["long_name"] = "A"
    group.attrs["title"] = "refreshed"
    zarr3_backend.open_array(store, "x", mode="r+").resize(6)
    assert xr.open_dataset(store, engine=engine).sizes["x"] == 6
    ds = xr.open_dataset(store, engine=engine, group="sub")
    assert ds["c"].attrs == {"units": "m"}
    root = zarr.open_group(store, mode="r")
    assert (
        root["a"].shape == (6,) and root["a"].attrs["long_name"] == "A" and root.attrs["title"] == "refreshed"
    )
    del group["sub"]
    assert not [k for k in _root_consolidated(store) if k.startswith("sub")]
    assert set(xr.open_groups(store, engine=engine)) == {"/"}


def test_overwrite_through_the_core_api_refreshes_the_consolidated_root(store: Path) -> None:
    new = zarr3_backend.create_array(
        store,
        "a",
        shape=(3, 2),
        dtype="int16",
        overwrite=True,
        dimension_names=["p", "q"],
        compressors=[{"name": "gzip", "configuration": {"level": 1}}],
    )
    new[...] = 7
    assert _root_consolidated(store)["a"]["shape"] == [3, 2]
    assert zarr3_backend.open_group(store)["a"][...].tolist() == [[7, 7]] * 3
    zarr3_backend.create_group(store, "g/h", attributes={"k": 1})
    assert _root_consolidated(store)["g/h"]["attributes"] == {"k": 1} and "g" in _root_consolidated(store)


def test_unaligned_hierarchy_raises_on_open_datatree(tmp_path: Path) -> None:
    path = tmp_path / "u.zarr"
    xr.Dataset(coords={"x": np.arange(3)}).to_zarr3(path)
    xr.Dataset({"v": ("x", np.arange(4.0))}, coords={"x": np.arange(4)}).to_zarr3(
        path, group="child", mode="a"
    )
    for engine in ENGINES:
        with pytest.raises(ValueError, match="not aligned"):
            xr.open_datatree(path, engine=engine)


@pytest.mark.invalid_store  # stale on purpose
def test_decode_error_on_stale_consolidated_entry_says_so(store: Path) -> None:
    # Another tool rewrites "a" with other codecs and does not refresh the consolidated root.
    zarr.create_array(
        store,
        name="a",
        shape=(4,),
        dtype="float64",
        compressors=zarr.codecs.GzipCodec(),
        overwrite=True,
        dimension_names=["x"],
    )[...] = 1.0
    ds = xr.open_dataset(store, engine="zarr3")
    with pytest.raises(CodecError, match="stale consolidated metadata.*'a'"):
        _ = ds["a"].values


@pytest.mark.invalid_store  # stale on purpose
def test_decode_error_in_a_stale_index_coordinate_says_so(store: Path) -> None:
    zarr.create_array(
        store,
        name="x",
        shape=(4,),
        dtype="int64",
        compressors=zarr.codecs.GzipCodec(),
        overwrite=True,
        dimension_names=["x"],
    )[...] = 1
    with pytest.raises(CodecError, match="stale consolidated metadata.*'x'"):
        xr.open_dataset(store, engine="zarr3")


def test_write_into_a_group_with_its_own_consolidated_metadata(store: Path) -> None:
    xr.Dataset({"b": ("t", np.arange(3.0))}).to_zarr3(store, group="child/grand", mode="a")
    zarr3_backend.consolidate_metadata(store, "child")
    xr.Dataset({"b": ("t", np.arange(2.0))}).to_zarr3(store, group="child/grand", append_dim="t")
    child = zarr3_backend.open_group(store, "child")
    assert child.metadata.consolidated is not None and child.metadata.consolidated["grand/b"]["shape"] == [5]
    assert _root_consolidated(store)["child/grand/b"]["shape"] == [5]


def test_a_long_lived_writable_group_sees_its_own_writes(store: Path) -> None:
    # The root handle's consolidated copy predates these writes: members must come from their own zarr.json,
    # else the second attribute write would start from the stale copy and drop the first.
    xr.Dataset({"b": ("y", np.arange(3.0))}).to_zarr3(store, group="c", mode="a")
    group = zarr3_backend.open_group(store, mode="r+")
    group["c"]["b"].attrs["units"] = "m"
    group["c"]["b"].attrs["long_name"] = "B"
    group["c/b"].resize(5)
    assert group["c"]["b"].shape == (5,) and group["c/b"].attrs["units"] == "m"
    group.create_array("new", shape=(2,), dtype="f8", dimension_names=["n"])
    group["c"].create_group("d")
    assert group.members()["c"].members()["b"].shape == (5,)
    assert {name for name, _ in group.walk()} >= {"new", "c/b", "c/d"}
    for engine in ENGINES:
        tree = xr.open_datatree(store, engine=engine)
        assert tree["c"]["b"].attrs == {"units": "m", "long_name": "B"} and tree["c"].sizes["y"] == 5
