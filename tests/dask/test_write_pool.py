"""Threaded-scheduler writes run on one persistent pool, and a failed write leaves no task of its own running."""

from __future__ import annotations

import threading
import time

import dask
import pytest
from dask.system import CPU_COUNT

from zarr3_backend.dask.compute import compute_writes


class Boom(RuntimeError):
    """The failure a task raises."""


def _graph(*tasks):
    return dask.delayed(lambda *results: results)(*[dask.delayed(task, pure=False)() for task in tasks])


def test_a_failed_write_returns_only_after_its_running_tasks_finish() -> None:
    started, finished = [], []

    def slow() -> None:
        started.append(1)
        time.sleep(0.3)
        finished.append(1)

    def fail() -> None:
        time.sleep(0.05)  # let the slow tasks start first
        raise Boom("task failed")

    with dask.config.set(scheduler="threads"), pytest.raises(Boom):
        compute_writes(_graph(*[slow] * max(1, CPU_COUNT - 1), fail))
    assert started, "the slow tasks should have started before the failure"
    assert len(finished) == len(started)  # no task of the write still running after compute_writes raised


def test_writes_reuse_the_same_threads() -> None:
    def who() -> threading.Thread:
        time.sleep(0.02)
        return threading.current_thread()

    seen: list[set[threading.Thread]] = []
    for _ in range(2):
        out: list[threading.Thread] = []
        with dask.config.set(scheduler="threads"):
            compute_writes(dask.delayed(out.extend)(_graph(*[who] * (2 * CPU_COUNT))))
        seen.append(set(out))
    assert all(thread.name.startswith("zarr3-write") for thread in seen[0])
    assert all(
        thread.is_alive() for thread in seen[0]
    )  # kept, with their scratch buffers, for the next write
    assert seen[0] & seen[1]


def test_a_write_inside_a_write_task_does_not_deadlock() -> None:
    def nested() -> int:
        box: list[int] = []
        compute_writes(dask.delayed(box.append)(dask.delayed(lambda: 1)()))
        return box[0]

    results: list[tuple[int, ...]] = []
    with dask.config.set(scheduler="threads"):
        outer = dask.delayed(results.append)(_graph(*[nested] * CPU_COUNT))
        runner = threading.Thread(target=compute_writes, args=(outer,), daemon=True)
        runner.start()
        runner.join(timeout=20)
    assert not runner.is_alive(), "nested writes deadlocked on the shared pool"
    assert results == [(1,) * CPU_COUNT]
