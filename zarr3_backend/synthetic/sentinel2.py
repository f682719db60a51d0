"""A Sentinel-2 L2A-like scene time series: packed reflectance, a scene classification, a CRS.

The scene is a landscape of land-cover classes (`LAND_COVER`): a river,
forest patches, a town, grassland and rectangular crop parcels, each parcel
with its own sowing date. Each class has a phenology (greenness through the
year) and reflectance mixes bare soil and leaves by greenness, so NDVI rises
and falls like a real one. Every date has its own clouds (bright, with a
cloud-probability class), their shadows (offset, darkened), and on some dates
a diagonal no-data wedge at the orbit edge. Halfway through the series a patch
of forest is cleared (``cleared == 1``) and turns into bare soil.

Storage follows the L2A product: ``uint16`` digital numbers with
``_FillValue = 0``, ``scale_factor = 1e-4`` and ``add_offset = -0.1`` (so
``reflectance = DN * 1e-4 - 0.1``), and the ``scl`` band with the ESA classes in
`SCL`. Any window of any date is generated on its own, so the full size
(``**SENTINEL2_FULL``) is built lazily with dask.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fields import fractal_noise, hash_uniform

__all__ = ["BANDS", "LAND_COVER", "SCL", "SENTINEL2_FULL", "sentinel2_like"]

#: A whole 110 km tile at 10 m, every 10 days for two years (about 70 GB of reflectance; built lazily).
SENTINEL2_FULL: dict[str, Any] = {"times": 73, "ny": 10980, "nx": 10980, "step_days": 10, "block": 1830}

#: Bands: name -> central wavelength (nm). Blue, green, red and near infrared, all at 10 m.
BANDS: dict[str, float] = {"B02": 490.0, "B03": 560.0, "B04": 665.0, "B08": 842.0}

#: Scene classification (SCL) values used, as in ESA's L2A product.
SCL: dict[str, int] = {"no_data": 0, "cloud_shadow": 3, "vegetation": 4, "not_vegetated": 5, "water": 6,
                       "cloud_medium_probability": 8, "cloud_high_probability": 9, "thin_cirrus": 10}  # fmt: skip

#: Land-cover classes of the synthetic landscape (the ``land_cover`` variable).
LAND_COVER: dict[str, int] = {"water": 1, "forest": 2, "cropland": 3, "grassland": 4, "urban": 5}

SCALE_FACTOR, ADD_OFFSET, NODATA = 1e-4, -0.1, 0
_SOIL = np.array([0.08, 0.11, 0.14, 0.22])
_LEAF = np.array([0.03, 0.07, 0.03, 0.46])
_WATER = np.array([0.06, 0.055, 0.04, 0.025])
_URBAN = np.array([0.12, 0.13, 0.14, 0.18])
_CLOUD = np.array([0.48, 0.47, 0.46, 0.44])
_PARCEL = 24  # crop parcel size (pixels)
_SHADOW_OFFSET = (18, -14)  # shadows fall this many pixels (down, left) of their cloud


def _bell(doy: float, peak: Any, width: float) -> Any:
    """A yearly bump: 1 at day-of-year ``peak``, falling off over ``width`` days (circular)."""
    distance = (doy - peak + 182.5) % 365.0 - 182.5
    return np.exp(-((distance / width) ** 2))


def _static(seed: int, y: np.ndarray, x: np.ndarray, ny: int, nx: int) -> dict[str, np.ndarray]:
    """Land cover, crop peak day, soil texture and the clearing for pixel rows ``y`` and columns ``x``."""
    yy, xx = y[:, None].astype(np.float64), x[None, :].astype(np.float64)
    river = np.abs(fractal_noise((seed, 20), yy, xx, cell=160.0, octaves=2) + (xx - nx / 2) / nx) < 0.06
    site_y, site_x = (yy - 0.62 * ny) / ny, (xx - 0.3 * nx) / nx  # a forest stand, part of it clear-cut
    forest = (fractal_noise((seed, 21), yy, xx, cell=64.0) > 0.6) | (np.hypot(site_y, site_x) < 0.15)
    urban = fractal_noise((seed, 22), yy, xx, cell=48.0, octaves=2) > 1.6
    parcel_y, parcel_x = yy // _PARCEL, (xx + 7 * (yy // _PARCEL)) // _PARCEL
    parcel = hash_uniform((seed, 23), parcel_y, parcel_x)
    cover = np.where(parcel < 0.35, LAND_COVER["grassland"], LAND_COVER["cropland"])
    cover = np.where(forest, LAND_COVER["forest"], cover)
    cover = np.where(urban, LAND_COVER["urban"], cover)
    cover = np.where(river, LAND_COVER["water"], cover).astype(np.uint8)
    cleared = (cover == LAND_COVER["forest"]) & (np.abs(site_y) < 0.06) & (np.abs(site_x) < 0.09)
    return {
        "cover": cover,
        "peak": 130.0 + 110.0 * hash_uniform((seed, 24), parcel_y, parcel_x),  # sowing varies by parcel
        "texture": 1.0 + 0.06 * fractal_noise((seed, 25), yy, xx, cell=4.0, octaves=2),
        "cleared": cleared,
    }


def _greenness(static: dict[str, np.ndarray], doy: float, after_clearing: bool) -> np.ndarray:
    cover = static["cover"]
    green = np.select(
        [cover == LAND_COVER["forest"], cover == LAND_COVER["cropland"], cover == LAND_COVER["grassland"]],
        [0.72 + 0.25 * _bell(doy, 190.0, 70.0), 0.08 + 0.87 * _bell(doy, static["peak"], 32.0),
         0.35 + 0.45 * _bell(doy, 150.0, 60.0)],
        0.1,
    )  # fmt: skip
    return np.where(static["cleared"] & after_clearing, 0.05, green)


def _scene(seed: int, index: int, doy: float, after_clearing: bool, static: dict[str, np.ndarray], *,
           y: np.ndarray, x: np.ndarray, ny: int, nx: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Packed reflectance (band, y, x) and SCL (y, x) of date number ``index`` for the given pixels."""
    yy, xx = y[:, None].astype(np.float64), x[None, :].astype(np.float64)
    green = _greenness(static, doy, after_clearing)[None]
    cover = static["cover"][None]
    surface = _SOIL[:, None, None] * (1 - green) + _LEAF[:, None, None] * green
    surface = np.where(cover == LAND_COVER["water"], _WATER[:, None, None], surface)
    surface = np.where(cover == LAND_COVER["urban"], _URBAN[:, None, None], surface)
    surface = (
        surface
        * static["texture"]
        * (1.0 + 0.02 * fractal_noise((seed, 30, index), yy, xx, cell=8.0, octaves=1))
    )

    cover_fraction = hash_uniform((seed, 31), np.array(index)) ** 2.5  # mostly clear-ish, some overcast
    threshold = 2.2 * (1.0 - 2.0 * cover_fraction)
    opacity = np.clip((fractal_noise((seed, 32, index), yy, xx, cell=96.0) - threshold) / 0.8, 0, 1)
    dy, dx = _SHADOW_OFFSET
    shadow_opacity = np.clip(
        (fractal_noise((seed, 32, index), yy - dy, xx - dx, cell=96.0) - threshold) / 0.8, 0, 1
    )
    shadow = (shadow_opacity > 0.3) & (opacity < 0.05)
    toa = np.where(shadow, surface * 0.35, surface) * (1 - opacity) + _CLOUD[:, None, None] * opacity

    edge = hash_uniform((seed, 33), np.array(index)) < 0.2
    nodata = edge & (xx + 0.4 * yy > 0.75 * (nx + 0.4 * ny))
    dn = np.clip(np.round((toa - ADD_OFFSET) / SCALE_FACTOR), 1, 65535).astype(np.uint16)
    dn = np.where(nodata, np.uint16(NODATA), dn)

    ndvi = (surface[3] - surface[2]) / (surface[3] + surface[2])
    scl = np.where(ndvi > 0.35, SCL["vegetation"], SCL["not_vegetated"])
    scl = np.where(static["cover"] == LAND_COVER["water"], SCL["water"], scl)
    scl = np.where(shadow, SCL["cloud_shadow"], scl)
    scl = np.select([opacity > 0.6, opacity > 0.25, opacity > 0.05],
                    [SCL["cloud_high_probability"], SCL["cloud_medium_probability"], SCL["thin_cirrus"]], scl)  # fmt: skip
    scl = np.where(nodata, SCL["no_data"], scl)
    return dn, scl.astype(np.uint8)


def sentinel2_like(
    times: int = 36,
    ny: int = 256,
    nx: int = 256,
    *,
    start: str = "2022-01-10",
    step_days: int = 20,
    seed: int = 0,
    block: int | None = None,
) -> Any:
    """A Sentinel-2 L2A-like ``xarray.Dataset`` of ``times`` dates over ``ny`` x ``nx`` 10 m pixels.

    Parameters
    ----------
    times, start, step_days
        Number of dates, the first date and the revisit interval (days).
    ny, nx
        Scene size in pixels (UTM zone 32N, 10 m; the defaults cover 2.56 km).
    seed
        Everything random derives from it.
    block
        ``None`` computes numpy arrays now; an int builds dask arrays lazily, one date and one
        ``block`` x ``block`` window at a time.

    Returns
    -------
    xarray.Dataset
        ``reflectance(time, band, y, x)``: uint16 DNs with ``_FillValue``, ``scale_factor``,
        ``add_offset`` in its attrs (xarray decodes them to float reflectance on open);
        ``scl(time, y, x)``: uint8 scene classes (`SCL`); the static truth
        ``land_cover(y, x)`` (`LAND_COVER`) and ``cleared(y, x)`` (1 where forest is
        cleared on ``attrs["clearing_date"]``); coordinates ``time``, ``band``, ``wavelength``,
        projected ``y`` (descending) and ``x``; the CRS in ``attrs["crs"]``.

    >>> ds = sentinel2_like(times=2, ny=4, nx=6)
    >>> dict(ds.reflectance.sizes), str(ds.reflectance.dtype), ds.attrs["crs"]
    ({'time': 2, 'band': 4, 'y': 4, 'x': 6}, 'uint16', 'EPSG:32632')
    """
    import pandas as pd
    import xarray as xr

    dates = pd.date_range(start, periods=times, freq=f"{step_days}D")
    clearing = dates[times // 2]
    rows, cols = np.arange(ny), np.arange(nx)
    static = _static(seed, rows, cols, ny, nx)
    if block is None:
        scenes = [
            _scene(seed, i, d.day_of_year, d >= clearing, static, y=rows, x=cols, ny=ny, nx=nx)
            for i, d in enumerate(dates)
        ]
        dn, scl = np.stack([s[0] for s in scenes]), np.stack([s[1] for s in scenes])
    else:
        dn, scl = _lazy_scenes(seed, dates, clearing, ny, nx, block=block)
    packing = {"_FillValue": NODATA, "scale_factor": SCALE_FACTOR, "add_offset": ADD_OFFSET}
    data_vars = {
        "reflectance": (("time", "band", "y", "x"), dn,
                        {"long_name": "surface reflectance", "units": "1", **packing}),
        "scl": (("time", "y", "x"), scl, {"long_name": "scene classification", "flag_values": list(SCL.values()),
                                           "flag_meanings": " ".join(SCL)}),
        "land_cover": (("y", "x"), static["cover"], {"long_name": "land cover (synthetic truth)",
                       "flag_values": list(LAND_COVER.values()), "flag_meanings": " ".join(LAND_COVER)}),
        "cleared": (("y", "x"), static["cleared"].astype(np.uint8),
                    {"long_name": "forest cleared on clearing_date (synthetic truth)"}),
    }  # fmt: skip
    coords = {
        "time": ("time", dates),
        "band": ("band", list(BANDS)),
        "wavelength": ("band", np.array(list(BANDS.values()), np.float32), {"units": "nm"}),
        "y": (
            "y",
            5_300_000.0 - 10.0 * (rows + 0.5),
            {"units": "m", "standard_name": "projection_y_coordinate"},
        ),
        "x": (
            "x",
            600_000.0 + 10.0 * (cols + 0.5),
            {"units": "m", "standard_name": "projection_x_coordinate"},
        ),
    }
    attrs = {"title": "Sentinel-2 L2A-like synthetic scene time series", "crs": "EPSG:32632",
             "crs_name": "WGS 84 / UTM zone 32N", "clearing_date": str(clearing.date()),
             "source": f"zarr3_backend.synthetic.sentinel2_like(seed={seed})"}  # fmt: skip
    return xr.Dataset(data_vars, coords, attrs)


def _lazy_scenes(seed: int, dates: Any, clearing: Any, ny: int, nx: int, *, block: int) -> tuple[Any, Any]:
    """Dask arrays of DNs and SCL, one task per (date, window), each generating its pixels alone."""
    import dask.array as da

    def window(index: int, y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        date = dates[index]
        static = _static(seed, y, x, ny, nx)
        return _scene(seed, index, date.day_of_year, date >= clearing, static, y=y, x=x, ny=ny, nx=nx)

    def dn_block(block_id: tuple[int, ...], block_info: Any = None) -> np.ndarray:
        (t0, _), _, (y0, y1), (x0, x1) = block_info[None]["array-location"]
        return window(t0, np.arange(y0, y1), np.arange(x0, x1))[0][None]

    def scl_block(block_id: tuple[int, ...], block_info: Any = None) -> np.ndarray:
        (t0, _), (y0, y1), (x0, x1) = block_info[None]["array-location"]
        return window(t0, np.arange(y0, y1), np.arange(x0, x1))[1][None]

    chunks_yx = (da.core.normalize_chunks(block, (ny,))[0], da.core.normalize_chunks(block, (nx,))[0])
    ones = (1,) * len(dates)
    dn = da.map_blocks(dn_block, dtype=np.uint16, chunks=(ones, (len(BANDS),), *chunks_yx))
    scl = da.map_blocks(scl_block, dtype=np.uint8, chunks=(ones, *chunks_yx))
    return dn, scl
