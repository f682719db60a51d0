"""Shard-owning block writes: each call writes inside exactly one stored chunk (shard).

`write_block()` writes a block lying in one shard with one atomic store
``set``, so a write that dies leaves the previous shard, never a torn one.
A block covering part of its shard re-encodes only the inner chunks it
touches and copies every other inner chunk's bytes, so it never changes an
element outside the block. `write_numpy()` writes an in-memory array one
shard per call; the write's `KeyLocks` make a read-modify-write exclusive per
shard across processes, and `partial_shards()` finds the shards that need it.
How writes, edges and writers fit together: docs/architecture.md.

>>> import zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/shard_writes", shape=(10,), dtype="int32", chunks=(2,), shards=(4,))
>>> write_numpy(a, (0,), list(range(10)))
>>> a[:].tolist()
[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..core.dtypes import is_fill
from ..core.indexing import DimGrid
from ..core.rectilinear_grid import ChunkLengths
from ..errors import BoundsError
from ..runtime import map_concurrently
from ..runtime.locks import NO_LOCKS, KeyLocks
from .array import Array


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
    for start, n, step, size in zip(origin, shape, array.metadata.chunk_grid.dim_grids, array.shape):
        stop = start + n
        if n == 0:
            return 0, None
        if isinstance(step, ChunkLengths):  # a rectilinear dimension: cut off a chunk's own edges
            first, last = step.index_of(start), step.index_of(stop - 1)
            cut = (start != step.start(first), stop != size and stop != step.end(last))
        else:
            first, last = start // step, (stop - 1) // step
            cut = (bool(start % step), bool(stop % step and stop != size))
        ragged = [c for c, edge in ((first, cut[0]), (last, cut[1])) if edge]
        total *= last - first + 1
        full *= last - first + 1 - len(set(ragged))
        example.append(ragged[0] if ragged else first)
    count = total - full
    return count, array.chunk_key(tuple(example)) if count else None


def shard_aligned_chunks(
    shape: Sequence[int], origin: Sequence[int], grid: Sequence[DimGrid]
) -> tuple[tuple[int, ...], ...]:
    """Dask chunks for data of ``shape`` placed at ``origin`` whose blocks each lie in one grid cell.

    >>> shard_aligned_chunks((10, 4), (3, 0), (4, 4))
    ((1, 4, 4, 1), (4,))
    """
    chunks = []
    for n, start, step in zip(shape, origin, grid):
        if isinstance(step, ChunkLengths):  # a rectilinear dimension: its chunks' own edges
            inner = step.starts_between(start, start + n)
            edges = [start, *inner, start + n]
        else:
            edges = [start, *range((start // step + 1) * step, start + n, step), start + n]
        chunks.append(tuple(b - a for a, b in zip(edges, edges[1:])) or (0,))
    return tuple(chunks)


def write_block(
    array: Array,
    start: Sequence[int],
    block: np.ndarray,
    write_empty_chunks: bool = False,
    locks: KeyLocks = NO_LOCKS,
) -> None:
    """Write ``block`` at ``start``; the block must lie inside one stored chunk, which this call owns.

    The shard is stored with one atomic write; partial blocks are merged into
    the stored shard (read-modify-write, holding the lock in ``locks`` of the
    shard's key) and all-fill shards are deleted unless ``write_empty_chunks``.
    A partial block changes no element outside itself: a sharded array decodes
    and re-encodes only the inner chunks it touches, and the other inner
    chunks (beyond the array's edge too) keep their encoded bytes.
    """
    block = np.asarray(block, dtype=array.dtype)
    coords = array.metadata.chunk_grid.locate_inner(tuple(start), (1,) * len(start))[0]
    grid = array.metadata.chunk_grid.chunk_shape_at(coords)
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
    with locks.held(array.chunk_key(coords)):
        array.update_chunk(coords, [(inside, block)], write_empty_chunks=write_empty_chunks)


def whole_shard_view(array: Array) -> Array:
    """``array`` with every axis rounded up to whole stored chunks (shards), for writers whose shape may grow.

    Through it no block covers an edge shard "completely", so every block
    there is merged into the stored shard (under the write's lock) and what
    lies beyond the shape as read (another writer's appended rows) is kept.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/whole_shard_view", shape=(5, 3), dtype="int8", chunks=(2, 2))
    >>> whole_shard_view(a).shape
    (6, 4)
    """
    grid = array.metadata.chunk_shape
    shape = tuple(-(-n // c) * c for n, c in zip(array.shape, grid))
    return Array(array.store, array.path, array.metadata.with_shape(shape), read_only=array.read_only)


def append_view(grown: Array, old_shape: Sequence[int]) -> Array:
    """The array an append writes through: ``grown`` with each grown axis rounded up to whole shards.

    Its last shard's rows beyond the new shape are then kept as stored, not
    reset to the fill value: they may hold the rows of a later deferred
    append that reserved them (``zarr3_backend.writes.commit``).
    """
    grid = grown.metadata.chunk_grid.dim_grids
    shape = tuple(n if n == old else _chunk_end(n, c) for n, old, c in zip(grown.shape, old_shape, grid))
    return Array(grown.store, grown.path, grown.metadata.with_shape(shape))


def _chunk_end(n: int, dim: DimGrid) -> int:
    """Where the chunk holding element ``n - 1`` ends (a rectilinear dimension's declared lengths, or the step)."""
    if isinstance(dim, ChunkLengths):
        return dim.end(dim.index_of(n - 1))
    return -(-n // dim) * dim


def clear_rows(array: Array, old_shape: Sequence[int], locks: KeyLocks = NO_LOCKS) -> None:
    """Reset what lies beyond ``old_shape`` inside ``array.shape`` (the rows an append wrote) to the fill value.

    Only those rows change: a stored chunk (shard) lying wholly among them is
    deleted; one they share with other rows (older data, or a later append's
    rows in the same shard) is read, reset there and rewritten, holding
    its lock in ``locks``.
    """
    grid = array.metadata.chunk_grid
    for coords in grid.chunk_coords(array.shape):
        origin = grid.chunk_origin(coords)
        ends = [o + c for o, c in zip(origin, grid.chunk_shape_at(coords))]
        if all(e <= old for e, old in zip(ends, old_shape)):
            continue  # wholly inside the old shape
        with locks.held(array.chunk_key(coords)):
            chunk = array.read_chunk(coords)  # the fill value when absent
            ours = np.zeros(chunk.shape, dtype=bool)
            ours[tuple(slice(0, max(0, min(n, e) - o)) for o, e, n in zip(origin, ends, array.shape))] = True
            ours[tuple(slice(0, max(0, old - o)) for o, old in zip(origin, old_shape))] = False
            if not is_fill(chunk[ours], array.fill_value):
                chunk[ours] = array.fill_value
                array.store_chunk(coords, chunk)  # deleted when nothing else is left in it


def write_numpy(
    array: Array,
    origin: Sequence[int],
    data: npt.ArrayLike,
    write_empty_chunks: bool = False,
    locks: KeyLocks = NO_LOCKS,
) -> None:
    """Write an in-memory array at ``origin``, one shard per call of `write_block()` on the thread pool."""
    write_numpy_many([(array, origin, data, write_empty_chunks)], locks)


def write_numpy_many(
    writes: Sequence[tuple[Array, Sequence[int], npt.ArrayLike, bool]], locks: KeyLocks = NO_LOCKS
) -> None:
    """`write_numpy()` for several ``(array, origin, data, write_empty_chunks)`` at once: all their shards
    share the thread pool (a region write of several variables, each touching one shard, runs them side by side).

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/many/a", shape=(4,), dtype="int8", chunks=(2,))
    >>> b = zarr3_backend.create_array("memory://doc/many/b", shape=(4,), dtype="int8", chunks=(2,))
    >>> write_numpy_many([(a, (1,), [1, 2], False), (b, (0,), [3], False)])
    >>> a[:].tolist(), b[:].tolist()
    ([0, 1, 2, 0], [3, 0, 0, 0])
    """
    blocks = []
    for array, origin, data, write_empty in writes:
        data = np.asarray(data)
        if data.size == 0:
            continue
        chunks = shard_aligned_chunks(data.shape, origin, array.metadata.chunk_grid.dim_grids)
        offsets = [np.cumsum([0, *c[:-1]]) for c in chunks]
        for index in np.ndindex(*(len(c) for c in chunks)):
            local = tuple(int(offsets[d][i]) for d, i in enumerate(index))
            selection = tuple(slice(o, o + chunks[d][i]) for d, (o, i) in enumerate(zip(local, index)))
            blocks.append((array, tuple(s + o for s, o in zip(local, origin)), data[selection], write_empty))
    map_concurrently(lambda item: write_block(item[0], item[1], item[2], item[3], locks), blocks)
