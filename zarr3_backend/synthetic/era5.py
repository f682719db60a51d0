"""A daily ERA5-like reanalysis dataset: 2 m temperature, precipitation and 10 m wind.

Each variable is a sum of simple physical pieces, so analyses find what a
climate scientist expects:

- a latitude gradient (warm tropics, cold poles) and land/sea contrast (``lsm``);
- a seasonal cycle opposite in the two hemispheres, stronger over land and at
  high latitudes, coldest around 20 January in the north;
- travelling weather systems: planetary waves (wavenumbers 4-7) drifting east
  along the mid-latitude storm tracks, bringing warm sectors, rain and wind;
- a rain belt (ITCZ) that follows the sun, and dry subtropics;
- a uniform warming trend (``trend`` K per year, recorded in ``t2m.attrs``);
- smooth noise, correlated over a few days.

Values depend only on the day, the point and ``seed``: a later start or a finer
grid samples the same continuous fields, so an appended year continues the
series and ``era5_like(start="2023-01-01", days=365)`` equals the last year of
``era5_like(start="2021-01-01", days=1095)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fields import fractal_noise, hash_uniform

__all__ = ["ERA5_FULL", "era5_like"]

#: Real ERA5 scale: three years on the 0.25 degree grid (about 4.5 GB per variable; built lazily).
ERA5_FULL: dict[str, Any] = {"days": 1095, "nlat": 721, "nlon": 1440, "time_chunk": 73}

_EPOCH = np.datetime64("2000-01-01", "D")
_YEAR = 365.25
_NOISE_DAYS = 3  # noise lattice spacing in time (days)
_ATTRS = {
    "t2m": {"long_name": "2 metre temperature", "units": "K", "standard_name": "air_temperature"},
    "tp": {"long_name": "Total precipitation", "units": "m", "standard_name": "precipitation_amount",
           "cell_methods": "time: sum (interval: 1 day)"},
    "u10": {"long_name": "10 metre U wind component", "units": "m s**-1", "standard_name": "eastward_wind"},
    "v10": {"long_name": "10 metre V wind component", "units": "m s**-1", "standard_name": "northward_wind"},
}  # fmt: skip


def land_sea_mask(lat: np.ndarray, lon: np.ndarray, seed: int = 0) -> np.ndarray:
    """Fraction of land (0-1) on the ``lat`` x ``lon`` grid (degrees): about a third of the globe."""
    shape = fractal_noise((seed, 1), lat[:, None], lon[None, :], cell=40.0, octaves=3, x_period=360.0)
    return 1.0 / (1.0 + np.exp(-(shape - 0.45) / 0.12))


def _waves(days: np.ndarray, lat: np.ndarray, lon: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Storm-track waves ``W`` (about +-1) and their eastward derivative, shape (time, lat, lon)."""
    t = days[:, None, None].astype(np.float64)
    lam = np.deg2rad(lon)[None, None, :]
    track = np.exp(-(((np.abs(lat) - 45.0) / 14.0) ** 2))
    wave = np.zeros((len(days), len(lat), len(lon)), np.float32)
    slope = np.zeros_like(wave)
    for k in range(4, 8):
        r = hash_uniform((seed, 2, k), np.arange(4))  # phase, speed, modulation phase, hemisphere offset
        speed = np.deg2rad(6.0 + 8.0 * r[1])  # eastward, 6-14 degrees per day
        amplitude = 0.45 * (1 + 0.6 * np.sin(2 * np.pi * t / (20.0 + 15 * r[2]) + 6.3 * r[2]))
        along = k * (lam - speed * t) + 6.3 * r[0]  # (time, 1, lon)
        across = np.where(lat >= 0, 0.0, 6.3 * r[3]) + 0.8 * np.sin(3 * np.deg2rad(lat))  # (lat,)
        cos_a, sin_a = (
            (amplitude * np.cos(along)).astype(np.float32),
            (amplitude * np.sin(along)).astype(np.float32),
        )
        cos_b = (track * np.cos(across)).astype(np.float32)[None, :, None]
        sin_b = (track * np.sin(across)).astype(np.float32)[None, :, None]
        wave += cos_a * cos_b - sin_a * sin_b  # amplitude * track * cos(along + across)
        slope -= k / 4.0 * (sin_a * cos_b + cos_a * sin_b)
    return wave, slope


def _noise(
    days: np.ndarray, lat: np.ndarray, lon: np.ndarray, seed: int, *, field: int, cell: float
) -> np.ndarray:
    """Smooth noise (std ~1) in space, linearly correlated over ``_NOISE_DAYS`` days."""
    knots = np.arange(days.min() // _NOISE_DAYS, days.max() // _NOISE_DAYS + 2)
    maps = np.stack(
        [
            fractal_noise((seed, field, int(k)), lat[:, None], lon[None, :], cell, x_period=360.0)
            for k in knots
        ]
    )
    maps = maps.astype(np.float32)
    position = days / _NOISE_DAYS - knots[0]
    below = np.floor(position).astype(int)
    weight = (position - below).astype(np.float32)[:, None, None]
    noise: np.ndarray = (1 - weight) * maps[below] + weight * maps[
        below + 1
    ]  # numpy types fancy indexing as Any
    return noise


def _season(days: np.ndarray) -> np.ndarray:
    """cos of the annual phase, +1 around 20 January."""
    return np.cos(2 * np.pi * (days - 19) / _YEAR)[:, None, None]


def _fields(
    days: np.ndarray, lat: np.ndarray, lon: np.ndarray, seed: int, trend: float
) -> dict[str, np.ndarray]:
    """Every variable for ``days`` (days since 2000-01-01) on the ``lat`` x ``lon`` grid, float32."""
    lsm = land_sea_mask(lat, lon, seed)[None]
    sin_lat = np.sin(np.deg2rad(lat))[None, :, None]
    wave, slope = _waves(days, lat, lon, seed)
    fields = {}

    antarctic = 10.0 / (1.0 + np.exp((lat + 68.0) / 3.0))[None, :, None]
    mean = 300.0 - 21.0 * sin_lat**2 - 24.0 * sin_lat**8 - antarctic - 3.0 * lsm * sin_lat**2
    amplitude = (5.0 + 8.0 * lsm) * np.abs(sin_lat) ** 1.3
    warming = trend * (days[:, None, None] - 365.25 * 21) / _YEAR  # zero at 2021-01-01
    weather = (3.0 + 2.0 * lsm) * wave + (0.6 + 1.0 * lsm) * _noise(days, lat, lon, seed, field=3, cell=20.0)
    fields["t2m"] = mean - amplitude * np.sign(sin_lat) * _season(days) + warming + weather

    itcz_lat = -7.0 * _season(days + 30)
    itcz = 11.0 * np.exp(-(((lat[None, :, None] - itcz_lat) / 7.0) ** 2))
    subtropics = 1.0 - 0.8 * np.exp(-(((np.abs(lat) - 25.0) / 8.0) ** 2))[None, :, None]
    intensity = (1.2 + itcz + 9.0 * np.clip(-wave, 0, None)) * subtropics  # mm/day, rain in the troughs
    wet = _noise(days, lat, lon, seed, field=4, cell=10.0) > -0.4
    fields["tp"] = (
        np.where(wet, intensity * np.exp(0.7 * _noise(days, lat, lon, seed, field=5, cell=5.0)), 0.0) / 1000.0
    )

    a = np.abs(lat)[None, :, None]
    jets = -5.0 * np.exp(-(((a - 15) / 10) ** 2)) + 8.0 * np.exp(-(((a - 48) / 10) ** 2)) - 3.0 * (a > 70)
    fields["u10"] = jets + 3.0 * wave + 1.5 * _noise(days, lat, lon, seed, field=6, cell=10.0)
    fields["v10"] = 5.0 * slope + 1.5 * _noise(days, lat, lon, seed, field=7, cell=10.0)
    return {name: value.astype(np.float32) for name, value in fields.items()}


def era5_like(
    start: str = "2021-01-01",
    days: int = 730,
    nlat: int = 73,
    nlon: int = 144,
    *,
    seed: int = 0,
    trend: float = 0.05,
    time_chunk: int | None = None,
) -> Any:
    """A daily ERA5-like ``xarray.Dataset`` on a regular global grid.

    Parameters
    ----------
    start, days
        First day (ISO date) and number of days.
    nlat, nlon
        Grid size: latitudes 90 to -90 inclusive (descending, like ERA5), longitudes
        from 0 eastward. The defaults give a 2.5 degree grid; ``**ERA5_FULL`` the real one.
    seed
        Everything random derives from it.
    trend
        Warming of ``t2m`` in K per year (recorded as ``t2m.attrs["synthetic_trend"]``).
    time_chunk
        ``None`` computes numpy arrays now; an int builds dask arrays lazily, one block of
        ``time_chunk`` days at a time (for sizes that do not fit in memory).

    Returns
    -------
    xarray.Dataset
        float32 ``t2m`` (K), ``tp`` (m per day), ``u10``, ``v10`` (m/s) over
        ``(time, latitude, longitude)`` and the static ``lsm`` (land fraction), with CF attributes.

    >>> ds = era5_like(days=3, nlat=5, nlon=8)
    >>> dict(ds.t2m.sizes), str(ds.t2m.dtype), ds.t2m.attrs["units"]
    ({'time': 3, 'latitude': 5, 'longitude': 8}, 'float32', 'K')
    """
    import pandas as pd
    import xarray as xr

    lat = np.linspace(90.0, -90.0, nlat)
    lon = np.arange(nlon) * (360.0 / nlon)
    first = int((np.datetime64(start, "D") - _EPOCH).astype(int))
    day_numbers = np.arange(first, first + days)
    values = _values(day_numbers, lat, lon, seed, trend=trend, chunk=time_chunk)
    data_vars: dict[str, Any] = {}
    for name, attrs in _ATTRS.items():
        extra = {"synthetic_trend": f"{trend} K per year"} if name == "t2m" else {}
        data_vars[name] = (("time", "latitude", "longitude"), values[name], {**attrs, **extra})
    data_vars["lsm"] = (("latitude", "longitude"), land_sea_mask(lat, lon, seed).astype(np.float32),
                        {"long_name": "Land-sea mask", "units": "(0 - 1)"})  # fmt: skip
    coords = {
        "time": ("time", pd.date_range(start, periods=days, freq="D"), {"long_name": "time"}),
        "latitude": (
            "latitude",
            lat.astype(np.float32),
            {"units": "degrees_north", "standard_name": "latitude"},
        ),
        "longitude": (
            "longitude",
            lon.astype(np.float32),
            {"units": "degrees_east", "standard_name": "longitude"},
        ),
    }
    attrs = {"Conventions": "CF-1.7", "title": "ERA5-like synthetic daily reanalysis",
             "source": f"zarr3_backend.synthetic.era5_like(seed={seed})"}  # fmt: skip
    return xr.Dataset(data_vars, coords, attrs)


def _values(
    days: np.ndarray, lat: np.ndarray, lon: np.ndarray, seed: int, *, trend: float, chunk: int | None
) -> dict[str, Any]:
    """Every variable now (``chunk=None``) or as dask arrays of ``chunk``-day blocks."""
    if chunk is None:
        return _fields(days, lat, lon, seed, trend)
    import dask.array as da

    times = da.from_array(days, chunks=chunk)
    chunks = (times.chunks[0], (len(lat),), (len(lon),))

    def block(d: np.ndarray, name: str) -> np.ndarray:
        return _fields(d, lat, lon, seed, trend)[name]

    return {
        name: da.map_blocks(block, times, name, new_axis=[1, 2], chunks=chunks, dtype=np.float32)
        for name in _ATTRS
    }
