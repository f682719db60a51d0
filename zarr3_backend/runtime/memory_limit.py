"""The most memory one read or write may ask for at once: this machine's physical memory.

Metadata may describe arrays no machine can hold in one piece: a selection of
``2**62`` elements, a chunk of several TiB, a shard index of ``2**40`` entries
(parsing already refuses sizes beyond the address space, see
`zarr3_backend.core.metadata`). Allocating them fails with an ``OverflowError``,
an ``OSError`` from ``mmap`` or a ``MemoryError``, or swaps the machine to a halt.
`check_allocation()` refuses such a size with
`MemoryLimitError` before anything is allocated
(`zarr3_backend.Array.check_memory()` applies it to every read and write), and
`out_of_memory()` turns an allocation that fails anyway into one.

>>> check_allocation(1 << 10, "a selection of shape (256,)")
>>> check_allocation(1 << 62, "a selection of shape (2**60,)")
Traceback (most recent call last):
...
zarr3_backend.errors.MemoryLimitError: a selection of shape (2**60,) needs 4.0 EiB, more than this machine's memory (...)
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import MemoryLimitError

_FALLBACK = 1 << 48  # where the system does not say: what a 64-bit process can address


@functools.cache
def physical_memory() -> int:
    """Bytes of physical memory (``sysconf``), or 2**48 where the system does not report it."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return _FALLBACK


def check_allocation(nbytes: int, what: str) -> None:
    """Raise `MemoryLimitError` if ``what`` needs more than `physical_memory()` bytes."""
    limit = physical_memory()
    if nbytes > limit:
        raise MemoryLimitError(
            f"{what} needs {format_bytes(nbytes)}, more than this machine's memory ({format_bytes(limit)})"
        )


@contextmanager
def out_of_memory(what: str) -> Iterator[None]:
    """A failed allocation inside (``MemoryError``, ``mmap``'s ``ENOMEM``) as a `MemoryLimitError` naming ``what``."""
    try:
        yield
    except MemoryLimitError:
        raise
    except MemoryError as exc:
        raise MemoryLimitError(f"{what}: out of memory ({type(exc).__name__}: {exc})") from exc
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
        raise MemoryLimitError(f"{what}: out of memory ({exc})") from exc


def format_bytes(n: int) -> str:
    """``n`` bytes in binary units, one decimal.

    >>> format_bytes(512), format_bytes(3 << 29), format_bytes(1 << 62)
    ('512 B', '1.5 GiB', '4.0 EiB')
    """
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
    power = 0
    while n >= 1 << (10 * (power + 1)) and power < len(units) - 1:
        power += 1
    return f"{n} B" if power == 0 else f"{n / (1 << 10 * power):.1f} {units[power]}"
