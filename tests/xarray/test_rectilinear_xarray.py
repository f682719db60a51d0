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


def _daily(days: int = 120, start: str = "2001-01-01") -> xr.Dataset:
    import pandas as pd

    time = pd.date_range(start, periods=days, freq="D")
    values = np.random.default_rng(days).random((days, 3)).astype("float32")
    return xr.Dataset({"v": (("time", "x"), values)}, coords={"time": time})


def _grid(path: Path) -> dict[str, object]:
    return zarr3_backend.open_array(str(path / "v")).metadata.to_json()["chunk_grid"]


def test_nested_chunks_and_shards_encodings_write_rectilinear_grids(tmp_path: Path) -> None:
    ds = _daily()
    ds.to_zarr3(tmp_path / "c.zarr", encoding={"v": {"chunks": (MONTHS, 3)}})
    ds.to_zarr3(
        tmp_path / "s.zarr", encoding={"v": {"chunks": (1, 3), "shards": ({"time": MONTHS}["time"], 3)}}
    )
    assert _grid(tmp_path / "c.zarr")["configuration"] == {
        "kind": "inline",
        "chunk_shapes": [list(MONTHS), 3],
    }
    assert _grid(tmp_path / "s.zarr")["name"] == "rectilinear"
    for name in ("c.zarr", "s.zarr"):
        back = xr.open_dataset(tmp_path / name, engine="zarr3", chunks={})
        assert back.v.chunks == (MONTHS, (3,))
        xr.testing.assert_identical(back.load(), ds)


def test_without_a_request_the_grid_stays_regular(tmp_path: Path) -> None:
    from xarray.groupers import TimeResampler

    monthly = _daily().chunk(time=TimeResampler("ME"))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rechunk-to-the-grid warning
        monthly.to_zarr3(tmp_path / "r.zarr")
    assert _grid(tmp_path / "r.zarr")["name"] == "regular"


def test_monthly_dask_chunks_round_trip_one_task_each(tmp_path: Path) -> None:
    from xarray.groupers import TimeResampler

    ds = _daily()
    monthly = ds.chunk(time=TimeResampler("ME"))
    assert monthly.v.chunks[0] == MONTHS
    delayed = monthly.to_zarr3(tmp_path / "d.zarr", encoding={"v": {"chunks": "dask"}}, compute=False)
    shard_tasks = [k for k in dict(delayed.__dask_graph__()) if isinstance(k, tuple) and "shard" in str(k[0])]
    assert len([k for k in shard_tasks if "zarr3-write" in str(k[0])]) >= len(MONTHS)
    delayed.compute()
    monthly.to_zarr3(tmp_path / "s.zarr", encoding={"v": {"chunks": (1, 3), "shards": "dask"}})
    for name in ("d.zarr", "s.zarr"):
        back = xr.open_dataset(tmp_path / name, engine="zarr3", chunks={})
        assert back.v.chunks == monthly.v.chunks
        xr.testing.assert_identical(back.load(), ds)


def test_reopened_rectilinear_encoding_writes_the_same_grid(tmp_path: Path) -> None:
    _daily().to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (1, 3), "shards": (MONTHS, 3)}})
    xr.open_dataset(tmp_path / "a.zarr", engine="zarr3", chunks={}).to_zarr3(tmp_path / "b.zarr")
    assert _grid(tmp_path / "b.zarr") == _grid(tmp_path / "a.zarr")


def test_append_extends_the_declaration(tmp_path: Path) -> None:
    ds, may = _daily(), _daily(31, "2001-05-01")
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (MONTHS, 3)}})
    may.chunk(time=31).to_zarr3(tmp_path / "a.zarr", append_dim="time")
    assert _grid(tmp_path / "a.zarr")["configuration"]["chunk_shapes"] == [[*MONTHS, 31], 3]
    back = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3", chunks={})
    assert back.v.chunks == ((*MONTHS, 31), (3,))
    xr.testing.assert_identical(back.load(), xr.concat([ds, may], "time"))


def test_append_fills_the_declared_overshoot(tmp_path: Path) -> None:
    ds, may = _daily(), _daily(31, "2001-05-01")
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": ((*MONTHS, 31, 30), 3)}})
    may.to_zarr3(tmp_path / "a.zarr", append_dim="time")
    assert _grid(tmp_path / "a.zarr")["configuration"]["chunk_shapes"] == [[*MONTHS, 31, 30], 3]
    back = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3", chunks={})
    assert back.v.chunks == ((*MONTHS, 31), (3,))
    xr.testing.assert_identical(back.load(), xr.concat([ds, may], "time"))


def test_append_along_a_rectilinear_dimension_is_all_or_nothing(tmp_path: Path) -> None:
    import shutil

    from test_append_atomic import FailingStore, InjectedFault

    from zarr3_backend.store import make_store

    template = tmp_path / "template.zarr"
    _daily().to_zarr3(template, encoding={"v": {"chunks": (1, 3), "shards": (MONTHS, 3)}})
    before = xr.open_dataset(template, engine="zarr3").load()
    may = _daily(31, "2001-05-01").chunk(time=16)
    after = xr.concat([before, may.load()], "time")
    counter = FailingStore(make_store(str(template.with_name("count.zarr"))))
    shutil.copytree(template, template.with_name("count.zarr"))
    may.to_zarr3(counter, append_dim="time")
    assert counter.writes > 3
    for k in range(counter.writes):
        path = tmp_path / f"run{k}.zarr"
        shutil.copytree(template, path)
        try:
            may.to_zarr3(FailingStore(make_store(str(path)), fail_at=k), append_dim="time")
        except InjectedFault:
            pass
        got = xr.open_dataset(path, engine="zarr3").load()
        assert got.identical(before) or got.identical(after), f"fault at write {k}"
        try:  # without consolidated metadata: the same, or refused naming the pending record
            got = xr.open_dataset(path, engine="zarr3", consolidated=False).load()
        except zarr3_backend.errors.MetadataError as exc:
            assert "finish_pending_write" in str(exc)
            got = None
        assert got is None or got.identical(before) or got.identical(after), f"fault at write {k}"
        may.to_zarr3(make_store(str(path)), append_dim="time")
        assert xr.open_dataset(path, engine="zarr3").load().identical(after), f"retry after fault {k}"
        shutil.rmtree(path)


def test_a_source_grid_that_no_longer_covers_the_data_is_dropped(tmp_path: Path) -> None:
    ds = _daily()
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (MONTHS, 3)}})
    opened = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load()
    longer = xr.concat([opened, _daily(31, "2001-05-01")], "time")  # keeps the source's encoding
    assert longer.v.encoding["chunks"] == (MONTHS, (3,))
    longer.to_zarr3(tmp_path / "b.zarr")
    assert _grid(tmp_path / "b.zarr")["name"] == "regular"
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "b.zarr", engine="zarr3").load(), longer)


def test_convert_reads_a_rectilinear_source(tmp_path: Path) -> None:
    from zarr3_backend.conversion import convert

    _daily().to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (MONTHS, 3)}})
    convert(str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr"))
    xr.testing.assert_identical(
        xr.open_dataset(tmp_path / "b.zarr", engine="zarr3").load(),
        xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(),
    )


def test_region_writes_land_in_their_months(tmp_path: Path) -> None:
    ds = _daily()
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (1, 3), "shards": (MONTHS, 3)}})
    february = ds.isel(time=slice(31, 59)).copy(deep=True)
    february["v"] = february.v * 0 + 5
    march_part = ds.isel(time=slice(60, 70)).copy(deep=True)  # inside one shard, partly
    march_part["v"] = march_part.v * 0 - 5
    february.chunk(time=28).to_zarr3(tmp_path / "a.zarr", region="auto")
    march_part.to_zarr3(tmp_path / "a.zarr", region="auto")
    expected = ds.copy(deep=True)
    expected["v"][31:59] = 5
    expected["v"][60:70] = -5
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), expected)


def test_equal_lengths_become_regular_only_when_they_mean_the_same_chunks(tmp_path: Path) -> None:
    ds = _daily(60)
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": ((30, 30), 3)}})
    ds.to_zarr3(tmp_path / "b.zarr", encoding={"v": {"chunks": ((30, 40), 3)}})  # declares 10 rows ahead
    assert _grid(tmp_path / "a.zarr") == {"name": "regular", "configuration": {"chunk_shape": [30, 3]}}
    assert _grid(tmp_path / "b.zarr")["configuration"]["chunk_shapes"] == [[30, 40], 3]


def test_appended_dask_blocks_become_the_new_chunks_when_asked(tmp_path: Path) -> None:
    import warnings

    ds, may = _daily(), _daily(31, "2001-05-01")
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (1, 3), "shards": (MONTHS, 3)}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no rechunking to the grid: the grid follows the blocks
        may.chunk(time=(16, 15)).to_zarr3(
            tmp_path / "a.zarr", append_dim="time", encoding={"v": {"shards": {"time": "dask"}}}
        )
    assert _grid(tmp_path / "a.zarr")["configuration"]["chunk_shapes"] == [[*MONTHS, 16, 15], 3]
    xr.testing.assert_identical(
        xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), xr.concat([ds, may], "time")
    )
