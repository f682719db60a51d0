"""Times the encoders of xarray and cftime trip over: refused with a `WriteError` or written right (issue 60).

A year past 9999 in ``datetime64[s]`` appended to a ``"days since"`` axis
raised cftime's ``AttributeError``; dask-backed ``datetime.timedelta``
objects raised numpy's ``TypeError`` (in memory they were written).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)
from zarr3_backend import WriteError

pytest.importorskip("cftime")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_year_past_9999_appended_to_a_days_since_axis_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.zarr"
    days = np.array(["2000-01-01", "2000-01-02"], dtype="datetime64[s]")
    xr.Dataset({"v": ("time", [1.0, 2.0])}, coords={"time": days}).to_zarr3(path)
    before = snapshot(path)
    far = np.array(["12000-01-01", "12000-01-02"], dtype="datetime64[s]")
    for more in (xr.Dataset({"v": ("time", [3.0, 4.0])}, coords={"time": far}),) * 2:
        with pytest.raises(
            WriteError, match=r"'time'.*'days since 2000-01-01.*12000-01-01T00:00:00 \(position 0\)"
        ):
            more.to_zarr3(path, append_dim="time")
        assert snapshot(path) == before
        more = more.chunk(time=1)


HOURS = np.array([datetime.timedelta(hours=1), datetime.timedelta(hours=2)], dtype=object)


@pytest.mark.parametrize("how", ["append", "region", "new variable", "first write"])
def test_dask_backed_timedelta_objects_are_written_as_in_memory_ones(tmp_path: Path, how: str) -> None:
    path = tmp_path / "d.zarr"
    xr.Dataset({"d": ("x", HOURS)}).to_zarr3(path)
    lazy = da.from_array(HOURS, chunks=1)
    name = "e" if how == "new variable" else "d"
    kwargs = {
        "append": {"append_dim": "x"},
        "region": {"region": {"x": slice(0, 2)}},
        "new variable": {"mode": "a"},
        "first write": {"mode": "w"},
    }[how]
    xr.Dataset({name: ("x", lazy)}).to_zarr3(path, **kwargs)  # type: ignore[arg-type]
    back = xr.open_dataset(path, engine="zarr3")[name].values
    expected = np.tile(HOURS.astype("timedelta64[ns]"), 2 if how == "append" else 1)
    np.testing.assert_array_equal(back, expected)
