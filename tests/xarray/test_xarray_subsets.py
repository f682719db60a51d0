"""Selections read only the inner chunks they touch (issue 35), and the ``preferred_chunks`` option.

Reads are counted twice: inner chunks decoded (every decode goes through
``DecodeJob.run``) and bytes fetched (a :class:`CountingStore`).
"""

from __future__ import annotations

import pickle
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.codecs import read_plan
from zarr3_backend.errors import ArgumentError
from zarr3_backend.store import make_store
from zarr3_backend.synthetic import era5_like
from zarr3_backend.testing.stores import CountingStore
from zarr3_backend.xarray import dask_slices
from zarr3_backend.xarray.dask_slices import PushSelections

INNER, SHARD = (10, 23, 45), (20, 46, 90)
EUROPE = {"latitude": slice(72, 35), "longitude": slice(0, 40)}


@pytest.fixture(scope="module")
def era5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 days on a 4-degree grid: one shard per variable, 2 x 2 x 2 inner chunks; the Europe box touches 2 of them."""
    path = tmp_path_factory.mktemp("subsets") / "era5.zarr"
    ds = era5_like(days=20, nlat=46, nlon=90).drop_vars("lsm")
    ds.to_zarr3(path, encoding={name: {"chunks": INNER, "shards": SHARD} for name in ds.data_vars})
    return path


class Decoded:
    """The inner chunks decoded while counting, as ``"<shard key> inner chunk (i, j, k)"``."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.lock = threading.Lock()

    def of(self, array: str) -> set[str]:
        return set(self.all_of(array))

    def all_of(self, array: str) -> list[str]:
        return [where for where in self.chunks if where.startswith(f"{array}/")]


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Decoded]:
    seen = Decoded()
    run = read_plan.DecodeJob.run

    def counting_run(self: read_plan.DecodeJob, out: np.ndarray) -> None:
        if self.data is not None:
            with seen.lock:
                seen.chunks.append(self.where)
        run(self, out)

    monkeypatch.setattr(read_plan.DecodeJob, "run", counting_run)
    yield seen


def touched(ds: xr.Dataset, selection: dict[str, slice], array: str = "t2m") -> set[str]:
    """The inner chunks of ``array`` a label selection intersects, named as the sharding codec names them."""
    positions = [np.flatnonzero(ds.indexes[d].isin(ds.sel(selection).indexes[d])) for d in ds[array].dims]
    coords = {
        tuple(int(p) // n for p, n in zip(point, INNER))
        for point in np.stack(np.meshgrid(*positions), -1).reshape(-1, 3)
    }
    return {f"{array}/c/0/0/0 inner chunk {c}" for c in coords}


def europe_mean(ds: xr.Dataset) -> xr.DataArray:
    box = ds.t2m.sel(EUROPE)
    return box.weighted(np.cos(np.deg2rad(box.latitude))).mean(("latitude", "longitude"))


# -- what a selection reads ----------------------------------------------------
def test_lazy_selection_without_dask_decodes_only_touched_chunks(era5: Path, decoded: Decoded) -> None:
    ds = xr.open_dataset(era5, engine="zarr3")
    box = ds.t2m.sel(EUROPE).values
    expected = touched(ds, EUROPE)
    assert decoded.of("t2m") == expected and len(decoded.of("t2m")) == 2 < 8
    np.testing.assert_array_equal(box, xr.open_dataset(era5, engine="zarr").t2m.sel(EUROPE).values)


@pytest.mark.parametrize("inline_array", [False, True])
def test_europe_box_through_shard_chunks_decodes_only_touched_chunks(
    era5: Path, decoded: Decoded, inline_array: bool
) -> None:
    ds = xr.open_dataset(era5, engine="zarr3", chunks={}, inline_array=inline_array)
    assert ds.t2m.chunks == tuple((n,) for n in SHARD)  # one task per shard
    result = europe_mean(ds).values
    assert (
        decoded.of("t2m") == touched(ds, EUROPE) and len(decoded.all_of("t2m")) == 2
    )  # each once (used twice)
    reference = europe_mean(xr.open_dataset(era5, engine="zarr", chunks={})).values
    np.testing.assert_allclose(result, reference, rtol=1e-6)
    np.testing.assert_array_equal(
        ds.t2m.sel(EUROPE).values, xr.open_dataset(era5, engine="zarr").t2m.sel(EUROPE).values
    )


def test_integer_and_several_selections_of_one_shard(era5: Path, decoded: Decoded) -> None:
    ds = xr.open_dataset(era5, engine="zarr3", chunks={})
    plain = xr.open_dataset(era5, engine="zarr3")
    day = ds.t2m.isel(time=3).sel(EUROPE)
    np.testing.assert_array_equal(day.values, plain.t2m.isel(time=3).sel(EUROPE).values)
    assert decoded.of("t2m") == {"t2m/c/0/0/0 inner chunk (0, 0, 0)"}
    decoded.chunks.clear()
    early, late = ds.t2m.isel(time=slice(0, 5)).sel(EUROPE), ds.t2m.isel(time=slice(15, 20)).sel(EUROPE)
    difference = (early.data - late.data).compute()
    assert decoded.of("t2m") == touched(ds, EUROPE) and len(decoded.all_of("t2m")) == 2
    np.testing.assert_array_equal(
        difference,
        plain.t2m.isel(time=slice(0, 5)).sel(EUROPE).values
        - plain.t2m.isel(time=slice(15, 20)).sel(EUROPE).values,
    )


def test_block_needed_whole_is_read_once(era5: Path, decoded: Decoded) -> None:
    plain = xr.open_dataset(era5, engine="zarr3")
    expected = plain.t2m.sel(EUROPE).mean().values + plain.t2m.mean().values
    decoded.chunks.clear()
    ds = xr.open_dataset(era5, engine="zarr3", chunks={})
    np.testing.assert_allclose((ds.t2m.sel(EUROPE).mean() + ds.t2m.mean()).values, expected, rtol=1e-6)
    assert len(decoded.all_of("t2m")) == len(decoded.of("t2m")) == 8  # the whole shard, once


@pytest.mark.parametrize("selection", [
    {"latitude": slice(None, None, -1)}, {"latitude": slice(40, 5, -3), "time": slice(1, 19, 4)},
    {"time": -1, "longitude": slice(-5, None)}, {"time": slice(5, 5)},
])  # fmt: skip
def test_strided_reversed_and_empty_selections_of_shard_chunks(era5: Path, selection: dict[str, Any]) -> None:
    lazy = xr.open_dataset(era5, engine="zarr3", chunks={}).t2m.isel(selection)
    plain = xr.open_dataset(era5, engine="zarr3").t2m.isel(selection)
    np.testing.assert_array_equal(
        (lazy - lazy.mean()).values, (plain - plain.mean()).values
    )  # the selection used twice


def test_fancy_selection_of_shard_chunks_still_correct(era5: Path) -> None:
    ds = xr.open_dataset(era5, engine="zarr3", chunks={})
    picked = ds.t2m.isel(time=[1, 7, 18], longitude=[0, 50, 3]).values
    np.testing.assert_array_equal(
        picked, xr.open_dataset(era5, engine="zarr3").t2m.values[[1, 7, 18]][:, :, [0, 50, 3]]
    )


def test_bytes_fetched_are_those_of_touched_chunks(tmp_path: Path) -> None:
    """Uncompressed 1 MiB inner chunks, far apart in their shard: a box fetches its chunks' bytes and the indexes."""
    values = np.random.default_rng(0).random((4, 1024, 1024), dtype=np.float32)
    g = zarr3_backend.create_group(str(tmp_path / "big.zarr"))
    v = g.create_array(
        "v",
        shape=values.shape,
        dtype="float32",
        chunks=(1, 512, 512),
        shards=(2, 1024, 1024),
        compressors=None,
        dimension_names=["t", "y", "x"],
    )
    v[...] = values
    for chunks in ({}, None):
        store = CountingStore(make_store(str(tmp_path / "big.zarr"), read_only=True))
        ds = xr.open_dataset(store, engine="zarr3", chunks=chunks)
        store.reset()
        box = ds.v.isel(y=slice(10, 100), x=slice(600, 700))
        expected = values[:, 10:100, 600:700]
        np.testing.assert_allclose(
            (box - box.mean("t")).std("t").values, (expected - expected.mean(0)).std(0), rtol=1e-5
        )
        fetched = sum(_size(store, key, r) for key, r in store.requests)
        index = sum(_size(store, key, r) for key, r in store.requests if r is not None and r.start < 0)
        assert fetched - index == 4 * 512 * 512 * 4  # one inner chunk per time step, nothing else
        assert index <= 2 * 4 * (16 * 2 + 4)  # a shard index: 8 (offset, length) pairs + crc32c


def _size(store: CountingStore, key: str, byte_range: Any) -> int:
    whole = len(store.inner.get(key) or b"")
    if byte_range is None:
        return whole
    start = byte_range.start if byte_range.start >= 0 else whole + byte_range.start
    end = whole if byte_range.end is None else byte_range.end
    return end - start


# -- the pass itself -----------------------------------------------------------
def test_install_keeps_the_optimization_in_force() -> None:
    def custom(dsk: Any, keys: Any, **kwargs: Any) -> Any:
        return dsk

    with dask.config.set(array_optimize=custom):
        dask_slices.install()
        dask_slices.install()
        installed = dask.config.get("array_optimize")
        assert isinstance(installed, PushSelections) and installed.inner is custom
    with dask.config.set(array_optimize=False):
        dask_slices.install()
        assert dask.config.get("array_optimize") is False
    assert pickle.loads(pickle.dumps(PushSelections())) == PushSelections()


def test_graphs_without_our_arrays_are_unchanged() -> None:
    import dask.array as da

    x = da.from_array(np.arange(100.0).reshape(10, 10), chunks=5)[2:7]
    y = x + x.sum()
    graph = dict(dask.array.optimization.optimize(y.__dask_graph__(), y.__dask_keys__()))
    assert dask_slices.push_selections(graph, y.__dask_keys__()) == graph


# -- preferred_chunks ----------------------------------------------------------
@pytest.mark.parametrize(("choice", "chunk"), [
    ("shard", SHARD), ("inner", INNER), (2, (20, 46, 90)), ({"time": 2}, (20, 23, 45)), ({"longitude": 9}, (10, 23, 90)),
])  # fmt: skip
def test_preferred_chunks_option(era5: Path, choice: Any, chunk: tuple[int, ...]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_dataset(era5, engine="zarr3", chunks={}, preferred_chunks=choice)
    assert ds.t2m.data.chunksize == chunk
    assert ds.t2m.encoding["preferred_chunks"] == dict(zip(ds.t2m.dims, chunk))
    assert ds.t2m.encoding["chunks"] == INNER and ds.t2m.encoding["shards"] == SHARD


def test_inner_preferred_chunks_allow_multiples_without_warnings(era5: Path, decoded: Decoded) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_dataset(
            era5, engine="zarr3", chunks={"time": 20, "latitude": 23}, preferred_chunks="inner"
        )
    assert ds.t2m.data.chunksize == (20, 23, 45)
    with pytest.warns(UserWarning, match="degrade performance"):
        xr.open_dataset(
            era5, engine="zarr3", chunks={"time": 20, "latitude": 23}
        )  # splits the default (shard) chunks
    _ = europe_mean(ds).values
    assert decoded.of("t2m") == touched(ds, EUROPE)


def test_preferred_chunks_on_datatree_and_errors(era5: Path) -> None:
    tree = xr.open_datatree(era5, engine="zarr3", chunks={}, preferred_chunks="inner")
    assert tree["t2m"].data.chunksize == INNER
    for bad in ("whole", 0, -1, True, 1.5, {"time": 0}):
        with pytest.raises(ArgumentError, match="expected 'shard', 'inner'"):
            xr.open_dataset(era5, engine="zarr3", preferred_chunks=bad)
    with pytest.raises(ArgumentError, match="no dimension 'tme'.*'time'"):
        xr.open_dataset(era5, engine="zarr3", preferred_chunks={"tme": 2})
