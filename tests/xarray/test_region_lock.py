"""Independent region writers: partial-shard regions warn where writers may race, ``lock=`` keeps them safe."""

from __future__ import annotations

import fcntl
import multiprocessing
import re
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (registers to_zarr3)
from zarr3_backend.nodes.shard_writes import PartialShardWarning, partial_shards

pytestmark = pytest.mark.validate_stores

ROWS = 24
LOCKED: list[str] = []


def _recorded(lock: Any, key: str) -> Any:
    LOCKED.append(key)
    return lock


WIDTH = 16384


class FileLocks:
    """One ``flock`` file per shard key: a lock factory that works across processes on one machine."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def __call__(self, key: str) -> FileLock:
        return FileLock(str(Path(self.directory) / (key.replace("/", "_") + ".lock")))


class FileLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.handle = None

    def acquire(self) -> None:
        self.handle = open(self.path, "a")
        fcntl.flock(self.handle, fcntl.LOCK_EX)

    def release(self) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def _template(path: Path) -> None:
    xr.Dataset({"v": (("row", "x"), np.zeros((ROWS, WIDTH)))}).to_zarr3(
        path, encoding={"v": {"chunks": (1, WIDTH), "shards": (ROWS, WIDTH), "fill_value": 0.0}}
    )


def _writer(path: str, parity: int, lock_dir: str | None, start: Any) -> None:
    lock = FileLocks(lock_dir) if lock_dir else None
    start.wait()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartialShardWarning)
        for row in range(parity, ROWS, 2):
            ds = xr.Dataset({"v": (("row", "x"), np.full((1, WIDTH), row + 1.0))})
            ds.to_zarr3(path, region={"row": slice(row, row + 1)}, lock=lock)


def _race(path: Path, lock_dir: str | None) -> int:
    """Two processes write alternate rows of one shard, one region per row; how many rows were lost."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    workers = [context.Process(target=_writer, args=(str(path), p, lock_dir, start)) for p in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    values = xr.open_dataset(path, engine="zarr3")["v"].values[:, 0]
    return int((values != np.arange(1, ROWS + 1)).sum())


def test_two_processes_sharing_a_shard_lose_no_rows_with_a_lock(tmp_path: Path) -> None:
    lock_dir = tmp_path / "locks"
    lock_dir.mkdir()
    for trial in range(2):
        path = tmp_path / f"locked{trial}.zarr"
        _template(path)
        assert _race(path, str(lock_dir)) == 0


def _in_thread(write: Any) -> list[warnings.WarningMessage]:
    """The warnings ``write()`` issues when called from a thread other than the main one (as parallel writers do)."""
    caught: list[warnings.WarningMessage] = []

    def run() -> None:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            write()
        caught.extend(got)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return [w for w in caught if issubclass(w.category, PartialShardWarning)]


def test_partial_shard_region_warns_once_where_writers_may_race(tmp_path: Path) -> None:
    path = tmp_path / "w.zarr"
    _template(path)
    ds = xr.Dataset({"v": (("row", "x"), np.ones((2, WIDTH)))})
    (caught,) = _in_thread(lambda: ds.to_zarr3(path, region={"row": slice(2, 4)}))
    assert re.search(r"'v'.*1 stored shard.*'v/c/0/0'.*lose.*thread", str(caught.message))
    with pytest.warns(PartialShardWarning, match=r"compute=False"):
        ds.chunk().to_zarr3(path, region={"row": slice(2, 4)}, compute=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PartialShardWarning)
        ds.to_zarr3(path, region={"row": slice(2, 4)})  # numpy, from the main thread: nothing runs beside it
        ds.chunk().to_zarr3(path, region={"row": slice(2, 4)})  # one call's tasks never share a shard
        ds.chunk().to_zarr3(path, region={"row": slice(2, 4)}, compute=False, lock=FileLocks(str(tmp_path)))
        xr.Dataset({"v": (("row", "x"), np.ones((ROWS, WIDTH)))}).chunk().to_zarr3(
            path, region={"row": slice(0, ROWS)}, compute=False
        )
    assert (
        _in_thread(lambda: ds.to_zarr3(path, region={"row": slice(2, 4)}, lock=FileLocks(str(tmp_path))))
        == []
    )


def _child_write(path: str, queue: Any) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        xr.Dataset({"v": (("row", "x"), np.ones((2, WIDTH)))}).to_zarr3(path, region={"row": slice(2, 4)})
    queue.put([str(w.message) for w in caught if issubclass(w.category, PartialShardWarning)])


def test_a_partial_shard_region_from_a_child_process_warns(tmp_path: Path) -> None:
    path = tmp_path / "w.zarr"
    _template(path)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child_write, args=(str(path), queue))
    child.start()
    (message,) = queue.get(timeout=120)
    child.join(120)
    assert child.exitcode == 0
    assert "'v/c/0/0'" in message and "child process" in message


def test_one_warning_per_write_naming_every_variable(tmp_path: Path) -> None:
    path = tmp_path / "w.zarr"
    names = ["a", "b", "c"]
    encoding = {n: {"chunks": (2, 4), "shards": (4, 8)} for n in names}
    xr.Dataset({n: (("row", "x"), np.zeros((8, 8))) for n in names}).to_zarr3(path, encoding=encoding)
    part = xr.Dataset({n: (("row", "x"), np.ones((2, 8))) for n in names})
    (caught,) = _in_thread(lambda: part.to_zarr3(path, region={"row": slice(1, 3)}))
    assert "'a', 'b', 'c' covers 3 stored shard(s)" in str(caught.message)
    expected = np.zeros((8, 8))
    expected[1:3] = 1
    stored = xr.open_dataset(path, engine="zarr3")
    for name in names:
        np.testing.assert_array_equal(stored[name].values, expected)


def test_partial_shards_counts_edges() -> None:
    a = zarr3_backend.create_array("memory://test/partial", shape=(10, 10), dtype="int8", chunks=(4, 4))
    assert partial_shards(a, (0, 0), (8, 8)) == (0, None)
    assert partial_shards(a, (0, 0), (10, 10)) == (0, None)  # the array's edge counts as aligned
    assert partial_shards(a, (2, 0), (4, 8)) == (4, "c/0/0")


def test_distributed_lock_per_shard(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "d.zarr"
    _template(path)
    ds = xr.Dataset({"v": (("row", "x"), np.full((6, WIDTH), 5.0))}).chunk({"row": 3})
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PartialShardWarning)
            ds.to_zarr3(
                path,
                region={"row": slice(3, 9)},
                lock=lambda key: _recorded(distributed.Lock(f"test:{key}"), key),
            )
    # both tasks took the lock of the one shard they share; the write planned holding the appends' lock
    assert set(LOCKED) == {"v/c/0/0", "__zarr3_backend_pending.json"}
    values = xr.open_dataset(path, engine="zarr3")["v"].values[:, 0]
    np.testing.assert_array_equal(values, [0] * 3 + [5] * 6 + [0] * (ROWS - 9))
