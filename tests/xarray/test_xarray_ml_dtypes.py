"""xarray and the ML number formats: a bfloat16 (float8, int4 ...) variable opens as that dtype and writes back.

engine="zarr" cannot be the oracle here (zarr-python has no ML formats); tensorstore reads
what to_zarr3 writes instead, bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr3_backend

xr = pytest.importorskip("xarray")
ml_dtypes = pytest.importorskip("ml_dtypes")

NAMES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "float4_e2m1fn"]


def _values(name: str) -> np.ndarray:
    dtype = np.dtype(getattr(ml_dtypes, name))
    values = np.array([[1.5, -2.0, 0.5], [3.0, -0.0, 1.0]]).astype(dtype)
    if name != "int4" and name != "float4_e2m1fn":
        values[0, 2] = np.nan
    return values


def _bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")


@pytest.mark.parametrize("name", NAMES)
def test_a_variable_round_trips_as_its_dtype(name: str, tmp_path: Path) -> None:
    values = _values(name)
    ds = xr.Dataset({"w": (("y", "x"), values)}, coords={"x": [10, 20, 30]})
    ds.to_zarr3(str(tmp_path / "a.zarr"))
    back = xr.open_dataset(str(tmp_path / "a.zarr"), engine="zarr3")
    assert back.w.dtype == values.dtype and np.array_equal(_bits(back.w.values), _bits(values))
    assert zarr3_backend.open_array(str(tmp_path / "a.zarr/w")).metadata.to_json()["data_type"] == name
    lazy = xr.open_dataset(str(tmp_path / "a.zarr"), engine="zarr3", chunks={})
    assert lazy.w.dtype == values.dtype and np.array_equal(_bits(lazy.w.compute().values), _bits(values))
    back.to_zarr3(str(tmp_path / "b.zarr"))
    again = xr.open_dataset(str(tmp_path / "b.zarr"), engine="zarr3")
    assert again.w.dtype == values.dtype and np.array_equal(_bits(again.w.values), _bits(values))


def test_tensorstore_reads_the_bfloat16_variable_xarray_wrote(tmp_path: Path) -> None:
    ts = pytest.importorskip("tensorstore")
    values = _values("bfloat16")
    xr.Dataset({"w": (("y", "x"), values)}).to_zarr3(str(tmp_path / "a.zarr"))
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a.zarr/w")}}
    theirs = ts.open(spec, open=True).result()
    assert np.array_equal(_bits(theirs.read().result()), _bits(values))
    assert np.isnan(theirs.fill_value)  # xarray's default fill for floats, bfloat16 included


def test_a_bfloat16_region_write_keeps_the_other_values(tmp_path: Path) -> None:
    values = _values("bfloat16")
    xr.Dataset({"w": (("y", "x"), values)}).to_zarr3(str(tmp_path / "a.zarr"))
    update = xr.Dataset({"w": (("y", "x"), np.full((1, 3), 7.0, values.dtype))})
    update.to_zarr3(str(tmp_path / "a.zarr"), region={"y": slice(1, 2), "x": slice(0, 3)})
    back = xr.open_dataset(str(tmp_path / "a.zarr"), engine="zarr3").w.values
    assert np.array_equal(_bits(back[0]), _bits(values[0])) and back[1].tolist() == [7.0, 7.0, 7.0]


def test_a_fill_value_encoding_on_bfloat16_is_refused_naming_the_variable(tmp_path: Path) -> None:
    """xarray's CF encoder cannot mask ml_dtypes' types (it fails with a bare TypeError); we name the variable."""
    ds = xr.Dataset({"w": ("x", np.array([1.5, np.nan], ml_dtypes.bfloat16))})
    with pytest.raises(zarr3_backend.errors.WriteTypeError, match="variable 'w' is bfloat16.*_FillValue"):
        ds.to_zarr3(str(tmp_path / "a.zarr"), encoding={"w": {"_FillValue": -1.0}})
    assert not (tmp_path / "a.zarr" / "w").exists()
