"""Every cftime calendar writes, appends and region-writes as ``engine="zarr"`` does, on local files and S3.

For each calendar, each way of decoding (``use_cftime=True`` and the
default) and each write mode, the same writes go to a store through
``to_zarr3`` and to another through ``engine="zarr"``; both stores are then
read by both engines and must agree value for value (stored numbers and
decoded times) and attribute for attribute.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)

cftime = pytest.importorskip("cftime")
pytest.importorskip("zarr")

pytestmark = [pytest.mark.validate_stores, pytest.mark.filterwarnings("ignore::UserWarning")]

CALENDARS = ["standard", "proleptic_gregorian", "julian", "noleap", "all_leap", "360_day"]
ALIASES = ["gregorian", "365_day", "366_day"]
MODES = ["w", "append", "region", "region-auto", "a", "r+"]
ENGINES = ["zarr3", "zarr"]


def model_run(calendar: str, periods: int = 6) -> xr.Dataset:
    """A small model run across the end of February, with a non-index time ("valid") and a packed field."""
    times = xr.date_range("2000-02-27", periods=periods, freq="D", calendar=calendar, use_cftime=True)
    ds = xr.Dataset(
        {
            "tas": (("time", "lat"), np.arange(periods * 2, dtype="float32").reshape(periods, 2)),
            "valid": ("time", times + datetime.timedelta(hours=12)),
        },
        coords={"time": times, "lat": [10.0, 20.0]},
        attrs={"experiment": "historical"},
    )
    ds["tas"].attrs["units"] = "K"
    ds["pr"] = ("time", np.arange(periods) * 0.25)
    ds["pr"].encoding = {"dtype": "int16", "scale_factor": 0.25, "_FillValue": -32768}
    return ds


def decoded(ds: xr.Dataset, where: Path, use_cftime: bool | None) -> xr.Dataset:
    """``ds`` as a user reading it back with the given decoding holds it (cftime or numpy times)."""
    ds.to_zarr(where, mode="w", zarr_format=3)
    return open_with("zarr", where, use_cftime).load()


def open_with(engine: str, where: str | Path, use_cftime: bool | None, **kwargs: Any) -> xr.Dataset:
    """``where`` read by ``engine``: times as cftime dates (True), by default (None), or undecoded (False)."""
    coder = xr.coders.CFDatetimeCoder(use_cftime=True) if use_cftime else use_cftime is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(where, engine=engine, decode_times=coder, **kwargs).load()


def write(engine: str, ds: xr.Dataset, where: str, options: dict[str, Any] | None, **kwargs: Any) -> None:
    if engine == "zarr3":
        ds.to_zarr3(where, storage_options=options, **kwargs)
    else:
        ds.to_zarr(where, storage_options=options, zarr_format=3, consolidated=False, **kwargs)


def writes(mode: str, run: xr.Dataset) -> Iterator[tuple[xr.Dataset, dict[str, Any]]]:
    """The writes of one mode: (dataset, keyword arguments), the first making the store."""
    first, rest = run.isel(time=slice(0, 3)), run.isel(time=slice(3, None))
    changed = run.assign(tas=run.tas + 100)
    if mode == "w":
        yield run, {"mode": "w"}
    elif mode == "append":
        yield first, {"mode": "w"}
        yield rest, {"append_dim": "time"}
    elif mode.startswith("region"):
        yield run, {"mode": "w"}
        part = changed.isel(time=slice(2, 4))
        if mode == "region":
            yield part.drop_vars(["time", "lat"]), {"region": {"time": slice(2, 4)}}
        else:
            yield part.drop_vars("lat"), {"region": "auto"}
    else:
        yield run, {"mode": "w"}
        yield changed, {"mode": mode}


def assert_same_stores(ours: str, theirs: str, options: dict[str, Any] | None) -> None:
    """Both stores, read by both engines, agree in stored numbers, decoded times and attributes.

    ``options``: the storage options of ``ours`` (``theirs`` is local).
    """
    for engine in ENGINES:
        for use_cftime in (False, True):  # False: the stored numbers, undecoded
            a = open_with(engine, ours, use_cftime, storage_options=options)
            b = open_with(engine, theirs, use_cftime)
            xr.testing.assert_identical(a, b)
            for name in a.variables:
                assert a[name].encoding.get("dtype") == b[name].encoding.get("dtype"), (engine, name)


def run_both(
    mode: str, run: xr.Dataset, ours: str, theirs: str, options: dict[str, Any] | None = None
) -> None:
    """The writes of ``mode`` to ``ours`` through to_zarr3 and to the local ``theirs`` through engine="zarr"."""
    for ds, kwargs in writes(mode, run):
        write("zarr3", ds, ours, options, **kwargs)
        write("zarr", ds, theirs, None, **kwargs)
    assert_same_stores(ours, theirs, options)


#: Default decoding gives numpy times for these; for the others it gives cftime dates, as use_cftime=True.
NUMPY_CALENDARS = ["standard", "proleptic_gregorian"]
DECODINGS = [(c, True) for c in CALENDARS] + [(c, None) for c in NUMPY_CALENDARS]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("calendar", "use_cftime"), DECODINGS, ids=[f"{c}-{'cftime' if u else 'default'}" for c, u in DECODINGS]
)
def test_each_calendar_and_mode_matches_engine_zarr(
    calendar: str, use_cftime: bool | None, mode: str, tmp_path: Path
) -> None:
    run = decoded(model_run(calendar), tmp_path / "source.zarr", use_cftime)
    ours = str(tmp_path / "ours.zarr")
    run_both(mode, run, ours, str(tmp_path / "theirs.zarr"))
    back = open_with("zarr3", ours, True)
    assert back.time.encoding["calendar"] == calendar
    assert back.time.size == 6 and back.time.values[-1] == model_run(calendar).time.values[-1]


@pytest.mark.parametrize("calendar", ALIASES)
def test_calendar_aliases_append_as_engine_zarr(calendar: str, tmp_path: Path) -> None:
    run_both("append", model_run(calendar), str(tmp_path / "ours.zarr"), str(tmp_path / "theirs.zarr"))


#: Two (calendar, mode) pairs per calendar and per mode, in two rotations: how times are encoded does not
#: depend on the store, which every calendar and every mode meets twice on S3 (the local test above takes
#: every pair; all 36 on S3 took about 45 s of the suite).
S3_PAIRS = [
    *zip(CALENDARS, MODES, strict=True),
    *zip(CALENDARS, MODES[3:] + MODES[:3], strict=True),
]


@pytest.mark.parametrize(("calendar", "mode"), S3_PAIRS, ids=[f"{c}-{m}" for c, m in S3_PAIRS])
def test_each_calendar_and_mode_matches_engine_zarr_on_s3(
    calendar: str, mode: str, s3_url: str, s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    """On moto S3, compared with engine="zarr"'s local store of the same writes."""
    run_both(
        mode, model_run(calendar), f"{s3_url}/{mode}.zarr", str(tmp_path / f"{mode}.zarr"), s3_storage_options
    )
