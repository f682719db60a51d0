"""Writing a selection: from a value in memory, or from an array read one stored chunk at a time.

A value in memory is cast and broadcast to the selection (`write_value()`), the stored chunks it
covers only partly are read in one batch, and each stored chunk is written by a task on the CPU
pool. A value that is an array not in memory (`ArraySource`: anything with ``shape``, ``dtype``
and a ``__getitem__`` that takes a tuple of slices, such as a zarr3_backend `Array`, a zarr-python
array, a dask array) is streamed instead (`write_from_source()`): each task reads the piece of the
source that lands in its stored chunk (shard) and writes that chunk at once, so at most a shard
per thread (its source block and its encoded bytes) is in memory, never the whole source (between
arrays of one layout, not even the block: `zarr3_backend.nodes.transcode`).
`zarr3_backend.copy_array` is the whole-array form.

>>> import zarr3_backend
>>> src = zarr3_backend.create_array("memory://doc/writes/src", shape=(6,), dtype="int16", chunks=(2,), shards=(4,))
>>> src[:] = range(6)
>>> dst = zarr3_backend.create_array("memory://doc/writes/dst", shape=(6,), dtype="int16", chunks=(3,))
>>> dst[...] = src
>>> dst[:].tolist()
[0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..core.indexing import ChunkSelection, Selection
from ..errors import ArgumentError, ArgumentTypeError
from ..runtime import map_concurrently
from ..runtime.memory_limit import out_of_memory


@runtime_checkable
class ArraySource(Protocol):
    """What a streaming copy reads from: a ``shape``, a ``dtype`` and reads of boxes (tuples of slices)."""

    @property
    def shape(self) -> tuple[int, ...]:
        """The source's shape; a copy needs it equal to the selection's."""
        ...

    @property
    def dtype(self) -> object:
        """The source's data type (cast to the destination's on the way)."""
        ...

    def __getitem__(self, selection: tuple[slice, ...]) -> npt.ArrayLike:
        """The box ``selection`` (a tuple of slices), as anything `numpy.asarray` accepts."""
        ...


class Destination(Protocol):
    """What a streaming write needs of the array it writes (an `Array`)."""

    @property
    def name(self) -> str:
        """The array's name, for messages."""
        ...

    @property
    def dtype(self) -> np.dtype:
        """The array's data type: each block read is cast to it."""
        ...

    def stored_bytes(self, coords: Sequence[tuple[int, ...]]) -> list[bytes | None]:
        """The stored chunks at ``coords``, undecoded (``None``: absent), in one batched read."""
        ...

    def write_piece(
        self, piece: ChunkSelection, block: np.ndarray, existing: bytes | None, write_empty: bool
    ) -> None:
        """Write one stored chunk's piece of a selection with one atomic ``set``."""
        ...

    def copy_stored_chunk(self, piece: ChunkSelection, source: object, write_empty: bool) -> bool:
        """Write ``piece`` from ``source``'s stored chunk at the same place without reading it into a block,
        if their layouts allow it (see `zarr3_backend.nodes.transcode`); ``False``, writing nothing, if not."""
        ...


def is_array_source(value: object) -> bool:
    """Whether ``value`` is read block by block by a write (an `ArraySource` that is not in memory already).

    >>> is_array_source(np.zeros(3)), is_array_source([1, 2]), is_array_source(3)
    (False, False, False)
    """
    return isinstance(value, ArraySource) and not isinstance(value, np.ndarray | np.generic)


def write_from_source(array: Destination, plan: Selection, source: ArraySource, write_empty: bool) -> None:
    """Write ``source`` into ``plan`` (a selection of ``array``), one stored chunk per task on the CPU pool.

    Each task reads the piece of ``source`` that lands in its chunk, reads the
    stored chunk when the piece covers it only partly, and writes the chunk
    with one atomic ``set``; a shard of a source of the same layout is
    re-encoded instead (`Destination.copy_stored_chunk`). A selection with index arrays (whose pieces are
    not boxes of the source) reads the source whole first. Raises
    `ArgumentError` when the shapes differ.
    """
    if tuple(source.shape) != plan.out_shape:
        raise ArgumentError(
            f"array {array.name!r}: cannot write an array of shape {tuple(source.shape)} into a selection of "
            f"shape {plan.out_shape}; a copy from an array needs equal shapes (no broadcasting)"
        )

    pieces = list(plan.chunks())
    if not all(isinstance(s, slice) for piece in pieces for s in piece.out_selection):
        whole = np.asarray(source[(slice(None),) * len(plan.out_shape)], dtype=array.dtype)
        map_concurrently(
            lambda p: array.write_piece(
                p, whole[(*p.out_selection, Ellipsis)], _existing(array, p), write_empty
            ),
            pieces,
        )
        return

    def write(piece: ChunkSelection) -> None:
        if array.copy_stored_chunk(piece, source, write_empty):
            return
        block = np.asarray(source[piece.out_selection], dtype=array.dtype)
        array.write_piece(piece, block, _existing(array, piece), write_empty)

    map_concurrently(write, pieces)


def _existing(array: Destination, piece: ChunkSelection) -> bytes | None:
    """The stored chunk a write of ``piece`` merges into (``None`` when it covers the chunk or none is stored)."""
    return None if piece.is_complete else array.stored_bytes([piece.coords])[0]


def write_value(array: Destination, plan: Selection, value: npt.ArrayLike, write_empty: bool) -> None:
    """Write ``value`` (in memory; cast and broadcast) into ``plan``, one stored chunk per task on the CPU pool.

    The chunks it covers only partly are read first, in one batch.
    """
    with out_of_memory(f"array {array.name!r}: writing a selection of shape {plan.out_shape}"):
        data = _as_selection_value(array, value, plan.out_shape)
        pieces = list(plan.chunks())
        partial = [p for p in pieces if not p.is_complete]
        existing = dict(zip((p.coords for p in partial), array.stored_bytes([p.coords for p in partial])))
        map_concurrently(
            lambda p: array.write_piece(
                p, data[(*p.out_selection, Ellipsis)], existing.get(p.coords), write_empty
            ),
            pieces,
        )


def _as_selection_value(array: Destination, value: npt.ArrayLike, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as ``array``'s dtype, broadcast to the selection's ``shape``; refused by name if it cannot be."""
    try:
        return np.broadcast_to(np.asarray(value, dtype=array.dtype), shape)
    except (TypeError, ValueError) as exc:
        error = ArgumentTypeError if isinstance(exc, TypeError) else ArgumentError
        raise error(
            f"array {array.name!r}: cannot write a value of shape {np.shape(value)} into a selection of shape "
            f"{shape} with data type {array.dtype}: {exc}"
        ) from exc
