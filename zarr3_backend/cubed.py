"""The Cubed `Executor`: a write's shard tasks as one Cubed plan, under Cubed's ``allowed_mem``.

`CUBED` is what `zarr3_backend.writes.executor.executor_for()` returns for
Cubed arrays (``chunked_array_type="cubed"``). Cubed brings each request's
data to the stored chunk grid (`cubed.rechunk` when that grid is regular;
when a region or an append starts inside a shard, a selection of the input
blocks each shard needs), then one Cubed task per shard assembles the whole
shard and its index and writes it with one store ``set``
(`zarr3_backend.nodes.shard_writes.write_block()`), as a dask shard task
does: both write the same bytes. The write's `WriteStep` runs in this
process once the plan has run, never if a task failed.

Cubed checks every task's projected memory against ``allowed_mem`` before
it runs anything (a shard must fit in it). Its ``threads`` and ``processes``
executors are tested; those running tasks elsewhere (Lithops, Modal, Coiled,
Ray, Spark, dask) need a store every worker reaches (never ``memory://``).
An Icechunk session is refused: use ``cubed.icechunk.store_icechunk``.
Cubed raises on a task's failure while others run: on this machine, a
`TaskGate` makes the roll-back wait for them (not on remote executors).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .coordination.task_gate import TaskGate
from .errors import WriteError
from .nodes.array import Array
from .nodes.shard_writes import shard_aligned_chunks, write_block
from .runtime.locks import NO_LOCKS, KeyLocks
from .store.base import Store
from .writes.executor import Deferred, Forked, ShardTask
from .writes.tasks import ShardProgress, WriteRequest, WriteStep, inputs_per_block

#: Cubed's executors whose tasks run in this process (they reach ``memory://`` stores).
IN_PROCESS = ("threads", "single-threaded", None)
#: Cubed's executors whose tasks run on this machine (they reach a `TaskGate`'s directory).
ON_THIS_MACHINE = (*IN_PROCESS, "processes")


@contextlib.contextmanager
def _gated(executor: object) -> Iterator[TaskGate | None]:
    """A `TaskGate` for a write on ``executor`` (a Cubed executor or its name), closed if the body fails."""
    if getattr(executor, "name", executor) not in ON_THIS_MACHINE:
        yield None
        return
    gate = TaskGate(tempfile.mkdtemp(prefix="zarr3-cubed-tasks-"))
    try:
        yield gate
    except BaseException:
        gate.close()
        raise
    finally:
        shutil.rmtree(gate.directory, ignore_errors=True)


@dataclass(frozen=True)
class CubedExecutor:
    """Shard tasks on Cubed: the executor of the data's ``Spec`` (Cubed's ``threads`` by default)."""

    name: str = "cubed"

    def owns(self, data: object) -> bool:
        """Whether ``data`` is a Cubed array."""
        import cubed

        return isinstance(data, cubed.Array)

    def run(
        self,
        requests: Sequence[WriteRequest],
        last_step: WriteStep | None,
        *,
        compute: bool,
        progress: bool | Literal["tqdm"],
        gate: Sequence[object] = (),
    ) -> Deferred | None:
        """Compute one Cubed plan of every request's shard tasks, then run ``last_step`` here.

        A ``gate`` (checks of packed dask values) is refused: Cubed data is not checked block by block.
        """
        if gate:
            raise WriteError(
                "to_zarr3: packed values written over stored ones are checked on dask only; chunk with dask"
            )
        write = CubedWrite(tuple(requests), last_step, bool(progress))
        if not compute:
            return write
        write.compute()
        return None

    def run_tasks(self, tasks: Sequence[ShardTask], *, progress: bool, label: str) -> list[int]:
        """Run ``tasks`` as one Cubed map over a virtual array with one block per task."""
        import cubed

        with _gated(cubed.config.get("executor_name", None)) as gate:
            counts = cubed.map_blocks(
                functools.partial(_run_task, tuple(tasks), gate),
                dtype=np.int64,
                chunks=((1,) * len(tasks),),
            )
            return [int(n) for n in np.asarray(counts.compute())]

    def token(self, *parts: object) -> str:
        """A fresh token: Cubed arrays have no deterministic token, so a retry is never taken for a done write."""
        del parts
        return uuid.uuid4().hex

    def check_reachable(self, store: Store) -> None:
        """Refuse a process-local store when Cubed's configured executor runs tasks in other processes."""
        import cubed

        _refuse_process_local(store, cubed.config.get("executor_name", None))

    def forked(self, store: Store, chunked: bool) -> contextlib.AbstractContextManager[Forked | None]:
        """No forks: Cubed writes into an Icechunk session are refused (`WriteError`)."""
        if chunked and store.transactional:
            raise WriteError(
                f"to_zarr3: {store!r} is a transaction (an Icechunk session); to_zarr3 does not write Cubed data "
                "into one (its tasks' writes could not be merged back). Use cubed.icechunk.store_icechunk, or "
                "chunk the data with dask"
            )
        return contextlib.nullcontext()


CUBED = CubedExecutor()


@dataclass
class CubedWrite:
    """A Cubed write not run yet: `compute()` runs its shard tasks, then its last step (``compute=False``)."""

    requests: tuple[WriteRequest, ...]
    last_step: WriteStep | None
    progress: bool = False

    def compute(self, **kwargs: object) -> None:
        """Run the shard tasks (``kwargs`` go to ``cubed.compute``, e.g. ``executor=``), then the last step."""
        import cubed

        requests = [r for r in self.requests if r.data.size]
        if requests:
            executor = kwargs.get("executor", requests[0].data.spec.executor)
            for request in requests:
                _refuse_process_local(request.array.store, getattr(executor, "name", executor))
            nbytes = sum(r.data.nbytes for r in requests)
            with _gated(executor) as gate:
                outputs = [_shard_tasks(r, gate) for r in requests]
                with _progress(outputs, nbytes, self.progress) as callbacks:
                    cubed.compute(*outputs, callbacks=callbacks, **kwargs)
        if self.last_step is not None:
            self.last_step.run()


def _shard_tasks(request: WriteRequest, gate: TaskGate | None) -> Any:
    """A Cubed array with one block per shard of ``request``, each the byte count its task wrote."""
    import cubed
    from cubed.core.ops import map_selection

    data, array = request.data, request.array
    target = shard_aligned_chunks(data.shape, request.origin, array.metadata.chunk_grid.dim_grids)
    writer = _ShardWriter(array, request.origin, target, request.write_empty_chunks, request.locks, gate)
    counts = tuple((1,) * len(c) for c in target)
    if all(len(set(c[:-1])) <= 1 and c[-1] <= c[0] for c in target):  # a grid Cubed holds: Cubed rechunks
        aligned = (
            data if tuple(map(tuple, data.chunks)) == target else data.rechunk(tuple(c[0] for c in target))
        )
        return cubed.map_blocks(writer, aligned, dtype=np.int64, chunks=counts)
    blocks = [inputs_per_block(have, want) for have, want in zip(data.chunks, target)]
    return map_selection(
        writer,
        functools.partial(_selection, target),
        data,
        shape=tuple(len(c) for c in target),
        dtype=np.int64,
        chunks=counts,
        max_num_input_blocks=int(np.prod(blocks)),
    )


@dataclass(frozen=True)
class _ShardWriter:
    """One request's shard task: writes the block at ``block_id`` of the shard-aligned ``chunks`` (picklable)."""

    array: Array
    origin: tuple[int, ...]
    chunks: tuple[tuple[int, ...], ...]
    write_empty_chunks: bool
    locks: KeyLocks = NO_LOCKS
    gate: TaskGate | None = None

    def __call__(self, block: np.ndarray, block_id: tuple[int, ...] | None = None) -> np.ndarray:
        assert block_id is not None  # Cubed passes it to a function taking it
        start = tuple(o + sum(c[:i]) for o, c, i in zip(self.origin, self.chunks, block_id))
        with _task(self.gate):
            write_block(self.array, start, np.asarray(block), self.write_empty_chunks, self.locks)
        return np.full((1,) * len(start), np.asarray(block).nbytes, dtype=np.int64)


def _selection(target: tuple[tuple[int, ...], ...], key: Any) -> tuple[slice, ...]:
    """The input region of the shard block at ``key.coords`` of the shard-aligned ``target`` chunks."""
    edges = [list(itertools.accumulate(c, initial=0)) for c in target]
    return tuple(slice(e[i], e[i + 1]) for e, i in zip(edges, key.coords))


def _run_task(
    tasks: tuple[ShardTask, ...], gate: TaskGate | None, block_id: tuple[int, ...] | None = None
) -> np.ndarray:
    assert block_id is not None
    with _task(gate):
        return np.array([tasks[block_id[0]]()], dtype=np.int64)


def _task(gate: TaskGate | None) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext() if gate is None else gate.task()


def _refuse_process_local(store: Store, executor: object) -> None:
    if executor not in IN_PROCESS and store.process_local:
        raise WriteError(
            f"the store {store!r} lives in this process's memory, but Cubed's {executor!r} executor runs tasks "
            "in other processes, whose writes would be lost; write to a path or an object store instead"
        )


@contextlib.contextmanager
def _progress(outputs: list[Any], nbytes: int, show: bool) -> Iterator[list[Any] | None]:
    """Cubed callbacks printing `ShardProgress` for the shard tasks of ``outputs`` (``None`` without ``show``).

    Cubed's events carry no task result, so each shard counts as an equal share of the ``nbytes`` written.
    """
    if not show:
        yield None
        return
    from cubed import Callback

    counter = ShardProgress(total := sum(int(np.prod(o.numblocks)) for o in outputs))
    shard_ops = {op for o in outputs for op in o.plan().dag.predecessors(o.name)}  # the steps writing shards

    class _Shards(Callback):  # type: ignore[misc]  # cubed is untyped
        def on_task_end(self, event: Any) -> None:
            for _ in range(event.num_tasks if event.name in shard_ops else 0):
                counter.update(nbytes // max(total, 1))

    try:
        yield [_Shards()]
    finally:
        counter.close()
