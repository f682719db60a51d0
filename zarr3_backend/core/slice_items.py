"""A slice's per-chunk pieces along one regular dimension, made as they are asked for.

A point series over 10^6 hourly chunks is a slice that touches 10^6 chunks
of its dimension. Held as a list, its pieces (a tuple and two slices each)
would stay alive for the whole read, and every full pass of Python's garbage
collector would walk them again. [`SliceItems`][zarr3_backend.core.slice_items.SliceItems]
holds five integers and makes each [`DimChunk`][zarr3_backend.core.dim_chunk.DimChunk]
when it is asked for: iterating twice gives equal pieces, never the same objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from .dim_chunk import DimChunk


def extent(k: int, chunk_len: int, dim_len: int) -> int:
    """How many elements of chunk ``k`` lie inside the array."""
    return min(chunk_len, dim_len - k * chunk_len)


class SliceItems(Sequence[DimChunk]):
    """The pieces of ``start + p * step`` for ``p < count`` (``step > 0``) in chunks of ``chunk_len``, by ascending chunk.

    ``reverse`` numbers the output positions from the other end (a slice
    with a negative step, normalized to its ascending progression): the
    pieces stay in ascending chunk order, their output slices step by -1.

    >>> [(d.chunk_index, d.chunk_sel, d.out_sel) for d in SliceItems(3, 1, 4, 4, 10, reverse=False)]
    [(0, slice(3, 4, 1), slice(0, 1, None)), (1, slice(0, 3, 1), slice(1, 4, None))]
    >>> [d.out_sel for d in SliceItems(3, 1, 4, 4, 10, reverse=True)]
    [slice(3, 2, -1), slice(2, None, -1)]
    """

    __slots__ = (
        "_start",
        "_step",
        "_count",
        "_chunk_len",
        "_dim_len",
        "_reverse",
        "_first",
        "_last",
        "_sparse",
        "_len",
    )

    def __init__(
        self, start: int, step: int, count: int, chunk_len: int, dim_len: int, *, reverse: bool
    ) -> None:
        if step <= 0 or count <= 0:
            raise ValueError(
                f"an ascending progression of at least one element, got step {step}, count {count}"
            )
        self._start = start
        self._step = step
        self._count = count
        self._chunk_len = chunk_len
        self._dim_len = dim_len
        self._reverse = reverse
        self._first = start // chunk_len
        self._last = start + (count - 1) * step  # the last element
        # at most one element per chunk: one piece per element, the chunks in between skipped
        self._sparse = step >= chunk_len
        self._len = count if self._sparse else self._last // chunk_len - self._first + 1

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, position: int) -> DimChunk: ...

    @overload
    def __getitem__(self, position: slice) -> list[DimChunk]: ...

    def __getitem__(self, position: int | slice) -> DimChunk | list[DimChunk]:
        if isinstance(position, slice):
            return [self._item(i) for i in range(*position.indices(self._len))]
        index = position + self._len if position < 0 else position
        if not 0 <= index < self._len:
            raise IndexError(f"piece {position} of {self._len}")
        return self._item(index)

    def __iter__(self) -> Iterator[DimChunk]:
        return map(self._item, range(self._len))

    def __repr__(self) -> str:
        return (
            f"SliceItems(start={self._start}, step={self._step}, count={self._count}, "
            f"chunk_len={self._chunk_len}, dim_len={self._dim_len}, reverse={self._reverse})"
        )

    def _item(self, i: int) -> DimChunk:
        start, step, chunk_len, dim_len = self._start, self._step, self._chunk_len, self._dim_len
        if self._sparse:
            k, first = divmod(start + i * step, chunk_len)
            chunk_sel, p0, p1 = slice(first, first + 1, 1), i, i + 1
            complete = extent(k, chunk_len, dim_len) == 1
        else:
            k = self._first + i
            lo = k * chunk_len
            p0 = 0 if start >= lo else -(-(lo - start) // step)
            p1 = (min(self._last, lo + chunk_len - 1) - start) // step + 1
            first, end = start + p0 * step - lo, start + (p1 - 1) * step - lo
            chunk_sel = slice(first, end + 1, step)
            complete = first == 0 and end == extent(k, chunk_len, dim_len) - 1 and (step == 1 or end == 0)
        if not self._reverse:
            return DimChunk(k, chunk_sel, slice(p0, p1), complete)
        stop = self._count - 1 - p1
        return DimChunk(k, chunk_sel, slice(self._count - 1 - p0, stop if stop >= 0 else None, -1), complete)
