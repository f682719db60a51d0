"""How much runs at once: the environment settings every pool and read takes its sizes from.

- ``ZARR3_BACKEND_THREADS``: threads that encode and decode chunks (default: the number of CPUs).
- ``ZARR3_BACKEND_IO_CONCURRENCY``: requests a read keeps in flight on a remote store (default 64).
- ``ZARR3_BACKEND_IO_BYTES``: fetched, not yet decoded bytes after which a read waits (default 256 MiB).
"""

from __future__ import annotations

import functools
import os

#: Default of ``ZARR3_BACKEND_IO_CONCURRENCY``: requests in flight to a remote store.
DEFAULT_IO_CONCURRENCY = 64
#: Default of ``ZARR3_BACKEND_IO_BYTES``: fetched bytes a read may hold before they are decoded.
DEFAULT_IO_BYTES = 256 << 20


def thread_count() -> int:
    """Worker threads used for chunk encoding and decoding: ``ZARR3_BACKEND_THREADS``, default the CPU count."""
    threads = os.environ.get("ZARR3_BACKEND_THREADS")
    return max(1, int(threads)) if threads is not None else _cpu_count()


@functools.cache
def _cpu_count() -> int:
    """``os.cpu_count()``, asked once: it reads a file under /sys, and every read asks for the thread count."""
    return os.cpu_count() or 1


def io_concurrency() -> int:
    """Requests a read keeps in flight on a remote store: ``ZARR3_BACKEND_IO_CONCURRENCY``, default 64."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_IO_CONCURRENCY", DEFAULT_IO_CONCURRENCY)))


def io_buffer_bytes() -> int:
    """Fetched, not yet decoded bytes after which a read waits: ``ZARR3_BACKEND_IO_BYTES``, default 256 MiB."""
    return max(1, int(os.environ.get("ZARR3_BACKEND_IO_BYTES", DEFAULT_IO_BYTES)))
