"""GeoZarr metadata: the ``spatial:`` and ``proj:`` conventions, written from a dataset's CF grid mapping.

A data variable is *georeferenced* when its ``grid_mapping`` names a CRS
variable (``crs_wkt``, ``spatial_ref`` or CF attributes) and its ``y``/``x``
(or ``lat``/``lon``) dimensions have an affine transform (a ``GeoTransform``
that agrees with them, else one from regular coordinates).
`geozarr_attributes()` gives it the ``spatial:`` attributes
(https://github.com/zarr-conventions/spatial; ``spatial:transform`` in
rasterio order, pixel corners) and, with pyproj, ``proj:code`` and
``proj:wkt2`` (https://github.com/zarr-experimental/geo-proj), registered
in ``zarr_conventions`` as geozarr-toolkit validates. Read side:
[`georeference`][zarr3_backend.xarray.georeference].

>>> import numpy as np, xarray as xr
>>> gm = xr.Variable((), 0, {"crs_wkt": "...", "GeoTransform": "500000 10 0 5000000 0 -10"})
>>> v = xr.Variable(("y", "x"), np.zeros((2, 3)), {"grid_mapping": "spatial_ref"})
>>> geozarr_attributes({"b": v, "spatial_ref": gm})["b"]["spatial:transform"]
[10.0, 0.0, 500000.0, 0.0, -10.0, 5000000.0]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..errors import WriteError

SPATIAL_CONVENTION = {
    "uuid": "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
    "name": "spatial:",
    "schema_url": "https://raw.githubusercontent.com/zarr-conventions/spatial/refs/tags/v1/schema.json",
    "spec_url": "https://github.com/zarr-conventions/spatial/blob/v1/README.md",
    "description": "Spatial coordinate information",
}
PROJ_CONVENTION = {
    "uuid": "f17cb550-5864-4468-aeb7-f3180cfb622f",
    "name": "proj:",
    "schema_url": "https://raw.githubusercontent.com/zarr-experimental/geo-proj/refs/tags/v1/schema.json",
    "spec_url": "https://github.com/zarr-experimental/geo-proj/blob/v1/README.md",
    "description": "Coordinate reference system information for geospatial data",
}
#: (y, x) dimension names recognised as a raster's spatial axes, as rioxarray recognises them.
SPATIAL_DIMS = (("y", "x"), ("lat", "lon"), ("latitude", "longitude"))
CRS_ATTRIBUTES = ("crs_wkt", "spatial_ref", "grid_mapping_name")


def geozarr_attributes(variables: Mapping[Hashable, xr.Variable]) -> dict[Hashable, dict[str, Any]]:
    """The GeoZarr attributes of each georeferenced variable of ``variables``, by name (others left out)."""
    found = {}
    for name, var in variables.items():
        gm_name = var.attrs.get("grid_mapping", var.encoding.get("grid_mapping"))
        grid_mapping = variables.get(gm_name) if isinstance(gm_name, str) else None
        dims = spatial_dims(var.dims)
        if grid_mapping is None or dims is None or not set(CRS_ATTRIBUTES) & set(grid_mapping.attrs):
            continue
        transform = _transform(grid_mapping, variables, dims)
        if transform is not None:
            found[name] = _attributes(var, dims, transform, grid_mapping.attrs)
    return found


def spatial_dims(dims: Sequence[Hashable]) -> tuple[str, str] | None:
    """The (y, x) dimensions among ``dims``, by rioxarray's names, or None."""
    for y, x in SPATIAL_DIMS:
        if y in dims and x in dims:
            return y, x
    return None


def gdal_to_affine(geotransform: Sequence[float]) -> list[float]:
    """GDAL's ``[c, a, b, f, d, e]`` as ``spatial:transform``'s ``[a, b, c, d, e, f]``."""
    c, a, b, f, d, e = (float(v) for v in geotransform)
    return [a, b, c, d, e, f]


def affine_to_gdal(transform: Sequence[float]) -> str:
    """``spatial:transform`` as the GDAL ``GeoTransform`` string rioxarray keeps on its grid mapping."""
    a, b, c, d, e, f = transform
    return " ".join(repr(float(v)) for v in (c, a, b, f, d, e))


def _transform(
    grid_mapping: xr.Variable, variables: Mapping[Hashable, xr.Variable], dims: tuple[str, str]
) -> list[float] | None:
    """The transform of regular 1-D ``y``/``x`` coordinates, else the grid mapping's ``GeoTransform``.

    The ``GeoTransform`` is kept when it agrees with the coordinates (to a
    millionth of a pixel: its digits are exact) or is rotated (which 1-D
    coordinates cannot say); one left stale by ``isel`` or ``coarsen`` is not.
    """
    stored = _geotransform(grid_mapping)
    derived = _coordinate_transform(variables, dims)
    if derived is None or (stored is not None and (stored[1] or stored[3] or _agree(stored, derived))):
        return stored
    return derived


def _geotransform(grid_mapping: xr.Variable) -> list[float] | None:
    values = grid_mapping.attrs.get("GeoTransform")
    if not isinstance(values, str) or len(values.split()) != 6:
        return None
    return gdal_to_affine([float(v) for v in values.split()])


def _coordinate_transform(
    variables: Mapping[Hashable, xr.Variable], dims: tuple[str, str]
) -> list[float] | None:
    y, x = (variables.get(d) for d in dims)
    if x is None or y is None or x.ndim != 1 or y.ndim != 1 or min(x.size, y.size) < 2:
        return None
    steps = [_step(np.asarray(c.values, dtype="float64")) for c in (x, y)]
    if steps[0] is None or steps[1] is None:
        return None
    (x0, dx), (y0, dy) = steps[0], steps[1]
    return [dx, 0.0, x0 - dx / 2, 0.0, dy, y0 - dy / 2]


def _agree(stored: list[float], derived: list[float]) -> bool:
    return bool(np.allclose(stored, derived, rtol=0, atol=1e-6 * min(abs(stored[0]), abs(stored[4]))))


def _step(values: np.ndarray) -> tuple[float, float] | None:
    """(first value, step) of evenly spaced ``values``, else None."""
    diffs = np.diff(values)
    if not np.allclose(diffs, diffs[0], rtol=1e-9, atol=0):
        return None
    return float(values[0]), float(diffs[0])


def _attributes(
    var: xr.Variable, dims: tuple[str, str], transform: list[float], cf: Mapping[Hashable, object]
) -> dict[str, Any]:
    height, width = (var.sizes[d] for d in dims)
    a, b, c, d, e, f = transform
    xs = [c, c + a * width + b * height, c + a * width, c + b * height]
    ys = [f, f + d * width + e * height, f + d * width, f + e * height]
    attrs: dict[str, Any] = {
        "spatial:dimensions": list(dims),
        "spatial:transform": transform,
        "spatial:shape": [height, width],
        "spatial:bbox": [min(xs), min(ys), max(xs), max(ys)],
        "spatial:registration": "pixel",
    }
    conventions = [SPATIAL_CONVENTION]
    if (proj := proj_attributes(cf)) is not None:
        attrs.update(proj)
        conventions.append(PROJ_CONVENTION)
    given = [c for c in var.attrs.get("zarr_conventions", []) if isinstance(c, Mapping)]
    known = {c.get("uuid") for c in given}
    attrs["zarr_conventions"] = given + [c for c in conventions if c["uuid"] not in known]
    return attrs


def proj_attributes(cf: Mapping[Hashable, object]) -> dict[str, str] | None:
    """``proj:code`` (when the CRS has an authority code) and ``proj:wkt2`` of CF grid-mapping attributes.

    None without pyproj, or when pyproj cannot read them.
    """
    try:
        from pyproj import CRS
        from pyproj.exceptions import CRSError
    except ImportError:
        return None
    try:
        crs = CRS.from_cf({str(k): v for k, v in cf.items()})
    except CRSError:
        return None
    attrs = {"proj:wkt2": crs.to_wkt()}
    if (authority := crs.to_authority()) is not None:
        attrs["proj:code"] = ":".join(authority)
    return attrs


MULTISCALES_CONVENTION = {
    "uuid": "d35379db-88df-4056-af3a-620245f8e347",
    "name": "multiscales",
    "schema_url": "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v1/schema.json",
    "spec_url": "https://github.com/zarr-conventions/multiscales/blob/v1/README.md",
    "description": "Multiscale layout of zarr datasets",
}


def with_multiscales(ds: xr.Dataset, node: xr.DataTree) -> xr.Dataset:
    """``ds`` (the group of ``node``) with its ``multiscales`` layout completed, when its attrs have one.

    Each level's ``asset`` must be a group below ``node``; a georeferenced
    level gets ``spatial:shape`` and ``spatial:transform``, a level
    ``derived_from`` another without a ``transform`` gets the ``scale`` of
    its pixel size over the other's, and ``zarr_conventions`` registers the
    convention (https://github.com/zarr-conventions/multiscales).
    """
    multiscales = ds.attrs.get("multiscales")
    if not isinstance(multiscales, Mapping) or not isinstance(multiscales.get("layout"), list):
        return ds
    levels = {}
    for level in multiscales["layout"]:
        asset = level.get("asset") if isinstance(level, Mapping) else None
        if not isinstance(asset, str) or asset.startswith("/") or asset not in node:
            raise WriteError(
                f"to_zarr3: multiscales layout level {level!r} names no group of the DataTree "
                f"(its groups: {sorted(node.children)}); each level's 'asset' is a relative path to one"
            )
        levels[asset] = {**_level_geometry(node[asset]), **level}
    for entry in levels.values():
        source = levels.get(entry.get("derived_from", ""), {})
        if "transform" not in entry and "spatial:transform" in entry and "spatial:transform" in source:
            a, e, a0, e0 = (
                t[i] for t in (entry["spatial:transform"], source["spatial:transform"]) for i in (0, 4)
            )
            entry["transform"] = {"scale": [e / e0, a / a0], "translation": [0.0, 0.0]}
    out = ds.copy()
    given = [c for c in ds.attrs.get("zarr_conventions", []) if isinstance(c, Mapping)]
    registered = given + [MULTISCALES_CONVENTION] * all(
        c.get("uuid") != MULTISCALES_CONVENTION["uuid"] for c in given
    )
    out.attrs = {
        **ds.attrs,
        "multiscales": {**multiscales, "layout": list(levels.values())},
        "zarr_conventions": registered,
    }
    return out


def _level_geometry(level: object) -> dict[str, Any]:
    """``spatial:shape`` and ``spatial:transform`` of a level's first georeferenced variable (none: empty)."""
    if not isinstance(level, xr.DataTree):
        return {}
    for attrs in geozarr_attributes(level.to_dataset().variables).values():
        return {key: attrs[key] for key in ("spatial:shape", "spatial:transform")}
    return {}
