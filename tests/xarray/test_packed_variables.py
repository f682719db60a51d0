"""Climate variables packed with ``scale_offset`` + ``cast_value`` (what replaces ``numcodecs.fixedscaleoffset``):
written by ``to_zarr3`` with ``encoding["filters"]``, read back through xarray, eagerly and with dask."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)

NAN_AS_MAX = {"encode": [["NaN", 65535]], "decode": [[65535, "NaN"]]}
PACKING = [
    {"name": "scale_offset", "configuration": {"offset": 200, "scale": 100}},
    {"name": "cast_value", "configuration": {"data_type": "uint16", "scalar_map": NAN_AS_MAX}},
]


@pytest.mark.parametrize("chunks", [None, {}])
def test_packed_temperature_reads_within_half_a_step(tmp_path: Path, chunks: dict | None) -> None:
    rng = np.random.default_rng(0)
    tas = rng.uniform(200, 320, (6, 8))
    tas[2, 3] = np.nan
    ds = xr.Dataset({"tas": (("y", "x"), tas)})
    ds.to_zarr3(tmp_path / "d.zarr", encoding={"tas": {"filters": PACKING, "chunks": (3, 4)}})
    stored = json.loads((tmp_path / "d.zarr" / "tas" / "zarr.json").read_text())
    assert [c["name"] for c in stored["codecs"][:2]] == ["scale_offset", "cast_value"]
    back = xr.open_dataset(tmp_path / "d.zarr", engine="zarr3", chunks=chunks).tas.values
    assert back.dtype == np.float64
    assert np.array_equal(np.isnan(back), np.isnan(tas))
    assert np.nanmax(np.abs(back - tas)) <= 0.005 + 1e-12  # nearest-even to 1/100 K


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_values_the_packing_cannot_hold_refuse_the_write(tmp_path: Path) -> None:
    """900 K is beyond 200 + 65535 / 100: a new store is not made, an append leaves the store as it was."""
    hot = xr.Dataset({"tas": (("x",), np.array([250.0, 900.0]))})
    with pytest.raises(ValueError, match="out of the range of uint16"):
        hot.to_zarr3(tmp_path / "new.zarr", encoding={"tas": {"filters": PACKING}})
    xr.Dataset({"tas": (("x",), np.array([250.0, 260.0]))}).to_zarr3(
        tmp_path / "d.zarr", encoding={"tas": {"filters": PACKING}}
    )
    before = _files(tmp_path / "d.zarr")
    with pytest.raises(ValueError, match="out of the range of uint16"):
        hot.to_zarr3(tmp_path / "d.zarr", append_dim="x")
    assert _files(tmp_path / "d.zarr") == before


def test_a_nan_fill_without_a_scalar_map_is_refused_before_writing(tmp_path: Path) -> None:
    plain_cast = [PACKING[0], {"name": "cast_value", "configuration": {"data_type": "uint16"}}]
    with pytest.raises(ValueError, match="casting the fill value nan"):
        xr.Dataset({"tas": (("x",), np.array([250.0]))}).to_zarr3(
            tmp_path / "d.zarr", encoding={"tas": {"filters": plain_cast}}
        )
    assert not (tmp_path / "d.zarr" / "tas").exists()
