"""Parity: stores written by xarray's to_zarr(zarr_format=3) open identically with engine="zarr3" and "zarr"."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr

pytest.importorskip("zarr")
pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning", "ignore::FutureWarning"),
]

ENCODING_KEYS_COMPARED = (
    "chunks",
    "shards",
    "fill_value",
    "dtype",
    "units",
    "calendar",
    "_FillValue",
    "scale_factor",
    "add_offset",
    "coordinates",
)


def floats() -> tuple[xr.Dataset, dict[str, Any]]:
    rng = np.random.default_rng(0)
    data = rng.random((6, 5, 4)).astype("float32")
    data[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), data, {"units": "K", "long_name": "temperature"}),
            "f64": (("lat",), rng.random(5)),
            "f16": (("lon",), np.array([1, 2, np.nan, 4], "float16")),
        },
        coords={"time": np.arange(6), "lat": np.linspace(-60, 60, 5), "lon": np.arange(4.0)},
        attrs={"title": "floats", "history": ["a", "b"], "nested": {"k": 1}},
    )
    return ds, {}


def sharded() -> tuple[xr.Dataset, dict[str, Any]]:
    ds, _ = floats()
    return ds, {"t2m": {"chunks": (2, 5, 2), "shards": (6, 5, 4)}, "lat": {"chunks": (2,), "shards": (4,)}}


def strings() -> tuple[xr.Dataset, dict[str, Any]]:
    ds = xr.Dataset(
        {
            "fixed": (("station",), np.array(["a", "bb", "ccc"])),
            "vlen": (("station",), np.array(["x", "yy", ""], dtype=object)),
        },
        coords={"station": ["s1", "s2", "s3"]},
    )
    return ds, {}


def fixed_bytes() -> tuple[xr.Dataset, dict[str, Any]]:
    return xr.Dataset({"bytes": (("station",), np.array([b"p", b"qq", b"r"]))}), {}


def times() -> tuple[xr.Dataset, dict[str, Any]]:
    t = pd.date_range("2000-01-01", periods=5, freq="6h").values.copy()
    t[2] = np.datetime64("NaT")
    ds = xr.Dataset(
        {
            "when": (("n",), t),
            "dt": (("n",), np.array([1, 2, 3, 4, 5], "timedelta64[h]").astype("m8[ns]")),
            "v": (("time",), np.arange(4.0)),
        },
        coords={"time": pd.date_range("1999-12-30", periods=4, freq="D")},
    )
    ds["v"].encoding["units"] = "hours since 1999-01-01"
    return ds, {"time": {"units": "days since 1990-01-01", "dtype": "int32"}}


def cf_ints() -> tuple[xr.Dataset, dict[str, Any]]:
    ds = xr.Dataset(
        {
            "packed": (("x",), np.array([1.5, np.nan, -3.25, 10.0])),
            "flag": (("x",), np.array([1, 2, 255, 0], "uint8"), {"_FillValue": 255}),
            "i64": (("x",), np.array([1, -2, 3, 4], "int64")),
            "b": (("x",), np.array([True, False, True, True])),
            "c": (("x",), np.array([1 + 2j, 0, np.nan, 3j], "complex128")),
        },
    )
    encoding = {"packed": {"dtype": "int16", "scale_factor": 0.25, "add_offset": 1.0, "_FillValue": -32768}}
    return ds, encoding


def coords() -> tuple[xr.Dataset, dict[str, Any]]:
    lat = np.linspace(10, 20, 3)
    ds = xr.Dataset(
        {"v": (("y", "x"), np.arange(12.0).reshape(3, 4))},
        coords={
            "lat2d": (("y", "x"), np.repeat(lat, 4).reshape(3, 4)),
            "lon2d": (("y", "x"), np.ones((3, 4))),
            "height": ((), 2.0),
            "x": [1, 2, 3, 4],
        },
    )
    return ds, {}


CASES: dict[str, Any] = {
    "floats": floats,
    "sharded": sharded,
    "strings": strings,
    "times": times,
    "cf_ints": cf_ints,
    "coords": coords,
    "fixed_bytes": fixed_bytes,
}


def write(ds: xr.Dataset, encoding: dict[str, Any], path: Path, consolidated: bool) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=3, mode="w", encoding=encoding, consolidated=consolidated)
    return path


def assert_parity(expected: xr.Dataset, actual: xr.Dataset) -> None:
    xr.testing.assert_identical(expected, actual)
    for name, variable in expected.variables.items():
        other = actual.variables[name]
        assert other.dtype == variable.dtype, name
        for key in ENCODING_KEYS_COMPARED:
            if key in variable.encoding:
                np.testing.assert_equal(other.encoding[key], variable.encoding[key], err_msg=f"{name}: {key}")
    xr.testing.assert_identical(expected.load(), actual.load())


@pytest.mark.parametrize("consolidated", [False, True], ids=["plain", "consolidated"])
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_open_dataset_parity(case: Any, consolidated: bool, tmp_path: Path) -> None:
    path = write(*case(), tmp_path / "p.zarr", consolidated)
    assert_parity(xr.open_dataset(path, engine="zarr"), xr.open_dataset(path, engine="zarr3"))


@pytest.mark.parametrize(
    "options",
    [
        {"decode_times": False},
        {"mask_and_scale": False},
        {"decode_coords": "all"},
        {"decode_cf": False},
        {"drop_variables": ["v", "lat2d"]},
        {"decode_timedelta": False},
    ],
)
@pytest.mark.parametrize("case", ["times", "cf_ints", "coords"])
def test_decode_options_parity(case: str, options: dict[str, Any], tmp_path: Path) -> None:
    path = write(*CASES[case](), tmp_path / "p.zarr", False)
    assert_parity(
        xr.open_dataset(path, engine="zarr", **options), xr.open_dataset(path, engine="zarr3", **options)
    )


def test_dask_chunked_parity(tmp_path: Path) -> None:
    path = write(*sharded(), tmp_path / "p.zarr", False)
    expected, actual = (xr.open_dataset(path, engine=e, chunks={}) for e in ("zarr", "zarr3"))
    assert actual.t2m.chunks == ((6,), (5,), (4,)) and expected.t2m.chunks == ((2,) * 3, (5,), (2, 2))
    assert_parity(expected, actual)


def nested_tree() -> xr.DataTree:
    ds, _ = floats()
    strings_ds, _ = strings()
    times_ds, _ = times()
    return xr.DataTree.from_dict(
        {
            "/": ds[["f64"]].assign_attrs(root=1),
            "/a": strings_ds,
            "/a/b": times_ds,
            "/c": xr.Dataset(attrs={"empty": True}),
        }
    )


@pytest.mark.parametrize("consolidated", [False, True], ids=["plain", "consolidated"])
def test_datatree_parity(consolidated: bool, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nested_tree().to_zarr(tmp_path / "t.zarr", zarr_format=3, mode="w", consolidated=consolidated)
    expected, actual = (xr.open_datatree(tmp_path / "t.zarr", engine=e) for e in ("zarr", "zarr3"))
    xr.testing.assert_identical(expected, actual)
    xr.testing.assert_identical(expected.load(), actual.load())
    sub = [xr.open_datatree(tmp_path / "t.zarr", engine=e, group="a") for e in ("zarr", "zarr3")]
    xr.testing.assert_identical(*sub)
    groups = [xr.open_groups(tmp_path / "t.zarr", engine=e) for e in ("zarr", "zarr3")]
    assert set(groups[0]) == set(groups[1])
    for name in groups[0]:
        xr.testing.assert_identical(groups[0][name], groups[1][name])
    assert_parity(*(xr.open_dataset(tmp_path / "t.zarr", engine=e, group="a/b") for e in ("zarr", "zarr3")))
