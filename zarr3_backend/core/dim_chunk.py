"""One dimension's share of a selection in one chunk (see [`indexing`][zarr3_backend.core.indexing]), and their combinations across dimensions."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

DimIndex = int | slice | np.ndarray
OutIndex = slice | np.ndarray | None
T = TypeVar("T")


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


#: Combinations of the later dimensions' pieces held while the first dimension's are walked
#: (with more, they are made again for each piece of the first).
HELD_COMBINATIONS = 4096


def c_order(columns: Sequence[Sequence[T]]) -> Iterator[tuple[T, ...]]:
    """Every choice of one item per column in C order, as ``itertools.product`` gives them, holding few.

    ``itertools.product`` holds every column as a tuple: a point series's one long
    dimension would stay alive for the whole read. Here the first column is walked,
    and the later ones' combinations are held only if there are at most `HELD_COMBINATIONS`.

    >>> list(c_order([range(2), "ab"]))
    [(0, 'a'), (0, 'b'), (1, 'a'), (1, 'b')]
    """
    if not columns:
        yield ()
        return
    first, rest = columns[0], columns[1:]
    held = list(c_order(rest)) if math.prod(map(len, rest)) <= HELD_COMBINATIONS else None
    for head in first:
        for tail in c_order(rest) if held is None else held:
            yield (head, *tail)
