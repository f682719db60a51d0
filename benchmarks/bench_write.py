"""Dataset write benchmark: the floor, ``ds.to_zarr3`` and ``ds.to_zarr(zarr_format=3)``, threaded and on a cluster.

The climate-like dataset (``t2m`` float32 (730, 361, 720) ~ 760 MB; ``--quick``:
(146, 361, 720)) is dask-backed with one dask chunk per shard, shards
(73, 364, 720), inner chunks (73, 91, 180), blosc(zstd, clevel 3, shuffle).
All of these run interleaved round-robin in one `time_interleaved()` call:

* ``floor``: numcodecs + shard assembly + file writes on 2 threads (``floor.py``),
  in this process;
* ``to_zarr3`` and ``xarray+zarr-python`` on dask's threaded scheduler over
  the in-memory numpy data;
* the same two on ``LocalCluster(n_workers=2, threads_per_worker=1,
  processes=True)`` with the dataset persisted in worker memory beforehand
  (only the write is timed). Workers run with distributed's default
  ``MALLOC_TRIM_THRESHOLD_=65536``; the library tunes no allocator;
* the same two on clusters whose workers get ``MALLOC_TRIM_THRESHOLD_`` = 64 MiB
  and ``MALLOC_MMAP_THRESHOLD_`` = 32 MiB through dask's
  ``distributed.nanny.pre-spawn-environ`` setting, the user-facing way
  docs/guide/dask.md describes (the workers' values are printed). The trim
  threshold alone changes nothing: setting it also freezes glibc's mmap
  threshold at 128 KiB, so chunk-sized buffers are still fresh maps;
* ``floor (same workers)``: the floor's shard encoding as one dask task per
  shard on a cluster of each kind, over the persisted blocks: what the same
  bytes cost in such workers without any Zarr logic.

Printed per case: median seconds, ratio to the floor, MB/s, CPU seconds,
peak RSS growth, and (medians per write) user and system CPU seconds and
minor page faults of the processes doing the work (threaded: this process;
cluster: the sum over the workers, peak: the largest worker), also per shard.
Then the ratios, and a scaling section: to_zarr3 on 1 and 2 workers (seconds, tasks
per shard) and the graph of a 10x larger lazy dataset (tasks, build time).
``--only profile`` measures one shard write inside a worker of each kind
(``shard_profile.py``): faults, system time, c-blosc's share, Python's peak.
``--json PATH`` writes the main table (rendered by docs/render_performance.py).
With ``--only s3`` both writers write to a local S3-compatible server.
Every output is verified after the warm-up (read back by zarr3_backend and
zarr-python and compared with the data).

``--executors dask,cubed`` runs only the executor table (``executors.py``):
to_zarr3 on dask and on Cubed's threads and processes executors, beside
xarray's to_zarr on Cubed. Run ``python benchmarks/bench_write.py --quick``
for a smoke test.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # a checkout works without installing

from common import (  # noqa: E402
    Case,
    ResultTable,
    Timing,
    climate_field,
    print_machine_info,
    reset_peak_rss,
    rss_bytes,
    time_interleaved,
    write_results,
)
from floor import BLOSC_JSON, CHUNKS, SHARDS, Layout, floor_write  # noqa: E402
from shard_profile import print_profiles, profile_shard_writes  # noqa: E402

FULL_SHAPE = (730, 361, 720)
QUICK_SHAPE = (146, 361, 720)
FLOOR, OURS, ZARR = "floor", "to_zarr3", "xarray+zarr-python"
FLOOR_WORKERS = "floor (same workers)"
BENCH_DIR = Path(__file__).resolve().parent
#: The cluster rows: suffix of their case names, and the environment variables given to their workers through
#: dask's ``distributed.nanny.pre-spawn-environ`` on top of its defaults (which hold ``MALLOC_TRIM_THRESHOLD_=65536``).
CLUSTERS: dict[str, dict[str, int | None]] = {
    " (cluster)": {},
    " (cluster, malloc thresholds)": {"MALLOC_TRIM_THRESHOLD_": 64 << 20, "MALLOC_MMAP_THRESHOLD_": 32 << 20},
}
#: Every variable some cluster sets, plus dask's own default: each cluster's workers are shown all of them.
ALLOCATOR_VARIABLES = sorted({"MALLOC_TRIM_THRESHOLD_", *(k for env in CLUSTERS.values() for k in env)})
LIBRARIES = ["zarr3_backend", "xarray", "zarr", "dask", "distributed", "numcodecs", "numpy", "s3fs"]


def make_dataset(shape: tuple[int, ...]):
    import xarray as xr

    data = climate_field(shape)
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), data, {"units": "K"})},
        coords={"lat": np.linspace(90, -90, shape[1]), "lon": np.linspace(0, 360, shape[2], endpoint=False)},
    )
    return ds.chunk({"time": SHARDS[0], "lat": -1, "lon": -1}), data


def writers(ds, storage_options=None) -> dict[str, object]:
    import zarr.codecs

    import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3)

    ours_enc = {"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [BLOSC_JSON]}}
    zarr_enc = {
        "t2m": {
            "chunks": CHUNKS,
            "shards": SHARDS,
            "compressors": [zarr.codecs.BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=4)],
        }
    }
    options = {} if storage_options is None else {"storage_options": storage_options}
    return {
        OURS: lambda p: ds.to_zarr3(p, mode="w", encoding=ours_enc, **options),
        ZARR: lambda p: ds.to_zarr(
            p, mode="w", zarr_format=3, encoding=zarr_enc, consolidated=True, **options
        ),
    }


def verify(
    path, expected: np.ndarray, failures: list[str], label: str, array: str = "t2m", storage_options=None
) -> None:
    import zarr

    import zarr3_backend

    where = f"{path}/{array}" if array else str(path)
    for reader, read in (
        (
            "zarr3_backend",
            lambda: zarr3_backend.open_array(path, array, storage_options=storage_options)[...],
        ),
        ("zarr-python", lambda: zarr.open_array(where, mode="r", storage_options=storage_options)[...]),
    ):
        if not np.array_equal(read(), expected):
            failures.append(f"{label}: {reader} reads different data from {path}")


def rusage() -> tuple[float, float, int]:
    """User and system CPU seconds and minor page faults of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime, usage.ru_minflt


class Measured:
    """Wraps cases to record user/system CPU and page faults of the processes doing the work."""

    def __init__(self, client=None, n_shards: int = 1) -> None:
        self.client = client
        self.n_shards = n_shards
        self.usage: dict[str, list[tuple[float, float, int]]] = {}
        self.peaks: dict[str, list[int]] = {}

    def _sample(self) -> dict[str, tuple[float, float, int]]:
        return self.client.run(rusage) if self.client is not None else {"self": rusage()}

    def wrap(self, name: str, case: Case) -> Case:
        before: dict[str, object] = {}

        def setup() -> None:
            if case.setup is not None:
                case.setup()
            if self.client is not None:
                self.client.run(reset_peak_rss)
                before["rss"] = self.client.run(rss_bytes)
            before["usage"] = self._sample()

        def run() -> object:
            result = case.run()
            after = self._sample()
            self.usage.setdefault(name, []).append(
                tuple(sum(after[w][i] - before["usage"][w][i] for w in after) for i in range(3))
            )  # type: ignore[index]
            if self.client is not None:
                peaks = self.client.run(rss_bytes, "VmHWM")
                self.peaks.setdefault(name, []).append(max(v - before["rss"][k] for k, v in peaks.items()))  # type: ignore[index]
            return result

        return Case(run=run, setup=setup, check=case.check)

    def timing(self, name: str, timing: Timing) -> Timing:
        """``timing`` with CPU seconds (and the peak, on a cluster) of the workers instead of this process."""
        usage = self.usage[name][-len(timing.seconds) :]
        peaks = self.peaks.get(name, [])[
            -len(timing.seconds) :
        ]  # the warm-up (first task in a worker: imports) excluded
        peak = max(peaks) if peaks else timing.peak_rss_bytes
        return Timing(
            timing.seconds,
            peak,
            tuple(u + s for u, s, _ in usage),
            tuple(s for _, s, _ in usage),
            tuple(f for _, _, f in usage),
        )

    def print(self) -> None:
        print(
            "\nCPU and page faults per write (medians without the warm-up; cluster rows: summed over workers)"
        )
        print(
            f"  {'case':<40}{'user s':>9}{'system s':>10}{'minor faults':>14}"
            f"{'sys s/shard':>13}{'faults/shard':>14}"
        )
        for name, rows in self.usage.items():
            rows = rows[1:] or rows  # the warm-up call is not timed either
            user, system, faults = (statistics.median(r[i] for r in rows) for i in range(3))
            print(
                f"  {name:<40}{user:>9.2f}{system:>10.2f}{faults:>14.0f}"
                f"{system / self.n_shards:>13.3f}{faults / self.n_shards:>14.0f}"
            )


def local_cases(ds, data, out: Path, failures: list[str], scheduler: str, client=None) -> dict[str, Case]:
    """The two writers on ``scheduler`` ("threads" or a distributed ``client``), writing under ``out``."""
    import dask

    built = {}
    for name, write in writers(ds).items():
        path = out / f"{name}-{scheduler}.zarr"

        def run(write=write, path=path) -> None:
            if client is None:
                with dask.config.set(scheduler="threads"):
                    write(path)
            else:
                write(path)

        built[name] = Case(
            run=run,
            setup=lambda path=path: shutil.rmtree(path, ignore_errors=True),
            check=lambda _, path=path, name=name: verify(path, data, failures, f"{scheduler}/{name}"),
        )
    return built


def floor_metadata(data) -> bytes:
    """The floor's zarr.json: the array's metadata, so that both readers can verify its output."""
    import zarr3_backend

    template = zarr3_backend.create_array(
        "memory://bench_write/floor",
        overwrite=True,
        shape=data.shape,
        dtype="float32",
        chunks=CHUNKS,
        shards=SHARDS,
        compressors=[BLOSC_JSON],
        fill_value=0.0,
    )
    return template.store.get("zarr.json")


def floor_case(data, out: Path, failures: list[str]) -> Case:
    layout = Layout(data.shape)
    metadata = floor_metadata(data)
    path = out / "floor.zarr"
    return Case(
        run=lambda: floor_write(path, layout, data, metadata),
        setup=lambda: shutil.rmtree(path, ignore_errors=True),
        check=lambda _: verify(path, data, failures, "floor", array=""),
    )


def _floor_block(block, root: str, shape: tuple[int, ...], bench_dir: str, block_id=None):
    """One shard of the floor, as a dask task in a worker (which imports ``floor`` from ``bench_dir``)."""
    if bench_dir not in sys.path:
        sys.path.insert(1, bench_dir)
    from floor import Layout, encode_shard_block

    encode_shard_block(Path(root), Layout(shape), block, block_id)
    return np.ones((1,) * block.ndim, dtype=np.int64)


def floor_workers_case(persisted, data, out: Path, failures: list[str]) -> Case:
    """The floor's shard encoding as one task per shard of the persisted ``t2m`` (run on the current client)."""
    metadata = floor_metadata(data)
    path = out / "floor-workers.zarr"
    source = persisted["t2m"].data

    def run() -> None:
        path.mkdir(parents=True, exist_ok=True)
        (path / "zarr.json").write_bytes(metadata)
        source.map_blocks(
            _floor_block,
            root=str(path),
            shape=data.shape,
            bench_dir=str(BENCH_DIR),
            chunks=tuple((1,) * len(c) for c in source.chunks),
            dtype=np.int64,
        ).compute()

    return Case(
        run=run,
        setup=lambda: shutil.rmtree(path, ignore_errors=True),
        check=lambda _: verify(path, data, failures, "floor on workers", array=""),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"shape {QUICK_SHAPE} instead of {FULL_SHAPE}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="output directory (default: a temporary one)")
    parser.add_argument(
        "--only",
        action="append",
        choices=["main", "scaling", "memory", "s3", "profile"],
        help="sections to run (repeatable; default: main, scaling, memory; s3 and profile only when asked)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the main table to this JSON file")
    parser.add_argument(
        "--executors",
        default=None,
        help="comma-separated executors (dask,cubed): to_zarr3 on each beside xarray's to_zarr on Cubed "
        "(executors.py); runs only that section",
    )
    parser.add_argument(
        "--latency", type=float, default=0.05, help="seconds added to every S3 request (--only s3)"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*Consolidated metadata.*")
    warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
    warnings.filterwarnings("ignore", message=".*Sending large graph.*")
    print_machine_info(LIBRARIES)
    print(f"  load average {os.getloadavg()[0]:.1f}")
    shape = QUICK_SHAPE if args.quick else FULL_SHAPE
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_write_"))
    out.mkdir(parents=True, exist_ok=True)
    ds, data = make_dataset(shape)
    failures: list[str] = []
    try:
        sections = args.only or ([] if args.executors else ["main", "scaling", "memory"])
        if args.executors:
            from executors import run_executors

            run_executors(ds, data, out, failures, args.repeats, args.executors.split(","))
        if "main" in sections:
            load_before = os.getloadavg()[0]
            table = run_main_table(ds, data, out, failures, args.repeats)
            table["load_average"] = [load_before, os.getloadavg()[0]]
            print(f"  load average {load_before:.1f} before the table, {os.getloadavg()[0]:.1f} after it")
            if args.json:
                write_results(
                    args.json,
                    "benchmarks/bench_write.py",
                    LIBRARIES,
                    {f"sharded write of t2m {shape} float32 ({data.nbytes / 1e6:.0f} MB)": table},
                    sys.argv[1:],
                )
        if "profile" in sections:
            run_profile(data, out)
        if "scaling" in sections:
            run_scaling(ds, data, out, args.repeats)
        if "memory" in sections:
            run_cold_memory(ds, out)
        if "s3" in sections:
            run_s3(ds, data, failures, args.repeats, args.latency)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    for failure in failures:
        print("MISMATCH:", failure)
    return 1 if failures else 0


def _import_writer() -> None:
    import numcodecs  # noqa: F401
    import xarray  # noqa: F401

    import zarr3_backend  # noqa: F401


def run_cold_memory(ds, out: Path) -> None:
    """Peak RSS growth of each worker over its first two to_zarr3 writes (the first is cold: no warm-up).

    The source is persisted on the workers first and the imports a write task
    needs are done, so the growth is the writer's own working memory.
    """
    import dask
    from distributed import Client, LocalCluster, wait

    limit = np.prod(SHARDS) * 4 * (1 + 1 / 2.6) + (64 << 20)  # a shard decoded + encoded (ratio ~2.6) + 64 MB
    print("\nworker memory: to_zarr3 on LocalCluster(2 procs x 1 thread), source persisted, imports done")
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster, set_as_default=False) as client,
        dask.config.set(scheduler="dask.distributed"),
        client.as_current(),
    ):
        persisted = ds.persist()
        wait(persisted)
        client.run(_import_writer)
        client.run(reset_peak_rss)
        before = client.run(rss_bytes)
        write_ours = writers(persisted)[OURS]
        for write in ("first (cold)", "second"):
            write_ours(out / f"memory_{write[:5]}.zarr")
            peaks = client.run(rss_bytes, "VmHWM")
            growth = max(peaks[w] - before[w] for w in peaks)
            print(
                f"  {write:13s} write: peak growth of the largest worker {growth / 1e6:6.1f} MB "
                f"(target: at most {limit / 1e6:.0f} MB)"
            )


def run_main_table(ds, data, out: Path, failures: list[str], repeats: int) -> dict[str, object]:
    """The interleaved table (printed); returned as plain data, with resources per shard added."""
    from contextlib import ExitStack

    import dask
    from distributed import wait

    rows = {" (threads)": "write, threaded (2 threads)"}
    rows.update(
        {
            s: "write, LocalCluster 2 procs x 1 thread" + s.removeprefix(" (cluster").removesuffix(")")
            for s in CLUSTERS
        }
    )
    n_shards = math.prod(-(-n // s) for n, s in zip(data.shape, SHARDS))
    here = Measured(n_shards=n_shards)
    clusters: dict[str, Measured] = {}
    cases = {f"{FLOOR} (threads)": here.wrap(f"{FLOOR} (threads)", floor_case(data, out, failures))}
    for name, case in local_cases(ds, data, out, failures, "threads").items():
        cases[f"{name} (threads)"] = here.wrap(f"{name} (threads)", case)
    with ExitStack() as stack:
        # one cluster per writer and setting: a writer's leftovers never slow the other
        for name in (OURS, ZARR, FLOOR_WORKERS):
            for suffix, environ in CLUSTERS.items():
                client = stack.enter_context(cluster_client(environ))
                seen = {
                    k: sorted(set(map(str, client.run(os.environ.get, k).values())))
                    for k in ALLOCATOR_VARIABLES
                }
                print(f"  {name}{suffix}: workers' environment {seen}")
                clusters[name + suffix] = Measured(client, n_shards)
                with dask.config.set(scheduler="dask.distributed"), client.as_current():
                    persisted = ds.persist()
                    wait(persisted)
                if name == FLOOR_WORKERS:
                    case = floor_workers_case(persisted, data, out, failures)
                else:
                    case = local_cases(persisted, data, out, failures, "cluster", client)[name]
                cases[name + suffix] = clusters[name + suffix].wrap(name + suffix, as_current(client, case))
        timings = time_interleaved(cases, repeats=repeats)
    table = ResultTable(ours=OURS, baselines=[ZARR, FLOOR, FLOOR_WORKERS])
    for suffix, label in rows.items():
        table.add(label, FLOOR, here.timing(f"{FLOOR} (threads)", timings[f"{FLOOR} (threads)"]), data.nbytes)
        for name in (OURS, ZARR, FLOOR_WORKERS):
            if suffix == " (threads)" and name == FLOOR_WORKERS:
                continue
            measured = here if suffix == " (threads)" else clusters[name + suffix]
            table.add(label, name, measured.timing(name + suffix, timings[name + suffix]), data.nbytes)
    table.print()
    here.print()
    for measured in clusters.values():
        measured.print()
    print("  (cluster 'cpu s' and 'peak dRSS MB' are the workers': CPU summed, peak of the largest)")
    return per_shard(table.to_json(), n_shards)


def per_shard(table: dict, n_shards: int) -> dict:
    """``table`` (``ResultTable.to_json``) with each result's system seconds and page faults per shard added."""
    for workload in table["workloads"]:
        for result in workload["results"].values():
            for key in ("system_s", "minor_faults"):
                value = result.get(key)
                result[f"{key}_per_shard"] = None if value is None else value / n_shards
    table["shards"] = n_shards
    return table


@contextlib.contextmanager
def cluster_client(environ: dict[str, int | None]):
    """A client of a new LocalCluster(2 processes x 1 thread) whose workers get ``environ`` through dask's
    ``distributed.nanny.pre-spawn-environ`` on top of dask's defaults."""
    import dask
    from distributed import Client, LocalCluster

    for variable in ALLOCATOR_VARIABLES:
        # a nanny copies its settings into this process's environment, where every later nanny would find them
        # (and a variable there overrides the setting): drop all of them, not only those ``environ`` sets
        os.environ.pop(variable, None)
    settings = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in environ.items()}
    with dask.config.set(settings):  # read by the nannies as they start their workers
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, Client(cluster, set_as_default=False) as client:
        yield client


def run_profile(data, out: Path, repeats: int = 4) -> None:
    """One shard write measured inside a worker of each kind of cluster (``shard_profile.py``)."""
    import cloudpickle
    import shard_profile

    cloudpickle.register_pickle_by_value(shard_profile)
    block = np.ascontiguousarray(data[: SHARDS[0]])
    profiles = {}
    for environ in CLUSTERS.values():
        with cluster_client(environ) as client:
            worker = sorted(client.scheduler_info()["workers"])[0]
            future = client.submit(
                profile_shard_writes,
                block,
                str(out / f"profile{len(profiles)}.zarr"),
                repeats,
                workers=[worker],
            )
            profiles["dask defaults" if not environ else "pre-spawn-environ malloc thresholds"] = (
                future.result()
            )
    print_profiles(profiles)


def as_current(client, case: Case) -> Case:
    """``case`` whose run and check use ``client`` as the dask scheduler."""

    import dask

    def run() -> object:
        with dask.config.set(scheduler="dask.distributed"), client.as_current():
            assert dask.base.get_scheduler() == client.get
            return case.run()

    return Case(run=run, setup=case.setup, check=case.check)


def run_scaling(ds, data, out: Path, repeats: int) -> None:
    import dask.array as da
    import xarray as xr
    from distributed import Client, LocalCluster, wait

    from zarr3_backend.dask.progress import is_shard_key

    encoding = {"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [BLOSC_JSON]}}
    n_shards = -(-data.shape[0] // SHARDS[0])
    print("\nscaling: to_zarr3 on a LocalCluster of n workers x 1 thread (dataset persisted)")
    print(f"  {'workers':<10}{'median s':>10}{'tasks':>8}{'shards':>8}{'tasks/shard':>13}")
    for n_workers in (1, 2):
        with (
            LocalCluster(
                n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster),
        ):
            persisted = ds.persist()
            wait(persisted)
            path = out / f"scaling-{n_workers}.zarr"
            delayed = persisted.to_zarr3(path, mode="w", encoding=encoding, compute=False)
            tasks = len(dict(delayed.__dask_graph__()))
            seconds = []
            for _ in range(repeats + 1):
                shutil.rmtree(path, ignore_errors=True)
                start = time.perf_counter()
                persisted.to_zarr3(path, mode="w", encoding=encoding)
                seconds.append(time.perf_counter() - start)
            print(
                f"  {n_workers:<10}{statistics.median(seconds[1:]):>10.2f}{tasks:>8}{n_shards:>8}{tasks / n_shards:>13.2f}"
            )
    big = (FULL_SHAPE[0] * 10, *FULL_SHAPE[1:])
    print(
        f"\ngraph of a 10x larger lazy dataset {big} float32 ({np.prod(big) * 4 / 1e9:.1f} GB, not materialised)"
    )
    for label, source in (
        ("da.zeros", da.zeros(big, chunks=(SHARDS[0], -1, -1), dtype="f4")),
        ("da.random", da.random.random(big, chunks=(SHARDS[0], -1, -1)).astype("f4")),
    ):
        lazy = xr.Dataset({"t2m": (("time", "lat", "lon"), source)})
        start = time.perf_counter()
        delayed = lazy.to_zarr3(out / "big.zarr", mode="w", encoding=encoding, compute=False)
        graph = dict(delayed.__dask_graph__())
        built = time.perf_counter() - start
        shards = sum(1 for key in graph if is_shard_key(key))
        print(
            f"  {label:<10} {len(graph)} tasks for {shards} shards (+{len(graph) - shards}); "
            f"to_zarr3(compute=False) + graph: {built:.3f} s ({built / shards * 1000:.2f} s per 1000 shards)"
        )


def run_s3(ds, data, failures: list[str], repeats: int, latency: float) -> None:
    import s3fs

    from tests.servers.latency_s3 import latency_s3_process

    print(
        f"\nS3: the loopback S3 server (tests.servers.latency_s3, its own process) adding "
        f"{latency * 1000:.0f} ms per request and capping each connection at 100 MB/s; threaded scheduler; "
        "fresh s3fs instances"
    )
    with latency_s3_process(latency, bandwidth=100e6) as server:
        s3fs.S3FileSystem(**server.storage_options).mkdir("bench-write")
        run_s3_cases(ds, data, failures, repeats, "s3://bench-write", server.storage_options, latency)


def run_s3_cases(
    ds, data, failures: list[str], repeats: int, bucket: str, storage_options: dict, latency: float
) -> None:
    import dask

    options = {**storage_options, "skip_instance_cache": True}
    cases = {}
    for name, write in writers(ds, options).items():
        url = f"{bucket}/{name.replace('+', '-')}.zarr"

        def run(write=write, url=url) -> None:
            with dask.config.set(scheduler="threads"):
                write(url)

        cases[name] = Case(
            run=run,
            check=lambda _, url=url, name=name: verify(
                url, data, failures, f"s3/{name}", storage_options=options
            ),
        )
    timings = time_interleaved(cases, repeats=repeats)
    table = ResultTable(ours=OURS, baselines=[ZARR], floor="none")
    for name, timing in timings.items():
        table.add(f"write to S3 ({latency * 1000:.0f} ms), threaded", name, timing, data.nbytes)
    table.print()


if __name__ == "__main__":
    sys.exit(main())
