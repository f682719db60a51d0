"""A small GeoTIFF written with rasterio, opened with rioxarray: the source of the georeferencing tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

TRANSFORM_ARGS = (500000.0, 5000000.0, 10.0, 10.0)  # a UTM 33N scene, 10 m pixels (west, north, xsize, ysize)
CRS = "EPSG:32633"
BANDS = ["blue", "green", "red"]


def scene(tmp_path: Path) -> xr.Dataset:
    """A 3-band 40 x 60 uint16 GeoTIFF written with rasterio, opened with rioxarray, one variable per band."""
    import rasterio
    import rioxarray
    from rasterio.transform import from_origin

    data = np.arange(3 * 40 * 60, dtype="uint16").reshape(3, 40, 60)
    path = tmp_path / "scene.tif"
    profile = {"driver": "GTiff", "height": 40, "width": 60, "count": 3, "dtype": "uint16", "crs": CRS}
    with rasterio.open(path, "w", transform=from_origin(*TRANSFORM_ARGS), **profile) as dst:
        dst.write(data)
    ds = rioxarray.open_rasterio(path).to_dataset(dim="band")
    return ds.rename(dict(zip([1, 2, 3], BANDS))).load()


def pyramid(tmp_path: Path) -> xr.DataTree:
    """Two levels of the scene, 10 m and 20 m (block means), under a root naming them in its multiscales layout."""
    full = scene(tmp_path)
    half = full[BANDS].coarsen(x=2, y=2).mean().astype("uint16")
    import rioxarray  # noqa: F401  (the .rio accessor)

    half = half.rio.write_crs(CRS).rio.write_transform(half.rio.transform(recalc=True))
    layout = [{"asset": "r10m"}, {"asset": "r20m", "derived_from": "r10m"}]
    root = xr.Dataset(attrs={"multiscales": {"layout": layout, "resampling_method": "average"}})
    return xr.DataTree.from_dict({"/": root, "/r10m": full, "/r20m": half})
