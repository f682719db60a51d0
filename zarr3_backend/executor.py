"""The one place chunk work runs concurrently: a shared, lazily created thread pool.

Codecs (blosc, zstd, gzip, crc32c, numpy copies) release the GIL, so threads
scale on chunk decoding and encoding. The size comes from the environment
variable ``ZARR3_BACKEND_THREADS`` (default: the number of CPUs).
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")

_buffers = threading.local()
_pool: ThreadPoolExecutor | None = None
_fetcher: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def thread_count() -> int:
    """Worker threads used for chunk encoding and decoding."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_THREADS", os.cpu_count() or 1)))


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=thread_count(), thread_name_prefix="zarr3")
        return _pool


def _fetch_thread() -> ThreadPoolExecutor:
    global _fetcher
    with _lock:
        if _fetcher is None:
            _fetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zarr3-fetch")
        return _fetcher


def _forget_pool_after_fork() -> None:
    global _pool, _fetcher, _lock
    _pool, _fetcher, _lock = None, None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def map_concurrently(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[function(item) for item in items]``, on the shared pool when that helps.

    Runs inline for a single item, when the pool has one thread, or when
    called from a pool thread (no nested waiting). The first exception raised
    by any call propagates.
    """
    if len(items) <= 1 or thread_count() == 1 or threading.current_thread().name.startswith("zarr3"):
        return [function(item) for item in items]
    return list(_thread_pool().map(function, items))


def pipelined(
    fetch: Callable[[T], Sequence[R]], groups: Sequence[T], work: Callable[[R], None], max_queued: int = 32
) -> None:
    """``work`` every item of ``fetch(group)`` for each group, fetching the next group meanwhile.

    Fetches run in order on one background thread, at most one group ahead,
    so I/O for group ``k+1`` overlaps with the pool working on group ``k``
    while memory stays bounded (at most ``max_queued`` work items wait). The
    first exception raised by a fetch or a work call propagates once
    everything started has ended.
    """
    if len(groups) <= 1 or threading.current_thread().name.startswith("zarr3"):
        for group in groups:
            map_concurrently(work, fetch(group))
        return
    fetcher, pool = _fetch_thread(), _thread_pool()
    next_fetch: Future[Sequence[R]] | None = fetcher.submit(fetch, groups[0])
    started: collections.deque[Future[None]] = collections.deque()
    try:
        for position in range(len(groups)):
            fetched = next_fetch.result()  # type: ignore[union-attr]
            next_fetch = fetcher.submit(fetch, groups[position + 1]) if position + 1 < len(groups) else None
            for item in fetched:
                started.append(pool.submit(work, item))
                while len(started) > max_queued:
                    started.popleft().result()
    finally:
        if next_fetch is not None:
            next_fetch.cancel()
            wait([next_fetch])
        wait(started)
    _raise_first(started)


def _raise_first(futures: Iterable[Future[None]]) -> None:
    for future in futures:
        future.result()


def thread_buffer(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A per-thread scratch array of ``shape`` and ``dtype``, reused across chunks.

    Decoding and encoding go through it instead of allocating a fresh
    chunk-sized temporary each time (allocation churn costs page faults,
    badly so on dask workers, which return freed memory eagerly). The
    contents are valid until the same thread asks again.
    """
    cache = _buffers.__dict__.setdefault("arrays", {})
    key = (shape, dtype.str)
    buffer = cache.get(key)
    if buffer is None or dtype.hasobject:
        if len(cache) >= 8:
            cache.clear()
        buffer = cache[key] = np.empty(shape, dtype=dtype)
    return buffer
