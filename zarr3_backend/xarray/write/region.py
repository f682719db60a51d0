"""Where ``to_zarr3`` puts data in stored arrays: ``region=`` slices, and appends along ``append_dim``.

``region`` slices are validated and ``"auto"`` ones found from the stored
coordinates (`resolve_region()`); `place()` then gives each variable
its origin in its stored array and the array's shape after an append, and
`append_view()` the array an append writes through. A region that
covers stored chunks only partly warns when other writers may run alongside
(`warn_partial()`).

Exception types follow ``engine="zarr"``: a slice with a step is a
``ValueError`` (`WriteError`), coordinate values
missing from the store a ``KeyError`` (`RegionKeyError`).

>>> import numpy as np, xarray as xr
>>> ds = xr.Dataset({"v": ("t", np.arange(3.0))})
>>> resolve_region(ds, {"t": slice(2, 5)}, {}, None)[1]
{'t': slice(2, 5, None)}
"""

from __future__ import annotations

import multiprocessing
import threading
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr
from xarray import conventions

from ...core.chunk_grid import ChunkLengths
from ...core.indexing import DimGrid
from ...errors import RegionKeyError, WriteError, WriteTypeError
from ...nodes.array import Array
from ...nodes.shard_writes import PartialShardWarning, partial_shards, whole_shard_view
from ...runtime.stacklevel import caller_stacklevel
from ...writes.plan import Region, Shape, WritePlan

if TYPE_CHECKING:
    from ...coordination.guards import WriteGuard


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


def append_view(grown: Array, old_shape: Shape) -> Array:
    """The array an append writes through: ``grown`` with each grown axis rounded up to whole shards.

    Its last shard's rows beyond the new shape are then kept as stored, not
    reset to the fill value: they may hold the rows of a later deferred
    append that reserved them (see `commit`).
    """
    grid = grown.metadata.chunk_grid.dim_grids
    shape = tuple(n if n == old else _chunk_end(n, c) for n, old, c in zip(grown.shape, old_shape, grid))
    return Array(grown.store, grown.path, grown.metadata.with_shape(shape))


def _chunk_end(n: int, dim: DimGrid) -> int:
    """Where the chunk holding element ``n - 1`` ends (a rectilinear dimension's declared lengths, or the step)."""
    if isinstance(dim, ChunkLengths):
        return dim.end(dim.index_of(n - 1))
    return -(-n // dim) * dim


def concurrent_writers(deferred: bool) -> str | None:
    """Why other writers of the same store may run while this write does, or ``None`` when nothing suggests it.

    One ``to_zarr3`` call never races itself (each shard is written by one
    task), so only independent writes can lose each other's rows: a
    ``deferred`` write (``compute=False`` with dask-backed data) may be
    computed together with others, and a call from a thread other than the
    main one or from a child process (multiprocessing, dask workers) usually
    runs beside sibling calls. Independent programs (e.g. batch jobs) cannot
    be seen from here.

    >>> concurrent_writers(deferred=True)
    'compute=False returns a graph that may be computed together with other writes'
    """
    if deferred:
        return "compute=False returns a graph that may be computed together with other writes"
    if threading.current_thread() is not threading.main_thread():
        return f"it runs in the thread {threading.current_thread().name!r}, likely beside other writers"
    if multiprocessing.parent_process() is not None:
        return "it runs in a child process (a worker), likely beside other writers"
    return None


def warn_partial(writes: Sequence[tuple[str, Array, Shape, Shape]], reason: str) -> None:
    """Warn once (`PartialShardWarning`) when region writes ``(name, array, origin, shape)`` cover stored
    chunks (shards) only partly; ``reason`` says why other writers may rewrite the same shards meanwhile."""
    partial = [(name, array, *partial_shards(array, origin, shape)) for name, array, origin, shape in writes]
    partial = [p for p in partial if p[2]]
    if not partial:
        return
    names = ", ".join(repr(p[0]) for p in partial)
    name, array, _, example = partial[0]
    unit = "shard" if array.sharded else "chunk"
    warnings.warn(
        f"to_zarr3: the region write of {names} covers {sum(p[2] for p in partial)} stored {unit}(s) only partly, "
        f"e.g. {example!r}; each is read, merged and rewritten, so another process writing the same {unit} at the "
        f"same time can lose its rows ({reason}). Align regions to the {unit} grid ({array.metadata.chunk_shape} for "
        f"{name!r}), or pass lock= (e.g. lock=lambda key: distributed.Lock(key))",
        PartialShardWarning,
        stacklevel=caller_stacklevel("zarr3_backend"),
    )


def guarded(plan: WritePlan, guard: WriteGuard, compute: bool) -> WritePlan:
    """``plan`` as ``guard`` lets it run: a region write without ``lock=`` warns of partial shards other writers
    may race; with ``lock=`` or deferred, it merges whole shards (appends may change the shape meanwhile)."""
    later = not compute and any(write.variable.chunks is not None for write in plan.data)
    if guard.unguarded_region and (reason := concurrent_writers(later)):
        warn_partial([(w.name, w.array, w.origin, w.variable.shape) for w in plan.data], reason)
    if guard.mode == "r+" and (guard.user_lock or later):
        plan = replace(plan, data=tuple(replace(w, array=whole_shard_view(w.array)) for w in plan.data))
    return plan
