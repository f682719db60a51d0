"""Where ``to_zarr3`` puts data in stored arrays: ``region=`` slices, and appends along ``append_dim``.

``region`` slices are validated and ``"auto"`` ones found from the stored
coordinates (`resolve_region()`); `place()` then gives each variable
its origin in its stored array and the array's shape after an append (which
writes through `zarr3_backend.nodes.shard_writes.append_view()`). A region
that covers stored chunks only partly warns when other writers may run
alongside (`zarr3_backend.writes.run.guarded()`).

Exception types follow ``engine="zarr"``: a slice with a step is a
``ValueError`` (`WriteError`), coordinate values
missing from the store a ``KeyError`` (`RegionKeyError`).

>>> import numpy as np, xarray as xr
>>> ds = xr.Dataset({"v": ("t", np.arange(3.0))})
>>> resolve_region(ds, {"t": slice(2, 5)}, {}, None)[1]
{'t': slice(2, 5, None)}
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from xarray import conventions

from ...errors import RegionKeyError, WriteError, WriteTypeError
from ...nodes.array import Array
from ...writes.plan import Region, Shape


@dataclass(frozen=True)
class Placement:
    """Where a variable lands in its stored array: ``origin``, the array's ``shape`` after the write, its ``dims``."""

    origin: Shape
    shape: Shape
    dims: tuple[str, ...]


def resolve_region(
    ds: xr.Dataset, region: Region, existing: Mapping[str, Array], append_dim: Hashable | None
) -> tuple[xr.Dataset, dict[Hashable, slice]]:
    """Validate ``region`` (detecting ``"auto"`` entries from the stored coordinates) and drop indexes."""
    if region is None:
        return ds, {}
    if region == "auto":
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, Mapping):
        raise WriteTypeError(
            f"to_zarr3: region must be a dict of slices or 'auto', got {type(region).__name__}"
        )
    resolved = {}
    for dim, selection in region.items():
        if dim not in ds.dims:
            raise WriteError(
                f"to_zarr3: region dimension {dim!r} is not a dimension of the dataset {list(ds.dims)}"
            )
        if isinstance(selection, str) and selection == "auto":
            selection = detect_region(ds, dim, existing)
        if not isinstance(selection, slice):
            raise WriteTypeError(f"to_zarr3: region[{dim!r}] must be a slice or 'auto', got {selection!r}")
        if selection.step not in (None, 1):
            raise WriteError(
                f"to_zarr3: region[{dim!r}]={selection!r} has a step; region slices must have step 1 or None"
            )
        resolved[dim] = selection
    if append_dim is not None and append_dim in resolved:
        raise WriteError(f"to_zarr3: {append_dim!r} cannot be both append_dim and a region dimension")
    unrelated = [k for k, v in ds.variables.items() if resolved and not set(resolved) & set(v.dims)]
    if unrelated:
        raise WriteError(
            f"to_zarr3: with region, every variable needs a region dimension; drop {unrelated} first"
        )
    return ds.drop_vars(ds.indexes), resolved


def detect_region(ds: xr.Dataset, dim: Hashable, existing: Mapping[str, Array]) -> slice:
    """The slice of the stored coordinate ``dim`` that ``ds[dim]`` matches, value for value."""
    if dim not in ds.variables:
        return slice(0, ds.sizes[dim])
    if dim not in existing:
        raise RegionKeyError(
            f"to_zarr3: region {dim!r}='auto' needs the coordinate {dim!r} in the store; it is missing"
        )
    array = existing[str(dim)]
    attrs = {k: v for k, v in array.metadata.attributes.items() if k != "_FillValue"}
    stored = conventions.decode_cf_variable(str(dim), xr.Variable((dim,), array[...], attrs))
    positions = pd.Index(stored.values).get_indexer(ds[dim].values)
    if (positions < 0).any():
        missing = ds[dim].values[positions < 0][:5].tolist()
        raise RegionKeyError(
            f"to_zarr3: region {dim!r}='auto': values {missing} of {dim!r} are not in the stored coordinate"
        )
    if (np.diff(positions) != 1).any():
        raise WriteError(
            f"to_zarr3: the values of {dim!r} are not one contiguous run of the stored {dim!r} coordinate"
        )
    return slice(int(positions[0]), int(positions[-1]) + 1)


def check_region_fits(name: str, dim: Hashable, selection: slice, size: int, length: int) -> None:
    """``selection`` lies inside the stored ``length`` and holds exactly ``size`` elements."""
    start, stop, _ = selection.indices(length)
    wanted = (selection.start or 0) + size if selection.stop is None else selection.stop
    if wanted > length:
        raise WriteError(
            f"to_zarr3: region {dim!r}={selection!r} for variable {name!r} ({size} elements) runs past the end of "
            f"the stored {dim!r} (length {length}); give a region inside 0..{length}, or first grow the arrays "
            f"with append_dim={dim!r}"
        )
    if stop - start != size:
        raise WriteError(
            f"to_zarr3: region {dim!r}={selection!r} selects {stop - start} elements, but variable {name!r} has "
            f"{size} along {dim!r}; make the slice as long as the data"
        )


def place(
    name: str,
    var: xr.Variable,
    array: Array,
    *,
    region: Mapping[Hashable, slice],
    append_dim: Hashable | None,
) -> Placement:
    """Where ``var`` (CF-encoded) goes in the existing ``array``: after its end along ``append_dim``, at ``region``.

    Every other dimension must match the stored length.
    """
    dims = array.dimension_names
    if dims is None or set(dims) != set(var.dims):
        raise WriteError(
            f"to_zarr3: variable {name!r} exists with dimensions {dims}, the dataset has {var.dims}"
        )
    sizes = dict(zip(var.dims, var.shape))
    origin, shape = [], list(array.shape)
    for axis, dim in enumerate(dims):
        start, stop = 0, array.shape[axis]
        if dim == append_dim:
            start, stop = array.shape[axis], array.shape[axis] + sizes[dim]
            shape[axis] = stop
        elif dim in region:
            start, stop, _ = region[dim].indices(array.shape[axis])
            check_region_fits(name, dim, region[dim], sizes[dim], array.shape[axis])
        if stop - start != sizes[dim]:
            raise WriteError(
                f"to_zarr3: variable {name!r} has {sizes[dim]} elements along {dim!r}, but the stored array "
                f"{array.shape} has {stop - start} there; write a part of it with region={{{dim!r}: slice(start, stop)}}, "
                "grow it with append_dim, or rewrite the whole group with mode='w' (which deletes everything stored in it first)"
            )
        origin.append(start)
    return Placement(tuple(origin), tuple(shape), tuple(str(d) for d in dims))
