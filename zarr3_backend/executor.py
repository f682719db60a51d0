"""The one place chunk work runs concurrently: a shared, lazily created thread pool.

Codecs (blosc, zstd, gzip, crc32c, numpy copies) release the GIL, so threads
scale on chunk decoding and encoding. The size comes from the environment
variable ``ZARR3_BACKEND_THREADS`` (default: the number of CPUs).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_pool: ThreadPoolExecutor | None = None
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


def _forget_pool_after_fork() -> None:
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


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
