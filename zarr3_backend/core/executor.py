"""Every thread pool of the package: a CPU pool for codecs, an I/O pool for fetches, named shared pools.

Codecs (blosc, zstd, gzip, crc32c, numpy copies) release the GIL, so threads
scale on chunk decoding and encoding. The CPU pool's size comes from the
environment variable ``ZARR3_BACKEND_THREADS`` (default: the number of CPUs).

Fetching has its own pool, so the number of requests in flight does not
depend on the CPU count: :func:`fetch_and_work` fetches groups of chunks
on up to ``lanes`` I/O threads at once (remote stores: ``ZARR3_BACKEND_IO_CONCURRENCY``,
default 64) and hands every fetched item to the CPU pool as soon as its group
arrives, so decoding overlaps fetching. Fetched bytes that wait for decoding
are bounded by ``ZARR3_BACKEND_IO_BYTES`` (default 256 MiB): no new fetch
starts while that much is held.

This module creates every thread pool of the package (:func:`shared_pool`,
:func:`private_pool`) and is the only one that handles ``fork``: a forked
child forgets the parent's pools (their threads do not exist in the child)
and runs the callbacks registered with :func:`after_fork`. Work submitted
from a thread of a pool that runs chunk work (the CPU, I/O and write pools)
runs inline on that thread, so a pool never waits on itself; threads of
leaf pools (a store's file readers) are not such threads.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

_pools: dict[str, ThreadPoolExecutor] = {}
_lock = threading.Lock()
_fork_callbacks: list[Callable[[], None]] = []
_marker = threading.local()  # ``pool``: name of this thread's shared pool; ``inline``: it runs chunk work

#: Name of the CPU pool that encodes and decodes chunks (threads ``zarr3-cpu_<n>``).
CPU_POOL = "cpu"
#: Name of the I/O pool that fetches chunks and documents (threads ``zarr3-io_<n>``).
IO_POOL = "io"

#: Default of ``ZARR3_BACKEND_IO_CONCURRENCY``: requests in flight to a remote store. Tensorstore keeps 32;
#: answering a request costs us more CPU than it, so more lanes keep the rounds of a many-document open fewer.
DEFAULT_IO_CONCURRENCY = 64
#: Default of ``ZARR3_BACKEND_IO_BYTES``: fetched bytes a read may hold before they are decoded.
DEFAULT_IO_BYTES = 256 << 20


def thread_count() -> int:
    """Worker threads used for chunk encoding and decoding."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_THREADS", os.cpu_count() or 1)))


def io_concurrency() -> int:
    """Requests a read keeps in flight on a remote store: ``ZARR3_BACKEND_IO_CONCURRENCY``, default 64."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_IO_CONCURRENCY", DEFAULT_IO_CONCURRENCY)))


def io_buffer_bytes() -> int:
    """Fetched, not yet decoded bytes after which a read waits: ``ZARR3_BACKEND_IO_BYTES``, default 256 MiB."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_IO_BYTES", DEFAULT_IO_BYTES)))


def shared_pool(name: str, workers: int, *, inline: bool = True, grow: bool = False) -> ThreadPoolExecutor:
    """The process's pool ``name`` (threads ``zarr3-<name>_<n>``), made with ``workers`` threads on first use.

    ``inline``: the pool runs chunk work, so :func:`map_concurrently` and
    :func:`fetch_and_work` called on its threads run inline (see
    :func:`in_work_pool`); leaf pools that only read or write files pass
    ``False``. ``grow``: a call asking for more ``workers`` than the pool
    has replaces it by a larger one (work already submitted to the old
    one finishes there). A forked child gets new pools.
    """
    with _lock:
        pool = _pools.get(name)
        if pool is None or (grow and pool._max_workers < workers):
            pool = _pools[name] = ThreadPoolExecutor(
                max_workers=workers,
                thread_name_prefix=f"zarr3-{name}",
                initializer=_mark,
                initargs=(name, inline),
            )
        return pool


@contextmanager
def private_pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """A pool of ``workers`` threads for one ``with`` block (e.g. a write started inside a write task).

    Its threads are not work-pool threads (:func:`in_work_pool` is false on
    them). On exit, tasks not started are cancelled and running ones awaited.
    """
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zarr3-private")
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _mark(name: str, inline: bool) -> None:
    _marker.pool, _marker.inline = name, inline


def in_work_pool() -> bool:
    """Whether the calling thread belongs to a pool that runs chunk work (see :func:`shared_pool`)."""
    return bool(getattr(_marker, "inline", False))


def current_pool() -> str | None:
    """The name of the shared pool the calling thread belongs to; ``None`` for any other thread."""
    return getattr(_marker, "pool", None)


def after_fork(callback: Callable[[], None]) -> None:
    """Run ``callback`` in every child this process forks from now on (to reset per-process state)."""
    _fork_callbacks.append(callback)


def _forget_pools_after_fork() -> None:
    global _lock
    _pools.clear()
    _lock = threading.Lock()
    for callback in _fork_callbacks:
        callback()


os.register_at_fork(after_in_child=_forget_pools_after_fork)


def _thread_pool() -> ThreadPoolExecutor:
    return shared_pool(CPU_POOL, thread_count())


def _io_pool(lanes: int) -> ThreadPoolExecutor:
    """The shared I/O pool, grown (replaced) when a caller needs more lanes than it has."""
    return shared_pool(IO_POOL, max(lanes, io_concurrency()), grow=True)


def submit_io(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> Future[R]:
    """Run ``function(*args, **kwargs)`` on the I/O pool, e.g. a listing while the caller fetches a document."""
    return _io_pool(1).submit(function, *args, **kwargs)


def map_concurrently(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[function(item) for item in items]``, on the shared pool when that helps.

    Runs inline for a single item, when the pool has one thread, or when
    called from a pool thread (no nested waiting). An exception propagates
    only once no call is running any more (calls not yet started are
    cancelled), so a caller cleaning up after a failed write races no write.
    """
    if len(items) <= 1 or thread_count() == 1 or in_work_pool():
        return [function(item) for item in items]
    pool = _thread_pool()
    return _results([pool.submit(function, item) for item in items])


def map_io(function: Callable[[T], R], items: Sequence[T], lanes: int) -> list[R]:
    """``[function(item) for item in items]`` on the I/O pool (at least ``lanes`` threads), for calls that wait on a store.

    Runs inline for a single item or when called from a pool thread; errors
    propagate as in :func:`map_concurrently`.
    """
    if len(items) <= 1 or in_work_pool():
        return [function(item) for item in items]
    pool = _io_pool(lanes)
    return _results([pool.submit(function, item) for item in items])


def _results(futures: list[Future[R]]) -> list[R]:
    """The futures' results in order; on the first error, cancel those not started and wait for the rest, then raise."""
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        concurrent.futures.wait(futures)
        raise


def fetch_and_work(
    fetch: Callable[[T], tuple[Sequence[R], int]],
    groups: Sequence[T],
    work: Callable[[R], None],
    lanes: int,
    max_bytes: int | None = None,
    *,
    start: Callable[[T], Future[tuple[Sequence[R], int]]] | None = None,
) -> None:
    """``work`` every item of every group; ``fetch(group)`` returns ``(items, bytes held by them)``.

    Up to ``lanes`` fetches run at once, started as soon as a lane is free:
    on the I/O pool, or by ``start(group)`` (a future of what ``fetch``
    would return, such as a coroutine's on an event loop). Each fetched
    group's items go to the CPU pool right away, so decoding overlaps
    fetching. While fetched groups whose items are not all worked hold
    ``max_bytes`` (default :func:`io_buffer_bytes`) or more, no new fetch
    starts. The first exception raised by a fetch or a work call
    stops further fetches and propagates once everything started has ended.
    Runs inline (fetch, then work on the pool) for a single group or when
    called from a pool thread.
    """
    if len(groups) <= 1 or in_work_pool():
        for group in groups:
            map_concurrently(work, fetch(group)[0])
        return
    flow = _Flow(max_bytes or io_buffer_bytes(), _thread_pool(), work)
    start = start or _on_io_pool(fetch, lanes)
    for group in groups:
        with flow.changed:
            flow.changed.wait_for(
                lambda: flow.errors or (flow.fetching < lanes and flow.held < flow.max_bytes)
            )
            if flow.errors:
                break
            flow.fetching += 1
        start(group).add_done_callback(flow.fetched)
    with flow.changed:
        flow.changed.wait_for(lambda: flow.fetching == 0 and flow.working == 0)
    if flow.errors:
        raise flow.errors[0]


def _on_io_pool(fetch: Callable[[T], R], lanes: int) -> Callable[[T], Future[R]]:
    """Starts ``fetch(group)`` on the I/O pool."""
    pool = _io_pool(lanes)

    def start(group: T) -> Future[R]:
        return pool.submit(fetch, group)

    return start


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
