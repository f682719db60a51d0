"""Parity with engine="zarr" on what users round-trip: strings on append, CF encodings, read-side encoding, DataArrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend import WriteError

pytest.importorskip("zarr")
pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning", "ignore::FutureWarning"),
]


# --- item 1: no silent truncation of strings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "longer", "unit"),
    [
        (np.array(["ab", "cd"]), np.array(["abc", "ghijk"]), "U"),
        (np.array([b"ab", b"cd"]), np.array([b"abc", b"ghijk"]), "S"),
        (np.array(["ab", "cd"]), np.array(["abc", "ghijk"], dtype=object), "O"),
    ],
)
def test_append_of_longer_strings_raises_like_the_zarr_engine(tmp_path: Path, first, longer, unit) -> None:  # type: ignore[no-untyped-def]
    if unit != "O":  # engine="zarr" truncates object strings silently; we refuse them too
        xr.Dataset({"s": ("t", first)}).to_zarr(tmp_path / "oracle.zarr", zarr_format=3)
        with pytest.raises(ValueError):
            xr.Dataset({"s": ("t", longer)}).to_zarr(tmp_path / "oracle.zarr", append_dim="t")
    xr.Dataset({"s": ("t", first)}).to_zarr3(tmp_path / "a.zarr")
    with pytest.raises(
        WriteError,
        match=r"variable 's' holds strings of up to 5 characters, but the stored array has fixed length 2",
    ):
        xr.Dataset({"s": ("t", longer)}).to_zarr3(tmp_path / "a.zarr", append_dim="t")
    back = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3")
    np.testing.assert_array_equal(back.s.values, first)  # nothing was written


@pytest.mark.parametrize(
    ("first", "longer"),
    [
        (np.array(["ab", "cd"]), np.array(["a", "b", "abc", "ghijk"], dtype=object)),
        (np.array([b"ab", b"cd"]), np.array([b"a", b"b", b"abc", b"ghijk"], dtype=object)),
    ],
    ids=["str", "bytes"],
)
def test_dask_object_strings_longer_than_stored_raise_and_roll_back(tmp_path: Path, first, longer) -> None:  # type: ignore[no-untyped-def]
    xr.Dataset({"s": ("t", first)}).to_zarr3(tmp_path / "a.zarr")
    lazy = xr.Dataset({"s": ("t", longer)}).chunk({"t": 2})  # only the second block is too long
    with pytest.raises(
        WriteError,
        match=r"variable 's' holds strings of up to 5 characters, but the stored array has fixed length 2",
    ):
        lazy.to_zarr3(tmp_path / "a.zarr", append_dim="t")
    np.testing.assert_array_equal(
        xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").s.values, first
    )  # rolled back
    with pytest.raises(WriteError, match=r"'s' holds strings of up to 5 characters.*fixed length 2"):
        lazy.isel(t=slice(2, 4)).to_zarr3(tmp_path / "a.zarr", region={"t": slice(0, 2)})
    np.testing.assert_array_equal(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").s.values, first)
    lazy.isel(t=slice(0, 2)).to_zarr3(
        tmp_path / "a.zarr", append_dim="t"
    )  # strings that fit still append lazily
    assert list(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").s.values) == [
        *first,
        *longer[:2].astype(first.dtype),
    ]


def test_strings_appended_to_a_numeric_variable_raise_naming_it(tmp_path: Path) -> None:
    first = xr.Dataset({"v": ("t", np.zeros(2))})
    strings = xr.Dataset({"v": ("t", np.array(["a", "b"]))})
    first.to_zarr(tmp_path / "oracle.zarr", zarr_format=3)
    with pytest.raises(ValueError):
        strings.to_zarr(tmp_path / "oracle.zarr", append_dim="t")
    first.to_zarr3(tmp_path / "a.zarr")
    with pytest.raises(
        WriteError, match=r"variable 'v' holds strings \(<U1\), but the stored array has data type float64"
    ):
        strings.to_zarr3(tmp_path / "a.zarr", append_dim="t")
    assert xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").sizes["t"] == 2


def test_region_write_of_longer_strings_raises(tmp_path: Path) -> None:
    xr.Dataset({"s": ("t", np.array(["ab", "cd", "ef"]))}).to_zarr3(tmp_path / "a.zarr")
    with pytest.raises(WriteError, match=r"'s' holds strings of up to 3 characters.*fixed length 2"):
        xr.Dataset({"s": ("t", np.array(["xyz"]))}).to_zarr3(tmp_path / "a.zarr", region={"t": slice(1, 2)})
    xr.Dataset({"s": ("t", np.array(["x"]))}).to_zarr3(
        tmp_path / "a.zarr", region={"t": slice(1, 2)}
    )  # shorter fits
    np.testing.assert_array_equal(
        xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").s.values, ["ab", "x", "ef"]
    )


def test_object_strings_are_variable_length_and_append_any_length(tmp_path: Path) -> None:
    xr.Dataset({"s": ("t", np.array(["ab", "cd"], dtype=object))}).to_zarr3(tmp_path / "a.zarr")
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "s").metadata.data_type.name == "string"
    xr.Dataset({"s": ("t", np.array(["abc", "ghijk"], dtype=object))}).to_zarr3(
        tmp_path / "a.zarr", append_dim="t"
    )
    for engine in ("zarr3", "zarr"):
        values = xr.open_dataset(tmp_path / "a.zarr", engine=engine).s.values
        assert [str(v) for v in values] == ["ab", "cd", "abc", "ghijk"]


# --- item 3: CF encoding keys -------------------------------------------------------------------------------------------


def cf_dataset() -> xr.Dataset:
    return xr.Dataset(
        {
            "x": ("t", np.array([1.0, np.nan, 3.0])),
            "time": ("t", pd.date_range("2000-01-01", periods=3).values),
        },
    )


@pytest.mark.parametrize(
    "encoding",
    [
        {"x": {"_FillValue": None}},
        {"x": {"_FillValue": -1, "dtype": "int16", "scale_factor": 0.1, "add_offset": 1.0}},
        {"time": {"units": "days since 2000-01-01", "calendar": "standard", "dtype": "int32"}},
        {"time": {"units": "hours since 1999-12-31"}, "x": {"dtype": "float32", "_FillValue": -9.0}},
        {"x": {"missing_value": -9.0, "_FillValue": -9.0}},
    ],
    ids=["fill-none", "packed", "time-units", "float32-fill", "missing-value"],
)
def test_cf_encoding_keys_are_honoured_like_the_zarr_engine(tmp_path: Path, encoding) -> None:  # type: ignore[no-untyped-def]
    ds = cf_dataset()
    ds.to_zarr(tmp_path / "oracle.zarr", zarr_format=3, encoding=encoding)
    ds.to_zarr3(tmp_path / "ours.zarr", encoding=encoding)
    for decode_cf in (True, False):
        theirs = xr.open_dataset(tmp_path / "oracle.zarr", engine="zarr", decode_cf=decode_cf).load()
        ours = xr.open_dataset(tmp_path / "ours.zarr", engine="zarr3", decode_cf=decode_cf).load()
        xr.testing.assert_identical(ours, theirs)
        for name in ours.variables:
            assert ours[name].dtype == theirs[name].dtype


def test_fill_value_none_writes_no_fill_value_attribute(tmp_path: Path) -> None:
    cf_dataset().to_zarr3(tmp_path / "a.zarr", encoding={"x": {"_FillValue": None}})
    assert "_FillValue" not in zarr3_backend.open_array(tmp_path / "a.zarr", "x").metadata.attributes
    cf_dataset().to_zarr3(tmp_path / "b.zarr")
    assert "_FillValue" in zarr3_backend.open_array(tmp_path / "b.zarr", "x").metadata.attributes


# --- item 4: read-side encoding -----------------------------------------------------------------------------------------


def _as_json(value):  # type: ignore[no-untyped-def]
    if isinstance(value, tuple | list):
        return [_as_json(v) for v in value]
    return value.to_dict() if hasattr(value, "to_dict") else value


CODEC_KEYS = ("compressors", "serializer", "filters")


@pytest.mark.parametrize(
    "encoding",
    [
        {},
        {"v": {"chunks": (2, 4), "shards": (4, 4)}},
        {"v": {"compressors": [{"name": "gzip", "configuration": {"level": 3}}]}},
        {"v": {"compressors": [], "chunks": (3, 2)}},
    ],
    ids=["default", "sharded", "gzip", "uncompressed"],
)
def test_read_encoding_has_codecs_in_the_zarr_engine_form(tmp_path: Path, encoding) -> None:  # type: ignore[no-untyped-def]
    ds = xr.Dataset({"v": (("t", "x"), np.arange(24.0).reshape(6, 4))})
    ds.to_zarr(tmp_path / "a.zarr", zarr_format=3, encoding=encoding)
    ours = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").v.encoding
    theirs = xr.open_dataset(tmp_path / "a.zarr", engine="zarr").v.encoding
    for key in CODEC_KEYS:
        assert (
            type(ours[key]) is type(theirs[key]) or key == "serializer"
        )  # tuples for filters and compressors
        assert _as_json(ours[key]) == _as_json(theirs[key]), key
    assert ours["shards"] == theirs["shards"] and ours["chunks"] == theirs["chunks"]


def test_read_encoding_round_trips_and_survives_append(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": (("t", "x"), np.arange(24.0).reshape(6, 4))}, coords={"t": np.arange(6)})
    encoding = {
        "v": {
            "chunks": (2, 2),
            "shards": (6, 4),
            "compressors": [{"name": "gzip", "configuration": {"level": 2}}],
        }
    }
    ds.to_zarr3(tmp_path / "a.zarr", encoding=encoding)
    first = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3")
    first.to_zarr3(tmp_path / "b.zarr")
    second = xr.open_dataset(tmp_path / "b.zarr", engine="zarr3")
    keys = ("chunks", "shards", "codecs", *CODEC_KEYS, "index_location", "chunk_key_encoding", "dtype")
    assert {k: second.v.encoding[k] for k in keys} == {k: first.v.encoding[k] for k in keys}
    assert (
        zarr3_backend.open_array(tmp_path / "b.zarr", "v").metadata.codecs
        == zarr3_backend.open_array(tmp_path / "a.zarr", "v").metadata.codecs
    )
    ds.assign_coords(t=np.arange(6, 12)).to_zarr3(tmp_path / "a.zarr", append_dim="t")
    appended = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3")
    assert appended.sizes["t"] == 12
    assert {k: appended.v.encoding[k] for k in keys} == {k: first.v.encoding[k] for k in keys}
    assert np.isnan(appended.v.encoding["fill_value"]) and np.isnan(second.v.encoding["fill_value"])


def test_encoding_read_by_the_zarr_engine_writes_with_to_zarr3(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": (("t",), np.arange(8.0))})
    ds.to_zarr(tmp_path / "a.zarr", zarr_format=3, encoding={"v": {"chunks": (2,), "shards": (4,)}})
    opened = xr.open_dataset(tmp_path / "a.zarr", engine="zarr")  # zarr-python codec objects in encoding
    opened.to_zarr3(tmp_path / "b.zarr")
    array = zarr3_backend.open_array(tmp_path / "b.zarr", "v")
    assert (array.chunks, array.shards) == ((2,), (4,))
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "b.zarr", engine="zarr").load(), ds)


# --- item 8: DataArrays without a usable name -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: xr.DataArray(np.arange(3)),
        lambda: xr.DataArray(np.arange(3.0), dims="x", coords={"x": [10, 20, 30]}, name="x"),
        lambda: xr.DataArray(
            np.arange(6.0).reshape(2, 3), dims=("y", "x"), coords={"lat": ("y", [1.0, 2.0])}, name="lat"
        ),
        lambda: xr.DataArray(np.arange(3.0), dims="x", name="plain"),
    ],
    ids=["unnamed", "named-like-index", "named-like-coordinate", "plain"],
)
def test_dataarrays_round_trip_through_open_dataarray(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    da = make()
    da.to_zarr3(tmp_path / "ours.zarr")
    da.to_zarr(tmp_path / "oracle.zarr", zarr_format=3)
    for store, engine in (("ours.zarr", "zarr3"), ("ours.zarr", "zarr"), ("oracle.zarr", "zarr3")):
        back = xr.open_dataarray(tmp_path / store, engine=engine).load()
        xr.testing.assert_identical(back, da)
        assert back.name == da.name
    nodes = {p.name for p in (tmp_path / "ours.zarr").iterdir() if p.is_dir()}
    assert not any(n.startswith("__") for n in nodes)
