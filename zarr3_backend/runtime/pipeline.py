"""Fetching and decoding side by side: groups fetched on the I/O pool, their items worked on the CPU pool.

[`fetch_and_work`][zarr3_backend.runtime.pipeline.fetch_and_work] streams
the fetches ([`Stream`][zarr3_backend.runtime.streaming.Stream], at most
``limit`` at once) and hands each fetched group's items to the CPU pool as it
arrives, so decoding overlaps fetching. Fetched bytes not yet worked are a
budget: while they reach it, no fetch starts.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TypeVar

from .pools import cpu_pool, in_work_pool, io_pool, map_concurrently
from .settings import io_buffer_bytes
from .streaming import Stream

T = TypeVar("T")
R = TypeVar("R")


def _always(items: Sequence[object]) -> bool:
    return True


def fetch_and_work(
    fetch: Callable[[T], tuple[Sequence[R], int]],
    groups: Sequence[T],
    work: Callable[[R], None],
    limit: int,
    max_bytes: int | None = None,
    *,
    worth_sharing: Callable[[Sequence[R]], bool] = _always,
) -> None:
    """``work`` every item of every group; ``fetch(group)`` returns ``(items, bytes held by them)``.

    Up to ``limit`` fetches run at once on the I/O pool. Each fetched group's
    items go to the CPU pool as it arrives. While fetched groups whose items
    are not all worked hold ``max_bytes`` (default
    [`io_buffer_bytes`][zarr3_backend.runtime.settings.io_buffer_bytes]) or
    more, no fetch starts. The first exception of a fetch or a work call stops
    further fetches and propagates once everything started has ended. Runs
    inline (fetch, then work on the CPU pool) for a single group or when
    called from a work-pool thread; such a group's items are worked on the
    calling thread alone unless ``worth_sharing(items)``: waking a pool
    thread and handing the GIL back and forth costs more than little work gains.
    """
    if len(groups) <= 1 or in_work_pool():
        for group in groups:
            items, _ = fetch(group)
            if worth_sharing(items):
                map_concurrently(work, items)
            else:
                for item in items:
                    work(item)
        return
    stream = Stream(
        lambda index: fetch(groups[index]),
        len(groups),
        limit,
        io_pool(),
        budget=max_bytes or io_buffer_bytes(),
        weigh=lambda fetched: fetched[1],
    )
    started: list[Future[None]] = []
    errors: list[BaseException] = []
    try:
        for _, (items, nbytes) in stream:
            if errors:
                break
            started.extend(_work_group(items, nbytes, work, stream, errors))
    finally:
        stream.close()
        concurrent.futures.wait(started)
    if errors:
        raise errors[0]


def _work_group(
    items: Sequence[R], nbytes: int, work: Callable[[R], None], stream: Stream[tuple[Sequence[R], int]],
    errors: list[BaseException],
) -> list[Future[None]]:  # fmt: skip
    """Submit ``work`` of each item to the CPU pool; the group's bytes are released when the last one ends."""
    if not items:
        stream.release(nbytes)
        return []
    remaining = [len(items)]
    lock = threading.Lock()

    def worked(done: Future[None]) -> None:
        error = None if done.cancelled() else done.exception()
        if error is not None:
            errors.append(error)
            stream.stop()
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            stream.release(nbytes)

    pool = cpu_pool()
    futures = [pool.submit(work, item) for item in items]
    for future in futures:
        future.add_done_callback(worked)
    return futures
