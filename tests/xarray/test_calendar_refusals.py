"""Times and packed values that a stored array cannot hold exactly are refused before any byte changes.

Each refusal is a ``WriteError`` naming the variable, the stored encoding,
the first value that does not fit and the fix; the store's bytes stay the
same. What does fit lands and reads back exactly (a hypothesis test draws
numpy and cftime times of every calendar, sub-unit offsets, time zones and
values out of range).
"""

from __future__ import annotations

import datetime
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)
from zarr3_backend import WriteError

cftime = pytest.importorskip("cftime")

CFTIME = xr.coders.CFDatetimeCoder(use_cftime=True)
pytestmark = [pytest.mark.validate_stores, pytest.mark.filterwarnings("ignore::UserWarning")]

CALENDARS = ["standard", "proleptic_gregorian", "julian", "noleap", "all_leap", "360_day"]
CFTIME_CLASSES = {
    "standard": cftime.DatetimeGregorian,
    "proleptic_gregorian": cftime.DatetimeProlepticGregorian,
    "julian": cftime.DatetimeJulian,
    "noleap": cftime.DatetimeNoLeap,
    "all_leap": cftime.DatetimeAllLeap,
    "360_day": cftime.Datetime360Day,
}


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def daily(times: object) -> xr.Dataset:
    n = len(times)  # type: ignore[arg-type]
    return xr.Dataset({"tas": ("time", np.arange(n, dtype="float32"))}, coords={"time": times})


def numpy_axis(path: Path) -> Path:
    daily(pd.date_range("2000-01-01", periods=3, freq="D")).to_zarr3(path)
    return path


def refused(path: Path, ds: xr.Dataset, **kwargs: object) -> str:
    """The message of the WriteError ``ds.to_zarr3(path, **kwargs)`` raises; the store's bytes are unchanged."""
    before = snapshot(path)
    with pytest.raises(WriteError) as info:
        ds.to_zarr3(path, **kwargs)
    assert snapshot(path) == before
    return str(info.value)


def assert_names_the_encoding(message: str, value: str, calendar: str = "proleptic_gregorian") -> None:
    assert "'time'" in message and "'days since 2000-01-01" in message and "int64" in message
    assert f"calendar {calendar!r}" in message and value in message and "Nothing was written" in message


def test_appending_to_a_noleap_run_with_mode_a_and_r_plus_and_regions(tmp_path: Path) -> None:
    """Finding 1: every write into a non-standard calendar failed decoding an empty array."""
    path = tmp_path / "noleap.zarr"
    run = daily(xr.date_range("2001-02-27", periods=4, freq="D", calendar="noleap", use_cftime=True))
    run.isel(time=slice(0, 2)).to_zarr3(path)
    run.isel(time=slice(2, 4)).to_zarr3(path, append_dim="time")
    run.assign(tas=run.tas + 1).to_zarr3(path, mode="a")
    run.assign(tas=run.tas + 2).to_zarr3(path, mode="r+")
    run.isel(time=[1]).assign(tas=run.tas[1:2] * 0).to_zarr3(path, region="auto")
    back = xr.open_dataset(path, engine="zarr3", decode_times=CFTIME)
    assert [str(t) for t in back.time.values] == [str(t) for t in run.time.values]
    np.testing.assert_array_equal(back.tas.values, [2, 0, 4, 5])


def test_cftime_dates_into_a_numpy_axis_are_checked_as_numpy_ones(tmp_path: Path) -> None:
    """Finding 2: cftime values skipped the check and were stored as hours under "days since"."""
    path = numpy_axis(tmp_path / "numpy.zarr")
    message = refused(path, daily([cftime.DatetimeGregorian(2000, 1, 5, 12)]), append_dim="time")
    assert_names_the_encoding(message, "2000-01-05 12:00:00")
    assert "is 4.5 days, not a whole number of them" in message and "floor" in message
    daily([cftime.DatetimeGregorian(2000, 1, 4)]).to_zarr3(path, append_dim="time")
    back = xr.open_dataset(path, engine="zarr3").time.values
    np.testing.assert_array_equal(back, pd.date_range("2000-01-01", periods=4, freq="D").values)


def test_a_360_day_date_into_a_standard_axis_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "standard.zarr"
    daily(xr.date_range("2000-02-27", periods=2, freq="D", calendar="standard", use_cftime=True)).to_zarr3(
        path
    )
    for date in (cftime.Datetime360Day(2000, 2, 30), cftime.Datetime360Day(2000, 3, 1)):
        message = refused(path, daily([date]), append_dim="time")
        assert "is a 360_day date, not a standard one" in message and "convert_calendar('standard'" in message
    message = refused(path, daily([cftime.DatetimeNoLeap(2000, 3, 1)]), append_dim="time")
    assert "noleap date" in message


def test_a_numpy_date_before_the_reform_into_a_standard_axis_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "early.zarr"
    dates = xr.date_range("1500-01-01", periods=2, freq="D", calendar="standard", use_cftime=True)
    daily(dates).to_zarr3(path)
    early = daily(np.array(["1500-01-03"], "datetime64[s]"))
    assert "before 1582-10-15" in refused(path, early, append_dim="time")


def test_a_time_one_nanosecond_past_the_unit_is_a_write_error(tmp_path: Path) -> None:
    """Finding 3: it raised a bare ValueError."""
    path = numpy_axis(tmp_path / "ns.zarr")
    late = daily(np.array(["2000-01-04T00:00:00.000000001"], "datetime64[ns]"))
    assert_names_the_encoding(refused(path, late, append_dim="time"), "2000-01-04T00:00:00.000000001")


def test_a_time_past_the_stored_integer_type_names_the_range(tmp_path: Path) -> None:
    path = tmp_path / "int16.zarr"
    run = daily(xr.date_range("2000-01-01", periods=2, freq="D", calendar="noleap", use_cftime=True))
    run.to_zarr3(path, encoding={"time": {"dtype": "int16", "units": "days since 2000-01-01"}})
    late = daily([cftime.DatetimeNoLeap(2100, 1, 1)])
    message = refused(path, late, append_dim="time")
    assert "'time'" in message and "calendar 'noleap'" in message and "int16" in message
    assert "its value 2100-01-01 00:00:00 (position 0) is 36500 days, past the range of int16" in message


def test_timezone_aware_times_are_a_write_error(tmp_path: Path) -> None:
    """Finding 3: it raised TypeError."""
    path = numpy_axis(tmp_path / "tz.zarr")
    aware = daily(pd.DatetimeIndex(["2000-01-04"], tz="UTC"))
    message = refused(path, aware, append_dim="time")
    assert_names_the_encoding(message, "2000-01-04 00:00:00+00:00 (position 0) is timezone-aware")
    assert "tz_convert(None)" in message


def test_mixed_kinds_of_times_are_a_write_error(tmp_path: Path) -> None:
    """Finding 3: a pandas Timestamp beside a cftime date raised TypeError."""
    path = numpy_axis(tmp_path / "mixed.zarr")
    mixed = np.array([pd.Timestamp("2000-01-04"), cftime.DatetimeGregorian(2000, 1, 5)], dtype=object)
    message = refused(path, daily(mixed), append_dim="time")
    assert_names_the_encoding(message, "2000-01-04")
    assert "mix" in message and "one kind" in message


def test_an_append_bringing_a_variable_the_store_lacks_is_refused(tmp_path: Path) -> None:
    """Finding 4: the variable was created at the appended length only and the group no longer opened."""
    path = numpy_axis(tmp_path / "new.zarr")
    more = daily(pd.date_range("2000-01-04", periods=1))
    more["pr"] = ("time", [1.0])
    message = refused(path, more, append_dim="time")
    assert "['pr']" in message and "mode='a' and no append_dim" in message
    assert xr.open_dataset(path, engine="zarr3").sizes["time"] == 3


@pytest.mark.parametrize(
    ("dtype", "scale_factor", "value", "fits"),
    [
        ("int8", 1.0, 300.0, "-128 to 127"),
        ("int16", 0.1, 5000.0, "-3276.8 to 3276.7"),
        ("uint8", 2.0, -4.0, "0 to 510"),
    ],
)
def test_packed_values_outside_the_dtype_are_refused(
    dtype: str, scale_factor: float, value: float, fits: str, tmp_path: Path
) -> None:
    """Finding 5: they wrapped around (int8: 300 read back as 44)."""
    path = tmp_path / "packed.zarr"
    ds = xr.Dataset({"t2m": ("time", [2.0, 4.0])}, coords={"time": [0, 1]})
    ds.to_zarr3(path, encoding={"t2m": {"dtype": dtype, "scale_factor": scale_factor}})
    more = xr.Dataset({"t2m": ("time", [6.0, value])}, coords={"time": [2, 3]})
    for data in (more, more.chunk(time=1)):
        message = refused(path, data, append_dim="time")
        assert "'t2m'" in message and dtype in message and fits in message and f"its value {value}" in message
    region = more.drop_vars("time")
    assert "'t2m'" in refused(path, region, region={"time": slice(0, 2)})
    np.testing.assert_allclose(xr.open_dataset(path, engine="zarr3").t2m.values, [2.0, 4.0])


def test_a_dask_region_write_of_packed_values_is_refused_before_any_shard_is_written(tmp_path: Path) -> None:
    """One shard per row: the task of the row that fits must not write before the other's fails."""
    path = tmp_path / "packed.zarr"
    ds = xr.Dataset({"t2m": ("time", [2.0, 4.0])}, coords={"time": [0, 1]})
    ds.to_zarr3(
        path, encoding={"t2m": {"dtype": "int8", "scale_factor": 1.0, "chunks": (1,), "shards": (1,)}}
    )
    region = xr.Dataset({"t2m": ("time", [6.0, 300.0])}).chunk(time=1)
    assert "its value 300.0" in refused(path, region, region={"time": slice(0, 2)})
    np.testing.assert_allclose(xr.open_dataset(path, engine="zarr3").t2m.values, [2.0, 4.0])


def test_packed_values_that_fit_and_missing_ones_with_a_fill_value_land(tmp_path: Path) -> None:
    path = tmp_path / "packed.zarr"
    ds = xr.Dataset({"t2m": ("time", [1.0, 2.0])}, coords={"time": [0, 1]})
    ds.to_zarr3(path, encoding={"t2m": {"dtype": "int16", "scale_factor": 0.5, "_FillValue": -32768}})
    more = xr.Dataset({"t2m": ("time", [np.nan, 16383.5])}, coords={"time": [2, 3]})
    more.to_zarr3(path, append_dim="time")
    np.testing.assert_array_equal(
        xr.open_dataset(path, engine="zarr3").t2m.values, [1.0, 2.0, np.nan, 16383.5]
    )
    assert "the fill value -32768 aside" in refused(
        path, xr.Dataset({"t2m": ("time", [-16384.0])}, coords={"time": [4]}), append_dim="time"
    )


def test_a_first_write_of_values_outside_the_packed_dtype_is_refused(tmp_path: Path) -> None:
    """The same rule for a new variable whose encoding (given, or carried from its source) packs it."""
    ds = xr.Dataset({"t2m": ("time", [1.0, 300.0])})
    with pytest.raises(WriteError, match=r"'t2m'.*int8.*-128 to 127.*its value 300.0 \(position 1\)"):
        ds.to_zarr3(tmp_path / "new.zarr", encoding={"t2m": {"dtype": "int8", "scale_factor": 1.0}})
    assert not (tmp_path / "new.zarr").exists()


def test_unsigned_values_in_signed_storage_pack_by_their_unsigned_range(tmp_path: Path) -> None:
    """NetCDF's ``_Unsigned``: an int8 array holds 0..255, its fill value -1 being 255."""
    path = tmp_path / "unsigned.zarr"
    ds = xr.Dataset({"n": ("time", [1.0, 2.0])})
    ds["n"].encoding = {"dtype": "int8", "_Unsigned": "true", "_FillValue": -1}
    ds.to_zarr3(path)
    xr.Dataset({"n": ("time", [200.0])}).to_zarr3(path, append_dim="time")
    np.testing.assert_array_equal(xr.open_dataset(path, engine="zarr3").n.values, [1.0, 2.0, 200.0])
    for value in (255.0, 300.0):
        message = refused(path, xr.Dataset({"n": ("time", [value])}), append_dim="time")
        assert "0 to 255 (the fill value 255 aside)" in message and f"its value {value}" in message


# --- the property: every drawn write lands exactly or is refused leaving the store's bytes ---------------

SUB_UNITS = {
    "none": datetime.timedelta(0),
    "12h": datetime.timedelta(hours=12),
    "1s": datetime.timedelta(seconds=1),
}


GREGORIAN = ("standard", "proleptic_gregorian")  # numpy's calendar, and the one agreeing with it from 1582 on


@st.composite
def time_writes(draw: st.DrawFn) -> tuple[str, str, str, np.ndarray | pd.DatetimeIndex, bool]:
    """(stored calendar, stored dtype, "append" or "region", new times, whether they must fit)."""
    calendar = draw(st.sampled_from(CALENDARS))
    dtype = draw(st.sampled_from(["int64", "int16"]))
    mode = draw(st.sampled_from(["append", "region"]))
    kind = draw(st.sampled_from(["cftime", "numpy", "tz", "mixed"]))
    days = draw(st.sampled_from([0, 1, 29, 58, 365, 40_000]))  # 40_000 days: past int16
    sub = draw(st.sampled_from(list(SUB_UNITS)))
    in_range = not (dtype == "int16" and days == 40_000)
    if kind == "cftime":
        own = draw(st.sampled_from([calendar, *CALENDARS]))
        date = CFTIME_CLASSES[own](2000, 1, 4) + datetime.timedelta(days=days) + SUB_UNITS[sub]
        values: np.ndarray | pd.DatetimeIndex = np.array([date], dtype=object)
        same_days = own == calendar or (own in GREGORIAN and calendar in GREGORIAN)
        return calendar, dtype, mode, values, same_days and sub == "none" and in_range
    nanoseconds = draw(st.sampled_from([0, 1]))
    stamp = pd.Timestamp("2000-01-04") + pd.Timedelta(days=days) + pd.Timedelta(SUB_UNITS[sub])
    values = pd.DatetimeIndex([stamp + pd.Timedelta(nanoseconds, "ns")], tz="UTC" if kind == "tz" else None)
    if kind == "mixed":
        values = np.array([stamp, CFTIME_CLASSES[calendar](2000, 1, 5)], dtype=object)
    whole = sub == "none" and nanoseconds == 0 and in_range
    return calendar, dtype, mode, values, kind == "numpy" and calendar in GREGORIAN and whole


def stored_run(calendar: str) -> xr.Dataset:
    """Three days of ``calendar``, with the same times in a variable ("valid") that region writes reach."""
    run = daily(xr.date_range("2000-01-01", periods=3, freq="D", calendar=calendar, use_cftime=True))
    return run.assign(valid=run.time.variable)


@settings(max_examples=50, deadline=None)
@given(time_writes())
def test_every_drawn_time_lands_exactly_or_is_refused_leaving_the_store(
    write: tuple[str, str, str, np.ndarray | pd.DatetimeIndex, bool],
) -> None:
    calendar, dtype, mode, values, fits = write
    run, n = stored_run(calendar), len(values)
    encoding = {"dtype": dtype, "units": "days since 2000-01-01"}
    new = daily(values).assign(valid=("time", np.asarray(values)))
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "run.zarr"
        run.to_zarr3(path, encoding={"time": encoding, "valid": encoding})
        before = snapshot(path)
        try:
            if mode == "append":
                new.to_zarr3(path, append_dim="time")
            else:
                new.drop_vars("time").to_zarr3(path, region={"time": slice(0, n)})
        except WriteError:
            assert not fits, f"{values!r} fits a {calendar} {dtype} axis but was refused"
            assert snapshot(path) == before
            return
        back = xr.open_dataset(path, engine="zarr3", decode_times=CFTIME)
        given = list(np.asarray(values).ravel())
        expected = [*run.valid.values, *given] if mode == "append" else [*given, *run.valid.values[n:]]
        assert [_fields(t) for t in back.valid.values] == [_fields(t) for t in expected]
        if mode == "append":
            assert [_fields(t) for t in back.time.values] == [_fields(t) for t in expected]


def _fields(value: object) -> tuple[int, ...]:
    if isinstance(value, np.datetime64 | pd.Timestamp):
        value = pd.Timestamp(value)
        return (*value.timetuple()[:6], value.microsecond, value.nanosecond)
    return (*value.timetuple()[:6], value.microsecond, 0)  # type: ignore[attr-defined]
