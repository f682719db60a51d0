"""Icechunk sessions on a 2-process LocalCluster: reads pickle the session, writes go through merged forks
(worker churn: tests/dask/test_icechunk_churn.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend

icechunk = pytest.importorskip("icechunk")

ENCODING = {"t2m": {"chunks": (5, 4), "shards": (10, 4)}}


def dataset(start: int = 0, days: int = 20) -> xr.Dataset:
    time = np.arange(start, start + days).astype("datetime64[D]").astype("datetime64[ns]")
    values = np.arange(start * 4, (start + days) * 4, dtype="float64").reshape(days, 4)
    return xr.Dataset(
        {"t2m": (("time", "lon"), values, {"units": "K"})},
        coords={"time": time, "lon": np.arange(4)},
        attrs={"title": "cluster"},
    )


@pytest.fixture
def repo(tmp_path):
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def head(repo) -> xr.Dataset:
    return xr.open_dataset(
        repo.readonly_session(branch="main").store, engine="zarr", consolidated=False
    ).load()


def test_cluster_reads_a_snapshot_and_the_head(client, repo):
    session = repo.writable_session("main")
    dataset().to_zarr(session.store, zarr_format=3, consolidated=False, encoding=ENCODING)
    first = session.commit("first")
    session = repo.writable_session("main")
    (dataset() * 2).to_zarr(session.store, mode="r+")
    session.commit("doubled")
    for store, expected in [
        (repo.readonly_session(snapshot_id=first).store, dataset()),
        (repo.readonly_session(branch="main").store, dataset() * 2),
    ]:
        lazy = xr.open_dataset(store, engine="zarr3", chunks={})
        assert lazy.t2m.data.npartitions == 2  # one task per shard
        xr.testing.assert_identical(lazy.compute(), expected.assign_attrs(dataset().attrs))


def test_cluster_write_is_merged_into_the_session_and_committed_by_the_user(client, repo):
    session = repo.writable_session("main")
    dataset().chunk(time=10).to_zarr3(session.store, encoding=ENCODING)
    assert session.has_uncommitted_changes  # merged back before to_zarr3 returned
    with pytest.raises(FileNotFoundError):  # nothing committed yet: invisible to the branch
        head(repo)
    session.commit("first")
    xr.testing.assert_identical(head(repo), dataset())
    ours = xr.open_dataset(repo.readonly_session(branch="main").store, engine="zarr3")  # no unfinished mark
    xr.testing.assert_identical(ours.load(), dataset())

    session = repo.writable_session("main")
    deferred = dataset(20, 10).chunk(time=10).to_zarr3(session.store, append_dim="time", compute=False)
    assert not session.has_uncommitted_changes
    deferred.compute()
    session.commit("appended")
    xr.testing.assert_identical(head(repo), xr.concat([dataset(), dataset(20, 10)], "time"))


def test_cluster_overwrite_and_region_writes(client, repo):
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store, encoding=ENCODING)
    session.commit("first")
    session = repo.writable_session("main")
    replaced = (dataset() * 3).assign_attrs(title="replaced")
    replaced.chunk(time=10).to_zarr3(session.store, mode="w", encoding=ENCODING)
    session.commit("replaced")
    xr.testing.assert_identical(head(repo), replaced)
    session = repo.writable_session("main")
    part = (dataset() * -1).isel(time=slice(10, 20)).drop_vars("lon")
    part.chunk(time=10).to_zarr3(session.store, region={"time": slice(10, 20)})
    session.commit("region")
    expected = replaced.copy(deep=True)
    expected["t2m"][10:20] = part.t2m.values
    xr.testing.assert_identical(head(repo), expected)


def test_a_session_with_uncommitted_changes_cannot_fork(client, repo):
    """Icechunk 2.x would fork it, and merged back the fork would lose the append's resize: refused on both."""
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store, encoding=ENCODING)  # numpy: written on the client, no fork
    with pytest.raises(zarr3_backend.WriteError, match="cannot be forked now: Cannot fork a Session"):
        dataset(20).chunk(time=10).to_zarr3(session.store, append_dim="time")
    assert session.has_uncommitted_changes  # what the session held is still there
    session.commit("first")
    xr.testing.assert_identical(head(repo), dataset())


def fail(block: np.ndarray) -> np.ndarray:
    raise RuntimeError("injected failure")


def test_failed_cluster_write_merges_nothing(client, repo):
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store, encoding=ENCODING)
    session.commit("first")
    session = repo.writable_session("main")
    broken = dataset(20).chunk(time=10)
    broken["t2m"] = broken.t2m.copy(data=broken.t2m.data.map_blocks(fail, dtype="float64"))
    with pytest.raises(RuntimeError, match="injected failure"):
        broken.to_zarr3(session.store, append_dim="time")
    assert not session.has_uncommitted_changes  # the forks were not merged: the session is as it was
    xr.testing.assert_identical(head(repo), dataset())
    dataset(20).chunk(time=10).to_zarr3(session.store, append_dim="time")  # the same session writes again
    session.commit("appended")
    xr.testing.assert_identical(head(repo), xr.concat([dataset(), dataset(20)], "time"))


def exit_once(block: np.ndarray, marker: str) -> np.ndarray:
    if block.size and not os.path.exists(marker):  # dask calls it on an empty block to learn its meta
        Path(marker).touch()
        os._exit(1)
    return block


def test_a_killed_worker_loses_nothing(client, repo, tmp_path):
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store, encoding=ENCODING)
    session.commit("first")
    session = repo.writable_session("main")
    dying = dataset(20).chunk(time=10)
    marker = str(tmp_path / "died")
    dying["t2m"] = dying.t2m.copy(data=dying.t2m.data.map_blocks(exit_once, marker, dtype="float64"))
    dying.to_zarr3(session.store, append_dim="time")  # its task runs again on a fresh fork, and returns it
    assert os.path.exists(marker)
    session.commit("appended")
    xr.testing.assert_identical(head(repo), xr.concat([dataset(), dataset(20)], "time"))
