"""Appends that repeat stored labels are refused; packing attributes equal to the stored encoding append.

``engine="zarr"`` is the oracle where it works: it appends a repeated year
silently (duplicate times), which we refuse unless ``allow_repeated_index=True``
asks for it; and it refuses a second append of a scene stack whose packing
lives in the attributes (rioxarray's ``mask_and_scale=False``), which we
append as the first write stored it.
"""

from __future__ import annotations

from pathlib import Path

import cftime
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (registers to_zarr3)
from zarr3_backend.errors import WriteError
from zarr3_backend.xarray.write.stored import check_no_repeats  # noqa: F401  (the check under test)

pytestmark = pytest.mark.validate_stores


def snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def year(start: str, days: int = 366, chunks: int | None = None) -> xr.Dataset:
    time = pd.date_range(start, periods=days)
    ds = xr.Dataset({"t2m": (("time", "x"), np.arange(days * 2.0).reshape(days, 2))}, coords={"time": time})
    return ds.chunk(time=chunks) if chunks else ds


@pytest.mark.parametrize("dask", [False, True])
def test_appending_the_same_year_twice_is_refused_naming_the_overlap(tmp_path: Path, dask: bool) -> None:
    path = tmp_path / "a.zarr"
    year("2020-01-01").to_zarr3(path, mode="w")
    before = snapshot(path)
    again = year("2020-12-01", days=45, chunks=10 if dask else None)  # December repeats, January is new
    with pytest.raises(
        WriteError, match=r"repeats 31 index values .* from 2020-12-01 to 2020-12-31 .*nothing was written"
    ):
        again.to_zarr3(path, append_dim="time")
    assert snapshot(path) == before


def test_engine_zarr_appends_a_repeated_year_silently(tmp_path: Path) -> None:
    """Why we refuse: the oracle leaves duplicate labels that ``.sel`` then trips over."""
    path = tmp_path / "z.zarr"
    year("2020-01-01", days=10).to_zarr(path, mode="w", zarr_format=3, consolidated=False)
    year("2020-01-05", days=10).to_zarr(path, append_dim="time")
    assert not xr.open_dataset(path, engine="zarr").indexes["time"].is_unique


def test_allow_repeated_index_appends_them_as_engine_zarr_does(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    year("2020-01-01", days=10).to_zarr3(ours, mode="w")
    year("2020-01-01", days=10).to_zarr(theirs, mode="w", zarr_format=3, consolidated=False)
    year("2020-01-05", days=10).to_zarr3(ours, append_dim="time", allow_repeated_index=True)
    year("2020-01-05", days=10).to_zarr(theirs, append_dim="time")
    xr.testing.assert_identical(
        xr.open_dataset(ours, engine="zarr3").load(), xr.open_dataset(theirs, engine="zarr").load()
    )


def test_new_steps_after_the_stored_ones_append(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    year("2020-01-01").to_zarr3(path, mode="w")
    year("2021-01-01").to_zarr3(path, append_dim="time")
    assert xr.open_dataset(path, engine="zarr3").indexes["time"].is_unique


@pytest.mark.parametrize("stored", [[0.0, 1.0, 2.0], [5.0, 1.0, 3.0]], ids=["increasing", "unsorted"])
def test_numeric_and_unsorted_labels_are_checked_too(tmp_path: Path, stored: list[float]) -> None:
    path = tmp_path / "a.zarr"
    xr.Dataset({"v": ("step", [1, 2, 3])}, coords={"step": stored}).to_zarr3(path, mode="w")
    with pytest.raises(WriteError, match="repeats 1 index values .* from 1.0 to 1.0"):
        xr.Dataset({"v": ("step", [4, 5])}, coords={"step": [1.0, 9.0]}).to_zarr3(path, append_dim="step")


def test_a_noleap_axis_is_compared_as_dates(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    times = [cftime.DatetimeNoLeap(2000, 1, d) for d in (1, 2, 3)]
    xr.Dataset({"v": ("time", [1.0, 2.0, 3.0])}, coords={"time": times}).to_zarr3(path, mode="w")
    repeat = xr.Dataset({"v": ("time", [9.0])}, coords={"time": [cftime.DatetimeNoLeap(2000, 1, 3)]})
    with pytest.raises(WriteError, match="repeats 1 index values"):
        repeat.to_zarr3(path, append_dim="time")


def packed_scene(day: int) -> xr.Dataset:
    """One band of a scene as rioxarray opens it with ``mask_and_scale=False``: packing in the attributes."""
    attrs = {"scale_factor": 0.0001, "add_offset": 0.0, "_FillValue": -9999}
    band = xr.Variable(("time", "y", "x"), np.full((1, 4, 4), 100 + day, "int16"), attrs)
    return xr.Dataset({"b4": band}, coords={"time": [pd.Timestamp("2021-01-01") + pd.Timedelta(days=day)]})


def test_packing_attributes_equal_to_the_stored_encoding_append_like_encodings(tmp_path: Path) -> None:
    path = tmp_path / "stack.zarr"
    for day in range(3):
        packed_scene(day).to_zarr3(
            path, mode="w" if day == 0 else None, append_dim=None if day == 0 else "time"
        )
    decoded = xr.open_dataset(path, engine="zarr3").b4.values[:, 0, 0]
    np.testing.assert_allclose(decoded, [0.0100, 0.0101, 0.0102])
    raw = xr.open_dataset(path, engine="zarr3", mask_and_scale=False).b4
    assert raw.dtype == np.int16 and raw.values[:, 0, 0].tolist() == [100, 101, 102]


def test_engine_zarr_refuses_the_second_scene(tmp_path: Path) -> None:
    path = tmp_path / "z.zarr"
    packed_scene(0).to_zarr(path, mode="w", zarr_format=3, consolidated=False)
    with pytest.raises(ValueError, match="'add_offset' already exists in attrs"):
        packed_scene(1).to_zarr(path, append_dim="time")


def test_packing_attributes_that_differ_from_the_stored_ones_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "stack.zarr"
    packed_scene(0).to_zarr3(path, mode="w")
    before = snapshot(path)
    other = packed_scene(1)
    other.b4.attrs["scale_factor"] = 0.0002
    with pytest.raises(WriteError, match=r"scale_factor=0.0002 \(stored: 0.0001\)"):
        other.to_zarr3(path, append_dim="time")
    assert snapshot(path) == before
