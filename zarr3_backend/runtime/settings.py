"""Every ``ZARR3_BACKEND_*`` environment setting, parsed and range-checked here and nowhere else.

- ``ZARR3_BACKEND_THREADS``: threads that encode and decode chunks (default: the number of CPUs).
- ``ZARR3_BACKEND_IO_CONCURRENCY``: requests a read keeps in flight on a remote store (default 64).
- ``ZARR3_BACKEND_IO_BYTES``: fetched, not yet decoded bytes after which a read waits (default 256 MiB).
- ``ZARR3_BACKEND_LEASE_WAIT``: seconds a ``to_zarr3`` append waits for another writer (default 600).

A value is read from the environment when it is asked for (so a test may
change it), and each distinct value is parsed once. A value that is not
what the setting accepts (``abc``, ``nan``, ``-1``, ``0`` threads) raises
`SettingError` naming the variable and what it accepts, when it is first read.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass

from ..errors import SettingError

#: Default of ``ZARR3_BACKEND_IO_CONCURRENCY``: requests in flight to a remote store.
DEFAULT_IO_CONCURRENCY = 64
#: Default of ``ZARR3_BACKEND_IO_BYTES``: fetched bytes a read may hold before they are decoded.
DEFAULT_IO_BYTES = 256 << 20
#: Default of ``ZARR3_BACKEND_LEASE_WAIT``: seconds an append waits for another writer's lease.
DEFAULT_LEASE_WAIT = 600.0


@dataclass(frozen=True)
class _Setting:
    """One variable: integer or seconds, and the smallest value it accepts."""

    name: str
    seconds: bool = False  # a finite number of seconds (float), else an integer
    minimum: float = 1

    def accepts(self) -> str:
        if self.seconds:
            return f"a finite number of seconds >= {self.minimum:g} (e.g. 600 or 0.5)"
        return f"an integer >= {self.minimum:g} (e.g. 64)"


THREADS = _Setting("ZARR3_BACKEND_THREADS")
IO_CONCURRENCY = _Setting("ZARR3_BACKEND_IO_CONCURRENCY")
IO_BYTES = _Setting("ZARR3_BACKEND_IO_BYTES")
LEASE_WAIT = _Setting("ZARR3_BACKEND_LEASE_WAIT", seconds=True, minimum=0)


@functools.cache
def _parse(setting: _Setting, raw: str) -> float:
    """``raw`` as ``setting`` accepts it, else `SettingError` (each distinct value parsed once)."""
    text = raw.strip()
    try:
        value = float(text) if setting.seconds else int(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= setting.minimum):
        raise SettingError(
            f"environment variable {setting.name}={raw!r} is not {setting.accepts()}; "
            f"set it to such a value or unset it for the default"
        )
    return value


def _read(setting: _Setting) -> float | None:
    """The variable's value, parsed; ``None`` when it is unset."""
    raw = os.environ.get(setting.name)
    return None if raw is None else _parse(setting, raw)


def thread_count() -> int:
    """Worker threads used for chunk encoding and decoding: ``ZARR3_BACKEND_THREADS``, default the CPU count."""
    threads = _read(THREADS)
    return int(threads) if threads is not None else _cpu_count()


@functools.cache
def _cpu_count() -> int:
    """``os.cpu_count()``, asked once: it reads a file under /sys, and every read asks for the thread count."""
    return os.cpu_count() or 1


def io_concurrency() -> int:
    """Requests a read keeps in flight on a remote store: ``ZARR3_BACKEND_IO_CONCURRENCY``, default 64."""
    value = _read(IO_CONCURRENCY)
    return int(value) if value is not None else DEFAULT_IO_CONCURRENCY


def io_buffer_bytes() -> int:
    """Fetched, not yet decoded bytes after which a read waits: ``ZARR3_BACKEND_IO_BYTES``, default 256 MiB."""
    value = _read(IO_BYTES)
    return int(value) if value is not None else DEFAULT_IO_BYTES


def lease_wait() -> float:
    """Seconds an append waits for another writer's lease: ``ZARR3_BACKEND_LEASE_WAIT``, default 600."""
    value = _read(LEASE_WAIT)
    return float(value) if value is not None else DEFAULT_LEASE_WAIT
