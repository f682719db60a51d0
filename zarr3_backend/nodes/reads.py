"""Reading selections of many arrays together: the batched read engine behind every array read.

Each request is planned by its array ([`Readable.planned_read`][zarr3_backend.nodes.reads.Readable.planned_read]:
the selection's output and one sans-I/O read plan per stored chunk); the planned reads are grouped by
the store they read from, and each store's chunk plans are split into fetch groups. The groups are
fetched and decoded by [`fetch_and_work`][zarr3_backend.runtime.pipeline.fetch_and_work] (see
"How a read is scheduled" in docs/architecture.md): each group is one batched store call per round, on
the I/O pool, and its decode jobs run on the CPU pool as soon as it arrives, straight into the planned
outputs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any, Protocol, TypeAlias, TypeVar

import numpy as np

from ..codecs.read_plan import DecodeJob, ReadContext, ReadPlan, StaleIndexError
from ..core.dtypes import Scalar
from ..core.indexing import Selection, SelectionLike
from ..runtime import fetch_and_work, io_buffer_bytes, thread_count
from ..store.base import Request, Store, Versioned

T = TypeVar("T")

PIPELINE_MIN_BYTES = 8 << 20  # output bytes per fetch group; larger chunks are fetched one per group
#: Fetched bytes a read from a local store holds before decoding catches up: fetching is fast, a little lookahead suffices.
LOCAL_HELD_BYTES = 32 << 20
#: Stored chunks planned and read at a time: the plans of a read over 10^6 shards never live at once.
#: Few enough that a window's plans seldom outlive two young collections of Python's garbage collector:
#: objects that do are promoted, and enough of them trigger full collections (each a walk over every
#: object of the process: xarray and dask alone are 80,000). At 512, a point series over 10^4 shards
#: paid one or two of them, a fifth of its time.
PLAN_WINDOW = 64
#: On a remote store a window holds this many full sets of requests in flight, so that the round
#: that ends each window (a last, partly filled set) adds little to the time.
REMOTE_WINDOW_WAVES = 64
#: Most bytes per ranged request when a remote read splits a large shard (s3transfer's part size too).
RANGE_PART_BYTES = 8 << 20
#: A remote read of fewer shards than its fetches in flight divided by this splits its large shards.
SPLIT_FETCHES_PER_SHARD = 4

#: What a read returns: an array, or one element (see `Scalar`) when every
#: axis is selected by an integer.
ReadResult: TypeAlias = np.ndarray | Scalar


@dataclass
class PlannedRead:
    """One array's part of a batched read: the selection's plan, its output, the store to fetch from
    and one read plan per stored chunk (``count`` of them, made as they are taken)."""

    selection: Selection
    out: np.ndarray
    store: Store
    chunk_plans: Iterable[tuple[str, ReadPlan]]
    count: int

    def result(self) -> ReadResult:
        """The output once every chunk plan ran: the array, or a scalar for an integer-only selection."""
        return self.out[()] if self.out.ndim == 0 and self.selection.scalar else self.out


class Readable(Protocol):
    """What `read_many()` reads from: an array that plans its part of a batched read."""

    def planned_read(self, selection: SelectionLike, orthogonal: bool) -> PlannedRead:
        """``selection`` (orthogonal indexing if ``orthogonal``) planned for a batched read."""


def read_many(requests: Sequence[tuple[Readable, SelectionLike, bool]]) -> list[ReadResult]:
    """Read ``(readable, selection, orthogonal)`` triples together: one batched store call per round for all.

    Used to load many small arrays (coordinates, a group's metadata-sized
    variables) in one round trip instead of one per array. Stored chunks are
    fetched in groups (see [`fetch_groups`][zarr3_backend.nodes.reads.fetch_groups]; on a remote
    store, one group per stored chunk when they fit the fetches in flight, so each shard moves on
    as soon as its own index arrives) on the I/O pool, and decoded on the CPU pool as each group
    arrives. Plans are made and run `PLAN_WINDOW` stored chunks at a time (on a remote store,
    `REMOTE_WINDOW_WAVES` times its requests in flight).
    A chunk that fails its checksum under a cached shard index (`StaleIndexError`: the
    shard may have been rewritten behind an unchanged generation) drops that array's cached
    indexes, and the read runs once more; a failure then is raised as corruption.
    """
    try:
        return _read_once(requests)
    except StaleIndexError as stale:  # stale first, corrupt only if it fails again
        stale.cache.clear()
        return _read_once(requests)


def _read_once(requests: Sequence[tuple[Readable, SelectionLike, bool]]) -> list[ReadResult]:
    reads = [readable.planned_read(selection, orthogonal) for readable, selection, orthogonal in requests]
    by_store: dict[int, list[PlannedRead]] = defaultdict(list)
    for read in reads:
        by_store[id(read.store)].append(read)
    for group in by_store.values():
        store = group[0].store
        count = sum(read.count for read in group)
        per_chunk = sum(read.out.nbytes for read in group) / max(1, count)
        in_flight = fetches_in_flight(store)
        remote = is_remote(store)
        held = None if remote else min(io_buffer_bytes(), LOCAL_HELD_BYTES)
        one_each = remote and count <= in_flight
        size = max(PLAN_WINDOW, REMOTE_WINDOW_WAVES * in_flight) if remote else PLAN_WINDOW
        plans = ((key, plan, read.out) for read in group for key, plan in read.chunk_plans)
        for flat in _windows(plans, size):
            groups = [[item] for item in flat] if one_each else fetch_groups(flat, per_chunk)
            fetch = partial(_fetch_group, store=store)
            fetch_and_work(fetch, groups, _run_job, in_flight, held, worth_sharing=_decodes_much)
    return [read.result() for read in reads]


def _windows(items: Iterator[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    while window := list(islice(items, size)):
        yield window


def fetches_in_flight(store: Store) -> int:
    """Fetches a read keeps in flight on ``store``: its `io_concurrency` if remote, else the CPU threads.

    Local reads are memory copies, for which more fetches than decoding threads
    only buffer more (they also hold at most `LOCAL_HELD_BYTES` of
    undecoded data).
    """
    return store.io_concurrency if is_remote(store) else thread_count()


def is_remote(store: Store) -> bool:
    """Whether ``store`` declares more than one request in flight (`io_concurrency`): object storage, where rounds cost time.

    Not "more fetches than CPU threads": a 64-core machine has more threads than
    the 64 requests in flight by default, and its reads from S3 pay for rounds all the same.
    """
    return store.io_concurrency > 1


def splits_shards(store: Store, shards: int) -> bool:
    """Whether a read of ``shards`` stored chunks (shards) from ``store`` fetches large ones as side-by-side ranges.

    One connection carries only so much per second, so a remote read of
    few shards (fewer than its fetches in flight over `SPLIT_FETCHES_PER_SHARD`)
    would leave most connections idle, and decoding would wait for each
    shard's last byte; with more, the shards fill the connections by
    themselves and splitting only adds requests.
    """
    return is_remote(store) and shards < fetches_in_flight(store) / SPLIT_FETCHES_PER_SHARD


def read_context(key: str, cache: dict[str, Any], split: bool) -> ReadContext:
    """The `ReadContext` of the stored chunk at ``key`` (``cache``: its array's); with ``split``
    (`splits_shards()`), a large shard is fetched as ranges of at most `RANGE_PART_BYTES`."""
    if split:
        return ReadContext(key, cache, max_block=RANGE_PART_BYTES, whole_up_to=2 * RANGE_PART_BYTES)
    return ReadContext(key, cache)


def fetch_groups(items: list[T], per_chunk: float) -> list[list[T]]:
    """Split read plans into fetch groups of about `PIPELINE_MIN_BYTES` of output each (large chunks: one each).

    A group is one batched store call per round; groups are fetched
    concurrently and decoded as each arrives.

    >>> [len(g) for g in fetch_groups(list(range(10)), 3 << 20)]
    [2, 2, 2, 2, 2]
    """
    size = max(1, int(PIPELINE_MIN_BYTES // max(per_chunk, 1)))
    return [items[i : i + size] for i in range(0, len(items), size)]


#: Read plans fetched together, each with its output array; and what fetching them gives: decode jobs and the bytes they hold.
FetchGroup = list[tuple[str, ReadPlan, Any]]
Fetched = tuple[Sequence[tuple[DecodeJob, Any]], int]


def _fetch_group(plans: FetchGroup, store: Store) -> Fetched:
    jobs = drive_read_plans(plans, store)
    return jobs, _held_bytes(jobs)


def _held_bytes(jobs: list[tuple[DecodeJob, Any]]) -> int:
    return sum(len(job.data) for job, _ in jobs if job.data is not None)


#: Decoded bytes from which a lone fetch group's jobs are shared with the CPU pool (see `fetch_and_work`):
#: below it the hand-off costs more than it gains (a point series's window: a few 2 KB inner chunks
#: and fills of missing shards). Counted decoded, not fetched: 100 KB of zstd may hold 50 MB of a constant field.
SHARED_DECODE_BYTES = 256 << 10


def _decodes_much(jobs: Sequence[tuple[DecodeJob, Any]]) -> bool:
    """Whether ``jobs`` decode `SHARED_DECODE_BYTES` or more (fills of missing chunks count nothing)."""
    decoded = 0
    for job, _ in jobs:
        if job.data is not None:
            decoded += job.spec.size * job.spec.dtype.itemsize
            if decoded >= SHARED_DECODE_BYTES:
                return True
    return False


def _run_job(item: tuple[DecodeJob, np.ndarray]) -> None:
    job, out = item
    job.run(out)


def drive_read_plans(
    plans: list[tuple[str, ReadPlan, np.ndarray]], store: Store
) -> list[tuple[DecodeJob, np.ndarray]]:
    """Run read plans to completion, one batched ``get_many_versioned`` per round of requests.

    Each plan comes with its output array; the result pairs every decode job with it.
    """
    rounds = _read_rounds(plans)
    try:
        batch = next(rounds)
        while True:
            batch = rounds.send(store.get_many_versioned(batch))
    except StopIteration as done:
        jobs: list[tuple[DecodeJob, np.ndarray]] = done.value
    return jobs


_ReadRounds = Generator[list[Request], list[Versioned], list[tuple[DecodeJob, Any]]]


def _read_rounds(plans: list[tuple[str, ReadPlan, Any]]) -> _ReadRounds:
    """Read plans run side by side, sans I/O: yields each round's requests of all plans, receives their values.

    Returns every decode job paired with its plan's output array.
    """
    jobs: list[tuple[DecodeJob, Any]] = []
    pending: list[tuple[str, ReadPlan, Any, list[Any]]] = []
    for key, plan, out in plans:
        _advance(key, plan, out, None, pending=pending, jobs=jobs)
    while pending:
        values = iter((yield [(key, request) for key, _, _, requests in pending for request in requests]))
        current, pending = pending, []
        for key, plan, out, requests in current:
            _advance(key, plan, out, [next(values) for _ in requests], pending=pending, jobs=jobs)
    return jobs


def _advance(key: str, plan: ReadPlan, out: Any, sent: Any, *, pending: list[Any], jobs: list[Any]) -> None:
    try:
        pending.append((key, plan, out, plan.send(sent)))
    except StopIteration as done:
        jobs.extend((job, out) for job in done.value)
