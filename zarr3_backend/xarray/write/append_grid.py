"""Appends along a rectilinear (calendar) dimension continue the grid's rule, whatever the dask chunks are.

The rule is inferred from the stored chunks and the stored time coordinate of
the append dimension: chunks of ``k`` whole calendar months (``k`` of 1, 2,
3, 4, 6 or 12: monthly, seasonal, yearly grids) whose boundaries are exactly
where a ``k``-month period starts. The appended rows then get one chunk (one
shard, when sharded) per period, and the write rechunks the data to match.
An append that starts inside a period (the stored data ends mid-month) gives
the rest of that period its own chunk; later chunks start on period
boundaries again. Chunks declared ahead of the data are filled first.

Where no rule fits (no time coordinate, or chunks that are not whole
periods), the append is refused unless the encoding gives the new chunks:
``encoding={"v": {"shards": {"time": (28, 31)}}}`` (``"chunks"`` for an
unsharded array) or ``{"time": "dask"}``, one chunk per dask chunk.
docs/guide/calendar-chunks.md says this for users.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import xarray as xr
from xarray import conventions

from ...core.dtypes.kinds import is_datetime, is_object
from ...core.rectilinear_grid import ChunkLengths
from ...errors import WriteError
from ...nodes.array import Array
from ..read_encoding import decode_fill_value
from .rectilinear import block_edges

#: Period lengths in months that a calendar grid may have.
MONTH_PERIODS = (1, 2, 3, 4, 6, 12)
Edges = tuple[tuple[int, ...] | None, ...]


def split_append_chunks(
    explicit: Mapping[Hashable, dict[str, Any]], existing: Mapping[str, Array], append_dim: Hashable | None
) -> tuple[dict[Hashable, dict[str, Any]], dict[str, object]]:
    """``explicit`` without the encodings that only give the appended chunks of stored variables, and those.

    Such an encoding is ``{"chunks" or "shards": {append_dim: lengths or "dask"}}``.
    """
    rest: dict[Hashable, dict[str, Any]] = {}
    given: dict[str, object] = {}
    for name, keys in explicit.items():
        value = next(iter(keys.values())) if len(keys) == 1 else None
        if str(name) in existing and append_dim is not None and set(keys) <= {"chunks", "shards"}:
            if isinstance(value, Mapping) and set(value) == {append_dim}:
                _check_key(str(name), next(iter(keys)), existing[str(name)], append_dim)
                given[str(name)] = value[append_dim]
                continue
        rest[name] = keys
    return rest, given


def _check_key(name: str, key: str, array: Array, append_dim: Hashable) -> None:
    """The appended chunks go to the outer grid (shards when sharded) of an array rectilinear along ``append_dim``."""
    dims = array.dimension_names or ()
    grid = array.metadata.chunk_grid.dim_grids
    if append_dim not in dims or not isinstance(grid[dims.index(str(append_dim))], ChunkLengths):
        raise WriteError(
            f"to_zarr3: encoding[{name!r}][{key!r}] gives appended chunks along {append_dim!r}, but the stored "
            f"{name!r} has no rectilinear grid along it (its chunks continue by themselves); drop this encoding"
        )
    outer = "shards" if array.sharded else "chunks"
    if key != outer:
        raise WriteError(
            f"to_zarr3: encoding[{name!r}][{key!r}]: the stored {name!r} is {'' if array.sharded else 'not '}sharded; "
            f"give the appended chunks as encoding[{name!r}][{outer!r}]"
        )


@dataclass(frozen=True)
class AppendGrid:
    """How an append along ``append_dim`` extends each variable's rectilinear grid (see the module docstring).

    ``coordinate``: the appended values of the append dimension's coordinate;
    ``stored``: its stored array; ``given``: the appended chunks given per variable.
    """

    append_dim: Hashable | None
    coordinate: xr.Variable | None = None
    stored: Array | None = None
    given: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        ds: xr.Dataset,
        existing: Mapping[str, Array],
        append_dim: Hashable | None,
        given: Mapping[str, object],
    ) -> AppendGrid:
        """The grid rules of an append of ``ds`` into the group holding ``existing``."""
        if append_dim is None or append_dim not in ds.coords:
            return cls(append_dim, given=given)
        return cls(append_dim, ds.coords[append_dim].variable, existing.get(str(append_dim)), given)

    def edges(self, name: str, var: xr.Variable, array: Array, origin: tuple[int, ...]) -> Edges | None:
        """Where the new chunks of the stored ``array`` end, per dimension, once ``var`` is appended at ``origin``."""
        dims = array.dimension_names or ()
        if self.append_dim not in dims:
            return None
        axis = dims.index(str(self.append_dim))
        dim = array.metadata.chunk_grid.dim_grids[axis]
        end = origin[axis] + var.shape[axis]
        if not isinstance(dim, ChunkLengths) or dim.total >= end:
            return None
        if name in self.given:
            new = self._given_edges(name, var, origin, axis=axis, declared=dim.total)
        else:
            new = self._rule_edges(name, array, origin[axis], dim, end)
        return tuple(new if i == axis else None for i in range(len(dims)))

    def _rule_edges(
        self, name: str, array: Array, stored: int, dim: ChunkLengths, end: int
    ) -> tuple[int, ...]:
        """The starts of the grid's periods among the rows past the declared chunks."""
        months = self._months
        period = None if months is None else _period(dim, months[:stored])
        if period is None or months is None:
            raise WriteError(self._no_rule(name, array))
        k, anchor = period
        periods = (months - anchor) // k
        starts = np.flatnonzero(periods[1:] != periods[:-1]) + 1
        return tuple(int(p) for p in starts if dim.total < p < end)

    def _given_edges(
        self, name: str, var: xr.Variable, origin: tuple[int, ...], *, axis: int, declared: int
    ) -> tuple[int, ...]:
        """The ends of the chunks given for the rows past the ``declared`` ones."""
        value, end = self.given[name], origin[axis] + var.shape[axis]
        if value == "dask":
            edges = block_edges(var, origin)
            if edges is None:
                raise WriteError(f"to_zarr3: {name!r}: {{{self.append_dim!r}: 'dask'}} needs dask data")
            return edges[axis] or ()
        lengths = list(value) if isinstance(value, list | tuple) else []
        if not lengths or not all(_positive(n) for n in lengths) or declared + sum(lengths) < end:
            raise WriteError(
                f"to_zarr3: the appended chunks of {name!r} along {self.append_dim!r} must be positive integer "
                f"lengths adding up to at least {end - declared} (the rows past the declared chunks), or 'dask'; "
                f"got {value!r}"
            )
        return tuple(int(e) for e in declared + np.cumsum(lengths))

    @cached_property
    def _months(self) -> np.ndarray | None:
        """The calendar month (counted from year 0) of every stored and appended coordinate value; ``None``: not times."""
        if self.coordinate is None or self.stored is None:
            return None
        array = self.stored
        attrs = dict(array.metadata.attributes)
        if "_FillValue" in attrs:
            attrs["_FillValue"] = decode_fill_value(attrs["_FillValue"], array)
        raw = xr.Variable(self.coordinate.dims, np.asarray(array[...]), attrs)
        stored = _month_numbers(conventions.decode_cf_variable(str(self.append_dim), raw))
        appended = _month_numbers(self.coordinate)
        if stored is None or appended is None:
            return None
        return np.concatenate([stored, appended])

    def _no_rule(self, name: str, array: Array) -> str:
        key = "shards" if array.sharded else "chunks"
        sizes = array.chunk_sizes[(array.dimension_names or ()).index(str(self.append_dim))]
        shown = f"{list(sizes[:6])}{' ...' if len(sizes) > 6 else ''}"
        return (
            f"to_zarr3: cannot continue the chunk grid of {name!r} along {self.append_dim!r} (lengths {shown}): "
            f"its chunks are not whole calendar months, seasons or years of the time coordinate {self.append_dim!r}. "
            f"Give the appended chunks: encoding={{{name!r}: {{{key!r}: {{{self.append_dim!r}: (length, ...)}}}}}}, "
            f"or {{{self.append_dim!r}: 'dask'}} for one chunk per dask chunk"
        )


def _period(dim: ChunkLengths, months: np.ndarray) -> tuple[int, int] | None:
    """``(k, anchor)``: the first ``k`` whose ``k``-month periods start exactly at the stored chunk boundaries."""
    n = len(months)
    if n == 0:
        return None
    inside = [dim.start(k) for k in range(1, dim.count_covering(n))]
    for k in MONTH_PERIODS:
        anchor = int(months[inside[0]]) if inside else int(months[0])
        periods = (months - anchor) // k
        if (np.flatnonzero(periods[1:] != periods[:-1]) + 1).tolist() == inside:
            return k, anchor
    return None


def _month_numbers(var: xr.Variable) -> np.ndarray | None:
    """``year * 12 + month - 1`` of datetime64 or cftime values, ``None`` for other values."""
    values = xr.DataArray(var)
    if not (is_datetime(values.dtype) or is_object(values.dtype)):
        return None
    try:  # xarray's accessor takes datetime64 and cftime values, and refuses others
        dates = values.dt
    except TypeError:
        return None
    return np.asarray(dates.year * 12 + dates.month - 1, dtype=np.int64)


def _positive(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and bool(value > 0)
