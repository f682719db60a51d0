"""Opening an archive of many variables along a long time axis (issue 61): shared chunk tuples, same values.

The store is a small clone of the ARCO-ERA5 layout (variables on two grids, one chunk per hour, most
hours not written). `SHARED_SIZES_FROM` is lowered so that its time axis counts as long: every
variable's ``preferred_chunks`` along it is then one shared tuple, and everything computed from a
``chunks={}`` open must equal what ``engine="zarr"`` gives on the same store.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.store import LocalStore
from zarr3_backend.testing.stores import CountingStore
from zarr3_backend.xarray import read_encoding

HOURS = 24 * 40  # 40 days
NAMES = ("t2m", "tp", "u10", "t")  # "t" on pressure levels


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The clone, with every 7th hour written; a time axis of `HOURS` chunks counts as long."""
    monkeypatch.setattr(read_encoding, "SHARED_SIZES_FROM", 100, raising=False)  # (absent before #61)
    group = zarr3_backend.create_group(tmp_path / "era5.zarr")
    time = group.create_array("time", shape=(HOURS,), dtype="int64", dimension_names=["time"],
                              attributes={"units": "hours since 2000-01-01", "calendar": "proleptic_gregorian"})  # fmt: skip
    time[...] = np.arange(HOURS)
    group.create_array("level", shape=(2,), dtype="int64", dimension_names=["level"])[...] = [500, 850]
    rng = np.random.default_rng(61)
    for name in NAMES:
        dims = ["time", "level", "y", "x"] if name == "t" else ["time", "y", "x"]
        shape = (HOURS, 2, 3, 4) if name == "t" else (HOURS, 3, 4)
        array = group.create_array(name, shape=shape, dtype="float32", chunks=(1, *shape[1:]),
                                   dimension_names=dims, fill_value=float("nan"))  # fmt: skip
        hours = np.arange(0, HOURS, 7)
        array[hours] = rng.standard_normal((len(hours), *shape[1:])).astype("float32")
    return tmp_path / "era5.zarr"


def both(path: Path, **kwargs: object) -> tuple[xr.Dataset, xr.Dataset]:
    return (
        xr.open_dataset(path, engine="zarr3", chunks={}, **kwargs),
        xr.open_dataset(path, engine="zarr", chunks={}, consolidated=False, **kwargs),
    )


def test_variables_on_one_time_axis_share_its_chunk_tuple(archive: Path) -> None:
    ours, theirs = both(archive)
    sizes = [ours[name].encoding["preferred_chunks"]["time"] for name in NAMES]
    assert sizes[0] == (1,) * HOURS
    assert all(s is sizes[0] for s in sizes)  # one object: dask's sums over it are cached by identity
    assert ours.t.encoding["preferred_chunks"]["level"] == 2  # a short axis keeps its int
    for name in NAMES:
        assert ours[name].chunks == theirs[name].chunks
        assert ours[name].data.numblocks[0] == HOURS


def test_a_point_series_over_every_hour_equals_engine_zarr(archive: Path) -> None:
    ours, theirs = both(archive)
    for name in ("t2m", "t"):
        got = ours[name].isel(y=1, x=2).values
        np.testing.assert_array_equal(got, theirs[name].isel(y=1, x=2).values)
        assert np.isfinite(got).sum() == len(range(0, HOURS, 7)) * (2 if name == "t" else 1)


def test_a_day_across_all_variables_and_the_last_hour_equal_engine_zarr(archive: Path) -> None:
    ours, theirs = both(archive)
    day = slice("2000-01-15", "2000-01-15T23:00")
    xr.testing.assert_identical(ours.sel(time=day).compute(), theirs.sel(time=day).compute())
    xr.testing.assert_identical(ours.isel(time=-1).compute(), theirs.isel(time=-1).compute())


def test_a_monthly_groupby_equals_engine_zarr(archive: Path) -> None:
    ours, theirs = both(archive)
    got = ours.t2m.groupby("time.month").mean()
    assert got.chunks is not None  # a plan, computed below
    xr.testing.assert_allclose(got.compute(), theirs.t2m.groupby("time.month").mean().compute())


@pytest.mark.slow
def test_a_point_series_on_worker_processes_equals_engine_zarr(archive: Path, client: object) -> None:
    ours, theirs = both(archive)
    np.testing.assert_array_equal(ours.u10.isel(y=0, x=3).compute().values, theirs.u10.isel(y=0, x=3).values)


def test_opening_reads_no_data_and_the_coordinates_in_one_batch(archive: Path) -> None:
    store = CountingStore(LocalStore(archive, read_only=True))
    ds = xr.open_dataset(store, engine="zarr3", chunks={}, consolidated=False)
    read = [key for key, _ in store.requests]
    assert not [key for key in read if key.split("/")[0] in NAMES and not key.endswith("zarr.json")]
    coordinates = [
        key for key in read if not key.endswith(".json")
    ]  # (the pending-write record is looked for)
    assert sorted(coordinates) == ["level/c/0", "time/c/0"]
    assert store.counts["get_many"] <= 3  # the group, the members' documents, the coordinates
    assert ds.t2m.data.numblocks[0] == HOURS
