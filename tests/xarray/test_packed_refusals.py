"""Packed values never wrap, and a refusal changes nothing, however the values are computed (issue 60, item 3).

A refused ``mode="w"`` used to delete the group first; a region write
computed its dask values once for the check and again for the write, so a
source that changed in between stored wrapped values; complex values were
not checked and bools failed with numpy's error.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)
from zarr3_backend import WriteError

PACKED = {
    "t2m": {"dtype": "int16", "scale_factor": 0.1, "_FillValue": -32768, "chunks": (2,), "shards": (2,)}
}


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "packed.zarr"
    xr.Dataset({"t2m": ("time", [1.0, 2.0, 3.0, 4.0])}).to_zarr3(path, encoding=PACKED)
    return path


def back(path: Path) -> np.ndarray:
    return np.asarray(xr.open_dataset(path, engine="zarr3").t2m.values)


class Counted:
    """A dask source counting how often each block is computed; ``values`` gives the n-th computation's block."""

    def __init__(self, values: object) -> None:
        self.values = values
        self.calls = itertools.count()
        self.lock = threading.Lock()
        self.n = 0

    def block(self, block: np.ndarray) -> np.ndarray:
        if not block.size:  # dask's and xarray's probes for the output's type
            return np.zeros(block.shape)
        with self.lock:
            self.n += 1
            n = next(self.calls)
        return np.asarray(self.values(n, block) if callable(self.values) else self.values, dtype="float64")


def lazy(source: Counted, n: int = 4) -> xr.Dataset:
    data = da.zeros(n, chunks=2).map_blocks(source.block, dtype="float64")
    return xr.Dataset({"t2m": ("time", data)})


def test_a_refused_mode_w_leaves_the_group_it_would_replace(stored: Path) -> None:
    """One block packs to 50000 (5000.0 x 10), beyond int16: the old group stays, readable."""
    before = snapshot(stored)
    hot = xr.Dataset({"t2m": ("time", [1.0, 2.0, 3.0, 5000.0])}).chunk(time=2)
    with pytest.raises(WriteError, match=r"'t2m'.*int16.*its value 5000.0"):
        hot.to_zarr3(stored, mode="w", encoding=PACKED)
    assert snapshot(stored) == before
    np.testing.assert_allclose(back(stored), [1.0, 2.0, 3.0, 4.0])


def test_a_packed_region_write_computes_its_dask_values_once(stored: Path) -> None:
    source = Counted(lambda n, block: np.full(block.shape, 7.0))
    lazy(source).to_zarr3(stored, region={"time": slice(0, 4)})
    assert source.n == 2  # two blocks, each computed once (it was twice: once for the check)
    np.testing.assert_allclose(back(stored), [7.0] * 4)


@pytest.mark.parametrize("mode", ["r+", "a"])
def test_a_source_changing_between_computations_never_stores_a_wrapped_value(stored: Path, mode: str) -> None:
    """The first computation fits, a second would not: 4000.0 read back as -2553.6."""
    source = Counted(lambda n, block: np.full(block.shape, 4.0 if n < 2 else 4000.0))
    region = {"time": slice(0, 4)} if mode == "r+" else None
    lazy(source).to_zarr3(stored, mode=mode, region=region)  # type: ignore[arg-type]
    np.testing.assert_allclose(back(stored), [4.0] * 4)


def test_a_failing_check_in_any_block_writes_no_shard_of_the_write(stored: Path) -> None:
    """The blocks that fit, and an in-memory variable written alongside, wait until every block is checked."""
    xr.Dataset({"u": ("time", [0.0] * 4)}).to_zarr3(stored, mode="a")
    before = snapshot(stored)
    source = Counted(lambda n, block: np.full(block.shape, 5000.0 if n == 1 else 1.0))
    ds = lazy(source).assign(u=("time", np.ones(4)))
    with pytest.raises(WriteError, match="its value 5000.0"):
        ds.to_zarr3(stored, region={"time": slice(0, 4)})
    assert snapshot(stored) == before


@pytest.mark.parametrize("chunked", [False, True])
def test_complex_values_into_an_integer_encoding_are_refused(stored: Path, chunked: bool) -> None:
    """1e6+0j into int16 x 0.1 read back as -2700.8."""
    before = snapshot(stored)
    ds = xr.Dataset({"t2m": ("time", np.array([1e6 + 0j, 1.0, 2.0, 3.0]))})
    ds = ds.chunk(time=2) if chunked else ds
    with pytest.raises(WriteError, match=r"'t2m' holds complex values.*int16.*Nothing was written"):
        ds.to_zarr3(stored, region={"time": slice(0, 4)})
    with pytest.raises(WriteError, match="complex"):
        ds.to_zarr3(stored, mode="w", encoding=PACKED)
    assert snapshot(stored) == before


@pytest.mark.parametrize("chunked", [False, True])
def test_bools_into_a_packed_integer_are_a_write_error(stored: Path, chunked: bool) -> None:
    before = snapshot(stored)
    ds = xr.Dataset({"t2m": ("time", np.array([True, False, True, True]))})
    ds = ds.chunk(time=2) if chunked else ds
    with pytest.raises(WriteError, match=r"'t2m' holds bool values.*astype"):
        ds.to_zarr3(stored, region={"time": slice(0, 4)})
    assert snapshot(stored) == before
    plain = tmp = stored.parent / "plain.zarr"  # bools into an unpacked integer are cast as xarray does
    xr.Dataset({"b": ("x", [1, 0])}).to_zarr3(plain, encoding={"b": {"dtype": "int8"}})
    xr.Dataset({"b": ("x", [True, True])}).to_zarr3(tmp, region={"x": slice(0, 2)})
    assert xr.open_dataset(plain, engine="zarr3").b.values.tolist() == [1, 1]
