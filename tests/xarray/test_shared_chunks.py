"""One chunking per dataset: variables sharing a dimension and its stored chunking get the same dask chunks.

A float32 and an int16 variable stored in the same 30-day chunks used to get
240-day and 480-day dask chunks from a v2 store (grouped by each variable's
bytes), and different shards from ``convert``; ``ds.chunks`` then raised.
Small byte targets stand in for the real ones, so the data stays small.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.conversion import plan as convert_plan
from zarr3_backend.xarray import read_encoding

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"),
]
DAYS, CHUNK = 730, (30, 10, 10)  # 730 days stored in 30-day chunks: 12 kB of float32, 6 kB of int16


def era5_like() -> xr.Dataset:
    rng = np.random.default_rng(0)
    dims = ("time", "lat", "lon")
    return xr.Dataset(
        {
            "t2m": (dims, rng.normal(280, 10, (DAYS, 10, 10)).astype("float32")),
            "tp": (dims, rng.integers(0, 500, (DAYS, 10, 10)).astype("int16")),
        },
        coords={
            "time": pd.date_range("2000-01-01", periods=DAYS),
            "lat": np.arange(10.0),
            "lon": np.arange(10.0),
        },
    )


def chunked(path: Path, **options: object) -> xr.Dataset:
    return xr.open_dataset(path, engine="zarr3", chunks={}, **options)


def assert_one_chunking(ds: xr.Dataset) -> None:
    assert ds.t2m.chunks == ds.tp.chunks
    assert dict(ds.chunks) == dict(ds.unify_chunks().chunks)
    xr.testing.assert_identical(ds.load(), era5_like())


@pytest.fixture
def v2_store(tmp_path: Path) -> Path:
    path = tmp_path / "era5_v2.zarr"
    encoding = {name: {"chunks": CHUNK} for name in ("t2m", "tp")}
    era5_like().to_zarr(path, zarr_format=2, encoding=encoding, consolidated=True)
    return path


def test_a_v2_store_opens_with_one_chunking_for_mixed_dtypes(
    v2_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_encoding, "V2_TASK_BYTES", 100_000)  # 8 float32 chunks, 16 int16 chunks
    ds = chunked(v2_store)
    assert ds.chunks["time"][0] == 240  # the smaller grouping, so no variable's task outgrows the target
    assert_one_chunking(ds)


@pytest.mark.parametrize("preferred", ["shard", "inner", 4])
def test_a_v3_store_opens_with_one_chunking_for_mixed_dtypes(tmp_path: Path, preferred: object) -> None:
    path = tmp_path / "era5_v3.zarr"
    encoding = {name: {"chunks": CHUNK, "shards": (120, 10, 10)} for name in ("t2m", "tp")}
    era5_like().to_zarr3(path, encoding=encoding)
    assert_one_chunking(chunked(path, preferred_chunks=preferred))


def test_convert_gives_mixed_dtypes_one_shard_shape(
    v2_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(convert_plan, "SHARD_TARGET_BYTES", 100_000)
    dst = tmp_path / "converted.zarr"
    zarr3_backend.convert(v2_store, dst)
    shards = {name: zarr3_backend.open_array(dst, name).shards for name in ("t2m", "tp")}
    assert shards == {"t2m": (240, 10, 10), "tp": (240, 10, 10)}
    assert_one_chunking(chunked(dst))


def test_convert_says_why_a_shard_is_longer_than_its_array(
    v2_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(convert_plan, "SHARD_TARGET_BYTES", 10 << 20)  # the whole time axis fits one shard
    summary = zarr3_backend.convert(v2_store, tmp_path / "converted.zarr")
    assert zarr3_backend.open_array(tmp_path / "converted.zarr", "t2m").shards == (750, 10, 10)
    assert sorted(note.split(":")[0] for note in summary.notes) == ["t2m", "tp"]
    assert all("750" in note and "730" in note and "whole inner chunks" in note for note in summary.notes)
    assert_one_chunking(chunked(tmp_path / "converted.zarr"))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_the_convert_tests_stores_open_with_one_chunking(tmp_path: Path, zarr_format: int) -> None:
    """``ds.chunks`` is defined after ``chunks={}`` on the stores the convert tests write, before and after."""
    from tests.conversion.test_convert import dataset

    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    dataset().to_zarr(src, zarr_format=zarr_format, consolidated=True)
    zarr3_backend.convert(src, dst)
    for path in (src, dst):
        ds = chunked(path)
        assert dict(ds.chunks) == dict(ds.unify_chunks().chunks)
