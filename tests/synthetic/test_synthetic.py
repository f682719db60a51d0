"""The synthetic data generators: deterministic, window-independent, physically plausible."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("xarray")

from zarr3_backend.synthetic import LAND_COVER, SCL, era5_like, sentinel2_like  # noqa: E402
from zarr3_backend.synthetic.fields import fractal_noise, hash_uniform  # noqa: E402

pytestmark = pytest.mark.validate_stores


def test_package_import_does_not_import_the_generators() -> None:
    code = "import sys, zarr3_backend; print('zarr3_backend.synthetic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]


def test_hash_is_a_pure_function_of_seed_and_coordinates() -> None:
    a = hash_uniform((1, 2), np.arange(1000))
    assert np.array_equal(a, hash_uniform((1, 2), np.arange(1000)))
    assert not np.array_equal(a, hash_uniform((1, 3), np.arange(1000)))
    assert 0 <= a.min() and a.max() < 1 and abs(a.mean() - 0.5) < 0.05


def test_noise_windows_equal_the_whole_field_and_std_is_about_one() -> None:
    y, x = np.arange(300.0)[:, None], np.arange(200.0)[None, :]
    whole = fractal_noise((5,), y, x, cell=16.0)
    window = fractal_noise((5,), y[130:170], x[:, 40:90], cell=16.0)
    assert np.array_equal(window, whole[130:170, 40:90])
    assert 0.7 < whole.std() < 1.3


@settings(max_examples=60, deadline=None)
@given(
    ny=st.integers(1, 40), nx=st.integers(1, 40), cell=st.floats(0.5, 50.0),
    y0=st.floats(-500.0, 500.0), x0=st.floats(-500.0, 500.0), period=st.sampled_from([None, 360.0]),
)  # fmt: skip
def test_noise_on_a_grid_equals_noise_at_its_points_bit_for_bit(
    ny: int, nx: int, cell: float, y0: float, x0: float, period: float | None
) -> None:
    """The grid path (a column and a row) and the scattered-points path give the same bits."""
    if period is not None:
        cell = 360.0 / max(1, round(360.0 / cell))  # a period that is a multiple of the cell
    y, x = y0 + 0.37 * np.arange(ny)[:, None], x0 + 1.3 * np.arange(nx)[None, :]
    grid = fractal_noise((3,), y, x, cell, x_period=period)
    yy, xx = np.broadcast_arrays(y, x)  # full 2-D arrays: the scattered path
    points = fractal_noise((3,), yy.copy(), xx.copy(), cell, x_period=period)
    assert grid.shape == (ny, nx) and np.array_equal(grid, points)


def test_noise_is_periodic_in_x_when_asked() -> None:
    lat = np.linspace(-80, 80, 9)[:, None]
    a = fractal_noise((0,), lat, np.array([[0.0, 10.0]]), cell=40.0, x_period=360.0)
    b = fractal_noise((0,), lat, np.array([[360.0, 370.0]]), cell=40.0, x_period=360.0)
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.fixture(scope="module")
def era5():  # type: ignore[no-untyped-def]
    return era5_like(days=730, nlat=37, nlon=72)


def test_era5_layout_and_cf_attributes(era5) -> None:  # type: ignore[no-untyped-def]
    assert dict(era5.t2m.sizes) == {"time": 730, "latitude": 37, "longitude": 72}
    assert all(era5[name].dtype == np.float32 for name in ["t2m", "tp", "u10", "v10"])
    assert era5.latitude.values[0] == 90 and era5.latitude.values[-1] == -90
    assert era5.t2m.attrs["units"] == "K" and era5.tp.attrs["standard_name"] == "precipitation_amount"
    assert str(era5.time.values[0])[:10] == "2021-01-01"


def test_era5_is_physically_plausible(era5) -> None:  # type: ignore[no-untyped-def]
    zonal = era5.t2m.mean(("time", "longitude"))
    assert zonal.sel(latitude=0).item() > zonal.sel(latitude=60).item() + 20  # warm tropics, cold poles
    north = era5.t2m.sel(latitude=slice(70, 40)).mean(("latitude", "longitude"))
    south = era5.t2m.sel(latitude=slice(-40, -70)).mean(("latitude", "longitude"))
    july, january = era5.time.dt.month == 7, era5.time.dt.month == 1
    assert north[july].mean() > north[january].mean() + 8 and south[july].mean() < south[january].mean()
    assert float(era5.tp.min()) >= 0 and 0.2 < float((era5.tp == 0).mean()) < 0.5  # dry days exist
    assert 0.0005 < float(era5.tp.mean()) < 0.005  # 0.5-5 mm per day
    assert float(era5.u10.sel(latitude=slice(55, 40)).mean()) > 3  # westerlies
    assert 0.2 < float(era5.lsm.mean()) < 0.5


def test_era5_weather_travels_east(era5) -> None:  # type: ignore[no-untyped-def]
    band = era5.v10.sel(latitude=slice(55, 40)).mean("latitude").values  # (time, lon)
    lags = [
        np.mean([np.corrcoef(band[t + 1], np.roll(band[t], shift))[0, 1] for t in range(100)])
        for shift in range(-3, 4)
    ]
    assert int(np.argmax(lags)) - 3 > 0  # tomorrow's pattern is today's shifted east


def test_era5_continues_across_calls_and_lazy_equals_eager(era5) -> None:  # type: ignore[no-untyped-def]
    later = era5_like(start="2022-03-01", days=20, nlat=37, nlon=72)
    assert np.array_equal(later.t2m.values, era5.t2m.sel(time=later.time).values)
    lazy = era5_like(days=30, nlat=37, nlon=72, time_chunk=7)
    assert lazy.t2m.chunks[0] == (7, 7, 7, 7, 2)
    assert np.array_equal(lazy.tp.values, era5.tp.values[:30])
    assert not np.array_equal(era5_like(days=5, nlat=37, nlon=72, seed=1).t2m.values, era5.t2m.values[:5])


def test_era5_trend_is_recoverable() -> None:
    ds = era5_like(days=1095, nlat=19, nlon=36, trend=0.2)
    mean = ds.t2m.weighted(np.cos(np.deg2rad(ds.latitude))).mean(("latitude", "longitude"))
    anomaly = mean.groupby("time.month") - mean.groupby("time.month").mean()
    slope = np.polyfit(np.arange(1095), anomaly.values, 1)[0] * 365.25
    assert abs(slope - 0.2) < 0.05


@pytest.fixture(scope="module")
def s2():  # type: ignore[no-untyped-def]
    return sentinel2_like(times=36, ny=128, nx=128)


def test_sentinel2_layout_packing_and_crs(s2) -> None:  # type: ignore[no-untyped-def]
    assert dict(s2.reflectance.sizes) == {"time": 36, "band": 4, "y": 128, "x": 128}
    assert s2.reflectance.dtype == np.uint16 and s2.scl.dtype == np.uint8
    assert s2.reflectance.attrs["_FillValue"] == 0 and s2.reflectance.attrs["scale_factor"] == 1e-4
    assert s2.attrs["crs"] == "EPSG:32632" and list(s2.band.values) == ["B02", "B03", "B04", "B08"]
    assert np.all(np.diff(s2.y.values) == -10) and np.all(np.diff(s2.x.values) == 10)
    nodata = s2.reflectance.values == 0
    assert nodata.any() and np.array_equal(nodata.any(axis=1), s2.scl.values == SCL["no_data"])


def test_sentinel2_clouds_shadows_and_phenology(s2) -> None:  # type: ignore[no-untyped-def]
    scl = s2.scl.values
    assert (scl == SCL["cloud_shadow"]).any() and (scl == SCL["cloud_high_probability"]).any()
    cloudy = np.isin(scl, [8, 9])
    reflectance = s2.reflectance.values.astype(float) * 1e-4 - 0.1
    assert reflectance[:, 0][cloudy].mean() > 0.3 > reflectance[:, 0][scl == SCL["vegetation"]].mean()
    red, nir = reflectance[:, 2], reflectance[:, 3]
    ndvi = np.where(np.isin(scl, [4, 5, 6]), (nir - red) / (nir + red), np.nan)
    crops = s2.land_cover.values == LAND_COVER["cropland"]
    summer, winter = s2.time.dt.month.isin([6, 7, 8]).values, s2.time.dt.month.isin([12, 1, 2]).values
    assert np.nanmean(ndvi[summer][:, crops]) > np.nanmean(ndvi[winter][:, crops]) + 0.2
    water = s2.land_cover.values == LAND_COVER["water"]
    assert np.nanmax(ndvi[:, water]) < 0.1


def test_sentinel2_clearing_turns_forest_bare(s2) -> None:  # type: ignore[no-untyped-def]
    cleared = s2.cleared.values.astype(bool)
    assert cleared.sum() > 100 and (s2.land_cover.values[cleared] == LAND_COVER["forest"]).all()
    after = s2.time.values >= np.datetime64(s2.attrs["clearing_date"])
    clear = s2.scl.values == SCL["vegetation"]
    assert not (clear[after][:, cleared]).any()  # bare soil is never classed as vegetation


def test_sentinel2_lazy_blocks_equal_the_eager_scene() -> None:
    eager = sentinel2_like(times=3, ny=70, nx=50)
    lazy = sentinel2_like(times=3, ny=70, nx=50, block=32)
    assert lazy.reflectance.chunks == ((1, 1, 1), (4,), (32, 32, 6), (32, 18))
    assert np.array_equal(lazy.reflectance.values, eager.reflectance.values)
    assert np.array_equal(lazy.scl.values, eager.scl.values)
