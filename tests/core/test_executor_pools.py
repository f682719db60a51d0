"""The executor owns every thread pool: named shared pools, an explicit work-pool marker, fork resets."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from forking import in_forked_child

from zarr3_backend.core import executor
from zarr3_backend.store import local
from zarr3_backend.store.local import LocalStore


def _on(pool, function):
    return pool.submit(function).result(timeout=30)


def test_a_local_store_reader_thread_is_not_a_work_pool_thread() -> None:
    reader = local._reader_pool()
    assert _on(reader, threading.current_thread).name.startswith(
        "zarr3-"
    )  # the old name-prefix rule matched it
    assert _on(reader, executor.in_work_pool) is False
    assert _on(reader, executor.current_pool) == "local"


def test_work_submitted_from_a_work_pool_thread_runs_inline(monkeypatch) -> None:
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "2")

    def threads_used() -> set[str]:
        return set(executor.map_concurrently(lambda _: threading.current_thread().name, range(8)))

    cpu = executor.shared_pool(executor.CPU_POOL, executor.thread_count())
    caller = _on(cpu, lambda: threading.current_thread().name)
    assert _on(cpu, executor.in_work_pool) is True
    used = _on(cpu, threads_used)
    assert len(used) == 1 and next(iter(used)).startswith("zarr3-cpu")  # inline: the calling pool thread only
    from_reader = _on(local._reader_pool(), threads_used)  # a reader thread hands the work to the CPU pool
    assert all(name.startswith("zarr3-cpu") for name in from_reader)
    assert caller.startswith("zarr3-cpu")


def test_fetch_and_work_runs_inline_on_a_work_pool_thread() -> None:
    def run() -> list[str]:
        names: list[str] = []
        executor.fetch_and_work(
            lambda g: ([g], 1), [1, 2, 3], lambda _: names.append(threading.current_thread().name), 4
        )
        return names

    here = threading.current_thread().name
    io = executor.shared_pool(executor.IO_POOL, executor.io_concurrency(), grow=True)
    names = _on(io, run)
    assert len(set(names)) == 1 and names[0].startswith("zarr3-io") and names[0] != here


def test_shared_pools_are_made_once_and_grow_only_on_request() -> None:
    first = executor.shared_pool("probe", 1, inline=False)
    assert executor.shared_pool("probe", 4, inline=False) is first  # no growth unless asked
    grown = executor.shared_pool("probe", 4, inline=False, grow=True)
    assert grown is not first and grown._max_workers == 4
    assert first.submit(lambda: 1).result(timeout=30) == 1  # the replaced pool still serves its callers
    assert _on(grown, executor.current_pool) == "probe"


def test_a_private_pool_is_no_work_pool_and_ends_with_its_block() -> None:
    with executor.private_pool(2) as pool:
        assert _on(pool, executor.in_work_pool) is False
        assert _on(pool, executor.current_pool) is None
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


def test_large_local_reads_use_the_reader_pool(tmp_path) -> None:
    store = LocalStore(tmp_path)
    big = np.arange(1 << 18, dtype="int64").tobytes()  # 2 MiB: the rest is read in threads
    for i in range(4):
        store.set(f"k{i}", big)
    assert store.get_many([(f"k{i}", None) for i in range(4)]) == [big] * 4


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
def test_a_forked_child_gets_new_pools_and_runs_the_reset_callbacks() -> None:
    parent_pools = {name: executor.shared_pool(name, 2) for name in (executor.CPU_POOL, "probe-fork")}
    parent_reader = local._reader_pool()
    calls: list[int] = []
    executor.after_fork(lambda: calls.append(os.getpid()))

    def child() -> bool:
        fresh = executor.shared_pool("probe-fork", 2)
        return (
            calls == [os.getpid()]
            and fresh is not parent_pools["probe-fork"]
            and local._reader_pool() is not parent_reader
            and fresh.submit(lambda: 5).result(timeout=30) == 5
            and executor.map_concurrently(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]
        )

    try:
        assert in_forked_child(child)
    finally:
        executor._fork_callbacks.pop()
    assert calls == []  # callbacks run in the child only
    assert executor.shared_pool("probe-fork", 2) is parent_pools["probe-fork"]


def test_only_the_executor_creates_thread_pools_or_handles_fork() -> None:
    from pathlib import Path

    root = Path(executor.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "executor.py"
        and any(word in path.read_text() for word in ("ThreadPoolExecutor(", "register_at_fork"))
    ]
    assert offenders == []


def test_map_io_waits_side_by_side_on_io_threads_beyond_the_cpu_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "1")
    barrier = threading.Barrier(6, timeout=5)  # six calls must wait at once: more than the CPU threads

    def call(item: int) -> tuple[int, str | None]:
        barrier.wait()
        return item, executor.current_pool()

    assert executor.map_io(call, list(range(6)), lanes=6) == [(i, executor.IO_POOL) for i in range(6)]


@pytest.mark.parametrize("mapper", ["map_concurrently", "map_io"])
def test_map_concurrently_raises_only_once_no_call_runs(monkeypatch: pytest.MonkeyPatch, mapper: str) -> None:
    # A failed write cleans up right after the exception: a call still writing would leave a stray key.
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "2")
    running = 0
    lock = threading.Lock()
    started = threading.Event()

    def call(item: int) -> int:
        nonlocal running
        with lock:
            running += 1
        try:
            if item == 0:
                started.wait(5)  # fail while item 1 is running
                raise RuntimeError("first call fails")
            started.set()
            time.sleep(0.3)
            return item
        finally:
            with lock:
                running -= 1

    with pytest.raises(RuntimeError, match="first call fails"):
        if mapper == "map_io":
            executor.map_io(call, list(range(8)), lanes=2)
        else:
            executor.map_concurrently(call, list(range(8)))
    assert running == 0
