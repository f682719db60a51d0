"""A lazy 1-D coordinate on one axis of a north-up affine grid, selected as a materialised one would be.

``label(i) = origin + step * (i + 0.5)`` (pixel centres). `AxisIndex` is an
xarray ``CoordinateTransformIndex``: the coordinate's values are computed only
for the positions something reads, so a 100,000-pixel axis costs nothing at
open. Its ``sel`` gives what a pandas index over the same values gives:
slices keep the labels inside ``[start, stop]`` (reversed bounds on a
decreasing axis, as pandas takes them), scalars and lists must match a label
exactly unless ``method="nearest"`` (optionally within ``tolerance``), and a
missing label raises ``KeyError``. A slice ``isel`` keeps a lazy index, an array
``isel`` gives a pandas index over the labels it picks.
(rasterix's ``RasterIndex`` rounds slice ends to the nearest pixel instead,
so it is used only for rotated grids, which this index does not describe.)

>>> import numpy as np, xarray as xr
>>> index = AxisIndex(AxisTransform("x", 5, 10.0, 100.0))
>>> ds = xr.Dataset(coords=xr.Coordinates.from_xindex(index))
>>> ds.x.values.tolist(), ds.sel(x=slice(110, 130)).x.values.tolist()
([105.0, 115.0, 125.0, 135.0, 145.0], [115.0, 125.0])
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
from xarray import DataArray, Variable
from xarray.core.coordinate_transform import CoordinateTransform
from xarray.core.indexes import CoordinateTransformIndex, Index, PandasIndex
from xarray.core.indexing import IndexSelResult


class AxisTransform(CoordinateTransform):
    """One axis of a north-up affine transform: ``label = origin + step * (start + stride * position + 0.5)``.

    ``start`` and ``stride`` place a slice of the axis on the pixels of the
    whole one, so the labels of a slice are bit for bit those of the axis.
    """

    def __init__(
        self, dim: str, size: int, step: float, origin: float, *, start: int = 0, stride: int = 1
    ) -> None:
        super().__init__((dim,), {dim: size})
        self.step, self.origin, self.start, self.stride = step, origin, start, stride

    def forward(self, dim_positions: dict[str, Any]) -> dict[Hashable, Any]:
        """Labels at the pixel centres of ``dim_positions``."""
        pixels = self.start + self.stride * np.asarray(dim_positions[self.dims[0]])
        return {self.dims[0]: self.origin + self.step * (pixels + 0.5)}

    def reverse(self, coord_labels: dict[Hashable, Any]) -> dict[str, Any]:
        """Fractional positions of ``coord_labels`` (the inverse of `forward`)."""
        pixels = (np.asarray(coord_labels[self.dims[0]]) - self.origin) / self.step - 0.5
        return {self.dims[0]: (pixels - self.start) / self.stride}

    def equals(self, other: CoordinateTransform, **kwargs: Any) -> bool:
        """Same axis, size, step, origin and place on the axis."""
        return isinstance(other, AxisTransform) and self._key() == other._key()

    def _key(self) -> tuple[Any, ...]:
        return (self.dims, self.dim_size, self.step, self.origin, self.start, self.stride)

    def label(self, position: int) -> float:
        """The label at ``position``, computed as the coordinate's values are."""
        return float(self.forward({self.dims[0]: position})[self.dims[0]])


class AxisIndex(CoordinateTransformIndex):
    """The index of an `AxisTransform`'s coordinate, with pandas' label semantics (see the module)."""

    transform: AxisTransform

    def __init__(self, transform: AxisTransform) -> None:
        super().__init__(transform)

    def sel(self, labels: dict[Any, Any], method: Any = None, tolerance: Any = None) -> IndexSelResult:
        """Positions of ``labels`` as a pandas index over the computed labels gives them."""
        dim = self.transform.dims[0]
        label = labels[dim]
        if isinstance(label, slice):
            return IndexSelResult({dim: self._slice(label)})
        if isinstance(label, Variable | DataArray):
            positions = self._positions(np.asarray(label.values), method, tolerance)
            return IndexSelResult({dim: Variable(label.dims, positions)})
        positions = self._positions(np.asarray(label), method, tolerance)
        return IndexSelResult({dim: int(positions) if positions.ndim == 0 else positions})

    def isel(self, indexers: Mapping[Any, int | slice | np.ndarray | Variable]) -> Index | None:
        """A lazy index over a slice of the axis, a pandas one over the labels an array picks, None for an int."""
        dim = self.transform.dims[0]
        indexer = indexers[dim]
        if isinstance(indexer, Variable | np.ndarray):
            positions = np.asarray(indexer.values if isinstance(indexer, Variable) else indexer)
            if positions.ndim != 1:
                return None
            return PandasIndex(self.transform.forward({dim: positions})[dim], dim)
        if not isinstance(indexer, slice):
            return None
        t = self.transform
        start, stop, stride = indexer.indices(t.dim_size[dim])
        size = len(range(start, stop, stride))
        return AxisIndex(
            AxisTransform(
                dim, size, t.step, t.origin, start=t.start + t.stride * start, stride=t.stride * stride
            )
        )

    def _slice(self, label: slice) -> slice:
        size, at = self.transform.dim_size[self.transform.dims[0]], self.transform.label
        if self.transform.step * self.transform.stride > 0 or size < 2:  # pandas: increasing when it can be
            start = 0 if label.start is None else _first(size, lambda i: at(i) >= label.start)
            stop = size if label.stop is None else _first(size, lambda i: at(i) > label.stop)
        else:
            start = 0 if label.start is None else _first(size, lambda i: at(i) <= label.start)
            stop = size if label.stop is None else _first(size, lambda i: at(i) < label.stop)
        return slice(start, max(start, stop), label.step)

    def _positions(self, values: np.ndarray, method: Any, tolerance: Any) -> np.ndarray:
        dim = self.transform.dims[0]
        if method not in (None, "nearest"):
            raise ValueError(
                f"{dim!r}: a lazy coordinate selects with method=None or 'nearest', got {method!r}"
            )
        size = self.transform.dim_size[dim]
        if method == "nearest":
            positions = self._nearest(np.asarray(values, dtype="float64"), size)
        else:
            positions = np.floor(self.transform.reverse({dim: values})[dim] + 0.5).astype("int64")
        inside = (positions >= 0) & (positions < size)
        found = self.transform.forward({dim: np.clip(positions, 0, size - 1)})[dim]
        if method is None:
            inside &= np.asarray(found == values)
        elif tolerance is not None:
            inside &= np.abs(found - values) <= tolerance
        if not np.all(inside):
            raise KeyError(f"not all values found in index {dim!r}: {np.asarray(values)[~inside].tolist()}")
        return np.asarray(positions, dtype="int64")

    def _nearest(self, values: np.ndarray, size: int) -> np.ndarray:
        """The positions pandas' ``method="nearest"`` picks: the closer of the two labels around each value,
        compared as labels, a tie going to the larger label."""
        dim = self.transform.dims[0]
        below = np.clip(np.floor(self.transform.reverse({dim: values})[dim]).astype("int64"), 0, size - 1)
        above = np.minimum(below + 1, size - 1)
        low, high = (self.transform.forward({dim: p})[dim] for p in (below, above))
        low_distance, high_distance = np.abs(low - values), np.abs(high - values)
        tie = np.where(high > low, above, below)  # pandas breaks ties toward the larger label
        closer = np.where(low_distance < high_distance, below, above)
        return np.asarray(np.where(low_distance == high_distance, tie, closer), dtype="int64")


def _first(size: int, holds: Callable[[int], bool]) -> int:
    """The first position in ``0..size`` where the monotone ``holds`` is true (``size`` if none)."""
    low, high = 0, size
    while low < high:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle + 1
    return low
