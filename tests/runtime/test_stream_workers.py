"""A Stream runs its calls on at most ``limit`` pool tasks, each taking the next call; a failure starts no more."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from zarr3_backend.runtime import Stream, collect


class CountingPool(ThreadPoolExecutor):
    """A thread pool that counts the tasks submitted to it."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("limit", [1, 3, 8])
def test_a_stream_submits_one_pool_task_per_worker_not_per_call(limit: int) -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def call(index: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.001)
        with lock:
            running -= 1
        return index * 2

    with CountingPool(16) as pool:
        assert collect(call, 40, limit, pool) == [i * 2 for i in range(40)]
        assert 1 <= pool.submitted <= limit
    assert most <= limit


def test_a_budget_spent_ends_the_workers_and_a_release_starts_them_again() -> None:
    with CountingPool(4) as pool:
        stream = Stream(lambda i: i, 6, 2, pool, budget=2, weigh=lambda _: 1)
        taken = []
        for index, _ in stream:
            taken.append(index)
            stream.release(1)
        assert sorted(taken) == list(range(6))
        assert pool.submitted >= 2


def test_a_failed_call_starts_no_more_calls() -> None:
    started: list[int] = []
    failed, finish = threading.Event(), threading.Event()

    def call(index: int) -> int:
        started.append(index)
        if index == 0:
            while 1 not in started:
                time.sleep(0.001)
            failed.set()
            raise ValueError("call 0")
        finish.wait(10)
        return index

    with ThreadPoolExecutor(4) as pool:
        stream = Stream(call, 10, 2, pool)
        assert failed.wait(10)
        finish.set()  # call 1 ends after call 0 failed: its worker takes no next call
        time.sleep(0.05)
        with pytest.raises(ValueError, match="call 0"):
            dict(stream)
    assert sorted(started) == [0, 1]
