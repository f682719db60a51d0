"""chunks={} over many small shards: runs of shards per dask chunk, and a selection still reads only what it touches."""

import dask
import dask.array
import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.store.local import LocalStore
from zarr3_backend.testing.stores import CountingStore
from zarr3_backend.xarray import read_encoding

SHARD_BYTES = 4 * 6 * 2  # one (1, 4, 6) int16 shard


def hourly(root, steps):
    """``v`` int16 ``(steps, 4, 6)``, one shard of 4 inner chunks per step, every tenth step written."""
    group = zarr3_backend.create_group(LocalStore(root))
    v = group.create_array(
        "v", shape=(steps, 4, 6), dtype="int16", chunks=(1, 2, 3), shards=(1, 4, 6),
        fill_value=-1, dimension_names=["time", "y", "x"],
    )  # fmt: skip
    expected = np.full(v.shape, -1, dtype="int16")
    for step in range(0, steps, 10):
        expected[step] = np.arange(24, dtype="int16").reshape(4, 6) + step
        v[step] = expected[step]
    return expected


@pytest.fixture
def small_dask_chunks():
    with dask.config.set({"array.chunk-size": f"{200 * SHARD_BYTES}B"}):
        yield


def test_many_small_shards_make_runs_of_shards_per_dask_chunk(tmp_path, small_dask_chunks):
    steps = read_encoding.MANY_SHARDS + 976  # 2000
    expected = hourly(tmp_path, steps)
    ds = xr.open_dataset(tmp_path, engine="zarr3", chunks={})
    assert ds.v.encoding["preferred_chunks"] == {"time": 200, "y": 4, "x": 6}
    assert ds.v.chunks == ((200,) * 10, (4,), (6,))
    np.testing.assert_array_equal(ds.v.values, expected)


def test_a_series_from_runs_of_shards_reads_only_the_inner_chunks_it_touches(tmp_path, small_dask_chunks):
    steps = 2000
    expected = hourly(tmp_path, steps)
    counting = CountingStore(LocalStore(tmp_path))
    series = xr.open_dataset(counting, engine="zarr3", chunks={}).v.isel(y=3, x=4)
    assert len(series.data.__dask_graph__()) < 50  # not a task per shard
    counting.reset()
    np.testing.assert_array_equal(series.values, expected[:, 3, 4])
    chunk_reads = [(key, r) for key, r in counting.requests if key.startswith("v/c/")]
    lookups = [key for key, r in chunk_reads if r is not None and r.is_suffix]
    assert len(lookups) == steps  # one index lookup per shard
    assert len(chunk_reads) == steps + steps // 10  # and one inner chunk per stored shard: no whole shard


@pytest.mark.parametrize(("steps", "shard"), [(1000, (1, 4, 6)), (1100, (1, 512, 1024))])
def test_few_or_large_shards_stay_one_per_dask_chunk(tmp_path, steps, shard):
    group = zarr3_backend.create_group(LocalStore(tmp_path))
    group.create_array(
        "v",
        shape=(steps, *shard[1:]),
        dtype="int16",
        chunks=shard,
        shards=shard,
        dimension_names=["time", "y", "x"],
    )
    ds = xr.open_dataset(tmp_path, engine="zarr3", chunks={})
    assert ds.v.encoding["preferred_chunks"] == dict(zip(("time", "y", "x"), shard))
    assert ds.v.data.numblocks == (steps, 1, 1)


def test_the_push_down_pass_never_scans_a_write_graphs_tasks(tmp_path, monkeypatch):
    from dask.highlevelgraph import MaterializedLayer

    from zarr3_backend.xarray import dask_slices

    hourly(tmp_path, 20)
    source = xr.open_dataset(tmp_path, engine="zarr3", chunks={"time": 5})
    stored = source.to_zarr3(tmp_path / "copy", compute=False)
    graph = stored.__dask_graph__()
    scanned = []
    original = MaterializedLayer.__iter__

    def iterate(layer):
        scanned.append(layer)
        return original(layer)

    monkeypatch.setattr(MaterializedLayer, "__iter__", iterate)
    assert dask_slices.push_selections(graph, stored.__dask_keys__()) is graph
    assert scanned == []
