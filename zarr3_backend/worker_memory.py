"""Keep dask.distributed workers from paying page faults for every chunk they encode.

dask.distributed's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``.
Setting that variable also freezes glibc's ``mmap`` threshold at its 128 KiB
default, so every buffer above 128 KiB (each compressed inner chunk, the
compressor's output buffer, a joined shard) is a fresh ``mmap`` that is
returned to the kernel when freed, and faulted in again, page by page, by
the next task. On a write that is most of a worker's system CPU time.

:func:`tune_worker_malloc` runs once per worker process, from the first
write task it executes there: on Linux with glibc it raises the ``mmap``
threshold to :data:`MMAP_THRESHOLD` (so chunk-sized buffers come from the
heap and are reused) and the trim threshold to :data:`TRIM_THRESHOLD` (so
the heap keeps at most that much freed memory for the next task, instead
of returning everything). Everything else, and every other process (the
threaded scheduler's, the user's), is left alone. Set
``ZARR3_BACKEND_WORKER_MALLOC=0`` to opt out.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Callable

from .executor import after_fork, on_dask_worker

#: Environment variable: ``0`` (or ``off``/``false``/``no``) leaves the workers' malloc settings alone.
OPT_OUT_VARIABLE = "ZARR3_BACKEND_WORKER_MALLOC"
#: Allocations below this come from the heap (glibc's largest allowed value on 64-bit Linux).
MMAP_THRESHOLD = 32 << 20
#: Freed heap memory kept for reuse by the next task, at most.
TRIM_THRESHOLD = 64 << 20
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_lock = threading.Lock()
_state: dict[str, bool] = {}


def opted_out() -> bool:
    """Whether ``ZARR3_BACKEND_WORKER_MALLOC`` asks to leave malloc alone."""
    return os.environ.get(OPT_OUT_VARIABLE, "").strip().lower() in ("0", "off", "false", "no")


def tune_worker_malloc() -> bool:
    """Apply the worker malloc settings once per process; whether they are in effect.

    A no-op (returning ``False``) outside a dask.distributed worker, when
    opted out, and where glibc's ``mallopt`` is not available.
    """
    with _lock:
        if "tuned" not in _state:
            _state["tuned"] = should_tune() and _set_thresholds()
        return _state["tuned"]


def should_tune() -> bool:
    """Whether this process is a dask.distributed worker whose malloc settings may be changed."""
    return not opted_out() and on_dask_worker() and mallopt_function() is not None


def mallopt_function() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt`` via ctypes, or ``None`` where there is none (not Linux, musl, ...)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


def _set_thresholds() -> bool:
    mallopt = mallopt_function()
    if mallopt is None:
        return False
    # mallopt returns 1 on success; the trim threshold first, so no free in between trims below the new mmap threshold
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


after_fork(_state.clear)  # a forked child is another process: it decides (and tunes) again
