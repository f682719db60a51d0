"""Running a ``to_zarr3`` plan: writing the planned data under the write's guard.

`write_data()` writes in-memory
variables on the client, builds the dask graph of the rest ending in the
write's last `WriteStep`, runs it, and rolls back a ``mode="a"`` write that
failed before its commit point. `ReleaseReservation` is the step ending a
deferred append.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
import xarray as xr

from ...coordination.guards import writers_key
from ...coordination.records import PENDING_KEY
from ...coordination.reservations import Reservation, appending_key, drop_hint, release, reserve
from ...dask.compute import compute_writes
from ...dask.progress import ShardProgress
from ...dask.write_graph import WriteRequest, WriteStep, store_graph
from ...nodes.array import Array
from ...nodes.shard_writes import shard_aligned_chunks, write_numpy_many
from ...runtime.locks import KeyLocks, local_lock
from ...store.base import Store
from .commit import CommitMetadata, roll_back
from .plan import Shape, WritePlan

if TYPE_CHECKING:
    from dask.array import Array as DaskArray
    from dask.delayed import Delayed


def has_dask_data(obj: xr.Dataset | xr.DataTree) -> bool:
    """Whether any variable of ``obj`` (any group of a DataTree) holds a dask array."""
    nodes = obj.subtree if isinstance(obj, xr.DataTree) else [obj]
    return any(variable.chunks is not None for node in nodes for variable in node.variables.values())


def write_data(
    store: Store,
    plan: WritePlan,
    last_step: WriteStep | None,
    *,
    locks: KeyLocks,
    compute: bool,
    progress: bool | Literal["tqdm"],
    reserve: tuple[str, Hashable, bool] | None,
) -> Delayed | None:
    """In-memory data, then the dask graph ending in ``last_step``; a failed uncommitted write is rolled back.

    A `CommitMetadata` runs before the dask data instead in a transaction
    (the user's commit publishes all at once) and for ``reserve``, a deferred
    append (its group, ``append_dim``, and whether only this process writes,
    i.e. no ``lock=`` was given): its grown arrays are published before the
    graph is returned, so the rows are the write's; they are listed as not
    written (`zarr3_backend.coordination.reservations`) until the graph's last step,
    `ReleaseReservation`, has run.

    A write over stored packed values (`DataWrite.gated`) writes no shard,
    in-memory variables included, before every block of its packed dask
    values is checked (the gate of `store_graph()`).
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
            WriteRequest(_lazy(w.variable.data), w.array, w.origin, w.write_empty, w.name, locks)
            for w in plan.data
            if w.variable.chunks is not None or gate
        ]
        counter = ShardProgress(0) if progress is True and not requests else None
        write_numpy_many(in_memory, locks)
        if counter is not None:
            _count_shards(counter, in_memory)
        if reserve is not None and commit is not None:
            with locks.held(appending_key(reserve[0])):  # ReleaseReservation may run meanwhile
                reserved = _reserve(store, plan, reserve[0], reserve[1])
            commit.run()
            last_step = ReleaseReservation(store, reserve[0], reserved.id, locks, tidy=reserve[2])
            commit = None
        if store.transactional and compute and not requests:  # no task: a writable session never leaves here
            if last_step is not None:
                last_step.run()
            return None
        delayed = store_graph(requests, last_step, gate)
        if not compute:
            return delayed
        compute_writes(delayed, progress if requests else False)  # no shard tasks: nothing to report
    except BaseException:
        # a first write stays marked unfinished instead; a transaction is discarded by its user
        if commit is not None and not store.transactional:
            roll_back(store, list(plan.grown), list(plan.created), locks)
            if reserved is not None and reserve is not None and not store.exists(PENDING_KEY):
                release(store, reserve[0], reserved.id)  # not published: nothing reserved
        raise
    return None


def _gate(plan: WritePlan) -> list[DaskArray]:
    """What every shard of a write over stored packed values waits for: each block of the write checked.

    Empty when no dask-backed packed variable is written over stored
    values: then each block is checked in its own write task (a failed
    append or new array is rolled back, a first write stays unfinished).
    """
    if not any(w.gated and w.fits is not None for w in plan.data):
        return []
    return [w.fits for w in plan.data if w.fits is not None]


def _lazy(data: object) -> DaskArray:
    """``data`` as a dask array: in-memory values written by tasks too, behind a write's gate."""
    import dask.array as da

    if isinstance(data, da.Array):
        return data
    values = np.asarray(data)
    return cast("DaskArray", da.from_array(values, chunks=values.shape or ()))


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
        writers = local_lock(writers_key(self.store))
        if (
            self.tidy and not left and writers.acquire(blocking=False)
        ):  # else the write holding it sets the hint right
            try:
                drop_hint(self.store, self.path)
            finally:
                writers.release()
