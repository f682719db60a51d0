"""Every thread pool of the package, made once per process, and the plain ways to run calls on them.

- the CPU pool (``zarr3-cpu``, [`thread_count`][zarr3_backend.runtime.settings.thread_count]
  threads) encodes and decodes chunks: codecs release the GIL;
- the I/O pool (``zarr3-io``) runs fetch groups and other calls that wait on a store and then
  hand work to the CPU pool;
- the request pool (``zarr3-requests``) runs single store requests and nothing else (a leaf);
- named pools ([`shared_pool`][zarr3_backend.runtime.pools.shared_pool]) such as dask's write pool.

The I/O and request pools allow [`MAX_IO_THREADS`][zarr3_backend.runtime.pools.MAX_IO_THREADS];
``concurrent.futures`` starts threads only as calls need them, and the callers bound the calls in
flight. Work submitted from a thread of a pool that runs chunk work (CPU, I/O, write) runs inline
there, so a pool never waits on itself. A forked child gets new pools on first use.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Generic, ParamSpec, TypeVar, cast

from .process import PerProcess, process_lock
from .settings import thread_count
from .streaming import collect

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

#: Name of the CPU pool that encodes and decodes chunks (threads ``zarr3-cpu_<n>``).
CPU_POOL = "cpu"
#: Name of the I/O pool that runs fetch groups (threads ``zarr3-io_<n>``).
IO_POOL = "io"
#: Name of the leaf pool that sends single store requests (threads ``zarr3-requests_<n>``).
REQUEST_POOL = "requests"
#: Threads the I/O and request pools may start: a ceiling, not a size (threads start as needed).
MAX_IO_THREADS = 512

_pools: PerProcess[dict[str, ThreadPoolExecutor]] = PerProcess(dict)
_marker = threading.local()  # ``pool``: name of this thread's shared pool; ``inline``: it runs chunk work


def shared_pool(name: str, workers: int, *, inline: bool = True) -> ThreadPoolExecutor:
    """The process's pool ``name`` (threads ``zarr3-<name>_<n>``), made with ``workers`` threads on first use.

    ``inline``: the pool runs chunk work, so the calls of this module made on
    its threads run inline (see [`in_work_pool`][zarr3_backend.runtime.pools.in_work_pool]);
    leaf pools that only wait for requests pass ``False``. A pool keeps the
    size it was made with.
    """
    pools = _pools.get()
    pool = pools.get(name)
    if pool is None:
        with process_lock():
            pool = pools.get(name)
            if pool is None:
                pool = pools[name] = ThreadPoolExecutor(
                    max_workers=workers,
                    thread_name_prefix=f"zarr3-{name}",
                    initializer=_mark,
                    initargs=(name, inline),
                )
    return pool


def cpu_pool() -> ThreadPoolExecutor:
    """The CPU pool (chunk encoding and decoding)."""
    return shared_pool(CPU_POOL, thread_count())


def io_pool() -> ThreadPoolExecutor:
    """The I/O pool: calls that wait on a store and hand their results to the CPU pool."""
    return shared_pool(IO_POOL, MAX_IO_THREADS)


def request_pool() -> ThreadPoolExecutor:
    """The request pool: single store requests, which submit nothing themselves."""
    return shared_pool(REQUEST_POOL, MAX_IO_THREADS, inline=False)


@contextmanager
def private_pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """A pool of ``workers`` threads for one ``with`` block (e.g. a write started inside a write task).

    Its threads are not work-pool threads. On exit, tasks not started are
    cancelled and running ones awaited.
    """
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zarr3-private")
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _mark(name: str, inline: bool) -> None:
    _marker.pool, _marker.inline = name, inline


def in_work_pool() -> bool:
    """Whether the calling thread belongs to a pool that runs chunk work (see [`shared_pool`][zarr3_backend.runtime.pools.shared_pool])."""
    return bool(getattr(_marker, "inline", False))


def current_pool() -> str | None:
    """The name of the shared pool the calling thread belongs to; ``None`` for any other thread."""
    return getattr(_marker, "pool", None)


def submit_io(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> Future[R]:
    """Run ``function(*args, **kwargs)`` on the I/O pool, e.g. a listing while the caller fetches a document."""
    return io_pool().submit(function, *args, **kwargs)


def map_concurrently(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[function(item) for item in items]``, on the CPU pool when that helps, the caller taking part.

    Runs inline for a single item, when the pool has one thread, or when
    called from a work-pool thread (no nested waiting). Otherwise up to
    `thread_count()` threads take the items in turn: CPU pool threads and the
    caller itself, unless it is a thread of a shared pool (a request thread
    only waits). So a caller that is one of several at once (dask's task
    threads) works instead of waiting, and items are not handed over one by
    one. An exception stops the taking of items and propagates only once no
    call is running any more, so a caller cleaning up after a failed write races no write.
    """
    if len(items) <= 1 or thread_count() == 1 or in_work_pool():
        return [function(item) for item in items]
    return _TakenInTurn(function, items).run(caller_works=current_pool() is None)


class _TakenInTurn(Generic[T, R]):
    """``function`` of every item, each item taken by whichever thread is free next."""

    def __init__(self, function: Callable[[T], R], items: Sequence[T]) -> None:
        self._function = function
        self._items = items
        self._results: list[R | None] = [None] * len(items)
        self._next = iter(range(len(items)))
        self._lock = threading.Lock()
        self._errors: list[BaseException] = []

    def run(self, caller_works: bool) -> list[R]:
        helpers = min(thread_count(), len(self._items)) - caller_works
        pool = cpu_pool()
        futures = [pool.submit(self._take) for _ in range(helpers)]
        if caller_works:  # once the caller finds nothing left to take, helpers not started are not needed
            self._take()
            futures = [future for future in futures if not future.cancel()]
        concurrent.futures.wait(futures)  # (a cancelled future is "done" only once a pool thread dequeues it)
        if self._errors:
            raise self._errors[0]
        return cast(list[R], self._results)

    def _take(self) -> None:
        while not self._errors:
            with self._lock:
                index = next(self._next, None)
            if index is None:
                return
            try:
                self._results[index] = self._function(self._items[index])
            except BaseException as exc:  # re-raised by run() once every taker stopped
                self._errors.append(exc)


def map_io(function: Callable[[T], R], items: Sequence[T], limit: int) -> list[R]:
    """``[function(item) for item in items]`` on the I/O pool, ``limit`` at once, for calls that wait on a store.

    Runs inline for a single item or when called from a work-pool thread;
    errors propagate as in [`map_concurrently`][zarr3_backend.runtime.pools.map_concurrently].
    """
    if len(items) <= 1 or in_work_pool():
        return [function(item) for item in items]
    return collect(lambda index: function(items[index]), len(items), limit, io_pool())


def each_request(function: Callable[[T], R], items: Sequence[T], limit: int) -> list[R]:
    """``[function(item) for item in items]`` on the request pool, ``limit`` at once: a store's own requests.

    ``function`` sends one request and submits nothing itself. Runs inline
    for a single item; the first error propagates once no call is running.
    """
    if len(items) <= 1:
        return [function(item) for item in items]
    return collect(lambda index: function(items[index]), len(items), limit, request_pool())


class TrackedExecutor(concurrent.futures.Executor):
    """A view of a shared pool that remembers what it submitted, so one job can await its own tasks.

    Calls run in a copy of the submitter's context (as dask's threaded
    scheduler does). [`drain`][zarr3_backend.runtime.pools.TrackedExecutor.drain]
    cancels those not started and waits for those running.
    """

    def __init__(self, pool: concurrent.futures.Executor) -> None:
        self._pool = pool
        self._futures: list[Future[Any]] = []

    def submit(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Future[R]:
        context = contextvars.copy_context()

        def in_context() -> R:
            return context.run(fn, *args, **kwargs)

        future = self._pool.submit(in_context)
        self._futures.append(future)
        return future

    def drain(self) -> None:
        """Cancel the tasks not started and wait for the ones running."""
        for future in self._futures:
            future.cancel()
        concurrent.futures.wait(self._futures)
