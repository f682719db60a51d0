"""Scale benchmark: a point series over 10^3 to 10^6 shards, ours vs tensorstore and engine="zarr", in one run.

The store is shaped like ARCO-ERA5 scaled down in space: ``v`` float32 ``(time=N, 32, 64)``, one
shard ``(1, 32, 64)`` per step with 4 inner chunks ``(1, 16, 32)``, zstd, crc32c index, written by
zarr-python. Only every ``N / present``-th shard is written (the rest are missing: fill), so 10^6
shards cost a few MB of disk. Stores are cached under /tmp.

Workloads, per N:
- open: ``open_dataset(chunks={})`` (ours, engine="zarr") and tensorstore's ``open``;
- the point series ``ds.v.isel(lat=11, lon=37).values`` (a fresh open each time) with ``chunks=None``,
  ``"auto"`` and ``{}``, threaded and on a ``LocalCluster(n_workers=2, threads_per_worker=1)``,
  next to tensorstore's ``[:, 11, 37].read()`` on the same store;
- the same series through the core APIs, a fresh open each time: ``zarr3_backend.open_array(...)[:, 11, 37]``
  against tensorstore and ``zarr.open_array(...)[:, 11, 37]``;
- at the largest N, the ``chunks={}`` graph: build time, tasks and traced memory.
It prints µs per shard and their growth from the smallest N, peak RSS growth and the load average;
rows of ``benchmarks/scale_writes_and_tools.py`` (writes, info, validate) are added when present.

``python benchmarks/bench_scale.py --quick`` (10^3 and 10^4 shards, no cluster) for CI; ``--quick --shards 10000``
for the 10^4 rows alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

sys.path[:0] = [
    str(Path(__file__).resolve().parent),
    str(Path(__file__).resolve().parents[1]),
]  # a checkout works uninstalled

from common import Case, ResultTable, Timing, print_machine_info, time_interleaved, write_results  # noqa: E402

CACHE = Path("/tmp/zarr3_backend_bench/scale")
OURS, TS, ZARR = "zarr3 (ours)", "tensorstore", "zarr (zarr-python)"
ZARR_CORE = "zarr-python core"
THREADED = "ours, threaded"
LIBRARIES = ["zarr3_backend", "xarray", "zarr", "tensorstore", "dask", "distributed", "numpy"]
LAT, LON = 11, 37
#: (declared shards, present shards) per run mode.
QUICK_SIZES = ((1_000, 100), (10_000, 1_000))
FULL_SIZES = ((1_000, 100), (10_000, 1_000), (1_000_000, 1_000))
#: Above this many shards engine="zarr" and the task-per-shard baselines are left out (an hour at 10^6).
ZARR_UP_TO = 10_000
warnings.filterwarnings("ignore")


def scale_store(shards: int, present: int) -> Path:
    """The store of ``shards`` declared steps with ``present`` of them written by zarr-python (cached)."""
    path = CACHE / f"v_{shards}_{present}.zarr"
    if (path / "done").exists():
        return path
    import zarr
    from zarr.codecs import ZstdCodec

    shutil.rmtree(path, ignore_errors=True)
    group = zarr.open_group(path, mode="w", zarr_format=3)
    v = group.create_array(
        "v", shape=(shards, 32, 64), shards=(1, 32, 64), chunks=(1, 16, 32), dtype="float32",
        compressors=ZstdCodec(level=1), fill_value=float("nan"), dimension_names=("time", "lat", "lon"),
    )  # fmt: skip
    for name, size in (("time", shards), ("lat", 32), ("lon", 64)):
        coord = group.create_array(
            name, shape=(size,), chunks=(min(size, 100_000),), dtype="int64", dimension_names=(name,)
        )
        coord[:] = np.arange(size)
    rng = np.random.default_rng(0)
    for step in range(0, shards, shards // present):
        v[step] = rng.standard_normal((32, 64)).astype("float32")
    zarr.consolidate_metadata(path)
    (path / "done").touch()
    return path


def _open_ts(path: Path) -> Any:
    import tensorstore as ts

    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / "v")}}).result()


def _core_series(path: Path) -> Any:
    import zarr3_backend

    return zarr3_backend.open_array(str(path / "v"))[:, LAT, LON]


def _zarr_series(path: Path) -> Any:
    import zarr

    return zarr.open_array(str(path / "v"), mode="r")[:, LAT, LON]


def _series(path: Path, engine: str, chunks: Any) -> np.ndarray:
    with xr.open_dataset(path, engine=engine, chunks=chunks) as ds:
        return ds.v.isel(lat=LAT, lon=LON).values


def _checker(expected: np.ndarray) -> Any:
    def check(got: object) -> None:
        np.testing.assert_array_equal(np.asarray(got), expected)

    return check


def measure(path: Path, shards: int, table: ResultTable, repeats: int, cluster: Any) -> None:
    """Every workload on one store, into ``table`` (rows named with the number of shards)."""
    expected = _open_ts(path)[:, LAT, LON].read().result()
    check = _checker(expected)
    small = shards <= ZARR_UP_TO
    warmup = 1 if small else 0  # a minute or more per call at 10^6 shards: measured once, cold
    opens = {
        OURS: Case(lambda: xr.open_dataset(path, engine="zarr3", chunks={})),
        TS: Case(lambda: _open_ts(path)),
    }
    if small:
        opens[ZARR] = Case(lambda: xr.open_dataset(path, engine="zarr", chunks={}))
    _add(table, f"open, {shards:,} shards", time_interleaved(opens, repeats, warmup), shards)
    ts_case = Case(lambda: _open_ts(path)[:, LAT, LON].read().result(), check=check)
    core = {OURS: Case(lambda: _core_series(path), check=check), TS: ts_case}
    if small:
        core[ZARR_CORE] = Case(lambda: _zarr_series(path), check=check)
    _add(table, f"series core API, {shards:,} shards", time_interleaved(core, repeats, warmup), shards)
    for label, chunks in (("None", None), ("'auto'", "auto"), ("{}", {})):
        if not small and chunks == "auto":
            continue  # the targets at 10^6 are chunks=None's; {} shows the grouped graph at work
        cases = {OURS: Case(lambda c=chunks: _series(path, "zarr3", c), check=check), TS: ts_case}
        if small and chunks is None:
            cases[ZARR] = Case(lambda: _series(path, "zarr", None), check=check)
        timings = time_interleaved(cases, repeats, warmup)
        _add(table, f"series chunks={label}, {shards:,} shards", timings, shards)
    if cluster is not None:
        cases = {
            OURS: Case(lambda: _series(path, "zarr3", {}), check=check),
            THREADED: Case(lambda: _on_threads(lambda: _series(path, "zarr3", {})), check=check),
        }
        from distributed import Client

        with Client(cluster):
            timings = time_interleaved(cases, repeats)
        _add(table, f"series chunks={{}} LocalCluster, {shards:,} shards", timings, shards)


def _on_threads(run: Any) -> Any:
    import dask

    with dask.config.set(scheduler="threads"):
        return run()


def _add(table: ResultTable, workload: str, timings: dict[str, Timing], shards: int) -> None:
    for impl, timing in timings.items():
        table.add(workload, impl, timing, 4 * shards)


def graph_cost(path: Path, shards: int) -> str:
    """Build time, task count and traced memory of the ``chunks={}`` point-series graph."""
    tracemalloc.start()
    start = time.perf_counter()
    ds = xr.open_dataset(path, engine="zarr3", chunks={})
    series = ds.v.isel(lat=LAT, lon=LON).data
    graph = series.__dask_graph__()
    tasks = len(graph)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (
        f"chunks={{}} graph at {shards:,} shards: {tasks} tasks, built in {elapsed:.2f} s, "
        f"traced peak {peak / 1e6:.1f} MB ({ds.v.data.numblocks[0]} dask chunks along time)"
    )


def print_per_shard(table: ResultTable, sizes: list[int]) -> None:
    """µs per shard of every series row and its growth from the smallest number of shards."""
    print("\nµs per shard (median; growth = µs per shard / that at the smallest N)")
    base: dict[tuple[str, str], float] = {}
    for workload, timings in table.rows.items():
        kind, _, count = workload.rpartition(", ")
        shards = int(count.split()[0].replace(",", ""))
        for impl, timing in timings.items():
            per = timing.median / shards * 1e6
            base.setdefault((kind, impl), per)
            ratio = timing.median / timings[TS].median if TS in timings else float("nan")
            print(
                f"  {workload:<46}{impl:<22}{per:>9.1f} µs  growth {per / base[(kind, impl)]:>5.2f}"
                f"  vs tensorstore {ratio:>5.2f}  peak dRSS {timing.peak_rss_bytes / 1e6:>7.0f} MB"
            )


def print_targets(table: ResultTable, sizes: list[int]) -> None:
    """Issue 61's targets, from this run's medians (wall and CPU)."""
    print("\ntargets (medians of this run, ours / tensorstore: wall, CPU)")
    rows = (("core API", 1.5), ("chunks=None", 1.5), ("chunks='auto'", 2.0), ("chunks={}", 3.0))
    for label, limit in rows:
        for shards in sizes:
            row = table.rows.get(f"series {label}, {shards:,} shards")
            if row and shards >= 10_000:
                wall = row[OURS].median / row[TS].median
                cpu = (row[OURS].cpu_median or float("nan")) / (row[TS].cpu_median or float("nan"))
                print(f"  {label:<14} {shards:>9,} shards: {wall:.2f}, CPU {cpu:.2f} (target <= {limit})")
    for shards in sizes:
        row = table.rows.get(f"series chunks={{}} LocalCluster, {shards:,} shards")
        if row:
            print(
                f"  LocalCluster / threaded {shards:,} shards: {row[OURS].median / row[THREADED].median:.2f} (<= 2.0)"
            )


def print_other_rows(quick: bool) -> list[dict[str, Any]]:
    """Writes, info and validate from ``scale_writes_and_tools`` (when that module is present)."""
    try:  # written by another change; the benchmark runs without it
        from scale_writes_and_tools import metadata_rows, write_rows
    except ImportError:
        return []
    rows = [*write_rows(quick), *metadata_rows(quick)]
    print("\nwrites and metadata tools")
    for row in rows:
        extras = {
            k: v for k, v in row.items() if k not in ("workload", "impl", "shards", "seconds", "us_per_shard")
        }
        print(
            f"  {row['workload']:<34}{row['impl']:<22}{row['shards']:>9,} shards {row['seconds']:>9.3f} s "
            f"{row['us_per_shard']:>9.1f} µs/shard  {extras or ''}"
        )
    return rows


def rows_table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``scale_writes_and_tools`` rows as a results table (ours = zarr3_backend's rows)."""
    impls = list(dict.fromkeys(row["impl"] for row in rows))
    ours = next((i for i in impls if "zarr3" in i or "ours" in i), impls[0])
    workloads: dict[str, dict[str, Any]] = {}
    for row in rows:
        workloads.setdefault(f"{row['workload']}, {row['shards']:,} shards", {})[row["impl"]] = row["seconds"]
    out = []
    for name, cells in workloads.items():
        mine = cells.get(ours)
        results = {
            impl: {
                "median_s": s,
                "ours_over_this": mine / s if mine is not None and impl != ours and s else None,
            }
            for impl, s in cells.items()
        }
        out.append({"workload": name, "logical_mb": 0.0, "results": results})
    return {"ours": ours, "baselines": [i for i in impls if i != ours], "workloads": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 shards, one repeat, no cluster")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--shards",
        type=int,
        action="append",
        help="only these numbers of shards (a tenth present); repeatable",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args()
    print_machine_info(LIBRARIES)
    load_before = os.getloadavg()[0]
    print(f"load average at start: {os.getloadavg()}")
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    if args.shards:
        sizes = tuple((n, max(1, n // 10)) for n in args.shards)
    repeats = args.repeats or (1 if args.quick else 3)
    table = ResultTable(OURS, [TS, ZARR, ZARR_CORE, THREADED], floor=TS)
    cluster = None if args.quick else _cluster()
    try:
        for shards, present in sizes:
            path = scale_store(shards, present)
            big = shards > ZARR_UP_TO
            measure(path, shards, table, 1 if big else repeats, None if big else cluster)
            print(
                f"  measured {shards:,} shards ({present:,} present), load average {os.getloadavg()}",
                flush=True,
            )
    finally:
        if cluster is not None:
            cluster.close()
    table.print()
    largest = sizes[-1]
    print("\n" + graph_cost(scale_store(*largest), largest[0]))
    print_per_shard(table, [s for s, _ in sizes])
    print_targets(table, [s for s, _ in sizes])
    rows = print_other_rows(args.quick)
    print(f"\nload average at end: {os.getloadavg()}")
    if args.json:
        tables: dict[str, Any] = {
            "point series": {**table.to_json(), "load_average": [load_before, os.getloadavg()[0]]}
        }
        if rows:
            tables["writes and metadata tools"] = rows_table(rows)
        write_results(args.json, "benchmarks/bench_scale.py", LIBRARIES, tables, sys.argv[1:])


def _cluster() -> Any:
    from distributed import LocalCluster

    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)


if __name__ == "__main__":
    main()
