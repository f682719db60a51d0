"""Running a write plan on its executor, under the write's guard: commit, roll back, release.

`run_plan()` is the engine-independent end of every ``to_zarr3``: it writes in-memory
variables on the client, hands the chunked rest to the `Executor` (one task
per shard, ending in the write's last `WriteStep`), merges Icechunk forks
back, and rolls back a ``mode="a"`` write that failed before its commit
point. `ReleaseReservation` is the step ending a deferred append. `guarded()`
gives a plan the shape its guard lets it run in (region writes: partial
shards warned of, or merged whole under ``lock=``).
"""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Hashable
from dataclasses import dataclass, replace

import numpy as np

from ..coordination.guards import WriteGuard, concurrent_writers, warn_partial, when_no_write_runs
from ..coordination.records import PENDING_KEY
from ..coordination.reservations import Reservation, appending_key, drop_hint, release, reserve
from ..nodes.array import Array
from ..nodes.shard_writes import shard_aligned_chunks, whole_shard_view, write_numpy_many
from ..runtime.locks import KeyLocks
from ..store.base import Store
from .commit import CommitMetadata, roll_back
from .executor import Deferred, Executor, Forked, Progress
from .plan import Shape, WriteOptions, WritePlan
from .tasks import ShardProgress, WriteRequest, WriteStep


@dataclass(frozen=True)
class Run:
    """How a planned write runs: on ``executor``, under ``guard``, through ``forks`` (an Icechunk fork) if any."""

    executor: Executor
    guard: WriteGuard
    forks: Forked | None
    compute: bool
    progress: Progress


def run_plan(
    run: Run, plan: WritePlan, last_step: WriteStep | None, options: WriteOptions, path: str
) -> Deferred | None:
    """Write ``plan``'s data, then ``last_step``: ``None``, or with ``compute=False`` the deferred write."""
    store = run.guard.store
    deferred = not run.compute and plan.grown and options.append_dim is not None
    reserve = (path, options.append_dim, not run.guard.user_lock) if deferred else None
    now = run.compute and run.forks is None  # through forks: computed by forks.finish, which merges them back
    written = write_data(
        store, plan, last_step, run=replace(run, compute=now), locks=run.guard.locks, reserve=reserve
    )
    if run.forks is None or written is None:
        return written
    return run.forks.finish(written, run.compute, progress=bool(run.progress))


def guarded(plan: WritePlan, guard: WriteGuard, compute: bool) -> WritePlan:
    """``plan`` as ``guard`` lets it run: a region write without ``lock=`` warns of partial shards other writers
    may race; with ``lock=`` or deferred, it merges whole shards (appends may change the shape meanwhile)."""
    later = not compute and any(write.variable.chunks is not None for write in plan.data)
    if guard.unguarded_region and (reason := concurrent_writers(later)):
        warn_partial([(w.name, w.array, w.origin, w.variable.shape) for w in plan.data], reason)
    if guard.mode == "r+" and (guard.user_lock or later):
        plan = replace(plan, data=tuple(replace(w, array=whole_shard_view(w.array)) for w in plan.data))
    return plan


def consolidates(consolidated: bool | None, mode: str, target: Store) -> bool:
    """Whether the write consolidates: by default not for region writes nor in Icechunk (the root would conflict)."""
    return bool(consolidated or (consolidated is None and mode != "r+" and not target.transactional))


def write_data(
    store: Store,
    plan: WritePlan,
    last_step: WriteStep | None,
    *,
    run: Run,
    locks: KeyLocks,
    reserve: tuple[str, Hashable, bool] | None,
) -> Deferred | None:
    """In-memory data, then the executor's shard tasks ending in ``last_step``; a failed uncommitted write is rolled back.

    A `CommitMetadata` runs before the chunked data instead in a transaction
    (the user's commit publishes all at once) and for ``reserve``, a deferred
    append (its group, ``append_dim``, and whether only this process writes,
    i.e. no ``lock=`` was given): its grown arrays are published before the
    deferred write is returned, so the rows are the write's; they are listed as not
    written (`zarr3_backend.coordination.reservations`) until its last step,
    `ReleaseReservation`, has run.

    A write over stored packed values (`DataWrite.gated`) writes no shard,
    in-memory variables included, before every block of its packed dask
    values is checked (the `gate` of `Executor.run`).
    """
    commit = last_step if isinstance(last_step, CommitMetadata) else None  # not run yet: undone on failure
    reserved = None
    try:
        if store.transactional and commit is not None:
            commit.run()  # metadata first: the user's commit publishes all at once (and chunks must fit the shape)
            commit = last_step = None
        gate = _gate(plan)
        in_memory = [
            (w.array, w.origin, np.asarray(w.variable.data), w.write_empty)
            for w in plan.data
            if w.variable.chunks is None and not gate
        ]
        requests = [
            WriteRequest(w.variable.data, w.array, w.origin, w.write_empty, w.name, locks)
            for w in plan.data
            if w.variable.chunks is not None or gate
        ]
        counter = ShardProgress(0) if run.progress is True and not requests else None
        write_numpy_many(in_memory, locks)
        if counter is not None:
            _count_shards(counter, in_memory)
        if reserve is not None and commit is not None:
            with locks.held(appending_key(reserve[0])):  # ReleaseReservation may run meanwhile
                reserved = _reserve(store, plan, reserve[0], reserve[1])
            commit.run()
            last_step = ReleaseReservation(store, reserve[0], reserved.id, locks, tidy=reserve[2])
            commit = None
        if (
            store.transactional and run.compute and not requests
        ):  # no task: a writable session never leaves here
            if last_step is not None:
                last_step.run()
            return None
        return run.executor.run(requests, last_step, compute=run.compute, progress=run.progress, gate=gate)
    except BaseException:
        # a first write stays marked unfinished instead; a transaction is discarded by its user
        if commit is not None and not store.transactional:
            roll_back(store, list(plan.grown), list(plan.created), locks)
            if reserved is not None and reserve is not None and not store.exists(PENDING_KEY):
                release(store, reserve[0], reserved.id)  # not published: nothing reserved
        raise


def _gate(plan: WritePlan) -> list[object]:
    """What every shard of a write over stored packed values waits for: each block of the write checked.

    Empty when no dask-backed packed variable is written over stored
    values: then each block is checked in its own write task (a failed
    append or new array is rolled back, a first write stays unfinished).
    """
    if not any(w.gated and w.fits is not None for w in plan.data):
        return []
    return [w.fits for w in plan.data if w.fits is not None]


def _count_shards(counter: ShardProgress, writes: list[tuple[Array, Shape, np.ndarray, bool]]) -> None:
    """Report the shards that in-memory ``writes`` wrote (nothing when they wrote none)."""
    counts = [
        (
            math.prod(len(c) for c in shard_aligned_chunks(data.shape, origin, array.metadata.chunk_shape)),
            data,
        )
        for array, origin, data, _ in writes
        if data.size
    ]
    counter.total = sum(blocks for blocks, _ in counts)
    for blocks, data in counts:
        for _ in range(blocks):
            counter.update(data.nbytes // blocks)
    if counter.total:
        counter.close()


def _reserve(store: Store, plan: WritePlan, path: str, dim: Hashable) -> Reservation:
    """List the rows a deferred append grows its arrays by as not written yet."""
    array, old = plan.grown[0]
    axis = (array.dimension_names or ()).index(str(dim))
    reservation = Reservation(uuid.uuid4().hex, str(dim), old[axis], array.shape[axis])
    reserve(store, path, reservation, stored=old[axis])
    return reservation


@dataclass(frozen=True)
class ReleaseReservation(WriteStep):
    """The `WriteStep` ending a deferred append: its rows are written, take their reservation off (picklable).

    With ``tidy`` (no other process writes) the last one also drops the
    group's hint, unless a write of this process is under way (its commit
    sets the hint right); else the next commit does.
    """

    store: Store
    path: str
    reservation_id: str
    locks: KeyLocks
    tidy: bool = False

    def run(self) -> None:
        """Release the reservation (under the group's appending lock), then maybe drop the hint."""
        with self.locks.held(appending_key(self.path)):
            left = release(self.store, self.path, self.reservation_id)
        if self.tidy and not left:  # else the write of this process under way sets the hint right
            when_no_write_runs(self.store, functools.partial(drop_hint, self.store, self.path))
