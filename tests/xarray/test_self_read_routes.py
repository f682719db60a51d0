"""A write that reads its own target is refused whatever opened the data (issue 60, item 1).

``(ds + 1).to_zarr3(p, mode="w")`` over data read from ``p`` through
``engine="zarr"``, ``xr.open_zarr``, ``da.from_zarr`` or ``da.from_array`` of
our own `Array` returned normally with every value NaN; a ``map_blocks`` or
``dask.delayed`` reading ``p`` failed only after the group was deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.errors import WriteError

zarr = pytest.importorskip("zarr")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")


def dataset() -> xr.Dataset:
    return xr.Dataset({"v": (("x",), np.arange(8.0))})


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "a.zarr"
    dataset().to_zarr3(path, encoding={"v": {"chunks": (4,)}})
    return path


def as_dataset(array: object) -> xr.Dataset:
    return xr.Dataset({"v": (("x",), array)})


ROUTES: dict[str, Callable[[Path], xr.Dataset]] = {
    "engine-zarr": lambda p: xr.open_dataset(p, engine="zarr", chunks={}),
    "engine-zarr-inline": lambda p: xr.open_dataset(p, engine="zarr", chunks={}, inline_array=True),
    "open_zarr": lambda p: xr.open_zarr(p),
    "open_zarr-unconsolidated": lambda p: xr.open_zarr(p, consolidated=False),
    "from_zarr": lambda p: as_dataset(da.from_zarr(zarr.open_array(str(p / "v"), mode="r"))),
    "from_zarr-fsspec": lambda p: as_dataset(da.from_zarr(zarr.open_array(f"file://{p}/v", mode="r"))),
    "from_array-async": lambda p: as_dataset(
        da.from_array(zarr.open_array(str(p / "v"), mode="r")._async_array, chunks=4)
    ),
    "from_array-ours": lambda p: as_dataset(da.from_array(zarr3_backend.open_array(p, "v"), chunks=4)),
    "engine-zarr-no-dask": lambda p: xr.open_dataset(p, engine="zarr").chunk(x=4),
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_every_route_to_a_zarr_store_is_seen_reading_the_target(stored: Path, route: str) -> None:
    before = snapshot(stored)
    with pytest.raises(WriteError, match=r"\['v'\] reads from .*deletes"):
        (ROUTES[route](stored) + 1).to_zarr3(stored, mode="w")
    assert snapshot(stored) == before
    xr.testing.assert_identical(xr.open_dataset(stored, engine="zarr3").load(), dataset())


@pytest.mark.parametrize("route", ["engine-zarr", "from_zarr", "from_array-ours"])
def test_a_region_write_of_its_own_rows_is_refused_and_of_other_rows_lands(stored: Path, route: str) -> None:
    lazy = ROUTES[route](stored)
    with pytest.raises(WriteError, match="overwrites"):
        (lazy.isel(x=slice(4, 8)) + 1).to_zarr3(stored, region={"x": slice(4, 8)})
    (lazy.isel(x=slice(0, 4)) + 100).to_zarr3(stored, region={"x": slice(4, 8)})
    np.testing.assert_array_equal(zarr3_backend.open_array(stored, "v")[:], [0, 1, 2, 3, 100, 101, 102, 103])


def test_reading_a_copy_through_engine_zarr_is_not_reading_the_target(stored: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy.zarr"
    shutil.copytree(stored, copy)
    (xr.open_dataset(copy, engine="zarr", chunks={}) + 1).to_zarr3(stored, mode="w")
    xr.testing.assert_identical(xr.open_dataset(stored, engine="zarr3").load(), dataset() + 1)


def test_an_icechunk_session_read_through_engine_zarr_is_its_own_target() -> None:
    icechunk = pytest.importorskip("icechunk")
    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store, encoding={"v": {"chunks": (4,)}})
    lazy = xr.open_dataset(session.store, engine="zarr", chunks={}, consolidated=False)
    with pytest.raises(WriteError, match="reads from"):
        (lazy + 1).to_zarr3(session.store, mode="w")
    xr.testing.assert_identical(xr.open_dataset(session.store, engine="zarr3").load(), dataset())


def reads_the_target(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    def plus_stored(block: np.ndarray) -> np.ndarray:
        return block + zarr3_backend.open_array(path, "v")[: block.size]

    return plus_stored


def test_a_map_blocks_function_is_refused_when_mode_w_replaces_a_group(stored: Path) -> None:
    before = snapshot(stored)
    data = da.zeros(8, chunks=4).map_blocks(reads_the_target(stored), dtype="float64")
    with pytest.raises(WriteError, match=r"plus_stored.*cannot see.*\.load\(\).*another location"):
        as_dataset(data).to_zarr3(stored, mode="w")
    assert snapshot(stored) == before
    xr.testing.assert_identical(xr.open_dataset(stored, engine="zarr3").load(), dataset())


def test_a_delayed_closure_is_refused_when_mode_w_replaces_a_group(stored: Path) -> None:
    before = snapshot(stored)
    read = dask.delayed(lambda: zarr3_backend.open_array(stored, "v")[:] + 1)()
    with pytest.raises(WriteError, match="cannot see"):
        as_dataset(da.from_delayed(read, (8,), dtype="float64")).to_zarr3(stored, mode="w")
    assert snapshot(stored) == before


class Opaque:
    """An array-like of its own: nothing tells what it reads."""

    shape, dtype, ndim = (8,), np.dtype("float64"), 1

    def __getitem__(self, key: object) -> np.ndarray:
        return np.ones(8)[key]  # type: ignore[index]


def test_an_unknown_array_like_is_refused_when_mode_w_replaces_a_group(stored: Path) -> None:
    before = snapshot(stored)
    with pytest.raises(WriteError, match=r"Opaque.*cannot see"):
        as_dataset(da.from_array(Opaque(), chunks=4)).to_zarr3(stored, mode="w")
    assert snapshot(stored) == before


def test_opaque_graphs_write_where_nothing_is_replaced(stored: Path, tmp_path: Path) -> None:
    """Into a new location (or a group that holds nothing) nothing can be destroyed: the same graphs land."""
    data = da.zeros(8, chunks=4).map_blocks(reads_the_target(stored), dtype="float64")
    as_dataset(data).to_zarr3(tmp_path / "new.zarr", mode="w")
    np.testing.assert_array_equal(zarr3_backend.open_array(tmp_path / "new.zarr", "v")[:], [0, 1, 2, 3] * 2)
    as_dataset(da.from_array(Opaque(), chunks=4)).to_zarr3(tmp_path / "new.zarr", mode="w", group="g")


def test_numpy_pandas_and_other_stores_replace_a_group(stored: Path, tmp_path: Path) -> None:
    """What xarray's own arithmetic, numpy, pandas-indexed coordinates and another store put in a graph is known."""
    other = tmp_path / "other.zarr"
    dataset().to_zarr3(other)
    src = xr.open_dataset(other, engine="zarr", chunks={"x": 4}).assign_coords(x=np.arange(8) * 10)
    mixed = (np.sqrt(src + 1) * dataset().chunk(x=4)).rolling(x=2).mean().fillna(0.0)
    mixed.to_zarr3(stored, mode="w")
    xr.testing.assert_allclose(xr.open_dataset(stored, engine="zarr3").load(), mixed.load())
