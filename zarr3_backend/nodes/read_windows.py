"""A selection's pieces grouped by the stored chunk (shard) holding them, a window of shards at a time.

A point series over 10^6 hourly shards touches 10^6 shards: grouping all its
pieces first would hold 10^6 lists of pieces at once (about a gigabyte) and
make the garbage collector walk them again and again. `shard_windows()`
hands them over a window at a time instead, and `stored_chunk_count()` says
beforehand how many shards there are in all, from each dimension alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from ..codecs.read_plan import SubRead
from ..core.indexing import ChunkSelection, Selection

#: Shards grouped before a window may end (it ends where the first grid index changes); as few as
#: [`PLAN_WINDOW`][zarr3_backend.nodes.reads.PLAN_WINDOW], for the same reason.
SHARD_WINDOW = 64

Coords = tuple[int, ...]
Locate = Callable[[Coords], tuple[Coords, Coords]]


def shard_windows(pieces: Iterable[ChunkSelection], locate: Locate) -> Iterator[dict[Coords, list[SubRead]]]:
    """``pieces`` (in C order of the read grid) as `SubRead` lists by shard, `SHARD_WINDOW` shards or more at a time.

    ``locate`` maps a piece's grid coordinates to its shard's and its place
    there. A window ends only where the shard's first grid index changes, so
    in C order every shard's pieces land in one window (a shard met again
    later is read again: still correct).

    >>> from zarr3_backend.core.indexing import plan_selection
    >>> plan = plan_selection((slice(None),), (6,), (1,))
    >>> [sorted(w) for w in shard_windows(plan.chunks(), lambda c: ((c[0] // 2,), (c[0] % 2,)))]
    [[(0,), (1,), (2,)]]
    """
    window: dict[Coords, list[SubRead]] = defaultdict(list)
    last: Coords | None = None
    for piece in pieces:
        outer, inner = locate(piece.coords)
        if len(window) >= SHARD_WINDOW and outer[:1] != last:
            yield window
            window = defaultdict(list)
        window[outer].append(SubRead(inner, piece.chunk_selection, piece.out_selection))
        last = outer[:1]
    if window:
        yield window


def stored_chunk_count(plan: Selection, locate: Locate) -> int:
    """How many shards ``plan``'s pieces fall in: the product of the distinct shards along each dimension.

    Along one dimension a piece's shard index never falls as its chunk index rises, by at most one
    per chunk (regular and rectilinear grids alike). So when the first and last pieces' shards are
    as far apart as their chunks (each chunk its own shard: a point series over hourly shards), or
    are the same shard, the count needs no other piece; otherwise each piece is located.

    >>> from zarr3_backend.core.indexing import plan_selection
    >>> stored_chunk_count(plan_selection((slice(1, 5), 0), (6, 4), (1, 2)), lambda c: ((c[0] // 2, c[1]), c))
    3
    """
    count, ndim = 1, len(plan.dims)
    for axis, items in enumerate(plan.dim_chunks):
        if not items:
            return 0
        first, last = items[0].chunk_index, items[-1].chunk_index
        apart = _shard_along(locate, axis, ndim, last) - _shard_along(locate, axis, ndim, first)
        if apart in (0, last - first):
            count *= 1 if apart == 0 else len(items)
        else:
            count *= len({_shard_along(locate, axis, ndim, item.chunk_index) for item in items})
    return count


def _shard_along(locate: Locate, axis: int, ndim: int, chunk_index: int) -> int:
    """The shard index along ``axis`` of the chunk at ``chunk_index`` there (and 0 elsewhere)."""
    coords = [0] * ndim
    coords[axis] = chunk_index
    return locate(tuple(coords))[0][axis]
