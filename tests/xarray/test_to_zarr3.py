"""Dataset/DataArray/DataTree.to_zarr3 on the local (threaded) scheduler.

Every output is read back with xarray's own zarr engine (zarr-python) and,
when available, ``engine="zarr3"``; metadata is compared with what
``xarray.Dataset.to_zarr(zarr_format=3)`` writes for the same dataset.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarr3_backend
import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3 until zarr3_backend does)
from zarr3_backend.dask.write_graph import ShardAlignmentWarning
from zarr3_backend.nodes.shard_writes import shard_aligned_chunks
from zarr3_backend.store import LocalStore
from zarr3_backend.testing.stores import CountingStore

ENGINES = ["zarr", "zarr3"]
pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"),
]


def sample_dataset(chunks: dict | None = None, cf: bool = False) -> xr.Dataset:
    """A small dataset; ``cf=True`` adds variables whose CF round trip is lossy (masking, packing, objects)."""
    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), rng.random((12, 6, 8), dtype="f4"), {"units": "K"}),
            "mask": (("lat", "lon"), rng.random((6, 8)) > 0.5),
            "count": (("time",), np.arange(12, dtype="i2")),
            "name": (("lat",), np.array(list("abcdef"))),
        },
        coords={
            "time": pd.date_range("2000-01-01", periods=12),
            "lat": np.linspace(-90, 90, 6),
            "lon": np.arange(8.0),
            "aux": ("lat", np.arange(6, dtype="u1")),
        },
        attrs={"title": "sample", "version": np.int64(3)},
    )
    if cf:
        ds["masked"] = ("time", np.arange(12, dtype="i2"), {"_FillValue": -1})
        ds["packed"] = ("time", np.linspace(0, 1, 12))
        ds["packed"].encoding = {"scale_factor": 0.01, "dtype": "int16", "_FillValue": -999}
        ds["label"] = ("lat", np.array(list("abcdef"), dtype=object))
    return ds.chunk(chunks) if chunks else ds


def open_all(path, **kwargs) -> dict[str, xr.Dataset]:
    opened = {}
    for engine in ENGINES:
        try:
            opened[engine] = xr.open_dataset(path, engine=engine, **kwargs).load()
        except ValueError as exc:  # engine="zarr3" not registered yet
            if "zarr3" not in str(exc):
                raise
    return opened


def assert_reads_back(path, expected: xr.Dataset, **kwargs) -> None:
    for engine, ds in open_all(path, **kwargs).items():
        try:
            xr.testing.assert_identical(ds, expected)
        except AssertionError as exc:
            raise AssertionError(f"engine={engine!r}: {exc}") from exc


def xarray_roundtrip(ds: xr.Dataset, path: Path, **kwargs) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xr.SerializationWarning)
        ds.to_zarr(path, zarr_format=3, consolidated=False, **kwargs)
    return xr.open_dataset(path, engine="zarr", consolidated=False).load()


def documents(root: Path) -> dict[str, dict]:
    docs = {}
    for file in sorted(root.rglob("zarr.json")):
        doc = json.loads(file.read_text())
        for key in ("codecs", "consolidated_metadata", "storage_transformers"):
            doc.pop(key, None)
        docs[str(file.relative_to(root))] = doc
    return docs


# ------------------------------------------------------------------ encoding and metadata


@pytest.mark.filterwarnings("ignore::xarray.SerializationWarning")
@pytest.mark.parametrize("chunks", [None, {"time": 6, "lat": 3, "lon": 4}])
def test_matches_xarray_to_zarr(tmp_path, chunks):
    ds = sample_dataset(chunks, cf=True)
    ds.to_zarr3(tmp_path / "ours.zarr", consolidated=False)
    expected = xarray_roundtrip(ds, tmp_path / "xarray.zarr")
    assert documents(tmp_path / "ours.zarr") == documents(tmp_path / "xarray.zarr")
    assert_reads_back(tmp_path / "ours.zarr", expected)


def test_dimension_names_and_coordinates_attribute(tmp_path):
    sample_dataset().to_zarr3(tmp_path / "a.zarr")
    t2m = zarr3_backend.open_array(tmp_path / "a.zarr", "t2m")
    assert t2m.dimension_names == ("time", "lat", "lon")
    assert t2m.attrs["coordinates"] == "aux" and "_ARRAY_DIMENSIONS" not in t2m.attrs
    time = zarr3_backend.open_array(tmp_path / "a.zarr", "time")
    assert time.dtype == np.int64 and time.attrs["units"].startswith("days since 2000-01-01")


def test_sharded_layout_with_aligned_dask_chunks_does_not_warn(tmp_path):
    ds = sample_dataset({"time": 6, "lat": 6, "lon": 8})
    store = CountingStore(LocalStore(tmp_path / "a.zarr"))
    encoding = {"t2m": {"chunks": (3, 3, 4), "shards": (6, 6, 8), "compressors": [{"name": "blosc"}]}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShardAlignmentWarning)
        ds.to_zarr3(store, encoding=encoding)
    t2m = zarr3_backend.open_array(tmp_path / "a.zarr", "t2m")
    assert (t2m.chunks, t2m.shards) == ((3, 3, 4), (6, 6, 8))
    assert_reads_back(tmp_path / "a.zarr", ds.compute())


def test_one_task_per_shard(tmp_path):
    ds = sample_dataset({"time": 3, "lat": 2, "lon": 8})
    encoding = {"t2m": {"chunks": (2, 3, 4), "shards": (4, 6, 8)}}
    with pytest.warns(ShardAlignmentWarning, match=r"t2m: .* -> 3 write tasks") as caught:
        delayed = ds[["t2m"]].to_zarr3(tmp_path / "a.zarr", encoding=encoding, compute=False)
    assert caught[0].filename == __file__  # the warning names the user's line
    graph = dict(delayed.__dask_graph__())
    writes = [
        k
        for k in graph
        if isinstance(k, tuple) and str(k[0]).startswith("zarr3-write-shard-") and len(k) == 4
    ]
    assert len(writes) == 3  # t2m: 12 / 4 shards along time, one along lat and lon
    delayed.compute()
    assert_reads_back(tmp_path / "a.zarr", ds[["t2m"]].compute())


def test_a_dask_write_builds_no_read_machinery(tmp_path, monkeypatch):
    """The shard tasks of a first write encode and store: none builds an array's read unit or read-ahead."""
    from zarr3_backend.nodes.array import Array

    def never(array: Array) -> None:
        raise AssertionError(f"the write built read machinery of {array.name!r}")

    for name in ("_read_unit", "_read_ahead"):
        monkeypatch.setattr(Array, name, property(never))
    ds = sample_dataset({"time": 4})[["t2m"]]
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"t2m": {"chunks": (2, 3, 4), "shards": (4, 6, 8)}})
    monkeypatch.undo()
    assert_reads_back(tmp_path / "a.zarr", ds.compute())


def test_each_shard_key_written_once(tmp_path):
    store = CountingStore(LocalStore(tmp_path / "a.zarr"))
    written: Counter[str] = Counter()
    original = store.set

    def counting_set(key, value):
        written[key] += 1
        original(key, value)

    store.set = counting_set  # type: ignore[method-assign]
    ds = sample_dataset({"time": 5, "lat": 4, "lon": 3})[["t2m"]]
    with pytest.warns(ShardAlignmentWarning):
        ds.to_zarr3(store, encoding={"t2m": {"chunks": (2, 3, 4), "shards": (4, 6, 8)}}, consolidated=False)
    shard_keys = [k for k in written if k.startswith("t2m/c/")]
    assert len(shard_keys) == 3 and all(written[k] == 1 for k in shard_keys)


def test_default_chunks_follow_dask_and_are_unsharded(tmp_path):
    ds = sample_dataset({"time": 5, "lat": 3, "lon": 8})
    ds.to_zarr3(tmp_path / "a.zarr")
    t2m = zarr3_backend.open_array(tmp_path / "a.zarr", "t2m")
    assert (t2m.chunks, t2m.shards) == ((5, 3, 8), None)


def test_irregular_dask_chunks_fall_back_to_automatic(tmp_path):
    ds = sample_dataset().chunk({"time": (2, 7, 3)})
    ds.to_zarr3(tmp_path / "a.zarr")
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "t2m").chunks == (12, 6, 8)
    assert_reads_back(tmp_path / "a.zarr", ds.compute())


def test_shards_without_chunks_pick_dividing_inner_chunks(tmp_path):
    ds = sample_dataset({"time": 3})
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"t2m": {"shards": (6, 6, 8)}})
    t2m = zarr3_backend.open_array(tmp_path / "a.zarr", "t2m")
    assert t2m.shards == (6, 6, 8) and t2m.chunks == (3, 6, 8)  # the dask chunks divide the shards
    big = xr.Dataset({"v": (("x", "y"), np.zeros((2048, 1024)))}).chunk(x=1000)
    big.to_zarr3(tmp_path / "b.zarr", encoding={"v": {"shards": (2048, 1024)}})
    v = zarr3_backend.open_array(tmp_path / "b.zarr", "v")
    assert v.chunks == (512, 1024)  # automatic: divides the shard, ~4 MiB


def test_fill_value_encoding_and_write_empty_chunks(tmp_path):
    ds = xr.Dataset({"v": ("x", np.r_[np.full(4, np.nan), np.arange(4.0)])}).chunk(x=4)
    ds.to_zarr3(tmp_path / "a.zarr")
    ds.to_zarr3(tmp_path / "b.zarr", write_empty_chunks=True)
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "v").nchunks_stored() == 1
    assert zarr3_backend.open_array(tmp_path / "b.zarr", "v").nchunks_stored() == 2
    ds.to_zarr3(tmp_path / "c.zarr", encoding={"v": {"fill_value": -1.0}})
    assert zarr3_backend.open_array(tmp_path / "c.zarr", "v").fill_value == -1.0
    for name in "abc":
        assert_reads_back(tmp_path / f"{name}.zarr", ds.compute())


def test_invalid_encoding_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="unexpected encoding keys for 't2m': \\['bogus'\\]"):
        sample_dataset().to_zarr3(tmp_path / "a.zarr", encoding={"t2m": {"bogus": 1}})
    with pytest.raises(KeyError, match="not a variable"):  # as engine="zarr"
        sample_dataset().to_zarr3(tmp_path / "b.zarr", encoding={"nope": {}})


# ------------------------------------------------------------------ modes, append, region


def test_modes(tmp_path):
    ds = sample_dataset()
    ds.to_zarr3(tmp_path / "a.zarr")
    with pytest.raises(FileExistsError):
        ds.to_zarr3(tmp_path / "a.zarr")
    ds.isel(time=slice(0, 4)).to_zarr3(tmp_path / "a.zarr", mode="w")
    assert_reads_back(tmp_path / "a.zarr", ds.isel(time=slice(0, 4)))
    with pytest.raises(ValueError, match="mode='r\\+' only writes existing variables"):
        ds.assign(extra=ds.t2m).isel(time=slice(0, 4)).to_zarr3(tmp_path / "a.zarr", mode="r+")
    with pytest.raises(ValueError, match="already exist.*encoding was provided"):
        ds.isel(time=slice(0, 4)).to_zarr3(tmp_path / "a.zarr", mode="a", encoding={"t2m": {"chunks": 2}})
    with pytest.raises(ValueError, match="append_dim needs mode"):
        ds.to_zarr3(tmp_path / "a.zarr", mode="w", append_dim="time")


def test_mode_a_adds_variables(tmp_path):
    ds = sample_dataset()
    ds[["t2m"]].to_zarr3(tmp_path / "a.zarr")
    ds.to_zarr3(tmp_path / "a.zarr", mode="a")
    assert_reads_back(tmp_path / "a.zarr", ds)


@pytest.mark.parametrize("shards", [None, (8, 6, 8)])
def test_append_with_partial_edge_shards(tmp_path, shards):
    ds = sample_dataset({"time": 4})
    encoding = {"t2m": {"chunks": (2, 3, 4), "shards": shards}} if shards else {"t2m": {"chunks": (4, 3, 4)}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShardAlignmentWarning)
        ds.isel(time=slice(0, 5)).to_zarr3(tmp_path / "a.zarr", encoding=encoding)
        ds.isel(time=slice(5, 7)).to_zarr3(tmp_path / "a.zarr", append_dim="time")
        ds.isel(time=slice(7, 12)).to_zarr3(tmp_path / "a.zarr", append_dim="time")
    assert_reads_back(tmp_path / "a.zarr", ds.compute())


class FailingStore(LocalStore):
    """Fails every write of keys starting with ``fail_prefix``."""

    def __init__(self, root, fail_prefix: str) -> None:
        super().__init__(root)
        self.fail_prefix = fail_prefix

    def _check(self, keys) -> None:
        if any(key.startswith(self.fail_prefix) for key in keys):
            raise OSError(f"injected failure writing {sorted(keys)}")

    def set_many(self, items) -> None:
        self._check(items)
        super().set_many(items)

    def set(self, key, value) -> None:
        self._check([key])
        super().set(key, value)


def test_failed_append_leaves_store_as_before(tmp_path):
    ds = sample_dataset({"time": 4})
    encoding = {"t2m": {"chunks": (2, 3, 4), "shards": (4, 6, 8)}}
    ds.isel(time=slice(0, 6)).to_zarr3(tmp_path / "a.zarr", encoding=encoding)
    before = documents(tmp_path / "a.zarr")
    failing = FailingStore(tmp_path / "a.zarr", "t2m/c/2")  # the shard holding times 8..11
    with pytest.raises(OSError, match="injected failure"):
        ds.isel(time=slice(6, 12)).to_zarr3(failing, append_dim="time")
    assert documents(tmp_path / "a.zarr") == before
    assert_reads_back(tmp_path / "a.zarr", ds.isel(time=slice(0, 6)).compute())
    ds.isel(time=slice(6, 12)).to_zarr3(tmp_path / "a.zarr", append_dim="time")
    assert_reads_back(tmp_path / "a.zarr", ds.compute())


def test_failed_append_then_smaller_append_shows_no_stale_data(tmp_path):
    ds = xr.Dataset({"v": ("x", np.arange(10.0))}).chunk(x=4)
    ds.isel(x=slice(0, 2)).to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (4,)}})
    with pytest.raises(OSError):
        ds.isel(x=slice(2, 10)).to_zarr3(FailingStore(tmp_path / "a.zarr", "v/c/2"), append_dim="x")
    ds.isel(x=slice(2, 3)).to_zarr3(tmp_path / "a.zarr", append_dim="x")
    array = zarr3_backend.open_array(tmp_path / "a.zarr", "v", mode="r+")
    array.resize((4,))  # grow without writing: must show the fill value, not the failed append
    np.testing.assert_array_equal(array[:], [0, 1, 2, np.nan])


def test_region_writes_read_modify_write_partial_shards(tmp_path):
    ds = sample_dataset({"time": 4})
    encoding = {"t2m": {"chunks": (2, 3, 4), "shards": (4, 6, 8)}}
    ds.to_zarr3(tmp_path / "a.zarr", encoding=encoding)
    update = (ds[["t2m"]].isel(time=slice(3, 9), lat=slice(1, 4)) * 0 - 5).drop_vars(["lon", "aux"])
    assert update.t2m.chunks[0] == (1, 4, 1)  # already aligned with the shards at origin 3: no rechunk
    update.to_zarr3(tmp_path / "a.zarr", region={"time": slice(3, 9), "lat": slice(1, 4)})
    expected = ds.compute()
    expected["t2m"][3:9, 1:4] = -5
    assert_reads_back(tmp_path / "a.zarr", expected)


def test_region_auto(tmp_path):
    ds = sample_dataset({"time": 4})
    ds.to_zarr3(tmp_path / "a.zarr")
    part = ds[["t2m", "count"]].isel(time=slice(4, 8)) + 1
    part.to_zarr3(tmp_path / "a.zarr", region="auto")
    expected = ds.compute()
    expected["t2m"][4:8] += 1
    expected["count"][4:8] += 1
    assert_reads_back(tmp_path / "a.zarr", expected)
    with pytest.raises(KeyError, match="not in the stored coordinate"):
        part.assign_coords(time=part.time + pd.Timedelta(days=100)).to_zarr3(
            tmp_path / "a.zarr", region="auto"
        )
    with pytest.raises(ValueError, match="contiguous"):
        part.isel(time=[0, 2]).to_zarr3(tmp_path / "a.zarr", region="auto")


def test_region_transposed_variable(tmp_path):
    ds = sample_dataset()
    ds.to_zarr3(tmp_path / "a.zarr")
    part = ds[["t2m"]].isel(time=slice(0, 2)).transpose("lon", "lat", "time") * 2
    part.drop_vars(["time", "lat", "lon", "aux"]).to_zarr3(tmp_path / "a.zarr", region={"time": slice(0, 2)})
    expected = ds.copy(deep=True)
    expected["t2m"][0:2] *= 2
    assert_reads_back(tmp_path / "a.zarr", expected)


# ------------------------------------------------------------------ entry points and options


def test_compute_false_defers_data(tmp_path):
    ds = sample_dataset({"time": 6})
    delayed = ds.to_zarr3(tmp_path / "a.zarr", compute=False)
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "t2m").nchunks_stored() == 0
    dask.compute(delayed)
    assert_reads_back(tmp_path / "a.zarr", ds.compute())


def test_dataarray(tmp_path):
    da = sample_dataset({"time": 6}).t2m
    da.to_zarr3(tmp_path / "a.zarr")
    back = xr.open_dataarray(tmp_path / "a.zarr", engine="zarr").load()
    xr.testing.assert_identical(back, da.compute())


def test_datatree(tmp_path):
    ds = sample_dataset({"time": 6})
    tree = xr.DataTree.from_dict({"/": ds[["count"]], "/surface": ds[["t2m"]], "/surface/land": ds[["mask"]]})
    encoding = {"/surface": {"t2m": {"chunks": (3, 3, 4), "shards": (6, 6, 8)}}}
    tree.to_zarr3(tmp_path / "t.zarr", encoding=encoding)
    assert zarr3_backend.open_array(tmp_path / "t.zarr", "surface/t2m").shards == (6, 6, 8)
    back = xr.open_datatree(tmp_path / "t.zarr", engine="zarr").load()
    xr.testing.assert_identical(back, tree.compute())
    with pytest.raises(ValueError, match="not groups"):
        tree.to_zarr3(tmp_path / "u.zarr", encoding={"/nope": {}})


def test_datatree_append_dim_is_refused_like_to_zarr(tmp_path):
    ds = sample_dataset({"time": 6})
    tree = xr.DataTree.from_dict({"/": ds[["count"]], "/surface": ds[["t2m"]]})
    tree.to_zarr3(tmp_path / "t.zarr")
    with pytest.raises(NotImplementedError):  # the oracle: DataTree.to_zarr raises it too
        tree.to_zarr(tmp_path / "o.zarr", append_dim="time")
    with pytest.raises(
        zarr3_backend.WriteNotImplementedError,
        match=r"append_dim='time' is not supported for a DataTree.*group=path",
    ):
        tree.to_zarr3(tmp_path / "t.zarr", append_dim="time")  # used to be a silent no-op
    assert xr.open_datatree(tmp_path / "t.zarr", engine="zarr3")["surface"].sizes["time"] == ds.sizes["time"]


def test_group_memory_store_and_progress(capsys):
    ds = sample_dataset({"time": 6})
    url = "memory://to_zarr3/progress"
    ds.to_zarr3(url, group="a/b", mode="w", progress=True)
    assert "100%" in capsys.readouterr().out
    assert_reads_back(url, ds.compute(), group="a/b")


def test_consolidated_metadata_tracks_appends(tmp_path):
    ds = sample_dataset({"time": 6})
    ds.isel(time=slice(0, 6)).to_zarr3(tmp_path / "a.zarr")
    root = zarr3_backend.open_group(tmp_path / "a.zarr")
    assert root.metadata.consolidated["t2m"]["shape"] == [6, 6, 8]
    ds.isel(time=slice(6, 12)).to_zarr3(tmp_path / "a.zarr", append_dim="time")
    root = zarr3_backend.open_group(tmp_path / "a.zarr")
    assert root.metadata.consolidated["t2m"]["shape"] == [12, 6, 8]
    assert_reads_back(tmp_path / "a.zarr", ds.compute())


def test_tensorstore_reads_sharded_output(tmp_path):
    ts = pytest.importorskip("tensorstore")
    ds = sample_dataset({"time": 4})
    with pytest.warns(ShardAlignmentWarning):
        ds.to_zarr3(tmp_path / "a.zarr", encoding={"t2m": {"chunks": (2, 3, 4), "shards": (6, 6, 8)}})
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a.zarr" / "t2m")}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), ds.t2m.values)


def test_shard_aligned_chunks():
    assert shard_aligned_chunks((10,), (0,), (4,)) == ((4, 4, 2),)
    assert shard_aligned_chunks((5,), (6,), (4,)) == ((2, 3),)
    assert shard_aligned_chunks((0,), (3,), (4,)) == ((0,),)
    assert shard_aligned_chunks((), (), ()) == ()
