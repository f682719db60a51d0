"""Shard-aligned dask writes: every stored chunk (shard) is owned by exactly one task.

A write places a dask array ``data`` at ``origin`` in a zarr3_backend
:class:`~zarr3_backend.array.Array`. :func:`align_to_shards` rechunks ``data``
so each dask block lies in exactly one stored chunk (one shard, or one chunk
when unsharded), warning with :class:`ShardAlignmentWarning` when that moves
data between tasks. :func:`store_graph` maps every block to one shard task
(the block's own tasks fuse into it), which encodes its inner chunks,
assembles the shard and its index and writes it with one atomic store
``set`` (temp file + rename on local disk, one PUT, or one multipart
upload for large shards, on object stores) and returns the bytes it wrote
(counted by ``progress=True``, see :mod:`zarr3_backend.write_progress`). A
task that dies leaves the previous shard (or nothing), never a torn one, so
re-running a write converges. On dask.distributed workers the first shard
task adjusts the worker's malloc once (:mod:`zarr3_backend.worker_memory`).

Blocks that cover only part of their shard (region and append edges) are
read, merged and rewritten by their owning task; the part of the shard
outside the array's shape is reset to the fill value. Blocks covering the
whole in-bounds part of a shard are encoded without reading.

Two independent writers (processes, clusters) may write disjoint regions of
one array safely when the regions are aligned to shards. A block covering
only part of a shard is a read-modify-write of the whole shard: a second
writer doing the same to that shard at the same time can lose its rows.
:func:`partial_shards` finds such shards (``to_zarr3`` warns with
:class:`PartialShardWarning`), and a ``lock`` (see :func:`shard_lock`) makes
the read-modify-write exclusive per shard across processes.

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

import concurrent.futures
import contextlib
import contextvars
import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from .array import Array, reset_outside
from .errors import BoundsError, WriteError
from .executor import current_pool, map_concurrently, private_pool, shared_pool
from .store import FsspecStore
from .store.base import Store
from .worker_memory import tune_worker_malloc

if TYPE_CHECKING:  # dask and distributed are optional: this module imports them where it uses them
    from dask.array import Array as DaskArray
    from dask.delayed import Delayed
    from distributed import Client


class ShardAlignmentWarning(UserWarning):
    """Dask chunks were rechunked to the shard grid; the message states what that costs."""


class PartialShardWarning(UserWarning):
    """A region write covers only part of some shards: concurrent writers to those shards can lose data."""


def partial_shards(array: Array, origin: Sequence[int], shape: Sequence[int]) -> tuple[int, str | None]:
    """How many stored chunks (shards) a write of ``shape`` at ``origin`` covers only partly, and one's key.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/partial", shape=(10,), dtype="int8", chunks=(4,))
    >>> partial_shards(a, (2,), (4,))
    (2, 'c/0')
    """
    total, full, example = 1, 1, []
    for start, n, step, size in zip(origin, shape, array.metadata.chunk_shape, array.shape):
        stop = start + n
        if n == 0:
            return 0, None
        first, last = start // step, (stop - 1) // step
        ragged = [c for c, edge in ((first, start % step), (last, stop % step and stop != size)) if edge]
        total *= last - first + 1
        full *= last - first + 1 - len(set(ragged))
        example.append(ragged[0] if ragged else first)
    count = total - full
    return count, array.chunk_key(tuple(example)) if count else None


@runtime_checkable
class Lock(Protocol):
    """A lock: ``threading.Lock``, ``multiprocessing.Lock``, ``distributed.Lock``, ..."""

    def acquire(self) -> object: ...

    def release(self) -> object: ...


#: The ``lock`` argument of the writers: one lock for every shard, a callable giving the lock of
#: a shard key, or ``None`` (see :func:`shard_lock`).
ShardLock: TypeAlias = Lock | Callable[[str], Lock] | None


def shard_lock(lock: ShardLock, key: str) -> contextlib.AbstractContextManager[None]:
    """The lock guarding the shard ``key``: ``lock`` itself when it has ``acquire``/``release`` (one lock
    for every shard), else ``lock(key)`` (a callable returning a lock per shard); nothing when ``None``."""
    if lock is None:
        return contextlib.nullcontext()
    return _held(lock if isinstance(lock, Lock) else lock(key))


@contextlib.contextmanager
def _held(lock: Lock) -> Iterator[None]:
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def shard_aligned_chunks(shape: Sequence[int], origin: Sequence[int], grid: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Dask chunks for data of ``shape`` placed at ``origin`` whose blocks each lie in one grid cell.

    >>> shard_aligned_chunks((10, 4), (3, 0), (4, 4))
    ((1, 4, 4, 1), (4,))
    """
    chunks = []
    for n, start, step in zip(shape, origin, grid):
        edges = [start, *range((start // step + 1) * step, start + n, step), start + n]
        chunks.append(tuple(b - a for a, b in zip(edges, edges[1:])) or (0,))
    return tuple(chunks)


def align_to_shards(data: DaskArray, array: Array, origin: Sequence[int], name: str = "") -> DaskArray:
    """``data`` (a dask array) rechunked so every block lies in exactly one stored chunk of ``array``.

    Blocks are only split when they already nest in the grid; when a stored
    chunk would need several input blocks, a :class:`ShardAlignmentWarning`
    states how many and how many bytes move.
    """
    target = shard_aligned_chunks(data.shape, origin, array.metadata.chunk_shape)
    if tuple(map(tuple, data.chunks)) == target:
        return data
    gathered = [_inputs_per_block(have, want) for have, want in zip(data.chunks, target)]
    if any(g > 1 for g in gathered):
        moved = data.nbytes if data.nbytes else 0
        warnings.warn(
            f"{name or array.name}: dask chunks {_describe(data.chunks)} do not align with the "
            f"{'shard' if array.shards else 'chunk'} grid {array.metadata.chunk_shape} (write origin {tuple(origin)}); "
            f"rechunking to {_describe(target)}: {data.npartitions} input blocks -> "
            f"{math.prod(len(c) for c in target)} write tasks, each gathering up to {math.prod(gathered)} input "
            f"blocks (~{moved / 1e6:.0f} MB moved between tasks). Chunk the data like the "
            f"{'shards' if array.shards else 'chunks'} to avoid this.",
            ShardAlignmentWarning,
            stacklevel=3,
        )
    return cast("DaskArray", data.rechunk(target))  # dask leaves Array.rechunk unannotated


def _inputs_per_block(have: Sequence[int], want: Sequence[int]) -> int:
    """The largest number of ``have`` blocks any ``want`` block overlaps (1-d)."""
    have_edges = np.cumsum([0, *have])
    want_edges = np.cumsum([0, *want])
    firsts = np.searchsorted(have_edges, want_edges[:-1], side="right")
    lasts = np.searchsorted(have_edges, want_edges[1:], side="left")
    return int(max(lasts - firsts + 1, default=1))


def _describe(chunks: Sequence[Sequence[int]]) -> str:
    return "(" + ", ".join(str(c[0]) if len(set(c[:-1])) <= 1 and c[-1] <= c[0] else "irregular" for c in chunks) + ")"


def write_block(array: Array, start: Sequence[int], block: np.ndarray, write_empty_chunks: bool = False, lock: ShardLock = None) -> None:
    """Write ``block`` at ``start``; the block must lie inside one stored chunk, which this call owns.

    The shard is stored with one atomic write; partial blocks are merged into
    the stored shard (read-modify-write, holding :func:`shard_lock` of the
    shard's key) and all-fill shards are deleted unless ``write_empty_chunks``.
    """
    tune_worker_malloc()
    block = np.asarray(block, dtype=array.dtype)
    grid = array.metadata.chunk_shape
    coords = tuple(s // n for s, n in zip(start, grid))
    corner = array.metadata.chunk_grid.chunk_origin(coords)
    inside = tuple(slice(s - o, s - o + b) for s, o, b in zip(start, corner, block.shape))
    if any(sl.stop > n for sl, n in zip(inside, grid)) or len(start) != block.ndim:
        raise BoundsError(
            f"array {array.name!r}: a block of shape {block.shape} at {tuple(start)} spans more than one stored "
            f"chunk of shape {grid}; align the data with align_to_shards() first"
        )
    in_bounds = tuple(max(0, min(n, o + g) - o) for o, n, g in zip(corner, array.shape, grid))
    if tuple(start) == corner and block.shape in (grid, in_bounds):
        region = tuple(slice(s, s + n) for s, n in zip(start, block.shape))
        array.set(region, block, write_empty_chunks=write_empty_chunks)  # complete: encoded without a read
        return
    with shard_lock(lock, array.chunk_key(coords)):
        chunk = array.read_chunk(coords)
        chunk[inside] = block
        reset_outside(chunk, in_bounds, array.fill_value)
        array.store_chunk(coords, chunk, write_empty_chunks=write_empty_chunks)


def write_numpy(
    array: Array, origin: Sequence[int], data: npt.ArrayLike, write_empty_chunks: bool = False, lock: ShardLock = None
) -> None:
    """Write an in-memory array at ``origin``, one shard per call of :func:`write_block` on the thread pool."""
    data = np.asarray(data)
    if data.size == 0:
        return
    chunks = shard_aligned_chunks(data.shape, origin, array.metadata.chunk_shape)
    offsets = [np.cumsum([0, *c[:-1]]) for c in chunks]
    blocks = []
    for index in np.ndindex(*(len(c) for c in chunks)):
        local = tuple(int(offsets[d][i]) for d, i in enumerate(index))
        selection = tuple(slice(o, o + chunks[d][i]) for d, (o, i) in enumerate(zip(local, index)))
        blocks.append((tuple(s + o for s, o in zip(local, origin)), selection))
    map_concurrently(lambda item: write_block(array, item[0], data[item[1]], write_empty_chunks, lock), blocks)


@dataclass(frozen=True)
class WriteRequest:
    """Write ``data`` (a dask array) into ``array`` starting at ``origin``."""

    data: DaskArray
    array: Array
    origin: tuple[int, ...]
    write_empty_chunks: bool = False
    name: str = ""
    lock: ShardLock = None


def store_graph(requests: Sequence[WriteRequest], finalize: Callable[[], None] | None = None) -> Delayed:
    """A ``dask.delayed`` running every write request, one task per shard, then ``finalize``.

    Each shard task (keyed ``("zarr3-write-shard-<token>", i, ...)``, see
    :mod:`zarr3_backend.write_progress`) writes one shard-aligned block and
    returns the bytes it wrote; the blocks' own tasks fuse into it, so the
    graph holds about one task per shard plus one per request and one
    final task. ``finalize`` (picklable, no arguments) runs once after
    every write succeeded, e.g. to publish the new shape of appended
    arrays; if any write fails it never runs.
    """
    from dask.delayed import delayed

    written = []
    for request in requests:
        if request.data.size:  # aligned here: the alignment warning points at store_graph's caller
            aligned = align_to_shards(request.data, request.array, request.origin, request.name)
            written.append(_shard_tasks(request, aligned))
    return cast("Delayed", delayed(_after, pure=False)(written, finalize))  # dask's delayed is unannotated


def _shard_tasks(request: WriteRequest, aligned: DaskArray) -> DaskArray:
    """One task per block of ``aligned`` writing it to its shard; a dask array of the bytes each wrote."""
    import dask.array as da
    from dask.base import tokenize

    from .write_progress import SHARD_TASK_PREFIX

    starts = tuple(
        tuple(int(n) for n in start + np.cumsum([0, *c[:-1]])) for c, start in zip(aligned.chunks, request.origin)
    )
    task = _ShardTask(request.array, starts, request.write_empty_chunks, request.lock)
    token = tokenize(aligned.name, request.array.store, request.array.path, request.origin, request.write_empty_chunks)
    name = SHARD_TASK_PREFIX + token
    chunks = tuple((1,) * len(c) for c in aligned.chunks)
    blocks = da.map_blocks(task, aligned, chunks=chunks, name=name, meta=np.empty((0,) * aligned.ndim, np.int64))
    return cast("DaskArray", blocks)  # dask's map_blocks is unannotated


@dataclass(frozen=True)
class _ShardTask:
    """The body of one shard task: write the block at its place, return an array holding its byte count."""

    array: Array
    starts: tuple[tuple[int, ...], ...]  # per dimension: where each block starts in the array
    write_empty_chunks: bool
    lock: ShardLock = None

    def __call__(self, block: np.ndarray, *, block_id: tuple[int, ...]) -> np.ndarray:
        start = tuple(starts[i] for starts, i in zip(self.starts, block_id))
        write_block(self.array, start, block, self.write_empty_chunks, self.lock)
        return np.full((1,) * len(start), np.asarray(block).nbytes, dtype=np.int64)


def _after(_: Any, finalize: Callable[[], None] | None) -> None:
    if finalize is not None:
        finalize()


def _distributed_client() -> Client | None:
    """The distributed Client that ``compute`` would use, if any."""
    try:
        import dask.base
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        return None
    return client if dask.base.get_scheduler() == client.get else None


def check_reachable(store: Store) -> None:
    """Refuse a process-local (``memory://``) store when the writes would run in other processes."""
    if not isinstance(store, FsspecStore) or "memory" not in _protocols(store):
        return
    import dask.base
    import dask.multiprocessing

    client = _distributed_client()
    other = client is not None and any(pid != os.getpid() for pid in client.run(os.getpid).values())
    if other or dask.base.get_scheduler() is dask.multiprocessing.get:
        raise WriteError(
            f"the store {store!r} lives in this process's memory, but the dask scheduler runs tasks in "
            "other processes, whose writes would be lost; write to a path or an object store (s3://, gs://) instead"
        )


def _protocols(store: FsspecStore) -> set[str]:
    protocol = store.fs.protocol
    return {protocol} if isinstance(protocol, str) else set(protocol)


def compute_writes(delayed: Delayed, progress: bool | str = False) -> None:
    """Compute a :func:`store_graph` on the current scheduler, with ``progress``.

    ``True`` prints shards done out of the total and the data rate
    (:mod:`zarr3_backend.write_progress`), on any scheduler; ``"tqdm"``
    shows tqdm's bar of dask tasks (on dask.distributed, where tqdm's dask
    callback sees nothing, the shard line instead). On dask's default threaded scheduler
    the tasks run on a persistent pool of ours (its threads keep their
    scratch buffers from one write to the next), and this write's tasks are
    all finished or cancelled before this returns or raises: after a
    failure no write task is still running, so the caller can clean up safely.
    On dask.distributed the same holds (:func:`~zarr3_backend.write_progress.compute_on_cluster`).
    """
    client = _distributed_client()
    if client is not None:
        from .write_progress import compute_on_cluster

        compute_on_cluster(delayed, client, progress=bool(progress))
        return
    with _own_pool() as options:
        if progress is True:
            from .write_progress import compute_with_progress

            compute_with_progress(delayed, **options)
        elif progress == "tqdm":
            from tqdm.dask import TqdmCallback

            with TqdmCallback(desc="to_zarr3"):
                delayed.compute(**options)
        else:
            delayed.compute(**options)


@contextlib.contextmanager
def _own_pool() -> Iterator[dict[str, Any]]:
    """``{"pool": tracked}`` when dask would use its threaded scheduler; on exit, this write's tasks are done.

    The threads are one persistent pool (:func:`_write_pool`), so their
    scratch buffers (:mod:`zarr3_backend.scratch`) and
    malloc arenas stay warm across writes; only the futures of this write
    are cancelled (if not started) and awaited on exit. A write started
    from one of those threads (a write inside a write task) gets a fresh
    pool instead, which cannot deadlock on its own workers.
    """
    import dask.base
    import dask.threaded

    if dask.base.get_scheduler() not in (None, dask.threaded.get):
        yield {}
        return
    if current_pool() == _WRITE_POOL:
        with private_pool(_write_pool()._max_workers) as fresh:
            yield {"pool": fresh}
        return
    tracked = _TrackedPool(_write_pool())
    try:
        yield {"pool": tracked}
    finally:
        tracked.drain()


_WRITE_POOL = "write"  # threads ``zarr3-write_<n>``


def _write_pool() -> ThreadPoolExecutor:
    """The process's pool for threaded-scheduler writes (dask's ``CPU_COUNT`` threads), made on first use."""
    from dask.system import CPU_COUNT

    return shared_pool(_WRITE_POOL, CPU_COUNT)


class _TrackedPool:
    """The shared write pool as dask sees it, remembering the futures of one write so it can await them."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._max_workers = pool._max_workers  # read by dask.threaded.get
        self._futures: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Submit ``fn`` in a copy of the caller's context (as dask's own pool does), and remember it."""
        future = self._pool.submit(contextvars.copy_context().run, fn, *args, **kwargs)
        self._futures.append(future)
        return future

    def drain(self) -> None:
        """Cancel this write's tasks that have not started and wait for the ones running."""
        for future in self._futures:
            future.cancel()
        concurrent.futures.wait(self._futures)
