"""A write whose lazy data reads its own target: read first (no dask) or refused before any change (dask).

Issue 57 item 1: ``(lazy + 1).to_zarr3(p, mode="w")`` used to delete the
store before the lazy graph read it, leaving every variable all-NaN.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.errors import WriteError


def dataset() -> xr.Dataset:
    t = np.arange(40.0).reshape(10, 4)
    return xr.Dataset({"t": (("time", "x"), t), "u": (("time", "x"), -t)}, coords={"time": np.arange(10)})


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "a.zarr"
    dataset().to_zarr3(path, encoding={"t": {"chunks": (5, 4)}, "u": {"chunks": (5, 4)}})
    return path


def opened(target: object, **kwargs: Any) -> xr.Dataset:
    return xr.open_dataset(target, engine="zarr3", chunks={}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("inline_array", [False, True])
def test_overwriting_the_store_read_lazily_is_refused_naming_the_variables(
    stored: Path, inline_array: bool
) -> None:
    before = snapshot(stored)
    with pytest.raises(WriteError, match=r"\['t', 'u'\] reads from .*deletes.*\.load\(\).*another location"):
        (opened(stored, inline_array=inline_array) + 1).to_zarr3(stored, mode="w")
    assert snapshot(stored) == before
    (opened(stored).load() + 1).to_zarr3(stored, mode="w")  # the fix the message gives
    xr.testing.assert_identical(xr.open_dataset(stored, engine="zarr3").load(), dataset() + 1)


@pytest.mark.parametrize(
    "spelling",
    ["relative", "dot-relative", "trailing-slash", "file-url", "symlink", "fsspec-local"],
)
def test_every_spelling_of_the_store_is_the_same_store(
    stored: Path, spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fsspec

    from zarr3_backend.store.fsspec_store import FsspecStore

    monkeypatch.chdir(stored.parent)
    os.symlink(stored, stored.parent / "link.zarr")
    target = {
        "relative": "a.zarr",
        "dot-relative": "./a.zarr",
        "trailing-slash": f"{stored}/",
        "file-url": f"file://{stored}",
        "symlink": "link.zarr",
        "fsspec-local": FsspecStore(fsspec.filesystem("file"), str(stored)),
    }[spelling]
    before = snapshot(stored)
    with pytest.raises(WriteError, match="reads from"):
        (opened(str(stored)) * 2).to_zarr3(target, mode="w")
    assert snapshot(stored) == before


def test_s3_through_fsspec_read_and_obstore_written(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    pytest.importorskip("obstore")
    url = f"{s3_url}/a.zarr"
    dataset().to_zarr3(url, storage_options=s3_storage_options)
    lazy = opened(f"{url}/", storage_options={**s3_storage_options, "backend": "fsspec"})
    with pytest.raises(WriteError, match="reads from ObstoreStore"):
        (lazy + 1).to_zarr3(url, mode="w", storage_options=s3_storage_options)
    back = xr.open_dataset(url, engine="zarr3", storage_options=s3_storage_options).load()
    xr.testing.assert_identical(back, dataset())


def test_a_group_is_its_own_target_and_its_siblings_are_not(tmp_path: Path) -> None:
    path = tmp_path / "g.zarr"
    dataset().to_zarr3(path, group="a")
    dataset().to_zarr3(path, group="b", mode="a")
    with pytest.raises(WriteError, match="group 'a'"):
        (opened(path, group="a") + 1).to_zarr3(path, group="a", mode="w")
    with pytest.raises(WriteError, match="reads from"):  # the store's root holds group a
        (opened(path, group="a") + 1).to_zarr3(path, mode="w")
    (opened(path, group="b") + 1).to_zarr3(path, group="a", mode="w")
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3", group="a").load(), dataset() + 1)
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3", group="b").load(), dataset())


def test_lazy_variables_without_dask_are_read_before_the_store_is_replaced(stored: Path) -> None:
    lazy = xr.open_dataset(stored, engine="zarr3")  # chunks=None: xarray's lazy arrays over ours
    lazy.isel(time=slice(2, 8)).to_zarr3(stored, mode="w")
    xr.testing.assert_identical(
        xr.open_dataset(stored, engine="zarr3").load(), dataset().isel(time=slice(2, 8))
    )


def test_mode_a_overwriting_what_it_reads_is_refused(stored: Path) -> None:
    before = snapshot(stored)
    shifted = opened(stored)[["t"]].shift(time=1, fill_value=0.0)  # each shard reads the one before
    with pytest.raises(WriteError, match=r"mode='a'.*\['t'\].*overwrites"):
        shifted.to_zarr3(stored, mode="a")
    assert snapshot(stored) == before
    derived = opened(stored)[["u"]].rename(u="t")  # reads u, overwrites t: fine
    derived.to_zarr3(stored, mode="a")
    np.testing.assert_array_equal(xr.open_dataset(stored, engine="zarr3").t.values, dataset().u.values)


@pytest.mark.parametrize("inline_array", [False, True])
def test_region_writes_may_read_other_rows_but_not_the_region(stored: Path, inline_array: bool) -> None:
    lazy = opened(stored, inline_array=inline_array)
    before = snapshot(stored)
    same = (lazy.isel(time=slice(5, 10)) + 1).drop_vars("time")
    with pytest.raises(WriteError, match=r"mode='r\+'.*overwrites"):
        same.to_zarr3(stored, region={"time": slice(5, 10)})
    assert snapshot(stored) == before
    earlier = (lazy.isel(time=slice(0, 5)) + 100).drop_vars("time")  # reads rows 0-4, writes 5-9
    earlier.to_zarr3(stored, region={"time": slice(5, 10)})
    expected = dataset()
    expected["t"][5:] = dataset().t.values[:5] + 100
    expected["u"][5:] = dataset().u.values[:5] + 100
    xr.testing.assert_identical(xr.open_dataset(stored, engine="zarr3").load(), expected)


def test_an_append_reading_stored_rows_keeps_working(stored: Path) -> None:
    lazy = opened(stored)
    tail = (lazy.isel(time=slice(5, 10)) * 10).assign_coords(time=np.arange(10, 15))
    tail.to_zarr3(stored, append_dim="time")
    back = xr.open_dataset(stored, engine="zarr3").load()
    xr.testing.assert_identical(back, xr.concat([dataset(), tail.load()], "time"))


def test_reading_a_copy_elsewhere_is_not_reading_the_target(stored: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy.zarr"
    shutil.copytree(stored, copy)
    (opened(copy) + 1).to_zarr3(stored, mode="w")
    xr.testing.assert_identical(xr.open_dataset(stored, engine="zarr3").load(), dataset() + 1)
    assert zarr3_backend.open_group(copy)["t"][0, 1] == 1.0


def test_a_zarr_python_memory_store_is_one_store_through_every_wrapper() -> None:
    zarr = pytest.importorskip("zarr")
    memory = zarr.storage.MemoryStore()
    dataset().to_zarr3(memory)
    with pytest.raises(WriteError, match="reads from"):
        (opened(memory) + 1).to_zarr3(memory, mode="w")
    xr.testing.assert_identical(xr.open_dataset(memory, engine="zarr3").load(), dataset())


def test_a_datatree_read_lazily_from_its_target_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.zarr"
    xr.DataTree.from_dict({"/": dataset(), "/child": dataset()}).to_zarr3(path)
    before = snapshot(path)
    lazy = xr.open_datatree(path, engine="zarr3", chunks={})
    with pytest.raises(WriteError, match=r"'child/t'"):
        lazy.to_zarr3(path, mode="w")
    assert snapshot(path) == before


def test_an_icechunk_session_is_one_store_through_every_store_object() -> None:
    icechunk = pytest.importorskip("icechunk")
    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store)  # session.store is a new object at every access
    with pytest.raises(WriteError, match="reads from ZarrPythonStore"):
        (opened(session.store) + 1).to_zarr3(session.store, mode="w")
    xr.testing.assert_identical(xr.open_dataset(session.store, engine="zarr3").load(), dataset())


def test_a_selection_made_before_chunking_narrows_what_is_read(stored: Path) -> None:
    lazy = xr.open_dataset(stored, engine="zarr3")  # no dask yet: the selection stays xarray's lazy one
    earlier = (lazy.isel(time=slice(0, 5)).chunk(time=2) + 100).drop_vars("time")
    earlier.to_zarr3(stored, region={"time": slice(5, 10)})
    np.testing.assert_array_equal(zarr3_backend.open_group(stored)["t"][5:], dataset().t.values[:5] + 100)
    overlapping = (lazy.isel(time=slice(3, 8)).chunk(time=2) + 1).drop_vars("time")
    with pytest.raises(WriteError, match="overwrites"):
        overlapping.to_zarr3(stored, region={"time": slice(0, 5)})
