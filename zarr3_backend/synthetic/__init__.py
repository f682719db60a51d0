"""Realistic synthetic data for examples, notebooks and tests (needs xarray; nothing is downloaded).

- `era5_like()`: a daily reanalysis-style dataset (time x latitude x longitude) with a
  seasonal cycle, a latitude gradient, land and sea, travelling weather systems, a warming
  trend and noise; float32 ``t2m``, ``tp``, ``u10``, ``v10`` with CF attributes.
- `sentinel2_like()`: a Sentinel-2 L2A-style scene time series (time x band x y x x)
  of packed ``uint16`` reflectance with a nodata fill, ``scale_factor``/``add_offset``, a
  scene classification (SCL) mask, projected x/y coordinates and a CRS; land-cover classes
  follow their phenology, clouds cast shadows, and a patch of forest is cleared mid-series.

Every generator is deterministic for a given ``seed`` and takes its sizes as parameters:
small ones for CI, ``**ERA5_FULL`` / ``**SENTINEL2_FULL`` for the real scale. Importing
`zarr3_backend` does not import this package; it needs xarray and pandas (dask when lazy).
"""

from .era5 import ERA5_FULL, era5_like
from .sentinel2 import BANDS, LAND_COVER, SCL, SENTINEL2_FULL, sentinel2_like

__all__ = ["BANDS", "ERA5_FULL", "LAND_COVER", "SCL", "SENTINEL2_FULL", "era5_like", "sentinel2_like"]
