"""Split one dimension's selection along explicit chunk lengths (a rectilinear grid's dimension).

The same contract as the regular grid's splitting in [`indexing`][zarr3_backend.core.indexing]:
one [`DimChunk`][zarr3_backend.core.dim_chunk.DimChunk] per touched chunk, in ascending chunk order,
with positions local to the chunk's declared (stored) extent.
"""

from __future__ import annotations

import numpy as np

from .dim_chunk import DimChunk, index_items
from .rectilinear_grid import ChunkLengths


def _extent(dim: ChunkLengths, k: int, dim_len: int) -> int:
    """How many elements of chunk ``k`` lie inside the array."""
    return min(dim.length(k), dim_len - dim.start(k))


def int_items(index: int, dim: ChunkLengths, dim_len: int) -> list[DimChunk]:
    k = dim.index_of(index)
    return [DimChunk(k, index - dim.start(k), None, _extent(dim, k, dim_len) == 1)]


def ascending_items(start: int, step: int, count: int, dim: ChunkLengths, dim_len: int) -> list[DimChunk]:
    """Per-chunk pieces of ``start + p * step`` for ``p < count`` (``step > 0``); chunks it skips are left out."""
    last = start + (count - 1) * step
    items = []
    for k in range(dim.index_of(start), dim.index_of(last) + 1):
        lo, hi = dim.start(k), dim.start(k) + dim.length(k)
        p0 = 0 if start >= lo else -(-(lo - start) // step)
        p1 = (min(last, hi - 1) - start) // step + 1
        if p1 <= p0:
            continue
        first, end = start + p0 * step - lo, start + (p1 - 1) * step - lo
        complete = first == 0 and end == _extent(dim, k, dim_len) - 1 and (step == 1 or end == 0)
        items.append(DimChunk(k, slice(first, end + 1, step), slice(p0, p1), complete))
    return items


def array_items(indices: np.ndarray, is_sorted: bool, dim: ChunkLengths, dim_len: int) -> list[DimChunk]:
    """Per-chunk pieces of integer ``indices`` (any order, repeats allowed)."""
    chunk_ids = dim.chunk_ids(indices)
    return index_items(indices, is_sorted, chunk_ids, dim.start, lambda k: _extent(dim, k, dim_len))
