"""Turn a user selection into a per-chunk plan (numpy basic and orthogonal indexing), in three steps.

1. `normalize_selection()` turns ``a[sel]`` / ``a.oindex[sel]`` into one
   selector per dimension (`IntSelector`, `SliceSelector`,
   `ArraySelector`), with bounds checked and negatives resolved.
2. Each selector splits itself by chunk length into `DimChunk` items:
   which chunk, which positions inside it, which positions of the output.
3. `Selection` combines the dimensions into `ChunkSelection`
   items (C order of the chunk grid) such that, for every item::

       out[item.out_selection] = chunk[item.chunk_selection]      # read
       chunk[item.chunk_selection] = value[item.out_selection]    # write

   where ``chunk`` is the full-size stored chunk (edge chunks included) and
   ``out`` / ``value`` have shape `Selection.out_shape`.

The same machinery maps a selection inside a shard to its inner chunks:
``plan_chunks(item.orthogonal_selection, shard_shape, inner_chunk_shape,
orthogonal=True)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import EllipsisType
from typing import Any, ClassVar, TypeAlias

import numpy as np

from ..errors import BoundsError
from . import rectilinear_indexing as rectilinear
from .dim_chunk import DimChunk, DimIndex, OutIndex, c_order, index_items
from .dtypes.kinds import is_integer
from .integers import is_int
from .rectilinear_grid import ChunkLengths
from .slice_items import SliceItems, extent

#: One dimension of a chunk grid: a regular chunk length, or explicit lengths (a rectilinear dimension).
DimGrid: TypeAlias = int | ChunkLengths
#: What one axis of a selection may be: an integer, a slice, ``...`` or a 1-d integer or boolean index array.
AxisSelection: TypeAlias = (
    int
    | np.integer[Any]
    | slice
    | EllipsisType
    | Sequence[int | np.integer[Any] | bool | np.bool_]
    | np.ndarray
)
#: What ``a[sel]`` / ``a.oindex[sel]`` accept: one axis selection or a tuple of them (see `normalize_selection()`).
SelectionLike: TypeAlias = AxisSelection | tuple[AxisSelection, ...]


@dataclass(frozen=True)
class IntSelector:
    """A single (non-negative, in-bounds) index; the dimension is dropped from the output."""

    index: int
    dim_len: int

    out_len: ClassVar[None] = None

    def chunk_items(self, chunk_len: DimGrid) -> list[DimChunk]:
        if isinstance(chunk_len, ChunkLengths):
            return rectilinear.int_items(self.index, chunk_len, self.dim_len)
        k, local = divmod(self.index, chunk_len)
        return [DimChunk(k, local, None, extent(k, chunk_len, self.dim_len) == 1)]


@dataclass(frozen=True)
class SliceSelector:
    """``count`` elements ``start, start + step, ...`` (``step`` may be negative)."""

    start: int
    step: int
    count: int
    dim_len: int

    @property
    def out_len(self) -> int:
        return self.count

    def chunk_items(self, chunk_len: DimGrid) -> Sequence[DimChunk]:
        if self.count == 0:
            return []
        start, step = self.start, self.step
        if step < 0:
            start, step = self.start + (self.count - 1) * self.step, -self.step
        if isinstance(chunk_len, ChunkLengths):
            items = rectilinear.ascending_items(start, step, self.count, chunk_len, self.dim_len)
            return (
                items
                if self.step > 0
                else [item._replace(out_sel=_reversed(item.out_sel, self.count)) for item in items]
            )
        return SliceItems(start, step, self.count, chunk_len, self.dim_len, reverse=self.step < 0)


def _reversed(out_sel: Any, count: int) -> slice:
    """Output positions ``p0 .. p1 - 1`` counted from the other end, as a step -1 slice."""
    stop = count - 1 - out_sel.stop
    return slice(count - 1 - out_sel.start, stop if stop >= 0 else None, -1)


@dataclass(frozen=True, eq=False)
class ArraySelector:
    """Integer indices (non-negative, any order, duplicates allowed)."""

    indices: np.ndarray
    dim_len: int

    @property
    def out_len(self) -> int:
        return len(self.indices)

    @cached_property
    def is_sorted(self) -> bool:
        """Non-decreasing indices: output positions per chunk are then a slice."""
        return bool(np.all(self.indices[1:] >= self.indices[:-1]))

    def chunk_items(self, chunk_len: DimGrid) -> list[DimChunk]:
        idx = self.indices
        if idx.size == 0:
            return []
        if isinstance(chunk_len, ChunkLengths):
            return rectilinear.array_items(idx, self.is_sorted, chunk_len, self.dim_len)
        step, dim_len = chunk_len, self.dim_len
        return index_items(
            idx, self.is_sorted, idx // step, lambda k: k * step, lambda k: extent(k, step, dim_len)
        )


DimSelector = IntSelector | SliceSelector | ArraySelector


@dataclass(frozen=True, slots=True)
class ChunkSelection:
    """What one chunk contributes to a selection.

    Attributes
    ----------
    coords
        Grid index of the chunk.
    chunk_selection
        Index for the full-size chunk array; ``chunk[chunk_selection]`` has
        exactly the shape of ``out[out_selection]`` (integer-indexed axes are
        already gone, several index arrays are ``np.ix_``-shaped).
    out_selection
        Index for the output (or value) array of shape ``Selection.out_shape``.
    orthogonal_selection
        The chunk-local selection with one int / positive-step slice / 1-d
        int array per dimension; feed it to `plan_chunks()` with
        ``orthogonal=True`` to split a shard into inner chunks.
    is_complete
        The selection covers every element of the chunk that lies inside the
        array, so a write needs no read of the old chunk.
    """

    coords: tuple[int, ...]
    chunk_selection: tuple[Any, ...]
    out_selection: tuple[Any, ...]
    orthogonal_selection: tuple[DimIndex, ...]
    is_complete: bool


@dataclass(frozen=True, eq=False)
class Selection:
    """A normalized selection of an array with a given chunk shape.

    >>> sel = plan_selection((slice(None), 3), shape=(10, 8), chunk_shape=(4, 4))
    >>> sel.out_shape, sel.drop_axes, [c.coords for c in sel.chunks()]
    ((10,), (1,), [(0, 0), (1, 0), (2, 0)])
    """

    dims: tuple[DimSelector, ...]
    chunk_shape: tuple[DimGrid, ...]  #: per dimension a chunk length, or explicit lengths (rectilinear)
    scalar: bool = False  #: all integers and no ``...``: numpy would return a scalar, not a 0-d array

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the array being indexed."""
        return tuple(d.dim_len for d in self.dims)

    @property
    def out_shape(self) -> tuple[int, ...]:
        """Shape of the result: one entry per dimension not indexed by an integer."""
        return tuple(d.out_len for d in self.dims if d.out_len is not None)

    @property
    def drop_axes(self) -> tuple[int, ...]:
        """Array axes indexed by an integer (absent from `out_shape`)."""
        return tuple(i for i, d in enumerate(self.dims) if isinstance(d, IntSelector))

    @cached_property
    def dim_chunks(self) -> list[Sequence[DimChunk]]:
        """Per dimension, its selection's piece of each chunk it touches (ascending chunk index).

        A slice's pieces along a regular dimension are made as they are taken (`SliceItems`), not held.
        """
        return [d.chunk_items(c) for d, c in zip(self.dims, self.chunk_shape, strict=True)]

    def chunks(self) -> Iterator[ChunkSelection]:
        """The chunks the selection touches, in C order of the chunk grid."""
        per_dim = self.dim_chunks
        chunk_keys, out_keys = _chunk_keys(self.dims, per_dim), _out_keys(self.dims, per_dim)
        if chunk_keys is None and out_keys is None:  # every piece indexes with its own positions
            for items in c_order(per_dim):
                coords, sels, outs, complete = zip(*items) if items else ((), (), (), ())
                yield ChunkSelection(
                    coords, sels, tuple(o for o in outs if o is not None), sels, all(complete)
                )
            return
        columns = [
            list(zip(items, [i.chunk_sel for i in items] if chunk_keys is None else chunk_keys[axis],
                     [i.out_sel for i in items] if out_keys is None else out_keys[axis]))
            for axis, items in enumerate(per_dim)
        ]  # fmt: skip
        for combo in c_order(columns):
            pieces, chunk_sel, out_sel = zip(*combo) if combo else ((), (), ())
            coords, orthogonal, _, complete = zip(*pieces) if pieces else ((), (), (), ())  # DimChunk fields
            yield ChunkSelection(
                coords=coords,
                chunk_selection=chunk_sel,
                out_selection=tuple(o for o in out_sel if o is not None),
                orthogonal_selection=orthogonal,
                is_complete=all(complete),
            )


def _is_contiguous(positions: list[int]) -> bool:
    return not positions or positions[-1] - positions[0] + 1 == len(positions)


def _as_array(sel: slice | np.ndarray) -> np.ndarray:
    if isinstance(sel, np.ndarray):
        return sel
    stop = -1 if sel.stop is None else sel.stop
    return np.arange(sel.start, stop, sel.step or 1)


def _ix_shaped(sels: Sequence[Any], j: int, k: int) -> Sequence[np.ndarray]:
    """1-d selections of axis ``j`` of ``k`` reshaped so ``k`` of them broadcast like ``np.ix_``."""
    shape = [1] * k
    shape[j] = -1
    return [_as_array(s).reshape(shape) for s in sels]


def _chunk_keys(
    dims: Sequence[DimSelector], per_dim: list[Sequence[DimChunk]]
) -> list[Sequence[DimIndex]] | None:
    """Per-dimension chunk indexes, ``np.ix_``-shaped when numpy would not index orthogonally; ``None``
    when the pieces' own positions serve."""
    arrays = [i for i, d in enumerate(dims) if isinstance(d, ArraySelector)]
    advanced = [i for i, d in enumerate(dims) if not isinstance(d, SliceSelector)]
    if len(arrays) < 2 and (not arrays or _is_contiguous(advanced)):
        return None  # numpy's own result already places the one array axis in place
    keys: list[Sequence[DimIndex]] = [[item.chunk_sel for item in items] for items in per_dim]
    kept = [i for i, d in enumerate(dims) if not isinstance(d, IntSelector)]
    for j, i in enumerate(kept):
        keys[i] = _ix_shaped(keys[i], j, len(kept))
    return keys


def _out_keys(
    dims: Sequence[DimSelector], per_dim: list[Sequence[DimChunk]]
) -> list[Sequence[OutIndex]] | None:
    """Per-dimension output indexes, ``np.ix_``-shaped when two or more are unsorted arrays; ``None``
    when the pieces' own positions serve."""
    unsorted = [d for d in dims if isinstance(d, ArraySelector) and not d.is_sorted]
    if len(unsorted) < 2:
        return None
    keys: list[Sequence[OutIndex]] = [[item.out_sel for item in items] for items in per_dim]
    kept = [i for i, d in enumerate(dims) if not isinstance(d, IntSelector)]
    for j, i in enumerate(kept):
        keys[i] = _ix_shaped(keys[i], j, len(kept))
    return keys


def _where(name: str | None) -> str:
    return f" of array {name!r}" if name else ""


def _check_index(index: int, axis: int, dim_len: int, where: str | None) -> None:
    if not -dim_len <= index < dim_len:
        valid = f"; valid indices are {-dim_len}..{dim_len - 1}" if dim_len else ""
        raise BoundsError(
            f"index {index} is out of bounds for axis {axis} with size {dim_len}{_where(where)}{valid}"
        )


def _normalize_slice(sel: slice, axis: int, dim_len: int, where: str | None) -> SliceSelector:
    for part in (sel.start, sel.stop, sel.step):
        if part is not None and not is_int(part):
            raise BoundsError(
                f"slice indices must be integers or None, got {sel!r} for axis {axis}{_where(where)}"
            )
    if sel.step == 0:
        raise BoundsError(f"slice step cannot be zero, got {sel!r} for axis {axis}{_where(where)}")
    start, stop, step = sel.indices(dim_len)
    return SliceSelector(start, step, len(range(start, stop, step)), dim_len)


def _normalize_array(obj: object, axis: int, dim_len: int, where: str | None) -> DimSelector:
    arr = np.asarray(obj)
    if arr.ndim == 0 and is_integer(arr.dtype):
        return _normalize_int(int(arr), axis, dim_len, where)
    if arr.ndim != 1:
        raise BoundsError(
            f"index arrays must be 1-d, got a {arr.ndim}-d array for axis {axis}{_where(where)}"
        )
    if arr.dtype == bool:
        if arr.size != dim_len:
            raise BoundsError(
                f"boolean index did not match axis {axis}{_where(where)}: axis has size {dim_len}, "
                f"boolean array has length {arr.size}"
            )
        return ArraySelector(np.flatnonzero(arr), dim_len)
    if arr.size == 0:
        return ArraySelector(np.empty(0, dtype=np.intp), dim_len)
    if not is_integer(arr.dtype):
        raise BoundsError(
            f"index arrays must have an integer or boolean dtype, got {arr.dtype} for axis {axis}{_where(where)}"
        )
    lo, hi = int(arr.min()), int(arr.max())
    _check_index(lo if lo < -dim_len else hi, axis, dim_len, where)
    indices = arr.astype(np.intp)
    return ArraySelector(np.where(indices < 0, indices + dim_len, indices) if lo < 0 else indices, dim_len)


def _normalize_int(index: int, axis: int, dim_len: int, where: str | None) -> IntSelector:
    _check_index(index, axis, dim_len, where)
    return IntSelector(index + dim_len if index < 0 else int(index), dim_len)


def _normalize_dim(obj: object, axis: int, dim_len: int, where: str | None) -> DimSelector:
    if isinstance(obj, slice):
        return _normalize_slice(obj, axis, dim_len, where)
    if is_int(obj):
        return _normalize_int(int(obj), axis, dim_len, where)
    if isinstance(obj, (list, tuple, np.ndarray)):
        return _normalize_array(obj, axis, dim_len, where)
    raise BoundsError(
        f"only integers, slices (`:`), ellipsis (`...`) and 1-d integer or boolean arrays are valid "
        f"indices; got {obj!r} ({type(obj).__name__}) for axis {axis}{_where(where)}"
    )


def _as_tuple(selection: object) -> tuple[object, ...]:
    return selection if isinstance(selection, tuple) else (selection,)


def _expand_ellipsis(selection: object, ndim: int, where: str | None) -> tuple[object, ...]:
    sel = _as_tuple(selection)
    ellipses = [i for i, s in enumerate(sel) if s is Ellipsis]
    if len(ellipses) > 1:
        raise BoundsError(f"an index can only have a single ellipsis ('...'), got {selection!r}")
    explicit = len(sel) - len(ellipses)
    if explicit > ndim:
        raise BoundsError(
            f"too many indices for array{_where(where)}: array is {ndim}-dimensional, but {explicit} were indexed"
        )
    at = ellipses[0] if ellipses else len(sel)
    fill = (slice(None),) * (ndim - explicit)
    return sel[:at] + fill + sel[at + len(ellipses) :]


def _check_basic(dims: tuple[DimSelector, ...], where: str | None) -> None:
    """Refuse array indices whose numpy (vectorized) meaning differs from orthogonal indexing."""
    arrays = [i for i, d in enumerate(dims) if isinstance(d, ArraySelector)]
    advanced = [i for i, d in enumerate(dims) if not isinstance(d, SliceSelector)]
    if len(arrays) > 1 or (arrays and not _is_contiguous(advanced)):
        raise BoundsError(
            f"this combination of array and integer indices{_where(where)} would need numpy's vectorized "
            f"indexing, which is not supported; use .oindex[...] for orthogonal indexing"
        )


def normalize_selection(
    selection: SelectionLike, shape: Sequence[int], *, orthogonal: bool = False, where: str | None = None
) -> tuple[DimSelector, ...]:
    """One bounds-checked selector per dimension of an array of ``shape``.

    ``orthogonal=False`` follows ``a[sel]``: ints, slices (any step) and
    ``...``, plus a single 1-d array where numpy's result equals the
    orthogonal one. ``orthogonal=True`` follows ``a.oindex[sel]``: 1-d
    integer (negative, unsorted, repeated) or boolean arrays on any axes,
    each applied independently. Raises `BoundsError` (an
    ``IndexError``), naming the array ``where``, for invalid or out-of-bounds
    indices.

    >>> normalize_selection((-1, slice(None, None, -2)), (4, 5))
    (IntSelector(index=3, dim_len=4), SliceSelector(start=4, step=-2, count=3, dim_len=5))
    """
    expanded = _expand_ellipsis(selection, len(shape), where)
    dims = tuple(_normalize_dim(obj, axis, n, where) for axis, (obj, n) in enumerate(zip(expanded, shape)))
    if not orthogonal:
        _check_basic(dims, where)
    return dims


def plan_selection(
    selection: SelectionLike,
    shape: Sequence[int],
    chunk_shape: Sequence[DimGrid],
    *,
    orthogonal: bool = False,
    where: str | None = None,
) -> Selection:
    """Normalize ``selection`` (see `normalize_selection()`) for a chunked array.

    >>> plan_selection(slice(2, 9), (10,), (4,)).out_shape
    (7,)
    """
    if len(chunk_shape) != len(shape) or not all(isinstance(c, ChunkLengths) or c >= 1 for c in chunk_shape):
        raise BoundsError(f"chunk shape {tuple(chunk_shape)} does not fit array shape {tuple(shape)}")
    dims = normalize_selection(selection, shape, orthogonal=orthogonal, where=where)
    scalar = all(isinstance(d, IntSelector) for d in dims) and not any(
        s is Ellipsis for s in _as_tuple(selection)
    )
    return Selection(dims, tuple(c if isinstance(c, ChunkLengths) else int(c) for c in chunk_shape), scalar)


def plan_chunks(
    selection: SelectionLike,
    shape: Sequence[int],
    chunk_shape: Sequence[DimGrid],
    *,
    orthogonal: bool = False,
    where: str | None = None,
) -> Iterator[ChunkSelection]:
    """The per-chunk plan of ``selection``; shorthand for ``plan_selection(...).chunks()``.

    >>> [(c.coords, c.chunk_selection, c.out_selection) for c in plan_chunks(slice(3, 6), (8,), (4,))]
    [((0,), (slice(3, 4, 1),), (slice(0, 1, None),)), ((1,), (slice(0, 2, 1),), (slice(1, 3, None),))]
    """
    return plan_selection(selection, shape, chunk_shape, orthogonal=orthogonal, where=where).chunks()
