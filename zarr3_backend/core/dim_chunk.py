"""One dimension's share of a selection in one chunk (see [`indexing`][zarr3_backend.core.indexing])."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

DimIndex = int | slice | np.ndarray
OutIndex = slice | np.ndarray | None


class DimChunk(NamedTuple):
    """The part of one dimension's selection that falls in one chunk."""

    chunk_index: int  #: chunk index along the dimension
    chunk_sel: DimIndex  #: positions inside the full-size chunk (slices have a positive step)
    out_sel: OutIndex  #: positions in the output; ``None`` if the dimension is dropped
    complete: bool  #: covers every in-array element of the chunk along this dimension


def index_items(
    indices: np.ndarray,
    is_sorted: bool,
    chunk_ids: np.ndarray,
    start: Callable[[int], int],
    extent: Callable[[int], int],
) -> list[DimChunk]:
    """Per-chunk pieces of integer ``indices`` (any order, repeats allowed), chunk ``chunk_ids[i]`` holding ``indices[i]``.

    Chunk ``k`` begins at ``start(k)`` and has ``extent(k)`` elements inside the array; the pieces
    come in ascending chunk order, output positions as a slice when ``is_sorted``.

    >>> [(d.chunk_index, d.chunk_sel.tolist(), d.out_sel.tolist(), d.complete) for d in index_items(
    ...     np.array([5, 0, 1]), False, np.array([2, 0, 0]), lambda k: 2 * k, lambda k: 2)]
    [(0, [0, 1], [1, 2], True), (2, [1], [0], False)]
    """
    order = None if is_sorted else np.argsort(chunk_ids, kind="stable")
    sorted_ids = chunk_ids if order is None else chunk_ids[order]
    bounds = [0, *(np.flatnonzero(np.diff(sorted_ids)) + 1).tolist(), indices.size]
    items = []
    for s, e in itertools.pairwise(bounds):
        k = int(sorted_ids[s])
        out_sel = slice(s, e) if order is None else order[s:e]
        local = indices[out_sel] - start(k)
        size = extent(k)
        complete = local.size >= size and np.unique(local).size == size
        items.append(DimChunk(k, local, out_sel, complete))
    return items
