"""Read-ahead for scans: whole stored chunks fetched before the reads that need them arrive.

dask reads an array with ``chunks={}`` one stored chunk (shard) per task and
runs as many tasks at once as it has threads, so on object storage only that
many requests would be in flight, however many the I/O pool allows. A
:class:`ReadAhead` (one per :class:`~zarr3_backend.array.Array`, so one per
process on a dask cluster) watches the reads of whole stored chunks: from the
second one on, it fetches the stored chunks next to the last one read that
the scan has not read yet (onwards in the direction the scan last moved in
C order of the chunk grid, then backwards: dask does not run tasks in grid
order) on the I/O pool, each with one request for the whole value, and a
later read of such a chunk takes the fetched value instead of sending
requests (:meth:`ReadAhead.reading`).

Bounds: at most :data:`WINDOW_PER_READ` times as many values as the scan
has read, and never more than ``lanes``, are fetched ahead and not yet read
(so a scan that stops after a few chunks wasted only a few requests), and
the bytes they hold stay below ``max_bytes``. Those bytes are estimated per
chunk from the largest stored chunk seen so far, scaled up where that chunk
lies partly outside the array (at first: the decoded chunk size). The
scan's own reads tell the size as soon as they ask for a chunk's ranges (a
shard's, once its index is read), so fetches ahead sized from the decoded
size (often several times the stored size) are re-estimated, and more
start, a round trip into the scan. A scan remembers at most about
:data:`REMEMBERED` chunks as read. Values nobody read are dropped
:data:`IDLE_SECONDS` after the last read of whole chunks ended, so a scan that
stops early keeps nothing; a chunk read again starts a new scan (another
compute of the same array). A value read ahead is the chunk as it was when it
was fetched, like any read that started then; writes through the same array
discard it (:meth:`ReadAhead.discard`).

Not on dask.distributed workers (:func:`~zarr3_backend.executor.on_dask_worker`): each worker
process has its own copy of the array, so one worker would fetch ahead the
shards that another one reads; there, the cluster's many threads keep the
requests in flight.

>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/readahead")
>>> store.set_many({"c/0": b"zero", "c/1": b"one", "c/2": b"two"})
>>> ahead = ReadAhead(store, (3,), (1,), lambda coords: f"c/{coords[0]}", itemsize=4, lanes=2, max_bytes=1 << 20)
>>> for i in range(3):
...     with ahead.reading((i,)) as view:
...         view.get(f"c/{i}")
b'zero'
b'one'
b'two'
>>> ahead.fetched_ahead  # chunk 2 was fetched ahead while chunk 1 was read
1
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import numpy as np

from .executor import after_fork, submit_io
from .chunk_grid import RegularChunkGrid
from .values import as_bytes
from .store.base import Request, Store, Value, Versioned

#: Seconds without a read of whole chunks after which values read ahead and not yet read are dropped.
IDLE_SECONDS = 1.0
#: Chunks a scan remembers as read or fetched; beyond, it forgets (a long scan's memory stays small).
REMEMBERED = 8192
#: Values fetched ahead and not yet read, at most, per whole chunk the scan has read. Measured on a 10-shard
#: ``chunks={}`` load at 50 ms (2 dask threads): the decoding threads were idle waiting for shards at 2, not at 4.
WINDOW_PER_READ = 4


@dataclass
class _Entry:
    """A whole value being fetched (or fetched) ahead, and the bytes reserved for it."""

    key: str
    future: Future[Versioned]
    reserved: int


class ReadAhead:
    """Fetches the stored chunks after those a scan reads, and serves them to its later reads.

    Parameters
    ----------
    store : Store
        Where the chunks are stored.
    shape, chunk_shape : tuple of int
        The array's and its stored chunks' shapes; a scan's direction is judged in C order of the chunk grid.
    key_of : callable
        The store key of the stored chunk at grid coordinates.
    itemsize : int
        Bytes per element: decoded chunks' size is the estimate until stored sizes are seen.
    lanes : int
        Most values fetched ahead and not yet read (and so requests in flight for them).
    max_bytes : int
        Bytes those values may hold.
    """

    # the scan's state, set by _end_scan
    _reserved: int  # bytes held by values fetched ahead
    _reads: int  # reads of whole chunks since the scan began
    _last: int  # the chunk read last
    _direction: int  # +1 or -1: where the scan moved last

    def __init__(
        self, store: Store, shape: tuple[int, ...], chunk_shape: tuple[int, ...],
        key_of: Callable[[tuple[int, ...]], str], *, itemsize: int, lanes: int, max_bytes: int,
    ) -> None:  # fmt: skip
        self.store = store
        self.shape = shape
        self.chunk_shape = chunk_shape
        self.grid_shape = RegularChunkGrid(chunk_shape).grid_shape(shape)
        self.key_of = key_of
        self.lanes = lanes
        self.max_bytes = max_bytes
        self.fetched_ahead = 0  #: values fetched ahead that a read then took
        self._count = int(np.prod(self.grid_shape, dtype=np.int64))
        self._estimate = max(1, int(np.prod(chunk_shape, dtype=np.int64)) * itemsize)
        self._sized = False  # whether the estimate comes from a stored size yet
        self._lock = threading.RLock()  # a fetch that already ended runs its callback in _fill, holding it
        self._entries: dict[int, _Entry] = {}
        self._taken: set[int] = set()  # chunks the scan read or fetched ahead (linear indexes)
        self._read: set[int] = set()  # chunks the scan read
        self._active = 0  # reads of whole chunks running now
        self._idle_timer: threading.Timer | None = None
        self._end_scan()
        _LIVE.add(self)

    @contextmanager
    def reading(self, coords: Sequence[int]) -> Iterator[Store]:
        """Around a read of the whole stored chunk at ``coords``: the store to read it from.

        That is a view serving the chunk's value when it was fetched ahead,
        else, until a stored size is known, one telling the read-ahead the
        chunk's size from the ranges the read asks for, else the store;
        either way later chunks are fetched ahead once this is the scan's
        second read.
        """
        index = int(np.ravel_multi_index(tuple(coords), self.grid_shape)) if self.grid_shape else 0
        with self._lock:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None
            self._active += 1
            if index in self._read or len(self._taken) > REMEMBERED:
                if index in self._read:  # read again: a new scan began (another compute of the same array)
                    self._reads = 0
                self._read.clear()
                self._taken = set(self._entries)
            self._reads += 1
            self._read.add(index)
            entry = self._entries.pop(index, None)
            if entry is not None:
                self._reserved -= entry.reserved
                self.fetched_ahead += 1
            if self._reads > 1 and index != self._last:
                self._direction = 1 if index > self._last else -1
            self._last = index
            self._taken.add(index)
            self._fill()
        try:
            if entry is not None:
                yield _Served(self.store, entry.key, entry.future)
            elif self._sized or self._count == 1:
                yield self.store  # the store itself: reads of several arrays batch their requests
            else:
                yield _Measured(self.store, self.key_of(tuple(coords)), partial(self._learn, index))
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0 and self._entries:
                    self._idle_timer = threading.Timer(IDLE_SECONDS, self._idle)
                    self._idle_timer.daemon = True
                    self._idle_timer.start()

    def discard(self, key: str) -> None:
        """Forget a value fetched ahead for ``key`` (it was just written)."""
        with self._lock:
            for index, entry in list(self._entries.items()):
                if entry.key == key:
                    del self._entries[index]
                    self._reserved -= entry.reserved
                    entry.future.cancel()

    def _fill(self) -> None:
        """From the scan's second read on, start fetches ahead while the window, a lane and the bytes allow (holding the lock)."""
        if self._reads < 2:
            return
        window = min(self.lanes, WINDOW_PER_READ * self._reads)
        for index in self._candidates(window):
            if len(self._entries) >= window or self._reserved + self._estimate > self.max_bytes:
                return
            self._taken.add(index)
            key = self.key_of(tuple(int(c) for c in np.unravel_index(index, self.grid_shape)))
            entry = _Entry(key, submit_io(self._fetch, key), self._estimate)
            self._entries[index] = entry
            self._reserved += entry.reserved
            entry.future.add_done_callback(partial(self._fetched, index, entry))

    def _candidates(self, window: int) -> Iterator[int]:
        """Chunks not taken yet, nearest the last read first: onwards, then backwards (a bounded walk)."""
        for step in (self._direction, -self._direction):
            index, walked = self._last + step, 0
            while 0 <= index < self._count and walked < 4 * window:
                if index not in self._taken:
                    yield index
                index, walked = index + step, walked + 1

    def _fetch(self, key: str) -> Versioned:
        return self.store.get_many_versioned([(key, None)])[0]

    def _fetched(self, index: int, entry: _Entry, _: Future[Versioned]) -> None:
        """A fetch ahead ended: reserve its real size, learn the estimate, fetch further."""
        if entry.future.cancelled() or entry.future.exception() is not None:
            return
        nbytes = len(entry.future.result().value or b"")
        with self._lock:
            if self._entries.get(index) is entry:
                self._reserved += nbytes - entry.reserved
                entry.reserved = nbytes
            self._learn(index, nbytes)

    def _learn(self, index: int, nbytes: int) -> None:
        """The stored chunk ``index`` holds at least ``nbytes``: re-estimate the fetches still running, fetch further."""
        with self._lock:
            whole = nbytes / self._inside_fraction(index)
            estimate = max(self._estimate if self._sized else 1, int(whole))
            self._sized = True
            if estimate != self._estimate:
                self._estimate = estimate
                for entry in self._entries.values():
                    if not entry.future.done():
                        self._reserved += estimate - entry.reserved
                        entry.reserved = estimate
            self._fill()

    def _inside_fraction(self, index: int) -> float:
        """The fraction of chunk ``index`` inside the array (below 1 at its upper edges, where less is stored)."""
        coords = [int(i) for i in np.unravel_index(index, self.grid_shape)]
        inside = [min(c, n - i * c) / c for i, n, c in zip(coords, self.shape, self.chunk_shape, strict=True)]
        return math.prod(inside)

    def _idle(self) -> None:
        """No read of whole chunks for a while: the scan ended; drop what it did not read."""
        with self._lock:
            if self._active:
                return
            for entry in self._entries.values():
                entry.future.cancel()
            self._end_scan()

    def _end_scan(self) -> None:
        """Forget the scan: nothing fetched ahead, nothing read (called holding the lock, or before any thread shares us)."""
        self._entries.clear()
        self._reserved = 0
        self._reads = 0
        self._last = 0
        self._direction = 1
        self._taken.clear()
        self._read.clear()
        self._idle_timer = None

    def _forget_after_fork(self) -> None:
        """In a forked child: the fetches ahead ran on the parent's threads and never end here, and the lock may be held."""
        self._lock = threading.RLock()
        self._active = 0
        self._end_scan()


#: Every read-ahead alive, so a forked child can reset them.
_LIVE: weakref.WeakSet[ReadAhead] = weakref.WeakSet()


def _forget_fetches_after_fork() -> None:
    for ahead in list(_LIVE):
        ahead._forget_after_fork()


after_fork(_forget_fetches_after_fork)


class _View(Store):
    """``base`` as one read of the stored chunk ``key`` sees it: read-only."""

    def __init__(self, base: Store, key: str) -> None:
        self.base = base
        self.key = key
        self.read_only = True

    @property
    def io_concurrency(self) -> int | None:
        lanes: int | None = getattr(self.base, "io_concurrency", None)
        return lanes

    def get_many(self, requests: Sequence[Request]) -> list[bytes | None]:
        return [as_bytes(versioned.value) for versioned in self.get_many_versioned(requests)]

    def set(self, key: str, value: Value) -> None:
        self._check_writable()

    def delete(self, key: str) -> None:
        self._check_writable()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.base.list_prefix(prefix)

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return self.base.list_dir(prefix)


class _Measured(_View):
    """A read of ``key`` from ``base`` that tells ``learn`` how many bytes of ``key`` it asks for.

    The size of the whole value when it asks for all of it; else the end of
    the furthest range it asks for from its second round on (a shard's data:
    the first round reads the index, at the start of a shard or at its end).
    """

    def __init__(self, base: Store, key: str, learn: Callable[[int], None]) -> None:
        super().__init__(base, key)
        self.learn = learn
        self._rounds = 0

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        self._rounds += 1
        if self._rounds > 1:
            self._asked(requests)
        return self._answered(requests, self.base.get_many_versioned(requests))

    def _asked(self, requests: Sequence[Request]) -> None:
        ends = [r.end for key, r in requests if key == self.key and r is not None and r.end is not None and r.start >= 0]
        if ends:
            self.learn(max(ends))

    def _answered(self, requests: Sequence[Request], values: list[Versioned]) -> list[Versioned]:
        whole = [len(v.value) for (key, r), v in zip(requests, values, strict=True) if key == self.key and r is None and v.value]
        if whole:
            self.learn(max(whole))
        return values


class _Served(_View):
    """``base`` with the whole value of ``key`` already fetched (or being fetched): its ranges are sliced from it."""

    def __init__(self, base: Store, key: str, value: Future[Versioned]) -> None:
        super().__init__(base, key)
        self.value = value

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        fetched = self._value()
        if fetched is None:
            return self.base.get_many_versioned(requests)
        others = [request for request in requests if request[0] != self.key]
        from_base = iter(self.base.get_many_versioned(others) if others else [])
        out = []
        for key, byte_range in requests:
            if key != self.key:
                out.append(next(from_base))
            elif fetched.value is None or byte_range is None:
                out.append(fetched)
            else:
                out.append(Versioned(fetched.value[byte_range.slice()], fetched.generation))
        return out

    def _value(self) -> Versioned | None:
        """The value fetched ahead; ``None`` if that fetch failed (the read then asks the store itself)."""
        try:
            return self.value.result()
        except Exception:
            return None
