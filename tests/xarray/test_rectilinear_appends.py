"""Appends continue a calendar grid: one chunk (shard) per month, season or year, whatever the dask chunks.

Issue 57 item 2: appending months to a monthly grid used to make one chunk
per dask block (or one chunk of every appended row without dask).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.errors import WriteError

MONTHS = (31, 28, 31, 30)  # 2001, January to April
pytestmark = pytest.mark.filterwarnings("ignore::zarr3_backend.dask.write_graph.ShardAlignmentWarning")


def daily(days: int, start: str) -> xr.Dataset:
    time = pd.date_range(start, periods=days, freq="D")
    values = np.random.default_rng(days).random((days, 3)).astype("float32")
    return xr.Dataset({"v": (("time", "x"), values)}, coords={"time": time})


def lengths(path: Path, name: str = "v") -> list[int]:
    """The stored chunk (shard) lengths along the first dimension."""
    return list(zarr3_backend.open_array(str(path / name)).chunk_sizes[0])


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def monthly(path: Path, sharded: bool = True, first: xr.Dataset | None = None) -> xr.Dataset:
    first = daily(120, "2001-01-01") if first is None else first
    encoding = {"chunks": (1, 3), "shards": (MONTHS, 3)} if sharded else {"chunks": (MONTHS, 3)}
    first.to_zarr3(path, encoding={"v": encoding})
    return first


def assert_holds(path: Path, *parts: xr.Dataset) -> None:
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3").load(), xr.concat(parts, "time"))


@pytest.mark.parametrize("chunks", [10, 61, None], ids=["dask-10", "dask-one-block", "numpy"])
@pytest.mark.parametrize("sharded", [True, False], ids=["shards", "chunks"])
def test_appended_months_get_one_shard_each(tmp_path: Path, chunks: int | None, sharded: bool) -> None:
    path = tmp_path / "a.zarr"
    first = monthly(path, sharded)
    more = daily(61, "2001-05-01")  # May and June
    (more if chunks is None else more.chunk(time=chunks)).to_zarr3(path, append_dim="time")
    assert lengths(path) == [*MONTHS, 31, 30]
    assert_holds(path, first, more)
    assert xr.open_dataset(path, engine="zarr3", chunks={}).v.chunks[0] == (*MONTHS, 31, 30)


def test_an_append_starting_mid_month_gives_the_rest_of_the_month_its_own_chunk(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    first = monthly(path)
    half = daily(15, "2001-05-01")
    rest = daily(16 + 30 + 31, "2001-05-16")
    half.to_zarr3(path, append_dim="time")
    rest.chunk(time=7).to_zarr3(path, append_dim="time")
    assert lengths(path) == [*MONTHS, 15, 16, 30, 31]
    assert_holds(path, first, half, rest)


def test_seasons_continue_as_seasons(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    first = daily(181, "2001-01-01")
    first.to_zarr3(path, encoding={"v": {"chunks": ((90, 91), 3)}})  # January-March, April-June
    more = daily(184, "2001-07-01").chunk(time=50)
    more.to_zarr3(path, append_dim="time")
    assert lengths(path) == [90, 91, 92, 92]
    assert_holds(path, first, more)


def test_chunks_declared_ahead_are_filled_before_the_rule_continues(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    first = daily(100, "2001-01-01")  # ends on April 10th; April is declared whole
    first.to_zarr3(path, encoding={"v": {"chunks": (MONTHS, 3)}})
    more = daily(20 + 31 + 30, "2001-04-11").chunk(time=25)
    more.to_zarr3(path, append_dim="time")
    assert lengths(path) == [*MONTHS, 31, 30]
    assert_holds(path, first, more)


def test_without_a_rule_the_append_is_refused_and_says_how_to_give_the_chunks(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    first = daily(45, "2001-01-01")
    first.to_zarr3(path, encoding={"v": {"chunks": (1, 3), "shards": ((10, 20, 15), 3)}})
    before = snapshot(path)
    more = daily(30, "2001-02-15").chunk(time=(12, 18))
    with pytest.raises(WriteError, match=r"not whole calendar months.*encoding=\{'v': \{'shards': \{'time'"):
        more.to_zarr3(path, append_dim="time")
    assert snapshot(path) == before
    more.to_zarr3(path, append_dim="time", encoding={"v": {"shards": {"time": (20, 10)}}})
    assert lengths(path) == [10, 20, 15, 20, 10]
    again = daily(30, "2001-03-17").chunk(time=(12, 18))
    again.to_zarr3(path, append_dim="time", encoding={"v": {"shards": {"time": "dask"}}})
    assert lengths(path) == [10, 20, 15, 20, 10, 12, 18]
    assert_holds(path, first, more, again)


def test_a_rectilinear_dimension_without_times_needs_the_chunks(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    first = xr.Dataset({"v": ("step", np.arange(12.0))}, coords={"step": np.arange(12)})
    first.to_zarr3(path, encoding={"v": {"chunks": ((5, 7),)}})
    more = xr.Dataset({"v": ("step", np.arange(6.0))}, coords={"step": np.arange(12, 18)})
    with pytest.raises(WriteError, match="cannot continue the chunk grid of 'v' along 'step'"):
        more.to_zarr3(path, append_dim="step")
    more.to_zarr3(path, append_dim="step", encoding={"v": {"chunks": {"step": (6,)}}})
    assert lengths(path) == [5, 7, 6]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"chunks": {"time": (31, 30)}},
            r"is sharded; give the appended chunks as encoding\['v'\]\['shards'\]",
        ),
        ({"shards": {"time": (31, 29)}}, "adding up to at least 61"),
        ({"shards": {"time": (31, 0, 30)}}, "positive integer lengths"),
        ({"shards": {"time": "dask"}}, "needs dask data"),
    ],
)
def test_given_appended_chunks_are_checked(tmp_path: Path, given: dict[str, object], message: str) -> None:
    path = tmp_path / "a.zarr"
    monthly(path)
    before = snapshot(path)
    with pytest.raises(WriteError, match=message):
        daily(61, "2001-05-01").to_zarr3(path, append_dim="time", encoding={"v": given})
    assert snapshot(path) == before


def test_appended_chunks_are_refused_for_a_regular_grid(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    daily(120, "2001-01-01").to_zarr3(path, encoding={"v": {"chunks": (30, 3)}})
    before = snapshot(path)
    with pytest.raises(WriteError, match="has no rectilinear grid along it"):
        daily(61, "2001-05-01").to_zarr3(
            path, append_dim="time", encoding={"v": {"chunks": {"time": (31, 30)}}}
        )
    assert snapshot(path) == before
