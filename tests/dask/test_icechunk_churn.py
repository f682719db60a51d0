"""Icechunk cluster writes under worker churn: every task returns its fork, so a worker that joins, leaves or
dies during the write loses no rows. Each test loops its trials inside one LocalCluster of worker processes."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from tests.clusters import local_cluster
from zarr3_backend.dask.forks import ForkWrite, TaskForks, gathered

icechunk = pytest.importorskip("icechunk")
distributed = pytest.importorskip("distributed")

TRIALS = 4
SHARDS = 6
ENCODING = {"t2m": {"chunks": (5, 4), "shards": (10, 4)}}


def dataset(start: int, days: int) -> xr.Dataset:
    values = np.arange(start * 4, (start + days) * 4, dtype="float64").reshape(days, 4)
    return xr.Dataset({"t2m": (("time", "lon"), values)}, coords={"time": np.arange(start, start + days)})


def new_repo():
    return icechunk.Repository.create(
        icechunk.local_filesystem_storage(tempfile.mkdtemp(prefix="hard-churn-"))
    )


def head(repo) -> xr.Dataset:
    return xr.open_dataset(repo.readonly_session(branch="main").store, engine="zarr3").load()


def first_commit(repo) -> None:
    session = repo.writable_session("main")
    dataset(0, 10).to_zarr3(session.store, encoding=ENCODING)
    session.commit("first")


def wait_for(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def gated(block: np.ndarray, gates: str, original: int) -> np.ndarray:
    """Wait for ``go``; on the original worker, also for ``finish``; then record this block as done."""
    if block.size:  # dask calls it on an empty block to learn its meta
        wait_for(lambda: os.path.exists(f"{gates}/go"), "go")
        if os.getpid() == original:
            wait_for(lambda: os.path.exists(f"{gates}/finish"), "finish")
        Path(f"{gates}/done-{os.getpid()}-{block[0, 0]:g}").touch()
    return block


@pytest.fixture
def cluster():  # one per test: each test churns its workers its own way
    with local_cluster(1) as (cluster, client):
        yield cluster, client


def test_workers_that_join_mid_write_and_retire_before_the_merge_lose_nothing(cluster, tmp_path) -> None:
    cluster, client = cluster
    for trial in range(TRIALS):
        (original,) = client.run(os.getpid).values()
        gates = tmp_path / str(trial)
        gates.mkdir()
        repo = new_repo()
        first_commit(repo)
        session = repo.writable_session("main")
        more = dataset(10, 10 * SHARDS).chunk(time=10)
        more["t2m"] = more.t2m.copy(
            data=more.t2m.data.map_blocks(gated, str(gates), original, dtype="float64")
        )
        failed: list[BaseException] = []

        def write(more=more, session=session, failed=failed) -> None:
            try:
                more.to_zarr3(session.store, append_dim="time")
            except BaseException as exc:  # reported below
                failed.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        cluster.scale(3)  # joins mid-write: the original worker's task waits for "go"
        client.wait_for_workers(3, timeout=120)
        (gates / "go").touch()
        wait_for(lambda g=gates: len(list(g.glob("done-*"))) == SHARDS - 1, "the shards on the new workers")
        assert all(str(original) not in p.name for p in gates.glob("done-*"))  # all written by the joiners
        joiners = [w for w, pid in client.run(os.getpid).items() if pid != original]
        client.retire_workers(joiners, close_workers=True)  # as the adaptive scaler does: results move
        cluster.scale(1)
        wait_for(lambda: len(client.scheduler_info()["workers"]) == 1, "the retirement")
        assert list(client.run(os.getpid).values()) == [original]
        (gates / "finish").touch()
        writer.join(120)
        assert not writer.is_alive() and not failed, failed
        assert len(list(gates.glob(f"done-{original}-*"))) == 1  # no shard task ran again
        session.commit("appended")
        xr.testing.assert_identical(head(repo), dataset(0, 10 + 10 * SHARDS))


def exit_once(block: np.ndarray, marker: str) -> np.ndarray:
    if block.size and block[0, 0] == 40.0 and not os.path.exists(marker):  # one shard's task, mid-write
        Path(marker).touch()
        os._exit(1)
    return block


def test_a_worker_killed_mid_task_loses_nothing(cluster, tmp_path) -> None:
    cluster, client = cluster
    cluster.scale(2)
    client.wait_for_workers(2, timeout=120)
    for trial in range(TRIALS):
        repo = new_repo()
        first_commit(repo)
        session = repo.writable_session("main")
        marker = str(tmp_path / f"died-{trial}")
        more = dataset(10, 10 * SHARDS).chunk(time=10)
        more["t2m"] = more.t2m.copy(data=more.t2m.data.map_blocks(exit_once, marker, dtype="float64"))
        more.to_zarr3(session.store, append_dim="time")  # the killed task runs again, on a fresh fork
        assert os.path.exists(marker)
        session.commit("appended")
        xr.testing.assert_identical(head(repo), dataset(0, 10 + 10 * SHARDS))


def test_a_shard_result_without_its_fork_fails_the_write_naming_it() -> None:
    written = np.empty((3, 1), dtype=object)
    written[0, 0], written[1, 0], written[2, 0] = ForkWrite(8, ("a",)), 8, ForkWrite(8, ("b",))
    with pytest.raises(
        zarr3_backend.WriteError, match=r"1 shard task.*t2m block \(1, 0\).*nothing was merged"
    ):
        gathered([written], ["t2m"], TaskForks())
    complete = gathered([written[[0, 2]]], ["t2m"], TaskForks(sessions=("last",)))
    assert complete == ForkWrite(16, ("a", "b", "last"))
    assert gathered([np.full((2, 1), 8)], ["t2m"], TaskForks()) is None  # nothing forked


def test_a_copy_of_the_fork_written_outside_a_write_task_refuses() -> None:
    import pickle

    from zarr3_backend.dask.forks import ForkedStore, task_forks

    repo = new_repo()
    first_commit(repo)
    fork = repo.writable_session("main").fork()
    copy = pickle.loads(pickle.dumps(ForkedStore(fork.store, "f")))
    with pytest.raises(zarr3_backend.WriteError, match="outside a to_zarr3 write task would be lost"):
        copy.set("t2m/c/9/0", b"x")
    with task_forks(copy) as forks:
        assert copy.get("zarr.json") is not None  # reads and writes go to this run's private copy
    assert len(forks.sessions) == 1 and forks.forked
