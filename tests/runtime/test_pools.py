"""The runtime owns every thread pool: named shared pools, an explicit work-pool marker, new pools after fork."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from forking import in_forked_child

from zarr3_backend import runtime
from zarr3_backend.runtime import pools
from zarr3_backend.store.local import LocalStore


def _on(pool, function):
    return pool.submit(function).result(timeout=30)


def test_a_request_thread_is_not_a_work_pool_thread() -> None:
    requests = pools.request_pool()
    assert _on(requests, threading.current_thread).name.startswith("zarr3-requests")
    assert _on(requests, runtime.in_work_pool) is False
    assert _on(requests, runtime.current_pool) == pools.REQUEST_POOL


def test_work_submitted_from_a_work_pool_thread_runs_inline(monkeypatch) -> None:
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "2")

    def threads_used() -> set[str]:
        return set(runtime.map_concurrently(lambda _: threading.current_thread().name, range(8)))

    cpu = pools.cpu_pool()
    assert _on(cpu, runtime.in_work_pool) is True
    used = _on(cpu, threads_used)
    assert len(used) == 1 and next(iter(used)).startswith("zarr3-cpu")  # inline: the calling pool thread only
    from_requests = _on(pools.request_pool(), threads_used)  # a request thread hands the work to the CPU pool
    assert all(name.startswith("zarr3-cpu") for name in from_requests)


def test_the_caller_takes_items_too_while_the_cpu_pool_is_busy(monkeypatch) -> None:
    # A dask task thread reading many chunks decodes them itself when the CPU threads serve another task.
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "2")
    cpu = pools.cpu_pool()
    release = threading.Event()
    blockers = [cpu.submit(release.wait, 30) for _ in range(cpu._max_workers)]
    names: list[list[str]] = []
    caller = threading.Thread(
        target=lambda: names.append(
            runtime.map_concurrently(lambda _: threading.current_thread().name, range(6))
        ),
        name="task-thread",
    )
    try:
        caller.start()
        caller.join(10)
        assert names == [["task-thread"] * 6]  # done, all by the caller, while every CPU thread waited
    finally:
        release.set()
        caller.join(30)
        for blocker in blockers:
            blocker.result(timeout=30)


def test_fetch_and_work_runs_inline_on_a_work_pool_thread() -> None:
    def run() -> list[str]:
        names: list[str] = []
        runtime.fetch_and_work(
            lambda g: ([g], 1), [1, 2, 3], lambda _: names.append(threading.current_thread().name), 4
        )
        return names

    here = threading.current_thread().name
    names = _on(pools.io_pool(), run)
    assert len(set(names)) == 1 and names[0].startswith("zarr3-io") and names[0] != here


def test_a_lone_group_is_shared_with_the_pool_only_when_worth_it(monkeypatch) -> None:
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "4")
    here = threading.get_ident()

    def threads_working(worth: bool) -> set[int]:
        idents: set[int] = set()

        def work(_: int) -> None:
            idents.add(threading.get_ident())
            time.sleep(0.002)  # long enough for a pool thread to take items too

        runtime.fetch_and_work(
            lambda g: (list(range(64)), 0), [0], work, 4, worth_sharing=lambda items: worth
        )
        return idents

    assert threads_working(False) == {here}
    shared = threads_working(True)
    assert here in shared and len(shared) > 1


def test_shared_pools_are_made_once_and_keep_their_size() -> None:
    first = runtime.shared_pool("probe", 1, inline=False)
    assert runtime.shared_pool("probe", 4, inline=False) is first
    assert _on(first, runtime.current_pool) == "probe"


def test_a_private_pool_is_no_work_pool_and_ends_with_its_block() -> None:
    with runtime.private_pool(2) as pool:
        assert _on(pool, runtime.in_work_pool) is False
        assert _on(pool, runtime.current_pool) is None
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


def test_large_local_reads_are_read_side_by_side_on_request_threads(tmp_path, monkeypatch) -> None:
    store = LocalStore(tmp_path)
    big = np.arange(1 << 18, dtype="int64").tobytes()  # 2 MiB: the rest is read in threads
    for i in range(4):
        store.set(f"k{i}", big)
    seen: list[str | None] = []
    read = LocalStore._read

    def recording(self, *args):  # type: ignore[no-untyped-def]
        seen.append(runtime.current_pool())
        return read(self, *args)

    monkeypatch.setattr(LocalStore, "_read", recording)
    assert [r.value for r in store.get_many_versioned([(f"k{i}", None) for i in range(4)])] == [big] * 4
    assert seen == [None, pools.REQUEST_POOL, pools.REQUEST_POOL, pools.REQUEST_POOL]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
def test_a_forked_child_gets_new_pools_and_per_process_state() -> None:
    parent_pools = {name: runtime.shared_pool(name, 2) for name in (pools.CPU_POOL, "probe-fork")}
    made: list[int] = []
    state = runtime.PerProcess(lambda: made.append(os.getpid()) or os.getpid())
    assert state.get() == os.getpid()

    def child() -> bool:
        fresh = runtime.shared_pool("probe-fork", 2)
        return (
            state.get() == os.getpid()
            and made[-1] == os.getpid()
            and fresh is not parent_pools["probe-fork"]
            and fresh.submit(lambda: 5).result(timeout=30) == 5
            and runtime.map_concurrently(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]
            and runtime.map_io(lambda x: x + 1, [1, 2, 3], 2) == [2, 3, 4]
        )

    assert in_forked_child(child)
    assert made == [os.getpid()]  # the child's value was made in the child only
    assert runtime.shared_pool("probe-fork", 2) is parent_pools["probe-fork"]


def test_map_io_waits_side_by_side_on_io_threads_beyond_the_cpu_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "1")
    barrier = threading.Barrier(6, timeout=5)  # six calls must wait at once: more than the CPU threads

    def call(item: int) -> tuple[int, str | None]:
        barrier.wait()
        return item, runtime.current_pool()

    assert runtime.map_io(call, list(range(6)), limit=6) == [(i, pools.IO_POOL) for i in range(6)]


def test_map_io_keeps_at_most_its_limit_running() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def call(item: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.01)
        with lock:
            running -= 1
        return item

    assert runtime.map_io(call, list(range(20)), limit=3) == list(range(20))
    assert 1 <= most <= 3


@pytest.mark.parametrize("mapper", ["map_concurrently", "map_io", "each_request"])
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
        if mapper == "map_concurrently":
            runtime.map_concurrently(call, list(range(8)))
        else:
            getattr(runtime, mapper)(call, list(range(8)), 2)
    assert running == 0
