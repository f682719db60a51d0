"""Times appended or written into a region fit the stored units and dtype exactly, or nothing is written.

xarray (and engine="zarr") silently stores hour counts under "days since"
units, and wraps values past the stored integer type; to_zarr3 refuses both
before any byte changes, naming the variable, the units, the first misfit
and the fix.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)
from zarr3_backend import WriteError


def daily(start: str, periods: int = 3) -> xr.Dataset:
    times = pd.date_range(start, periods=periods, freq="D")
    return xr.Dataset({"t2m": ("time", np.arange(periods, dtype="float32"))}, coords={"time": times})


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_appending_times_finer_than_the_stored_units_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "daily.zarr"
    daily("2021-01-01").to_zarr3(path)
    before = snapshot(path)
    with pytest.raises(WriteError) as info:
        daily("2021-01-04T12:00").to_zarr3(path, append_dim="time")
    message = str(info.value)
    assert "'time'" in message and "days since 2021-01-01" in message and "2021-01-04T12:00" in message
    assert "Nothing was written" in message and "floor" in message and "mode='w'" in message
    assert snapshot(path) == before
    np.testing.assert_array_equal(
        xr.open_dataset(path, engine="zarr3").time.values, daily("2021-01-01").time.values
    )


def test_appending_times_past_the_stored_integer_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "int16.zarr"
    daily("2021-01-01").to_zarr3(
        path, encoding={"time": {"dtype": "int16", "units": "days since 2021-01-01"}}
    )
    before = snapshot(path)
    with pytest.raises(WriteError, match=r"int16.*2200-01-0"):
        daily("2200-01-01").to_zarr3(path, append_dim="time")
    assert snapshot(path) == before


def test_appending_timedeltas_finer_than_the_stored_units_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lead.zarr"
    lead = xr.Dataset({"lead": ("step", np.array([1, 2], dtype="timedelta64[D]"))})
    lead.to_zarr3(path)
    before = snapshot(path)
    finer = xr.Dataset({"lead": ("step", np.array([24, 36], dtype="timedelta64[h]"))})
    with pytest.raises(WriteError, match=r"'lead'.*'days'.*1 days 12:00:00|'lead'.*'days'.*129600"):
        finer.to_zarr3(path, append_dim="step")
    assert snapshot(path) == before


def test_a_region_write_of_times_that_do_not_fit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "region.zarr"
    ds = daily("2021-01-01", periods=4)
    ds["valid"] = ("time", ds.time.values)
    ds.to_zarr3(path)
    before = snapshot(path)
    part = ds.isel(time=slice(0, 2)).drop_vars("time")
    part["valid"] = ("time", part.valid.values + np.timedelta64(6, "h"))
    with pytest.raises(WriteError, match=r"'valid'.*2021-01-01T06:00.*position 0"):
        part.to_zarr3(path, region={"time": slice(0, 2)})
    assert snapshot(path) == before


def test_dask_backed_times_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "dask.zarr"
    ds = daily("2021-01-01")
    ds["valid"] = ("time", ds.time.values)
    ds.to_zarr3(path)
    before = snapshot(path)
    more = daily("2021-01-04")
    more["valid"] = ("time", more.time.values + np.timedelta64(1, "h"))
    with pytest.raises(WriteError, match=r"'valid'"):
        more.chunk(time=1).to_zarr3(path, append_dim="time")
    assert snapshot(path) == before


def test_times_that_fit_still_append(tmp_path: Path) -> None:
    path = tmp_path / "fits.zarr"
    daily("2021-01-01").to_zarr3(path)
    daily("2021-01-04").to_zarr3(path, append_dim="time")
    expected = xr.concat([daily("2021-01-01"), daily("2021-01-04")], dim="time")
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3").load(), expected)


def test_xarrays_time_encoding_warning_names_the_users_line(tmp_path: Path) -> None:
    ds = daily("2021-01-01T12:00")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds.to_zarr3(tmp_path / "new.zarr", encoding={"time": {"units": "days since 2021-01-01"}})
    serialized = [w for w in caught if "serialized" in str(w.message)]
    assert serialized, [str(w.message) for w in caught]
    assert all(Path(w.filename) == Path(__file__) for w in serialized), [w.filename for w in serialized]
