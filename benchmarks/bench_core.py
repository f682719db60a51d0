"""Core read/write benchmark: zarr3_backend vs zarr-python 3 vs tensorstore vs the floor.

One climate-like float32 array (730, 361, 720) ~ 760 MB, shards (73, 364, 720),
inner chunks (73, 91, 180), codecs bytes + blosc(zstd, clevel 3, shuffle),
index codecs bytes + crc32c at the end. The source store is written once by
zarr-python and reused between runs; reads come from the page cache.

Workloads: full read, point read (``a[:, 180, 360]``: one inner chunk per
shard; cold = fresh open, warm = same Array object) and full write into a
fresh directory. The *floor* does the same with no zarr logic: raw file reads,
a numpy-parsed shard index, numcodecs Blosc on 2 threads, a preallocated output.

Run ``python benchmarks/bench_core.py --quick`` for a smoke test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # a checkout works without installing

from common import (  # noqa: E402
    CLIMATE_FIELD_VERSION,
    Case,
    ResultTable,
    climate_field,
    print_machine_info,
    time_interleaved,
    write_results,
)
from floor import (  # noqa: E402
    BLOSC_JSON,
    CHUNKS,
    FULL_SHAPE,
    POINT,
    QUICK_SHAPE,
    SHARDS,
    Layout,
    floor_point,
    floor_read,
    floor_write,
    point_shards,
    read_indexes,
)

OURS, ZARR, TS, FLOOR = "zarr3_backend", "zarr-python", "tensorstore", "floor"
LIBRARIES = ["zarr3_backend", "zarr", "tensorstore", "numcodecs", "numpy", "crc32c"]


# ---------------------------------------------------------------- the libraries


def zarr_python_create(path: Path, layout: Layout):
    import zarr
    from zarr.codecs import BloscCodec

    compressor = BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=4, blocksize=0)
    return zarr.create_array(
        store=str(path),
        shape=layout.shape,
        dtype="float32",
        chunks=layout.chunks,
        shards=layout.shards,
        compressors=compressor,
        fill_value=0.0,
        overwrite=True,
    )


def zarr_python_open(path: Path):
    import zarr

    return zarr.open_array(str(path), mode="r")


def tensorstore_spec(path: Path) -> dict:
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}


def tensorstore_open(path: Path):
    import tensorstore as ts

    return ts.open(tensorstore_spec(path), read=True).result()


def tensorstore_write(path: Path, layout: Layout, data: np.ndarray) -> None:
    import tensorstore as ts

    inner = [{"name": "bytes", "configuration": {"endian": "little"}}, BLOSC_JSON]
    index = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    sharding = {
        "chunk_shape": list(layout.chunks),
        "codecs": inner,
        "index_codecs": index,
        "index_location": "end",
    }
    metadata = {
        "shape": list(layout.shape),
        "data_type": "float32",
        "fill_value": 0.0,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(layout.shards)}},
        "codecs": [{"name": "sharding_indexed", "configuration": sharding}],
    }
    spec = dict(tensorstore_spec(path), metadata=metadata)
    arr = ts.open(spec, create=True, delete_existing=True).result()
    arr.write(data).result()


def ours_available() -> bool:
    try:
        import zarr3_backend

        return callable(zarr3_backend.open_array) and callable(zarr3_backend.create_array)
    except (ImportError, AttributeError) as exc:
        print(f"zarr3_backend not usable yet ({type(exc).__name__}: {exc}); skipping it")
        return False


def ours_create(path: Path, layout: Layout):
    import zarr3_backend

    return zarr3_backend.create_array(
        str(path),
        shape=layout.shape,
        dtype="float32",
        chunks=layout.chunks,
        shards=layout.shards,
        compressors=[BLOSC_JSON],
        overwrite=True,
    )


def ours_open(path: Path):
    import zarr3_backend

    return zarr3_backend.open_array(str(path))


# ---------------------------------------------------------------- workloads


@dataclass
class Context:
    """Everything the workloads share: the layout, the data and where the stores live."""

    layout: Layout
    data_dir: Path
    data: np.ndarray
    ours: bool
    failures: list[str]

    @property
    def source(self) -> Path:
        return self.data_dir / "source.zarr"

    @property
    def writes(self) -> Path:
        """This process's own directory for written stores (concurrent runs must not collide)."""
        return self.data_dir / f"writes-{os.getpid()}"

    def expect(self, name: str, expected: np.ndarray) -> Callable[[object], bool]:
        """A check that records (does not raise) a mismatch, so the run still reports timings."""

        def check(result: object) -> bool:
            got = np.asarray(result)
            if got.shape != expected.shape or not np.array_equal(got, expected):
                self.failures.append(f"{name}: result differs from the generated data")
                print(f"  !! MISMATCH: {name}")
                return False
            return True

        return check


def ensure_source(ctx: Context, seed: int) -> None:
    """Write the source store with zarr-python unless an identical one is already there."""
    marker = ctx.data_dir / "source.json"
    params = {
        "shape": list(ctx.layout.shape),
        "shards": list(SHARDS),
        "chunks": list(CHUNKS),
        "seed": seed,
        "data_version": CLIMATE_FIELD_VERSION,
    }
    if marker.exists() and json.loads(marker.read_text()) == params and (ctx.source / "zarr.json").exists():
        print(f"reusing source store {ctx.source}")
        return
    marker.unlink(missing_ok=True)
    print(f"writing source store {ctx.source} with zarr-python ...")
    tmp = ctx.data_dir / f"source.zarr.tmp-{os.getpid()}"
    zarr_python_create(tmp, ctx.layout)[...] = ctx.data
    shutil.rmtree(ctx.source, ignore_errors=True)
    tmp.rename(ctx.source)  # concurrent runs see the old store or the complete new one
    marker.write_text(json.dumps(params))


def read_cases(ctx: Context) -> dict[str, Case]:
    src, check = ctx.source, ctx.expect
    cases = {FLOOR: Case(lambda: floor_read(src, ctx.layout), check=check(f"{FLOOR} read", ctx.data))}
    if ctx.ours:
        cases[OURS] = Case(lambda: ours_open(src)[...], check=check(f"{OURS} read", ctx.data))
    cases[ZARR] = Case(lambda: zarr_python_open(src)[...], check=check(f"{ZARR} read", ctx.data))
    cases[TS] = Case(lambda: tensorstore_open(src).read().result(), check=check(f"{TS} read", ctx.data))
    return cases


def point_cold_cases(ctx: Context) -> dict[str, Case]:
    src, expected = ctx.source, ctx.data[POINT]
    cases = {FLOOR: Case(lambda: floor_point(src, ctx.layout), check=ctx.expect(f"{FLOOR} point", expected))}
    if ctx.ours:
        cases[OURS] = Case(lambda: ours_open(src)[POINT], check=ctx.expect(f"{OURS} point", expected))
    cases[ZARR] = Case(lambda: zarr_python_open(src)[POINT], check=ctx.expect(f"{ZARR} point", expected))
    cases[TS] = Case(
        lambda: tensorstore_open(src)[POINT].read().result(), check=ctx.expect(f"{TS} point", expected)
    )
    return cases


def point_warm_cases(ctx: Context) -> dict[str, Case]:
    """Repeated point reads on one opened array (the warm-up read fills any index cache)."""
    src, expected = ctx.source, ctx.data[POINT]
    indexes = read_indexes(src, ctx.layout)
    cases = {
        FLOOR: Case(lambda: floor_point(src, ctx.layout, indexes), check=ctx.expect("floor warm", expected))
    }
    if ctx.ours:
        ours = ours_open(src)
        cases[OURS] = Case(lambda: ours[POINT], check=ctx.expect(f"{OURS} point warm", expected))
    zarr_arr, ts_arr = zarr_python_open(src), tensorstore_open(src)
    cases[ZARR] = Case(lambda: zarr_arr[POINT], check=ctx.expect(f"{ZARR} point warm", expected))
    cases[TS] = Case(lambda: ts_arr[POINT].read().result(), check=ctx.expect(f"{TS} point warm", expected))
    return cases


def write_dir(ctx: Context, impl: str) -> Path:
    return ctx.writes / f"{impl}.zarr"


def write_cases(ctx: Context) -> dict[str, Case]:
    layout, data = ctx.layout, ctx.data
    metadata = (ctx.source / "zarr.json").read_bytes()
    runs = {FLOOR: lambda p: floor_write(p, layout, data, metadata)}
    if ctx.ours:
        runs[OURS] = lambda p: ours_create(p, layout).__setitem__(Ellipsis, data)
    runs[ZARR] = lambda p: zarr_python_create(p, layout).__setitem__(Ellipsis, data)
    runs[TS] = lambda p: tensorstore_write(p, layout, data)
    return {impl: _write_case(write_dir(ctx, impl), run) for impl, run in runs.items()}


def _write_case(path: Path, run: Callable[[Path], None]) -> Case:
    return Case(lambda: run(path), setup=lambda: shutil.rmtree(path, ignore_errors=True))


def verify_writes(ctx: Context, impls: list[str]) -> None:
    """Each written store read back by its writer, and cross-read by the other libraries."""
    readers = {ZARR: lambda p: zarr_python_open(p)[...], TS: lambda p: tensorstore_open(p).read().result()}
    if ctx.ours:
        readers[OURS] = lambda p: ours_open(p)[...]
    pairs = [(w, w if w in readers else ZARR) for w in impls]
    pairs += [(w, r) for w in impls for r in readers if r != w and (OURS in (w, r) or w == FLOOR)]
    for writer, reader in dict.fromkeys(pairs):
        path = write_dir(ctx, writer)
        try:
            if ctx.expect(f"{writer}-written store read by {reader}", ctx.data)(readers[reader](path)):
                print(
                    f"  ok: {writer}-written store reads back equal with {reader} ({_stored_mb(path):.0f} MB stored)"
                )
        except Exception as exc:  # report and go on: a broken writer must not hide the other numbers
            ctx.failures.append(f"{writer}-written store read by {reader}: {type(exc).__name__}: {exc}")
            print(f"  !! {ctx.failures[-1]}")


def _stored_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


# ---------------------------------------------------------------- store requests and profiles


def _counting_store(path: Path):
    from zarr3_backend.store import make_store

    try:
        from zarr3_backend.testing import CountingStore
    except ImportError:
        from zarr3_backend.testing.stores import CountingStore
    return CountingStore(make_store(str(path)))


def _point_requests(store, arr) -> tuple[int, int]:
    """(reads, store calls) of one point read: reads are (key, byte range) pairs, calls batch them."""
    reads, calls = len(store.requests), sum(store.counts.values())
    arr[POINT]
    return len(store.requests) - reads, sum(store.counts.values()) - calls


def report_requests(ctx: Context) -> None:
    """Store requests of zarr3_backend's point read, cold (fresh open) and warm (cached shard index)."""
    try:
        import zarr3_backend

        store = _counting_store(ctx.source)
        arr = zarr3_backend.open_array(store)
        opened = len(store.requests), sum(store.counts.values())
        cold, warm = _point_requests(store, arr), _point_requests(store, arr)
    except Exception as exc:  # the names may not exist yet: degrade gracefully
        print(f"\nstore requests: not available ({type(exc).__name__}: {exc})")
        return
    n = len(point_shards(ctx.layout))
    print(
        f"\nstore requests of {OURS} (reads = (key, range) pairs, calls = get/get_many batches), "
        f"point read over {n} shards:"
    )
    print(f"  open: {opened[0]} reads in {opened[1]} calls")
    for label, (reads, calls) in (("cold", cold), ("warm", warm)):
        print(f"  {label} point read: {reads} reads ({reads / n:.1f} per shard) in {calls} calls")


def profile_case(workload: str, case: Case) -> None:
    """Profile one run of ``case``: cProfile of the calling thread, sampled stacks of all threads."""
    import cProfile
    import pstats

    from common import print_samples, sampling_profile

    if case.setup is not None:
        case.setup()
    print(f"\n==== profile of {OURS}: {workload}")
    profiler = cProfile.Profile()
    with sampling_profile() as samples:
        profiler.enable()
        case.run()
        profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    print_samples(samples, top=15)


# ---------------------------------------------------------------- main

WORKLOADS = {
    "read": [("full read", read_cases)],
    "point": [
        ("point read cold (open + read)", point_cold_cases),
        ("point read warm (same array)", point_warm_cases),
    ],
    "write": [("full write", write_cases)],
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"smaller array {QUICK_SHAPE}, same chunking")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats after one warm-up (default 3)")
    parser.add_argument(
        "--point-repeats", type=int, default=15, help="timed repeats of point reads (default 15)"
    )
    parser.add_argument("--only", choices=list(WORKLOADS), action="append", help="run only these workloads")
    parser.add_argument("--data-dir", type=Path, default=None, help="default /tmp/zarr3_bench/<shape>")
    parser.add_argument(
        "--profile",
        choices=["auto", "yes", "no"],
        default="auto",
        help=f"profile {OURS}: auto = where it is > 1.5x the floor",
    )
    parser.add_argument("--no-ours", action="store_true", help=f"skip {OURS} even if importable")
    parser.add_argument("--keep-writes", action="store_true", help="keep the written stores")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    return parser.parse_args(argv)


def make_context(args: argparse.Namespace) -> Context:
    layout = Layout(QUICK_SHAPE if args.quick else FULL_SHAPE)
    data_dir = args.data_dir or Path("/tmp/zarr3_bench") / "x".join(map(str, layout.shape))
    data_dir.mkdir(parents=True, exist_ok=True)
    ours = not args.no_ours and ours_available()
    data = climate_field(layout.shape, seed=args.seed)
    ctx = Context(layout, data_dir, data, ours, [])
    ensure_source(ctx, args.seed)
    return ctx


def run_workloads(ctx: Context, args: argparse.Namespace, table: ResultTable) -> list[tuple[str, Case]]:
    """Time every selected workload; return the (workload, case) pairs of ours worth profiling."""
    to_profile = []
    for key in args.only or list(WORKLOADS):
        for workload, make_cases in WORKLOADS[key]:
            cases = make_cases(ctx)
            repeats = args.point_repeats if key == "point" else args.repeats
            print(f"timing {workload}: {', '.join(cases)} x (1 warm-up + {repeats}) ...", flush=True)
            timings = time_interleaved(cases, repeats)
            nbytes = ctx.data[POINT].nbytes if key == "point" else ctx.data.nbytes
            for impl, timing in timings.items():
                table.add(workload, impl, timing, nbytes)
            if key == "write":
                verify_writes(ctx, list(cases))
            slow = OURS in timings and timings[OURS].median > 1.5 * timings[FLOOR].median
            if OURS in cases and (args.profile == "yes" or (args.profile == "auto" and slow)):
                to_profile.append((workload, cases[OURS]))
    return to_profile


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print_machine_info(LIBRARIES)
    ctx = make_context(args)
    stored = _stored_mb(ctx.source)
    print(
        f"array {ctx.layout.shape} float32 = {ctx.data.nbytes / 1e6:.0f} MB; shards {SHARDS}, inner chunks "
        f"{CHUNKS}; source store {stored:.0f} MB (ratio {ctx.data.nbytes / 1e6 / stored:.2f})"
    )
    table = ResultTable(OURS, [FLOOR, ZARR, TS])
    to_profile = run_workloads(ctx, args, table)
    table.print()
    if args.json:
        write_results(
            args.json, "benchmarks/bench_core.py", LIBRARIES, {"local": table.to_json()}, argv or sys.argv[1:]
        )
    if ctx.ours and (not args.only or "point" in args.only):
        report_requests(ctx)
    for workload, case in to_profile:
        profile_case(workload, case)
    if args.keep_writes:
        print(f"\nwritten stores kept in {ctx.writes}")
    else:
        shutil.rmtree(ctx.writes, ignore_errors=True)
    print("\nFAILURES:\n  " + "\n  ".join(ctx.failures) if ctx.failures else "\nall results verified equal")
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
