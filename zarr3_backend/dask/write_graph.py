"""Shard-aligned dask write graphs: every stored chunk (shard) is owned by exactly one task.

A write places a dask array ``data`` at ``origin`` in a zarr3_backend
`Array`. `align_to_shards()` rechunks ``data``
so each dask block lies in exactly one stored chunk (one shard, or one chunk
when unsharded), warning with `ShardAlignmentWarning` when that moves
data between tasks. `store_graph()` maps every block to one shard task
(the block's own tasks fuse into it; the array's description is held once
per request, not once per task), which writes its shard with
`write_block()` (one atomic store ``set``;
partial shards are read, merged and rewritten, under the write's ``locks``)
and returns the bytes it wrote (counted by ``progress=True``, see
`zarr3_backend.dask.progress`), with the Icechunk forks it wrote into, if
any (`zarr3_backend.dask.forks`); the graph's last task runs the write's
`WriteStep`, if any (the contract: `zarr3_backend.writes.tasks`).
`zarr3_backend.dask.compute` runs the graph.

Everything in the graph pickles (``Array`` is store + path + metadata), so
the graph runs on any dask scheduler, ``dask.distributed`` included; the
store must then be reachable from every worker (local paths on one machine,
object stores anywhere; never ``memory://`` across processes).

>>> import dask.array as da, zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/dask_io", shape=(10,), dtype="int32", chunks=(2,), shards=(4,))
>>> store_graph([WriteRequest(da.arange(10, chunks=4, dtype="int32"), a, (0,))]).compute()
>>> a[:].tolist()
[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from ..nodes.array import Array
from ..nodes.shard_writes import shard_aligned_chunks, write_block
from ..runtime.locks import NO_LOCKS, KeyLocks
from ..runtime.stacklevel import caller_stacklevel
from ..writes.tasks import WriteRequest, WriteStep, inputs_per_block
from .forks import ForkWrite, gathered, task_forks, task_result

if TYPE_CHECKING:  # dask is optional: this module imports it where it uses it
    from dask.array import Array as DaskArray
    from dask.delayed import Delayed


class ShardAlignmentWarning(UserWarning):
    """Dask chunks were rechunked to the shard grid; the message states what that costs."""


def align_to_shards(data: DaskArray, array: Array, origin: Sequence[int], name: str = "") -> DaskArray:
    """``data`` (a dask array) rechunked so every block lies in exactly one stored chunk of ``array``.

    Blocks are only split when they already nest in the grid; when a stored
    chunk would need several input blocks, a `ShardAlignmentWarning`
    states how many and how many bytes move.
    """
    target = shard_aligned_chunks(data.shape, origin, array.metadata.chunk_grid.dim_grids)
    if tuple(map(tuple, data.chunks)) == target:
        return data
    gathered = [inputs_per_block(have, want) for have, want in zip(data.chunks, target)]
    if any(g > 1 for g in gathered):
        moved = data.nbytes if data.nbytes else 0
        warnings.warn(
            f"{name or array.name}: dask chunks {_describe(data.chunks)} do not align with the "
            f"{'shard' if array.sharded else 'chunk'} grid {array.metadata.chunk_shape} (write origin {tuple(origin)}); "
            f"rechunking to {_describe(target)}: {data.npartitions} input blocks -> "
            f"{math.prod(len(c) for c in target)} write tasks, each gathering up to {math.prod(gathered)} input "
            f"blocks (~{moved / 1e6:.0f} MB moved between tasks). Chunk the data like the "
            f"{'shards' if array.sharded else 'chunks'} to avoid this.",
            ShardAlignmentWarning,
            stacklevel=caller_stacklevel("zarr3_backend", "xarray"),
        )
    return cast("DaskArray", data.rechunk(target))  # dask leaves Array.rechunk unannotated


def _describe(chunks: Sequence[Sequence[int]]) -> str:
    return (
        "("
        + ", ".join(str(c[0]) if len(set(c[:-1])) <= 1 and c[-1] <= c[0] else "irregular" for c in chunks)
        + ")"
    )


def store_graph(
    requests: Sequence[WriteRequest], last_step: WriteStep | None = None, gate: Sequence[DaskArray] = ()
) -> Delayed:
    """A ``dask.delayed`` running every write request, one task per shard, then ``last_step``.

    With a ``gate`` (dask arrays computed with the data, e.g. one check per
    block) no shard task runs before all of it is computed: a check that
    fails leaves the store unchanged, and the blocks written are the blocks
    checked, computed once (dask holds them until the gate opens).

    Each shard task (keyed ``("zarr3-write-shard-<token>", i, ...)``, see
    `zarr3_backend.dask.progress`) writes one shard-aligned block and
    returns the bytes it wrote; the blocks' own tasks fuse into it, so the
    graph holds about one task per shard plus one per request and one
    final task, which runs ``last_step`` (e.g. publishing the new shape of
    appended arrays) once every write succeeded; if any write fails it never runs.
    """
    from dask.delayed import delayed

    written, names = [], []
    opened = _opened(gate) if gate else None
    for request in requests:
        if request.data.size:  # aligned here: the alignment warning points at store_graph's caller
            aligned = align_to_shards(request.data, request.array, request.origin, request.name)
            written.append(_shard_tasks(request, aligned, opened))
            names.append(request.name or request.array.path)
    parts: object = written if opened is None else _one_graph(written)
    shapes = None if opened is None else [a.shape for a in written]
    return cast(
        "Delayed", delayed(_after, pure=False)(parts, last_step, names, shapes)
    )  # dask's delayed is unannotated


def _opened(gate: Sequence[DaskArray]) -> DaskArray:
    """A 0-d dask array computed once every array of ``gate`` is (a failed check raises instead)."""
    import dask.array as da

    return cast("DaskArray", da.stack([a.all() for a in gate]).all())


def _one_graph(written: Sequence[DaskArray]) -> DaskArray:
    """``written`` as one dask array (each array's results raveled, then joined): one collection.

    Handed to ``delayed`` one by one, each array would be optimized (and its
    keys renamed) apart, computing what they share (the gate, the blocks it
    checks) once per array.
    """
    import dask.array as da

    return (
        written[0].ravel()
        if len(written) == 1
        else cast("DaskArray", da.concatenate([a.ravel() for a in written]))
    )


def _shard_tasks(request: WriteRequest, aligned: DaskArray, opened: DaskArray | None = None) -> DaskArray:
    """One task per block of ``aligned`` writing it to its shard; a dask array of the bytes each wrote.

    The graph holds the request's `_ShardWriter` once, under its own key
    (on ``dask.distributed`` it travels to each worker once); a shard task
    carries a reference to it, its block's slices and its block, so its size
    does not grow with the number of shards. With ``opened`` (the gate of
    `store_graph()`) every shard task waits for it.
    """
    import dask.array as da
    from dask.base import tokenize
    from dask.delayed import delayed
    from dask.layers import ArraySliceDep

    from .progress import SHARD_TASK_PREFIX

    token = tokenize(
        aligned.name, request.array.store, request.array.path, request.origin, request.write_empty_chunks
    )
    writer = _ShardWriter(request.array, request.origin, request.write_empty_chunks, request.locks)
    shared = delayed(writer, name=WRITER_PREFIX + token, traverse=False)
    index = tuple(range(aligned.ndim))
    gated = () if opened is None else (opened, ())
    blocks = da.blockwise(
        _write_shard,
        index,
        shared,
        None,
        ArraySliceDep(aligned.chunks),
        index,
        aligned,
        index,
        *gated,
        adjust_chunks=dict.fromkeys(index, 1),
        align_arrays=False,
        name=SHARD_TASK_PREFIX + token,
        meta=np.empty((0,) * aligned.ndim, np.int64),
    )
    return cast("DaskArray", blocks)  # dask's blockwise is unannotated


#: The key of the `_ShardWriter` a write graph holds once per request.
WRITER_PREFIX = "zarr3-write-array-"


@dataclass(frozen=True)
class _ShardWriter:
    """What every shard task of one request shares: the array, where the data starts in it, how to write."""

    array: Array
    origin: tuple[int, ...]
    write_empty_chunks: bool
    locks: KeyLocks = NO_LOCKS


def _write_shard(
    writer: _ShardWriter, where: tuple[slice, ...], block: np.ndarray, opened: object = True
) -> np.ndarray:
    """Write ``block`` (at ``where`` in the request's data) to its shard; an array holding its byte count.

    ``opened``: the gate of `store_graph()`, if any (computed: every block checked).
    """
    start = tuple(o + int(s.start) for o, s in zip(writer.origin, where))
    with task_forks(writer.array.store) as forks:  # writes into an Icechunk fork return it as the result
        write_block(writer.array, start, block, writer.write_empty_chunks, writer.locks)
    return task_result(np.asarray(block).nbytes, forks, len(start))


def _after(
    written: Sequence[np.ndarray] | np.ndarray,
    last_step: WriteStep | None,
    names: list[str],
    shapes: list[tuple[int, ...]] | None = None,
) -> ForkWrite | None:
    """Run ``last_step``; return the forks every task wrote into (see `zarr3_backend.dask.forks`), if any.

    ``written``: per request, its shard tasks' results; with ``shapes``, all
    of them joined in one flat array (`_one_graph`), split here again.
    """
    if shapes is not None:
        ends = np.cumsum([int(np.prod(shape)) for shape in shapes])
        flat = np.asarray(written)
        written = [
            flat[end - size : end].reshape(shape)
            for end, size, shape in zip(ends, map(np.prod, shapes), shapes)
        ]
    with task_forks() as forks:
        if last_step is not None:
            last_step.run()
    return gathered(list(written), names, forks)
