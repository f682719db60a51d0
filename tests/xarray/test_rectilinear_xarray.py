"""Rectilinear grids through xarray: ``chunks={}`` gives dask chunks on the grid's boundaries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

import zarr3_backend

MONTHS = (31, 28, 31, 30)


def _store(tmp_path: Path) -> tuple[str, np.ndarray]:
    url = str(tmp_path / "cal.zarr")
    data = np.arange(120 * 4, dtype="float32").reshape(120, 4)
    root = zarr3_backend.create_group(url)
    sharded = root.create_array(
        "sharded",
        shape=data.shape,
        dtype="float32",
        chunks=[1, 2],
        shards=[list(MONTHS), 4],
        dimension_names=["time", "x"],
    )
    sharded[...] = data
    plain = root.create_array(
        "plain",
        shape=data.shape,
        dtype="float32",
        chunks=[list(MONTHS), 4],
        dimension_names=["time", "x"],
        fill_value=np.nan,
    )
    plain[:60] = data[:60]  # the later months are missing: fill value
    return url, data


def test_chunks_follow_the_grid_one_task_per_shard(tmp_path: Path) -> None:
    url, data = _store(tmp_path)
    ds = xr.open_dataset(url, engine="zarr3", chunks={})
    assert ds.sharded.chunks == (MONTHS, (4,))
    assert ds.sharded.encoding["preferred_chunks"] == {"time": MONTHS, "x": (4,)}
    assert ds.sharded.encoding["shards"] == (MONTHS, (4,)) and ds.sharded.encoding["chunks"] == (1, 2)
    assert ds.plain.chunks == (MONTHS, (4,))
    assert ds.plain.encoding["chunks"] == (MONTHS, (4,)) and ds.plain.encoding["shards"] is None
    graph = dict(ds.sharded.data.__dask_graph__())
    assert len([k for k in graph if isinstance(k, tuple)]) == len(MONTHS)  # one read task per month
    np.testing.assert_array_equal(ds.sharded.values, data)
    expected = np.where(np.arange(120)[:, None] < 60, data, np.nan)
    np.testing.assert_array_equal(ds.plain.values, expected)


def test_monthly_blocks_map_one_group_to_one_block(tmp_path: Path) -> None:
    url, data = _store(tmp_path)
    ds = xr.open_dataset(url, engine="zarr3", chunks={})
    month = xr.DataArray(np.repeat(np.arange(4), MONTHS), dims="time")
    means = ds.sharded.groupby(month).mean().values
    np.testing.assert_allclose(
        means, [data[s : s + n].mean(0) for s, n in zip(np.cumsum((0, *MONTHS[:-1])), MONTHS)]
    )


def test_preferred_chunks_option_splits_shards_not_across_them(tmp_path: Path) -> None:
    url, _ = _store(tmp_path)
    ds = xr.open_dataset(url, engine="zarr3", chunks={}, preferred_chunks={"time": 10})
    assert ds.sharded.chunks[0] == (10, 10, 10, 1, 10, 10, 8, 10, 10, 10, 1, 10, 10, 10)
