"""Zarr v2 reading benchmark: engine="zarr3" (ours) vs engine="zarr" (zarr-python 3) on a v2 store, in one run.

Workloads, on the climate-like ``t2m`` (730, 361, 720) float32 of ``bench_xarray_open`` written by
xarray ``to_zarr(zarr_format=2)`` with zarr-python's defaults (its chunk choice and compressor), cached
under /tmp:
- full load with ``chunks={}``: ``open_dataset(..., chunks={}).t2m.load()``;
- point series ``ds.t2m.isel(lat=180, lon=360).load()`` (fresh open each time).

``python benchmarks/bench_v2.py --quick`` runs a smaller array with fewer repeats.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr

sys.path[:0] = [
    str(Path(__file__).resolve().parent),
    str(Path(__file__).resolve().parents[1]),
]  # a checkout works uninstalled

from common import (  # noqa: E402
    CLIMATE_FIELD_VERSION,
    Case,
    ResultTable,
    climate_field,
    print_machine_info,
    time_interleaved,
    write_results,
)
from floor import FULL_SHAPE, QUICK_SHAPE  # noqa: E402

CACHE = Path("/tmp/zarr3_backend_bench")
OURS, ZARR = "zarr3 (ours)", "zarr (zarr-python)"
LIBRARIES = ["zarr3_backend", "xarray", "zarr", "dask", "numcodecs", "numpy"]
warnings.filterwarnings("ignore")


def v2_store(shape: tuple[int, int, int]) -> Path:
    """The t2m store written as Zarr v2 by xarray with zarr-python's defaults, cached while the data version matches."""
    path = CACHE / f"xarray_t2m_v2format_v{CLIMATE_FIELD_VERSION}_{'x'.join(map(str, shape))}.zarr"
    if (path / "done").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    nt, ny, nx = shape
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), climate_field(shape), {"units": "K"})},
        coords={
            "time": np.arange(nt),
            "lat": np.linspace(90, -90, ny),
            "lon": np.linspace(0, 360, nx, endpoint=False),
        },
    )
    ds.to_zarr(path, zarr_format=2)
    (path / "done").touch()
    return path


def check_equal(expected: np.ndarray) -> Callable[[object], None]:
    def check(result: object) -> None:
        np.testing.assert_array_equal(np.asarray(result), expected)

    return check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller array, fewer repeats")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args()
    shape, repeats = (QUICK_SHAPE, 1) if args.quick else (FULL_SHAPE, 3)
    print_machine_info(LIBRARIES)
    CACHE.mkdir(parents=True, exist_ok=True)
    path = v2_store(shape)
    zarray = json.loads((path / "t2m" / ".zarray").read_text())
    print(f"v2 store: chunks {zarray['chunks']}, compressor {zarray['compressor']}")
    data = climate_field(shape)
    table = ResultTable(OURS, [ZARR])
    full = {
        OURS: Case(
            lambda: xr.open_dataset(path, engine="zarr3", chunks={}).t2m.load().values,
            check=check_equal(data),
        ),
        ZARR: Case(
            lambda: xr.open_dataset(path, engine="zarr", chunks={}).t2m.load().values, check=check_equal(data)
        ),
    }
    for name, timing in time_interleaved(full, repeats).items():
        table.add("v2 full load, chunks={}", name, timing, data.nbytes)
    series = data[:, 180, 360]
    point = {
        OURS: Case(
            lambda: xr.open_dataset(path, engine="zarr3").t2m.isel(lat=180, lon=360).load().values,
            check=check_equal(series),
        ),
        ZARR: Case(
            lambda: xr.open_dataset(path, engine="zarr").t2m.isel(lat=180, lon=360).load().values,
            check=check_equal(series),
        ),
    }
    for name, timing in time_interleaved(point, repeats * 3).items():
        table.add("v2 point series (fresh open)", name, timing, series.nbytes)
    table.print()
    if args.json is not None:
        write_results(args.json, "benchmarks/bench_v2.py", LIBRARIES, {"v2": table.to_json()}, sys.argv[1:])


if __name__ == "__main__":
    main()
