"""Dataset write benchmark: ``ds.to_zarr3`` vs ``ds.to_zarr(zarr_format=3)`` (xarray + zarr-python 3).

The climate-like dataset (``t2m`` float32 (730, 361, 720) ~ 760 MB; ``--quick``:
(146, 361, 720)) is dask-backed with one dask chunk per shard, shards
(73, 364, 720), inner chunks (73, 91, 180), blosc(zstd, clevel 3, shuffle).
Both writers run, interleaved, on two schedulers:

* ``threaded``: dask's threaded scheduler over the in-memory numpy data;
* ``cluster``: ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``
  with the dataset persisted in worker memory beforehand (so only the write
  is timed). Workers run with distributed's default
  ``MALLOC_TRIM_THRESHOLD_=65536`` (see PERFORMANCE.md), which makes
  allocation-heavy writers pay in system time.

Printed: median seconds, MB/s of logical data, ratios, and the peak RSS
growth of the process doing the work (threaded: this process; cluster: the
largest of the two workers). Every output is verified after the warm-up:
read back by its own library and by the other one, compared with the data.

Run ``python benchmarks/bench_write.py --quick`` for a smoke test.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # a checkout works without installing

from common import Case, ResultTable, climate_field, print_machine_info, reset_peak_rss, rss_bytes, time_interleaved  # noqa: E402

FULL_SHAPE = (730, 361, 720)
QUICK_SHAPE = (146, 361, 720)
SHARDS = (73, 364, 720)
CHUNKS = (73, 91, 180)
BLOSC_JSON = {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}
OURS, ZARR = "to_zarr3", "xarray+zarr-python"
LIBRARIES = ["zarr3_backend", "xarray", "zarr", "dask", "distributed", "numcodecs", "numpy"]


def make_dataset(shape: tuple[int, ...]):
    import xarray as xr

    data = climate_field(shape)
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), data, {"units": "K"})},
        coords={"lat": np.linspace(90, -90, shape[1]), "lon": np.linspace(0, 360, shape[2], endpoint=False)},
    )
    return ds.chunk({"time": SHARDS[0], "lat": -1, "lon": -1}), data


def writers(ds, out: Path) -> dict[str, tuple[Path, object]]:
    import zarr.codecs

    import zarr3_backend.xarray_backend.writer  # noqa: F401  (registers .to_zarr3)

    ours_enc = {"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [BLOSC_JSON]}}
    zarr_enc = {"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [
        zarr.codecs.BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=4)]}}
    return {
        OURS: (out / "ours.zarr", lambda p: ds.to_zarr3(p, mode="w", encoding=ours_enc)),
        ZARR: (out / "zarr.zarr", lambda p: ds.to_zarr(p, mode="w", zarr_format=3, encoding=zarr_enc, consolidated=True)),
    }


def verify(path: Path, expected: np.ndarray, failures: list[str], label: str) -> None:
    import zarr

    import zarr3_backend

    for reader, read in (
        ("zarr3_backend", lambda: zarr3_backend.open_array(path, "t2m")[...]),
        ("zarr-python", lambda: zarr.open_array(path / "t2m", mode="r")[...]),
    ):
        if not np.array_equal(read(), expected):
            failures.append(f"{label}: {reader} reads different data from {path}")


def cases(ds, data: np.ndarray, out: Path, failures: list[str], label: str) -> dict[str, Case]:
    built = {}
    for name, (path, write) in writers(ds, out).items():
        built[name] = Case(
            run=lambda path=path, write=write: write(path),
            setup=lambda path=path: shutil.rmtree(path, ignore_errors=True),
            check=lambda _, path=path, name=name: verify(path, data, failures, f"{label}/{name}"),
        )
    return built


def worker_peak(client, case: Case) -> Case:
    """``case`` measuring the largest peak RSS growth of the cluster's workers."""
    before: dict[str, int] = {}
    peaks: list[int] = []

    def setup() -> None:
        case.setup()
        client.run(reset_peak_rss)
        before.update(client.run(rss_bytes))

    def run() -> object:
        result = case.run()
        peaks.append(max(v - before[k] for k, v in client.run(rss_bytes, "VmHWM").items()))
        return result

    return Case(run=run, setup=setup, check=case.check), peaks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"shape {QUICK_SHAPE} instead of {FULL_SHAPE}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="output directory (default: a temporary one)")
    parser.add_argument("--only", choices=["threaded", "cluster"], action="append")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*Consolidated metadata.*")
    warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
    print_machine_info(LIBRARIES)
    shape = QUICK_SHAPE if args.quick else FULL_SHAPE
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_write_"))
    out.mkdir(parents=True, exist_ok=True)
    ds, data = make_dataset(shape)
    table = ResultTable(ours=OURS, baselines=[ZARR], floor="none")
    failures: list[str] = []
    only = args.only or ["threaded", "cluster"]
    if "threaded" in only:
        import dask

        with dask.config.set(scheduler="threads"):
            timings = time_interleaved(cases(ds, data, out, failures, "threaded"), repeats=args.repeats)
        for name, timing in timings.items():
            table.add("write, threaded (2 threads)", name, timing, data.nbytes)
    if "cluster" in only:
        run_cluster(ds, data, out, failures, table, args.repeats)
    table.print()
    shutil.rmtree(out, ignore_errors=True)
    for failure in failures:
        print("MISMATCH:", failure)
    return 1 if failures else 0


def run_cluster(ds, data, out, failures, table, repeats) -> None:
    from distributed import Client, LocalCluster

    from common import Timing

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        persisted = ds.persist()
        from distributed import wait

        wait(persisted)
        measured = {}
        peaks = {}
        for name, case in cases(persisted, data, out, failures, "cluster").items():
            measured[name], peaks[name] = worker_peak(client, case)
        timings = time_interleaved(measured, repeats=repeats)
        for name, timing in timings.items():
            table.add("write, LocalCluster 2 procs", name, Timing(timing.seconds, max(peaks[name])), data.nbytes)


if __name__ == "__main__":
    sys.exit(main())
