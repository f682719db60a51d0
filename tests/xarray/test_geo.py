"""The CRS travels: CF grid mappings through ``encoding=``, GeoZarr ``spatial:``/``proj:`` metadata, lazy x/y.

The source is a GeoTIFF rasterio writes in the test, opened with rioxarray; for
CF behaviour ``engine="zarr"`` on the same dataset is the oracle, and where we
differ on purpose (the grid mapping kept when ``encoding=`` replaces
rioxarray's, and made a coordinate under the default ``decode_coords=True``)
the test says so.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3)

rasterio = pytest.importorskip("rasterio")
rioxarray = pytest.importorskip("rioxarray")
pyproj = pytest.importorskip("pyproj")
from geotiff import BANDS, CRS, TRANSFORM_ARGS, pyramid, scene  # noqa: E402
from rasterio.transform import from_origin  # noqa: E402
from xarray.conventions import CF_RELATED_DATA  # noqa: E402
from xarray.indexes import CoordinateTransformIndex  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"
)
TRANSFORM = from_origin(*TRANSFORM_ARGS)


def sharded(names: list[str], **extra: object) -> dict[str, dict[str, object]]:
    """The encoding the guide recommends: map-tile inner chunks in one shard per band; no grid_mapping."""
    return {name: {"chunks": (20, 30), "shards": (40, 60), **extra} for name in names}


def attributes(store: Path, name: str) -> dict[str, object]:
    return dict(json.loads((store / name / "zarr.json").read_text())["attributes"])


def test_rioxarray_round_trip_keeps_crs_and_transform(tmp_path: Path) -> None:
    ds = scene(tmp_path)
    ds.to_zarr3(tmp_path / "s.zarr", mode="w", encoding=sharded(BANDS))
    back = xr.open_dataset(tmp_path / "s.zarr", engine="zarr3")
    assert back.rio.crs == ds.rio.crs == rasterio.crs.CRS.from_string(CRS)
    assert back.rio.transform() == ds.rio.transform() == TRANSFORM
    for band in BANDS:
        assert back[band].rio.crs == ds.rio.crs and back[band].rio.transform() == TRANSFORM
    xr.testing.assert_equal(back[BANDS].load(), ds[BANDS])


@pytest.mark.parametrize("key", CF_RELATED_DATA)
def test_cf_encoding_keys_accepted_as_engine_zarr_accepts_them(tmp_path: Path, key: str) -> None:
    """Each CF key naming other variables is written as the attribute ``engine="zarr"`` writes."""
    ds = scene(tmp_path).drop_vars("spatial_ref")
    value = {"grid_mapping": "crs", "bounds": "x_bnds", "cell_measures": "area: area"}.get(key, "area")
    ds = ds.assign(crs=((), 0), area=(("y", "x"), np.ones((40, 60))), x_bnds=(("x", "nv"), np.zeros((60, 2))))
    for name in BANDS:
        ds[name].encoding = {}
    encoding = {"blue": {"chunks": (20, 30), key: value}}
    ds.to_zarr(tmp_path / "oracle.zarr", mode="w", zarr_format=3, consolidated=False, encoding=encoding)
    ds.to_zarr3(tmp_path / "ours.zarr", mode="w", encoding=encoding)
    ours, oracle = attributes(tmp_path / "ours.zarr", "blue"), attributes(tmp_path / "oracle.zarr", "blue")
    assert ours.get(key) == oracle.get(key) == value


def test_grid_mapping_kept_when_encoding_replaces_rioxarrays(tmp_path: Path) -> None:
    """``engine="zarr"`` replaces the variable's encoding and loses ``grid_mapping`` with it; we keep it."""
    ds = scene(tmp_path)
    assert ds.blue.encoding["grid_mapping"] == "spatial_ref"
    encoding = {"blue": {"chunks": (20, 30)}}
    ds.to_zarr(tmp_path / "oracle.zarr", mode="w", zarr_format=3, consolidated=False, encoding=encoding)
    ds.to_zarr3(tmp_path / "ours.zarr", mode="w", encoding=encoding)
    assert "grid_mapping" not in attributes(tmp_path / "oracle.zarr", "blue")  # what engine="zarr" does
    assert attributes(tmp_path / "ours.zarr", "blue")["grid_mapping"] == "spatial_ref"
    assert attributes(tmp_path / "ours.zarr", "green")["grid_mapping"] == "spatial_ref"
    ours = xr.open_dataset(tmp_path / "ours.zarr", engine="zarr3", decode_coords="all")
    assert ours.blue.encoding["grid_mapping"] == "spatial_ref" and ours.blue.rio.crs == CRS


def test_decode_coords_against_engine_zarr(tmp_path: Path) -> None:
    """``decode_coords="all"``: as ``engine="zarr"``; the default: the grid mapping a coordinate (zarr: a data variable)."""
    ds = scene(tmp_path)
    ds.to_zarr3(tmp_path / "s.zarr", mode="w", encoding=sharded(BANDS, grid_mapping="spatial_ref"))
    opened = {
        (engine, coords): xr.open_dataset(tmp_path / "s.zarr", engine=engine, decode_coords=coords)
        for engine in ("zarr", "zarr3")
        for coords in (True, "all")
    }
    xr.testing.assert_identical(opened["zarr3", "all"].load(), opened["zarr", "all"].load())
    assert "spatial_ref" in opened["zarr", True].data_vars  # (rioxarray 0.19 then finds no CRS, 0.23 does)
    assert "spatial_ref" in opened["zarr3", True].coords and opened["zarr3", True].rio.crs == CRS
    xr.testing.assert_identical(
        opened["zarr3", True].load(), opened["zarr", True].set_coords("spatial_ref").load()
    )
    plain = xr.open_dataset(tmp_path / "s.zarr", engine="zarr3", decode_coords=False)
    xr.testing.assert_identical(
        plain.load(), xr.open_dataset(tmp_path / "s.zarr", engine="zarr", decode_coords=False).load()
    )


def test_geozarr_metadata_written(tmp_path: Path) -> None:
    ds = scene(tmp_path)
    ds.to_zarr3(tmp_path / "s.zarr", mode="w", encoding=sharded(BANDS))
    attrs = attributes(tmp_path / "s.zarr", "red")
    assert attrs["spatial:dimensions"] == ["y", "x"]
    assert attrs["spatial:transform"] == list(TRANSFORM)[:6]
    assert attrs["spatial:shape"] == [40, 60]
    assert attrs["spatial:bbox"] == [500000.0, 4999600.0, 500600.0, 5000000.0]
    assert attrs["proj:code"] == CRS
    assert pyproj.CRS.from_wkt(attrs["proj:wkt2"]) == pyproj.CRS.from_user_input(CRS)
    names = {c["name"]: c["uuid"] for c in attrs["zarr_conventions"]}
    assert names == {
        "spatial:": "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
        "proj:": "f17cb550-5864-4468-aeb7-f3180cfb622f",
    }
    assert "spatial:dimensions" not in attributes(tmp_path / "s.zarr", "spatial_ref")
    assert "spatial:dimensions" not in attributes(tmp_path / "s.zarr", "x")


def foreign_store(path: Path, shape: tuple[int, int], **extra: object) -> tuple[float, ...]:
    """A GeoZarr store as another writer makes it: one band, no x/y arrays, no CF grid mapping."""
    transform = (20.0, 0.0, 300000.0, 0.0, -20.0, 6000000.0)
    group = zarr3_backend.create_group(str(path))
    group.create_array(
        "band",
        shape=shape,
        dtype="uint8",
        chunks=(min(shape[0], 1000), min(shape[1], 1000)),
        dimension_names=["y", "x"],
        attributes={
            "zarr_conventions": [{"uuid": "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4", "name": "spatial:"}],
            "spatial:dimensions": ["y", "x"],
            "spatial:transform": list(transform),
            "proj:code": "EPSG:32632",
            **extra,
        },
    )
    return transform


def test_foreign_geozarr_store_gives_back_crs_and_transform(tmp_path: Path) -> None:
    transform = foreign_store(tmp_path / "f.zarr", (30, 50))
    ds = xr.open_dataset(tmp_path / "f.zarr", engine="zarr3")
    assert ds.rio.crs == "EPSG:32632" and ds.band.rio.crs == "EPSG:32632"
    assert tuple(ds.rio.transform())[:6] == transform
    np.testing.assert_array_equal(ds.x.values, 300000.0 + 20.0 * (np.arange(50) + 0.5))
    np.testing.assert_array_equal(ds.y.values, 6000000.0 - 20.0 * (np.arange(30) + 0.5))
    assert "x" not in xr.open_dataset(tmp_path / "f.zarr", engine="zarr3", decode_coords=False).coords


def test_node_registration_puts_coordinates_on_the_transform_points(tmp_path: Path) -> None:
    foreign_store(tmp_path / "f.zarr", (3, 4), **{"spatial:registration": "node"})
    ds = xr.open_dataset(tmp_path / "f.zarr", engine="zarr3")
    np.testing.assert_array_equal(ds.x.values, 300000.0 + 20.0 * np.arange(4))


def test_lazy_coordinates_select_as_materialised_ones(tmp_path: Path) -> None:
    foreign_store(tmp_path / "f.zarr", (300, 500))
    lazy = xr.open_dataset(tmp_path / "f.zarr", engine="zarr3")
    assert isinstance(lazy.xindexes["x"], CoordinateTransformIndex)
    materialised = lazy.assign_coords(x=lazy.x.values, y=lazy.y.values)
    selections = [
        {"x": slice(301000, 305000), "y": slice(5999000, 5996000)},
        {"x": 302010.0, "y": 5998990.0},
        {"x": [300010.0, 309990.0], "y": [5999990.0]},
    ]
    for sel in selections:
        xr.testing.assert_equal(
            lazy.sel(sel).band.load().reset_coords(drop=True),
            materialised.sel(sel).band.load().reset_coords(drop=True),
        )
        np.testing.assert_array_equal(lazy.sel(sel).x.values, materialised.sel(sel).x.values)
    near = {"x": 302013.0, "y": 5998987.0}
    xr.testing.assert_equal(
        lazy.sel(near, method="nearest").band.reset_coords(drop=True),
        materialised.sel(near, method="nearest").band.reset_coords(drop=True),
    )


def test_a_100000_by_100000_scene_opens_without_allocating_coordinates(tmp_path: Path) -> None:
    foreign_store(tmp_path / "big.zarr", (100_000, 100_000))
    tracemalloc.start()
    try:
        ds = xr.open_dataset(tmp_path / "big.zarr", engine="zarr3")
        window = ds.sel(x=slice(300000 + 20 * 5000, 300000 + 20 * 5010), y=slice(6000000 - 20 * 7000, None))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 400_000, f"opening allocated {peak} bytes; one coordinate alone is 800,000"
    assert window.sizes["x"] == 10 and window.sizes["y"] == 93_000
    assert ds.rio.crs == "EPSG:32632"


def test_multiscales_layout_written_and_levels_read_back(tmp_path: Path) -> None:
    tree = pyramid(tmp_path)
    tree.to_zarr3(tmp_path / "p.zarr", mode="w")
    root = json.loads((tmp_path / "p.zarr" / "zarr.json").read_text())["attributes"]
    levels = root["multiscales"]["layout"]
    assert [level["spatial:shape"] for level in levels] == [[40, 60], [20, 30]]
    assert levels[1]["spatial:transform"] == [20.0, 0.0, 500000.0, 0.0, -20.0, 5000000.0]
    assert (
        levels[1]["transform"] == {"scale": [2.0, 2.0], "translation": [0.0, 0.0]}
        and "transform" not in levels[0]
    )
    assert "d35379db-88df-4056-af3a-620245f8e347" in {c["uuid"] for c in root["zarr_conventions"]}
    back = xr.open_datatree(tmp_path / "p.zarr", engine="zarr3")
    assert sorted(back.children) == ["r10m", "r20m"]
    assert back["r20m"].to_dataset().rio.crs == CRS
    assert back["r20m"].to_dataset().rio.transform() == from_origin(500000.0, 5000000.0, 20.0, 20.0)
    assert back.attrs["multiscales"]["layout"] == levels


def test_multiscales_level_without_its_own_metadata_takes_the_layouts(tmp_path: Path) -> None:
    """A level's ``spatial:transform`` in its parent's layout and the parent's ``proj:code`` georeference it."""
    layout = [
        {"asset": str(i), "spatial:transform": [10.0 * 2**i, 0.0, 0.0, 0.0, -10.0 * 2**i, 800.0]}
        for i in range(2)
    ]
    root = zarr3_backend.create_group(
        str(tmp_path / "m.zarr"), attributes={"multiscales": {"layout": layout}, "proj:code": CRS}
    )
    for i in range(2):
        root.create_group(str(i)).create_array(
            "band", shape=(80 >> i, 40 >> i), dtype="uint8", dimension_names=["y", "x"]
        )
    tree = xr.open_datatree(tmp_path / "m.zarr", engine="zarr3")
    level = tree["1"].to_dataset()
    assert level.rio.crs == CRS and level.rio.transform() == from_origin(0.0, 800.0, 20.0, 20.0)
    np.testing.assert_array_equal(level.x.values, 10.0 + 20.0 * np.arange(20))
    assert isinstance(level.xindexes["x"], CoordinateTransformIndex)


def test_multiscales_layout_naming_a_missing_group_is_refused(tmp_path: Path) -> None:
    tree = pyramid(tmp_path)
    tree.attrs = {"multiscales": {"layout": [{"asset": "r10m"}, {"asset": "r40m"}]}}
    with pytest.raises(zarr3_backend.errors.WriteError, match="r40m"):
        tree.to_zarr3(tmp_path / "p.zarr", mode="w")
    assert not (tmp_path / "p.zarr").exists()


def test_a_rotated_grid_gets_rasterix_coordinates(tmp_path: Path) -> None:
    pytest.importorskip("rasterix")
    from affine import Affine

    rotated = Affine(10.0, 2.0, 500000.0, 1.0, -10.0, 5000000.0)
    foreign_store(tmp_path / "r.zarr", (30, 40), **{"spatial:transform": list(rotated)[:6]})
    ds = xr.open_dataset(tmp_path / "r.zarr", engine="zarr3")
    assert type(ds.xindexes["xc"]).__name__ == "RasterIndex" and ds.xc.dims == ("y", "x")
    assert (float(ds.xc[3, 5]), float(ds.yc[3, 5])) == rotated * (5.5, 3.5)
    assert ds.rio.transform() == rotated and ds.rio.crs == "EPSG:32632"


def test_a_geotransform_left_stale_by_isel_gives_way_to_the_coordinates(tmp_path: Path) -> None:
    window = scene(tmp_path).isel(x=slice(10, 50), y=slice(5, 25))  # rioxarray keeps the scene's GeoTransform
    window.to_zarr3(tmp_path / "w.zarr", mode="w")
    attrs = attributes(tmp_path / "w.zarr", "red")
    assert attrs["spatial:transform"] == list(window.rio.transform(recalc=True))[:6]
    assert attrs["spatial:transform"] == [10.0, 0.0, 500100.0, 0.0, -10.0, 4999950.0]
