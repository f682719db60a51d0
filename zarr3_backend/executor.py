"""The one place chunk work runs concurrently: a CPU pool for codecs, an I/O pool for fetches.

Codecs (blosc, zstd, gzip, crc32c, numpy copies) release the GIL, so threads
scale on chunk decoding and encoding. The CPU pool's size comes from the
environment variable ``ZARR3_BACKEND_THREADS`` (default: the number of CPUs).

Fetching has its own pool, so the number of requests in flight does not
depend on the CPU count: :func:`fetch_and_work` fetches groups of chunks
on up to ``lanes`` I/O threads at once (remote stores: ``ZARR3_BACKEND_IO_CONCURRENCY``,
default 32) and hands every fetched item to the CPU pool as soon as its group
arrives, so decoding overlaps fetching. Fetched bytes that wait for decoding
are bounded by ``ZARR3_BACKEND_IO_BYTES`` (default 256 MiB): no new fetch
starts while that much is held.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")

_buffers = threading.local()
_pool: ThreadPoolExecutor | None = None
_io: ThreadPoolExecutor | None = None
_lock = threading.Lock()

#: Default of ``ZARR3_BACKEND_IO_CONCURRENCY``: requests in flight to a remote store (tensorstore uses 32 too).
DEFAULT_IO_CONCURRENCY = 32
#: Default of ``ZARR3_BACKEND_IO_BYTES``: fetched bytes a read may hold before they are decoded.
DEFAULT_IO_BYTES = 256 << 20


def thread_count() -> int:
    """Worker threads used for chunk encoding and decoding."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_THREADS", os.cpu_count() or 1)))


def io_concurrency() -> int:
    """Requests a read keeps in flight on a remote store: ``ZARR3_BACKEND_IO_CONCURRENCY``, default 32."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_IO_CONCURRENCY", DEFAULT_IO_CONCURRENCY)))


def io_buffer_bytes() -> int:
    """Fetched, not yet decoded bytes after which a read waits: ``ZARR3_BACKEND_IO_BYTES``, default 256 MiB."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_IO_BYTES", DEFAULT_IO_BYTES)))


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=thread_count(), thread_name_prefix="zarr3")
        return _pool


def _io_pool(lanes: int) -> ThreadPoolExecutor:
    """The shared I/O pool, grown (replaced) when a caller needs more lanes than it has."""
    global _io
    with _lock:
        if _io is None or _io._max_workers < lanes:
            if _io is not None:
                _io.shutdown(wait=False)
            _io = ThreadPoolExecutor(max_workers=max(lanes, io_concurrency()), thread_name_prefix="zarr3-io")
        return _io


def _forget_pool_after_fork() -> None:
    global _pool, _io, _lock
    _pool, _io, _lock = None, None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def submit_io(function: Callable[..., R], *args: Any) -> Future[R]:
    """Run ``function(*args)`` on the I/O pool, e.g. a listing while the caller fetches a document."""
    return _io_pool(1).submit(function, *args)


def map_concurrently(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[function(item) for item in items]``, on the shared pool when that helps.

    Runs inline for a single item, when the pool has one thread, or when
    called from a pool thread (no nested waiting). The first exception raised
    by any call propagates.
    """
    if len(items) <= 1 or thread_count() == 1 or threading.current_thread().name.startswith("zarr3"):
        return [function(item) for item in items]
    return list(_thread_pool().map(function, items))


def fetch_and_work(
    fetch: Callable[[T], tuple[Sequence[R], int]],
    groups: Sequence[T],
    work: Callable[[R], None],
    lanes: int,
    max_bytes: int | None = None,
) -> None:
    """``work`` every item of every group; ``fetch(group)`` returns ``(items, bytes held by them)``.

    Up to ``lanes`` fetches run at once on the I/O pool, started as soon as a
    lane is free; each fetched group's items go to the CPU pool right away,
    so decoding overlaps fetching. While fetched groups whose items are not
    all worked hold ``max_bytes`` (default :func:`io_buffer_bytes`) or more,
    no new fetch starts. The first exception raised by a fetch or a work call
    stops further fetches and propagates once everything started has ended.
    Runs inline (fetch, then work on the pool) for a single group or when
    called from a pool thread.
    """
    if len(groups) <= 1 or threading.current_thread().name.startswith("zarr3"):
        for group in groups:
            map_concurrently(work, fetch(group)[0])
        return
    flow = _Flow(max_bytes or io_buffer_bytes(), _thread_pool(), work)
    io = _io_pool(lanes)
    for group in groups:
        with flow.changed:
            flow.changed.wait_for(lambda: flow.errors or (flow.fetching < lanes and flow.held < flow.max_bytes))
            if flow.errors:
                break
            flow.fetching += 1
        io.submit(fetch, group).add_done_callback(flow.fetched)
    with flow.changed:
        flow.changed.wait_for(lambda: flow.fetching == 0 and flow.working == 0)
    if flow.errors:
        raise flow.errors[0]


class _Flow:
    """Book-keeping of :func:`fetch_and_work`: fetches running, groups being worked, bytes held, errors."""

    def __init__(self, max_bytes: int, pool: ThreadPoolExecutor, work: Callable[[Any], None]) -> None:
        self.max_bytes = max_bytes
        self.pool = pool
        self.work = work
        self.changed = threading.Condition()
        self.fetching = 0
        self.working = 0
        self.held = 0
        self.errors: list[BaseException] = []

    def fetched(self, future: Future[tuple[Sequence[Any], int]]) -> None:
        """A fetch ended: hand its items to the CPU pool (or record its error)."""
        try:
            items, nbytes = future.result()
        except BaseException as exc:
            with self.changed:
                self.errors.append(exc)
                self.fetching -= 1
                self.changed.notify_all()
            return
        with self.changed:
            self.fetching -= 1
            if self.errors:
                self.changed.notify_all()
                return
            self.working += 1
            self.held += nbytes
        remaining = [len(items)]
        lock = threading.Lock()

        def worked(done: Future[None]) -> None:
            error = done.exception()
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if error is not None or last:
                with self.changed:
                    if error is not None:
                        self.errors.append(error)
                    if last:
                        self.working -= 1
                        self.held -= nbytes
                    self.changed.notify_all()

        if not items:
            remaining[0] = 1
            finished: Future[None] = Future()
            finished.set_result(None)
            worked(finished)
        for item in items:
            self.pool.submit(self.work, item).add_done_callback(worked)


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
