"""The GeoZarr metadata ``to_zarr3`` writes passes geozarr-toolkit's validators, and stores the toolkit describes read back.

geozarr-toolkit needs Python >= 3.12: these tests run in `.ci/newer-pythons`.
The attributes are read with zarr-python, a reader that is not ours.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3)

toolkit = pytest.importorskip("geozarr_toolkit")
pytest.importorskip("rioxarray")
zarr = pytest.importorskip("zarr")
from geotiff import BANDS, pyramid, scene  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"
)


def test_written_metadata_passes_the_toolkit_validators(tmp_path: Path) -> None:
    ds = scene(tmp_path)
    ds.to_zarr3(
        tmp_path / "s.zarr", mode="w", encoding={b: {"chunks": (20, 30), "shards": (40, 60)} for b in BANDS}
    )
    group = zarr.open_group(tmp_path / "s.zarr", mode="r")
    for band in BANDS:
        attrs = dict(group[band].attrs)
        assert sorted(toolkit.detect_conventions(attrs)) == ["proj", "spatial"]
        assert toolkit.validate_attrs(attrs) == {"spatial": [], "proj": [], "zarr_conventions": []}
        expected = toolkit.from_rioxarray(ds[band])  # the toolkit's own reading of the rioxarray source
        for key in ("spatial:dimensions", "spatial:transform", "spatial:shape", "proj:code"):
            assert attrs[key] == list(expected[key]) if isinstance(expected[key], tuple) else expected[key], (
                key
            )


def test_a_store_the_toolkit_describes_gives_back_crs_and_transform(tmp_path: Path) -> None:
    transform = [30.0, 0.0, 399960.0, 0.0, -30.0, 4500000.0]
    attrs = toolkit.create_geozarr_attrs(["y", "x"], crs="EPSG:32618", transform=transform, shape=[20, 25])
    group = zarr.open_group(tmp_path / "t.zarr", mode="w", zarr_format=3)
    array = group.create_array(
        "band", shape=(20, 25), dtype="uint16", dimension_names=("y", "x"), attributes=attrs
    )
    array[:] = np.arange(500, dtype="uint16").reshape(20, 25)
    ds = xr.open_dataset(tmp_path / "t.zarr", engine="zarr3")
    assert ds.rio.crs == "EPSG:32618" and list(ds.rio.transform())[:6] == transform
    np.testing.assert_array_equal(ds.x.values, 399960.0 + 30.0 * (np.arange(25) + 0.5))
    assert int(ds.band.sel(x=399975.0, y=4499985.0)) == 0


def test_multiscales_layout_passes_the_toolkit_validators(tmp_path: Path) -> None:
    pyramid(tmp_path).to_zarr3(tmp_path / "p.zarr", mode="w")
    group = zarr.open_group(tmp_path / "p.zarr", mode="r")
    assert toolkit.validate_group(group) == {"multiscales": [], "zarr_conventions": []}
    from geozarr_toolkit.helpers.validation import validate_multiscales_structure

    assert validate_multiscales_structure(group) == (True, [])
    for level in ("r10m", "r20m"):
        assert toolkit.validate_attrs(dict(group[level]["red"].attrs)) == {
            "spatial": [],
            "proj": [],
            "zarr_conventions": [],
        }
