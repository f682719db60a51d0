"""Read-ahead for scans on object storage: stored chunks fetched before the reads that need them.

dask reads an array opened with ``chunks={}`` one stored chunk (shard) per
task, and runs only as many tasks at once as it has threads; each task reads
its shard's index, then its ranges. On object storage that leaves most of
the store's `io_concurrency` idle and costs two round
trips per task. A `ReadAhead` (one per array) watches reads of exactly
one whole stored chunk: from the second one of a scan on, each such read
starts whole-value GETs of the stored chunks that follow it in C order of
the chunk grid (or precede it, when the scan moves backwards, as dask often
runs such tasks) and that the scan has not read, as many as the store's
`io_concurrency` and ``ZARR3_BACKEND_IO_BYTES`` allow, and
at most `WINDOW_PER_READ` per chunk the scan has read (a scan that
stops after a few chunks fetched only a few more).

Read-after-write holds: a read that takes a value fetched ahead first asks
the store for the key's current generation (a zero-byte read: one request,
no body) and uses the value only if its generation is the same; otherwise it
reads from the store as if nothing had been fetched. Stores without
versioned reads, and stores that answer as fast as they are asked
(``io_concurrency`` 1), get no read-ahead. A chunk read twice starts a new
scan; values nobody took are dropped `IDLE_SECONDS` after the last read.

>>> from zarr3_backend.core.indexing import plan_selection
>>> whole_chunk(plan_selection((slice(4, 8), slice(None)), (10, 3), (2, 3)), (4, 3))
(1, 0)
>>> whole_chunk(plan_selection((slice(4, 7), slice(None)), (10, 3), (2, 3)), (4, 3)) is None
True
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import replace

import numpy as np

from ..core.indexing import DimGrid, Selection
from ..core.rectilinear_grid import ChunkLengths
from ..runtime import io_buffer_bytes, submit_io
from ..store.base import Buffer, ByteRange, Generation, Request, Store, Value, Versioned

#: Seconds without a read of a whole stored chunk after which values fetched ahead and not taken are dropped.
IDLE_SECONDS = 2.0
#: Values fetched ahead and not yet taken, at most, per stored chunk the scan has read.
WINDOW_PER_READ = 4


def whole_chunk(selection: Selection, chunk_shape: tuple[DimGrid, ...]) -> tuple[int, ...] | None:
    """The grid coordinates of the one stored chunk ``selection`` reads whole, or ``None`` if it reads anything else."""
    first_two = list(itertools.islice(replace(selection, chunk_shape=chunk_shape).chunks(), 2))
    if len(first_two) != 1 or not first_two[0].is_complete:
        return None
    return first_two[0].coords


class ReadAhead:
    """Whole stored chunks of one array fetched ahead of a scan, each served once if still current.

    Parameters
    ----------
    store : Store
        Where the array's chunks are stored.
    chunk_bytes : int
        Decoded size of one stored chunk: the size a chunk is assumed to
        take until fetched values tell their stored size.
    """

    def __init__(self, store: Store, chunk_bytes: int) -> None:
        self.store = store
        self._enabled: bool | None = (
            None  # asked of the store at the first read: most arrays opened are never read
        )
        self._decoded = max(1, chunk_bytes)
        self._stored: int | None = None  # the largest value fetched ahead so far
        self._lock = threading.RLock()  # a fetch that ended already runs its callback at once, under the lock
        self._read: set[str] = set()  # keys this scan read
        self._ahead: dict[
            str, Future[Versioned]
        ] = {}  # keys fetched (or being fetched) ahead and not yet taken
        self._last_read = 0.0
        self._timer: threading.Timer | None = None
        #: the last read's position in C order of the grid, the direction the scan moved in, the grid, the key maker
        self._scan_at: tuple[int, int, tuple[int, ...], Callable[[tuple[int, ...]], str]] | None = None
        self.served = 0  # values fetched ahead that reads took
        self._pid = os.getpid()

    def store_for(
        self, selection: Selection, chunk_shape: tuple[DimGrid, ...], key_of: Callable[[tuple[int, ...]], str]
    ) -> Store:
        """The store a read of ``selection`` should use: one holding the chunk's value fetched ahead, or `store`.

        ``chunk_shape`` is the stored chunks' grid (lengths per dimension) and ``key_of`` gives the
        key of the stored chunk at grid coordinates.
        """
        if self._pid != os.getpid():
            self._start_in_this_process()
        if self._enabled is None:
            self._enabled = self.store.io_concurrency > 1 and self.store.versioned_reads
        coords = whole_chunk(selection, chunk_shape) if self._enabled else None
        if coords is None:
            return self.store
        key = key_of(coords)
        with self._lock:
            if key in self._read:  # read before: another compute, a new scan
                self._forget()
            self._read.add(key)
            fetched = self._ahead.pop(key, None)
            self._last_read = time.monotonic()
            self._arm_timer()
            grid = tuple(
                c.count_covering(n) if isinstance(c, ChunkLengths) else math.ceil(n / c)
                for n, c in zip(selection.shape, chunk_shape)
            )
            position = int(np.ravel_multi_index(coords, grid))
            step = -1 if self._scan_at is not None and position < self._scan_at[0] else 1
            self._scan_at = position, step, grid, key_of
            if len(self._read) >= 2:
                self._top_up(*self._scan_at)
        return self._checked(key, fetched)

    def _start_in_this_process(self) -> None:
        """In a forked child the parent's fetches and timer never end: start empty, with a lock of this process."""
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._ahead = {}
        self._read = set()
        self._timer = None
        self._scan_at = None

    def _checked(self, key: str, fetched: Future[Versioned] | None) -> Store:
        """A store serving ``fetched`` if it is of the generation ``key`` has now; else `store`."""
        if fetched is None:
            return self.store
        now = self.store.get_many_versioned([(key, ByteRange(0, 0))])[
            0
        ].generation  # sent after the read began
        try:
            value = fetched.result()
        except Exception:  # the read's own request raises it again, or succeeds
            return self.store
        if value.value is None or value.generation is None or value.generation != now:
            return self.store
        with self._lock:
            self.served += 1
        return FetchedValue(self.store, key, value.value, value.generation)

    def _top_up(
        self, position: int, step: int, grid: tuple[int, ...], key_of: Callable[[tuple[int, ...]], str]
    ) -> None:
        """Start fetching the chunks after ``position`` in the direction ``step``, not read yet, within the bounds.

        Called holding the lock.
        """
        most = min(self.store.io_concurrency, WINDOW_PER_READ * len(self._read))
        end = min(math.prod(grid), position + 2 * most) if step > 0 else max(-1, position - 2 * most)
        for flat in range(position + step, end, step):
            if (
                len(self._ahead) >= most
                or (len(self._ahead) + 1) * (self._stored or self._decoded) > io_buffer_bytes()
            ):
                return
            key = key_of(tuple(int(c) for c in np.unravel_index(flat, grid)))
            if key not in self._read and key not in self._ahead:
                self._ahead[key] = future = submit_io(self._fetch, key)
                future.add_done_callback(self._fetched)

    def _fetch(self, key: str) -> Versioned:
        return self.store.get_many_versioned([(key, None)])[0]

    def _fetched(self, future: Future[Versioned]) -> None:
        """Learn the stored size from a value fetched ahead: the first one tells how many more fit."""
        if (
            not future.cancelled()
            and future.exception() is None
            and (value := future.result().value) is not None
        ):
            with self._lock:
                first = self._stored is None
                self._stored = max(self._stored or 1, len(value))
                if first and self._scan_at is not None:
                    self._top_up(*self._scan_at)

    def _forget(self) -> None:
        """End the scan: values fetched ahead are dropped, no key counts as read (holding the lock)."""
        for future in self._ahead.values():
            future.cancel()
        self._ahead.clear()
        self._read.clear()
        self._scan_at = None

    def _arm_timer(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(IDLE_SECONDS, self._idle)
            self._timer.daemon = True
            self._timer.start()

    def _idle(self) -> None:
        with self._lock:
            self._timer = None
            if time.monotonic() - self._last_read >= IDLE_SECONDS:
                self._forget()
            else:
                self._arm_timer()


class FetchedValue(Store):
    """`store` with the value of ``key`` already fetched: reads of ``key`` are answered from it, the rest pass through."""

    def __init__(self, store: Store, key: str, value: Buffer, generation: Generation) -> None:
        self.store = store
        self.key = key
        self._value = value
        self.generation = generation
        self.read_only = store.read_only

    @property
    def io_concurrency(self) -> int:
        return self.store.io_concurrency

    @property
    def versioned_reads(self) -> bool:
        return self.store.versioned_reads

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        others = [request for request in requests if request[0] != self.key]
        answered = iter(self.store.get_many_versioned(others) if others else [])
        return [
            self._slice(byte_range) if key == self.key else next(answered) for key, byte_range in requests
        ]

    def _slice(self, byte_range: ByteRange | None) -> Versioned:
        view = memoryview(self._value)
        return Versioned(view if byte_range is None else view[byte_range.slice()], self.generation)

    def set(self, key: str, value: Value) -> None:
        self.store.set(key, value)

    def delete(self, key: str) -> None:
        self.store.delete(key)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.store.list_prefix(prefix)

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return self.store.list_dir(prefix)
