"""Rectilinear grids against zarr-python >= 3.2 (``array.rectilinear_chunks`` on), both directions.

The oracle runs in its own Python 3.12 venv (``zarr_oracle.py``); without it these tests skip,
and the committed golden stores (``golden/zarr_python/rectilinear_*``) still check our reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from interop_cases import check_reads
from zarr_oracle import oracle_or_skip, run_oracle

import zarr3_backend

MONTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


@pytest.fixture(scope="session")
def oracle() -> Path:
    return oracle_or_skip()


CASES = {
    "rle": {"shape": [365, 4], "chunks": [MONTHS, 2], "shards": None, "dask": [MONTHS, [2, 2]]},
    "mixed": {
        "shape": [6, 9],
        "chunks": [[1, 1, 1, 3], [4, 5]],
        "shards": None,
        "dask": [[1, 1, 1, 3], [4, 5]],
    },
    "sharded": {"shape": [59, 6], "chunks": [1, 3], "shards": [[31, 28], 6], "dask": [[31, 28], [6]]},
}

WRITE = """
case = ARGS["case"]
g = zarr.open_group(ARGS["path"], mode="w")
a = g.create_array("v", shape=case["shape"], dtype="float32", chunks=case["chunks"], shards=case["shards"],
                   fill_value=-1.0, dimension_names=["time", "x"])
data = np.arange(np.prod(case["shape"]), dtype="float32").reshape(case["shape"])
part = tuple(slice(0, n - n // 3) for n in case["shape"])
a[part] = data[part]
print(json.dumps(None))
"""

READ = """
a = zarr.open_array(ARGS["path"], mode="r")
sel = a.oindex[ARGS["rows"], :]
print(json.dumps({"all": a[...].tolist(), "sel": sel.tolist(), "sizes": [list(s) for s in a.write_chunk_sizes]}))
"""


def _expected(shape: list[int]) -> np.ndarray:
    data = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    expected = np.full(shape, -1.0, dtype="float32")
    part = tuple(slice(0, n - n // 3) for n in shape)
    expected[part] = data[part]
    return expected


@pytest.mark.parametrize("name", CASES)
def test_zarr_python_writes_we_read(oracle: Path, tmp_path: Path, name: str) -> None:
    case = CASES[name]
    run_oracle(oracle, WRITE, path=str(tmp_path / "s.zarr"), case=case)
    array = zarr3_backend.open_array(str(tmp_path / "s.zarr"), "v")
    expected = _expected(case["shape"])
    check_reads(array, expected, f"zarr-python rectilinear {name}")
    ds = xr.open_dataset(tmp_path / "s.zarr", engine="zarr3", chunks={}, mask_and_scale=False)
    assert ds.v.chunks == tuple(map(tuple, case["dask"])) == array.chunk_sizes  # one task per chunk or shard
    np.testing.assert_array_equal(ds.v.values, expected)


@pytest.mark.parametrize(
    ("chunks", "shards"),
    [([MONTHS, 2], None), ([[2, 3, 1, 400], 4], None), ([1, 2], [MONTHS, 4])],
    ids=["months", "overshoot", "sharded"],
)
def test_we_write_zarr_python_reads(oracle: Path, tmp_path: Path, chunks: list, shards: list | None) -> None:
    data = np.random.default_rng(0).random((365, 4)).astype("float32")
    array = zarr3_backend.create_array(
        str(tmp_path / "a.zarr"),
        shape=data.shape,
        dtype="float32",
        chunks=chunks,
        shards=shards,
        fill_value=-1,
    )
    array[:300] = data[:300]
    expected = np.where(np.arange(365)[:, None] < 300, data, -1).astype("float32")
    rows = [364, 0, 31, 58, 59, 200, 200]
    got = run_oracle(oracle, READ, path=str(tmp_path / "a.zarr"), rows=rows)
    np.testing.assert_array_equal(np.asarray(got["all"], dtype="float32"), expected)
    np.testing.assert_array_equal(np.asarray(got["sel"], dtype="float32"), expected[rows])
    assert tuple(map(tuple, got["sizes"])) == array.chunk_sizes


def test_zarr_python_3_1_reads_what_to_zarr3_writes_unless_calendar_chunks_are_asked_for(
    tmp_path: Path,
) -> None:
    """The README's install reads calendar chunks; a colleague on zarr-python 3.1 reads only regular grids.

    ``to_zarr3`` writes a rectilinear grid only when an encoding asks (monthly dask chunks alone do not), so
    what it writes by default opens in zarr-python 3.1 (in-process, the 3.11 test oracle), while an asked-for
    grid fails there with the error the calendar-chunks page quotes.
    """
    zarr = pytest.importorskip("zarr")
    if tuple(map(int, zarr.__version__.split(".")[:2])) >= (3, 2):
        pytest.skip("zarr-python >= 3.2 reads rectilinear grids behind a flag")
    import warnings

    import pandas as pd
    from xarray.groupers import TimeResampler

    daily = xr.Dataset(
        {"v": (("time", "x"), np.arange(365 * 4.0).reshape(365, 4))},
        coords={"time": pd.date_range("2021-01-01", periods=365)},
    )
    monthly = daily.chunk(time=TimeResampler("ME"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rechunk-to-the-shard-grid warning
        monthly.to_zarr3(tmp_path / "default.zarr")
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "default.zarr", path="v")[:], daily.v.values)
    monthly.to_zarr3(tmp_path / "months.zarr", encoding={"v": {"chunks": "dask"}})
    with pytest.raises(Exception, match="(?i)unknown chunk grid.*rectilinear"):
        zarr.open_array(tmp_path / "months.zarr", path="v")
