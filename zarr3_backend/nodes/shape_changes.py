"""What a shape change does to stored chunks: nothing stale beyond the array's edge, ever visible.

Writes never reset what lies beyond the array's shape (another writer may
be appending rows there); the shape changes of ``Array.resize`` do instead
(`resized()`): a shrink drops what falls outside (`clear_outside()`), a grow
resets what it exposes, left by an interrupted append (`clear_exposed()`).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..core.chunk_grid import ChunkGrid
from ..core.dtypes import Scalar
from ..core.dtypes.kinds import is_inexact
from ..core.metadata import ArrayMetadata
from ..errors import BoundsError
from ..store.base import Store


class Array(Protocol):
    """What a shape change uses of an ``Array``."""

    @property
    def name(self) -> str: ...
    @property
    def metadata(self) -> ArrayMetadata: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def fill_value(self) -> Scalar: ...
    def chunk_key(self, coords: tuple[int, ...]) -> str: ...
    def read_chunk(self, coords: tuple[int, ...]) -> np.ndarray: ...
    def store_chunk(
        self, coords: tuple[int, ...], chunk: np.ndarray, *, write_empty_chunks: bool = False
    ) -> None: ...


def resized(array: Array, chunks: Store, new_shape: tuple[int, ...]) -> ArrayMetadata:
    """``array``'s metadata at ``new_shape``, its stored chunks (in ``chunks``) first made to show nothing stale.

    Raises `BoundsError` for a shape of another number of dimensions or a negative length.
    """
    old_shape = array.shape
    if len(new_shape) != len(old_shape) or any(n < 0 for n in new_shape):
        raise BoundsError(f"array {array.name!r}: cannot resize {old_shape} to {new_shape}")
    if any(n < o for n, o in zip(new_shape, old_shape)):
        clear_outside(array, chunks, new_shape)
    metadata = array.metadata.with_shape(new_shape)  # a rectilinear grid may declare new chunks
    if any(n > o for n, o in zip(new_shape, old_shape)):
        clear_exposed(array, chunks, old_shape, metadata.chunk_grid, new_shape)
    return metadata


def clear_outside(array: Array, chunks: Store, new_shape: tuple[int, ...]) -> None:
    """Delete stored chunks of ``array`` wholly outside ``new_shape`` and reset the part of edge chunks beyond it.

    ``chunks`` is the array's chunk store (after its storage transformers).
    """
    grid = array.metadata.chunk_grid
    for coords in grid.chunk_coords(array.shape):
        origin = grid.chunk_origin(coords)
        key = array.chunk_key(coords)
        if any(o >= n for o, n in zip(origin, new_shape)):
            chunks.delete(key)
        elif any(o + c > n for o, c, n in zip(origin, grid.chunk_shape, new_shape)) and chunks.exists(key):
            chunk = array.read_chunk(coords)
            reset_outside(chunk, tuple(n - o for o, n in zip(origin, new_shape)), array.fill_value)
            array.store_chunk(coords, chunk)


def clear_exposed(
    array: Array, chunks: Store, old_shape: tuple[int, ...], grid: ChunkGrid, new_shape: tuple[int, ...]
) -> None:
    """Reset to the fill value what a grow of ``array`` from ``old_shape`` to ``new_shape`` exposes, where it is not.

    ``grid`` is the grown array's chunk grid. Only chunks reaching past
    ``old_shape`` along a grown axis are looked at; one wholly beyond it is
    deleted, one it cuts is rewritten only if stale values are found there.
    """
    grown = [axis for axis, (o, n) in enumerate(zip(old_shape, new_shape)) if n > o]
    kept = tuple(min(o, n) for o, n in zip(old_shape, new_shape))
    for coords in grid.chunk_coords(new_shape):
        origin = grid.chunk_origin(coords)
        extent = grid.chunk_shape_at(coords)
        if all(origin[a] + extent[a] <= old_shape[a] for a in grown):
            continue  # nothing of it is exposed
        key = array.chunk_key(coords)
        if any(origin[a] >= old_shape[a] for a in grown):
            chunks.delete(key)
        elif chunks.exists(key):
            chunk = array.read_chunk(coords)
            before = chunk.copy()
            reset_outside(chunk, tuple(n - o for o, n in zip(origin, kept)), array.fill_value)
            if not np.array_equal(chunk, before, equal_nan=is_inexact(chunk.dtype)):
                array.store_chunk(coords, chunk)


def reset_outside(chunk: np.ndarray, in_bounds: tuple[int, ...], fill: Scalar) -> None:
    """Set the part of a stored chunk beyond the first ``in_bounds`` elements of each axis to ``fill``."""
    for dim, n in enumerate(in_bounds):
        if n < chunk.shape[dim]:
            chunk[(slice(None),) * dim + (slice(n, None),)] = fill
