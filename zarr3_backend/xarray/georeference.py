"""What an opened dataset's georeferencing becomes: grid mappings as coordinates, lazy x/y, the CRS back.

`georeference()` runs after xarray's CF decoding unless ``decode_coords=False``:
(1) under ``decode_coords=True`` the 0-d variable a ``grid_mapping`` names
becomes a coordinate, as ``"all"`` makes it; (2) a variable with GeoZarr
``spatial:dimensions`` and ``spatial:transform`` and no x/y coordinates gets
lazy ones (an [`AxisIndex`][zarr3_backend.xarray.axis_index.AxisIndex] per axis
of a north-up grid; rasterix's ``RasterIndex`` for a rotated one), nothing
allocated at open; (3) without a grid mapping, ``proj:wkt2`` or ``proj:code``
give it a ``spatial_ref`` coordinate (``crs_wkt``, ``GeoTransform``), from which
rioxarray reads ``.rio.crs`` and ``.rio.transform()``.

>>> import numpy as np, xarray as xr
>>> ds = xr.Dataset({"b": (("y", "x"), np.zeros((2, 3)), {"spatial:dimensions": ["y", "x"],
...     "spatial:transform": [10.0, 0.0, 500000.0, 0.0, -10.0, 5000000.0]})})
>>> georeference(ds, True).x.values.tolist()
[500005.0, 500015.0, 500025.0]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import xarray as xr

from .axis_index import AxisIndex, AxisTransform
from .geo import affine_to_gdal, spatial_dims

GRID_MAPPING_NAME = "spatial_ref"


def georeference(
    ds: xr.Dataset, decode_coords: object, defaults: Mapping[str, object] | None = None
) -> xr.Dataset:
    """``ds`` with its grid mappings as coordinates and its GeoZarr transform and CRS decoded (see above).

    ``defaults``: GeoZarr keys under the group's and its variables' own (a
    multiscales level's, from `multiscale_levels()`).
    """
    if not decode_coords:
        return ds
    grid_mappings = [n for n in _grid_mapping_names(ds) if n in ds.data_vars and ds[n].ndim == 0]
    if grid_mappings and (decode_coords is True or decode_coords == "coordinates"):
        ds = ds.set_coords(grid_mappings)
    for name in list(ds.data_vars):
        attrs = {**(defaults or {}), **_group_spatial(ds.attrs), **ds[name].attrs}
        if (affine := _affine(attrs, ds[name].dims)) is None:
            continue
        (y, x), transform = affine
        if x not in ds.coords and y not in ds.coords:
            for coords in _lazy_coordinates(transform, x, y, ds.sizes, attrs):
                ds = ds.assign_coords(coords)
        ds = _with_crs(ds, name, attrs, transform)
    return ds


def multiscale_levels(groups: Mapping[str, Mapping[Hashable, object]]) -> dict[str, dict[str, object]]:
    """The GeoZarr defaults of each multiscales level among ``groups`` (attributes by ``/``-path).

    A level's ``spatial:`` keys in its parent's ``multiscales`` layout, over
    the parent's own ``spatial:``/``proj:`` keys (its CRS, typically).
    """
    levels: dict[str, dict[str, object]] = {}
    for path, attrs in groups.items():
        multiscales = attrs.get("multiscales")
        layout = multiscales.get("layout") if isinstance(multiscales, Mapping) else None
        for level in layout if isinstance(layout, list) else []:
            if isinstance(level, Mapping) and isinstance(asset := level.get("asset"), str):
                own = {str(k): v for k, v in level.items() if str(k).startswith("spatial:")}
                inherited = {str(k): v for k, v in _group_spatial(attrs).items()}
                levels[f"{path.rstrip('/')}/{asset}"] = {**inherited, **own}
    return levels


def _grid_mapping_names(ds: xr.Dataset) -> set[Hashable]:
    return {
        v.attrs["grid_mapping"] for v in ds.data_vars.values() if isinstance(v.attrs.get("grid_mapping"), str)
    }


def _group_spatial(attrs: Mapping[Hashable, object]) -> dict[Hashable, Any]:
    """A group's GeoZarr keys, the defaults of its arrays' own."""
    return {k: v for k, v in attrs.items() if isinstance(k, str) and k.startswith(("spatial:", "proj:"))}


def _affine(
    attrs: Mapping[Hashable, Any], var_dims: tuple[Hashable, ...]
) -> tuple[tuple[str, str], list[float]] | None:
    """((y, x), transform) of well-formed affine ``spatial:`` keys over dimensions of the variable, else None."""
    dims, transform = attrs.get("spatial:dimensions", spatial_dims(var_dims)), attrs.get("spatial:transform")
    if attrs.get("spatial:transform_type", "affine") != "affine":
        return None
    if not (
        isinstance(dims, list | tuple)
        and len(dims) == 2
        and all(isinstance(d, str) and d in var_dims for d in dims)
    ):
        return None
    if not (isinstance(transform, list) and len(transform) == 6):
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in transform):
        return None
    return (dims[0], dims[1]), [float(v) for v in transform]


def _lazy_coordinates(
    transform: list[float], x: str, y: str, sizes: Mapping[Hashable, int], attrs: Mapping[Hashable, Any]
) -> list[xr.Coordinates]:
    """x/y coordinates at pixel centres (the transform's points for ``"node"`` registration), computed on demand."""
    a, b, c, d, e, f = (float(v) for v in transform)
    if attrs.get("spatial:registration", "pixel") == "node":  # the transform's points are the centres
        c, f = c - (a + b) / 2, f - (d + e) / 2
    if not b and not d:
        axes = [AxisTransform(x, int(sizes[x]), a, c), AxisTransform(y, int(sizes[y]), e, f)]
        return [xr.Coordinates.from_xindex(AxisIndex(axis)) for axis in axes]
    try:  # a rotated grid: rasterix's coupled index
        from affine import Affine
        from rasterix import RasterIndex
    except ImportError:
        return []
    index = RasterIndex.from_transform(
        Affine(a, b, c, d, e, f), width=int(sizes[x]), height=int(sizes[y]), x_dim=x, y_dim=y
    )
    return [xr.Coordinates.from_xindex(index)]


def _with_crs(
    ds: xr.Dataset, name: Hashable, attrs: Mapping[Hashable, Any], transform: list[float]
) -> xr.Dataset:
    """``ds`` with a ``spatial_ref`` grid mapping for ``name`` from its ``proj:`` keys, unless it has one."""
    var = ds[name]
    if "grid_mapping" in var.attrs or "grid_mapping" in var.encoding:
        return ds
    wkt = _wkt(attrs)
    if wkt is None or (
        GRID_MAPPING_NAME in ds.variables and ds[GRID_MAPPING_NAME].attrs.get("crs_wkt") != wkt
    ):
        return ds
    cf = {"crs_wkt": wkt, "spatial_ref": wkt, "GeoTransform": affine_to_gdal(transform)}
    ds = ds.assign_coords({GRID_MAPPING_NAME: xr.Variable((), 0, cf)})
    ds.variables[name].encoding["grid_mapping"] = GRID_MAPPING_NAME
    return ds


def _wkt(attrs: Mapping[Hashable, Any]) -> str | None:
    """The CRS of ``proj:wkt2``, else of ``proj:code`` through pyproj (None without either)."""
    if isinstance(wkt := attrs.get("proj:wkt2"), str):
        return wkt
    if not isinstance(code := attrs.get("proj:code"), str):
        return None
    try:
        from pyproj import CRS
        from pyproj.exceptions import CRSError
    except ImportError:
        return None
    try:
        return str(CRS.from_user_input(code).to_wkt())
    except CRSError:
        return None
