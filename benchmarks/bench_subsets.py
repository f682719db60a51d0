"""Regional subsets of an ERA5-like store: ``engine="zarr3"`` vs ``engine="zarr"`` (zarr-python), same sharded layout.

The store: 2 years daily on a 1 degree grid (182 x 360, or 181 x 360 as real 1 degree grids
are, where the last row of inner chunks straddles the edge), 4 float32 variables
(``t2m``, ``tp``, ``u10``, ``v10``), inner chunks (73, 91, 90), shards
(365, 182, 360), zstd (level 3) then crc32c, written once by each engine with
that same encoding (kept under ``--dir`` between runs). Workloads:

* ``subset``: open with ``chunks={}``, then the Europe box
  ``t2m.sel(latitude=slice(72, 35), longitude=slice(0, 40))``, cos(latitude)
  weighted mean over latitude and longitude, computed. ``engine="zarr3"`` makes
  one dask chunk per shard, ``engine="zarr"`` one per inner chunk. Also ours
  with ``preferred_chunks="inner"``, and ours without the selection pass
  (dask's own optimization only: the shards are read whole), for reference.
  Besides time: bytes fetched from the store and inner chunks decoded (counted
  in one extra, untimed call of each case);
* ``scan``: the same open, then ``ds.mean()`` of all 4 variables (a full scan),
  ours with and without the selection pass, and ``engine="zarr"``;
* ``subset-s3``: ``subset`` over the S3 latency server
  (`tests.servers.latency_s3`, ``--latency``, default 20 ms per
  request), ``t2m`` and the coordinates uploaded; requests and bytes counted by
  the server;
* ``rewrite``: ``month.to_zarr3(path, region="auto")`` vs ``month.to_zarr(path,
  region="auto")`` for March 2021 (part of one shard per variable: 16 of its
  40 inner chunks, each partly), numpy- and dask-backed, on scratch copies of
  the stores; bytes read and written and inner chunks decoded and encoded
  per call besides time. ``rewrite-181`` is the same on 181 latitudes.

Cases run interleaved, best of ``--repeats`` after a warm-up; ratios are ours
over ``engine="zarr"``. Each workload is one function; ``main`` runs those asked
for (``--only``). ``python benchmarks/bench_subsets.py --json benchmarks/results/subsets.json``.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from common import Case, ResultTable, print_machine_info, time_interleaved, write_results  # noqa: E402

OURS, ZARR = "zarr3", "zarr"
LIBRARIES = ["zarr3_backend", "xarray", "zarr", "dask", "numcodecs", "numpy", "s3fs", "obstore"]
VARIABLES = ["t2m", "tp", "u10", "v10"]
CHUNKS, SHARDS = (73, 91, 90), (365, 182, 360)
COMPRESSORS = [{"name": "zstd", "configuration": {"level": 3, "checksum": False}}, {"name": "crc32c"}]
EUROPE = {"latitude": slice(72, 35), "longitude": slice(0, 40)}
STORE_VERSION = 2  # bump when the stores' contents change: cached copies are then rewritten


# ---------------------------------------------------------------- data


def era5_stores(directory: Path, nlat: int = 182) -> tuple[Path, Path]:
    """The ERA5-like dataset on ``nlat`` latitudes, written by each engine with the same sharded encoding (cached):
    (ours, zarr's)."""
    import xarray as xr

    import zarr3_backend  # noqa: F401  (registers to_zarr3)
    from zarr3_backend.synthetic import era5_like

    directory = directory / f"lat{nlat}"
    ours, theirs, marker = (
        directory / "ours.zarr",
        directory / "zarr.zarr",
        directory / f"complete-v{STORE_VERSION}",
    )
    if marker.exists():
        return ours, theirs
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    ds: xr.Dataset = era5_like(days=730, nlat=nlat, nlon=360)[VARIABLES]
    encoding = {v: {"chunks": CHUNKS, "shards": SHARDS, "compressors": COMPRESSORS} for v in VARIABLES}
    ds.to_zarr3(ours, mode="w", encoding=encoding)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(theirs, mode="w", zarr_format=3, consolidated=False, encoding=encoding)
    marker.touch()
    return ours, theirs


def europe_mean(ds: Any) -> np.ndarray:
    """The cos(latitude) weighted mean of ``t2m`` over the Europe box, per day."""
    box = ds.t2m.sel(EUROPE)
    weights = np.cos(np.deg2rad(box.latitude))
    return np.asarray(box.weighted(weights).mean(("latitude", "longitude")).values)


def open_engine(location: Any, engine: str, **kwargs: Any) -> Any:
    import xarray as xr

    if engine == ZARR:
        kwargs = {"consolidated": False, "zarr_format": 3, **kwargs}
    return xr.open_dataset(location, engine=engine, chunks={}, **kwargs)


@contextmanager
def dask_optimization_only() -> Iterator[None]:
    """Compute with dask's own array optimization (no selection pass): ``engine="zarr3"`` before issue 35."""
    import dask
    from dask.array.optimization import optimize

    with dask.config.set(array_optimize=optimize):
        yield


def variants(location: Path, theirs: Path, work: Callable[[Any], Any]) -> dict[str, Callable[[], Any]]:
    """``work(ds)`` for every implementation compared, as calls that open the store (``location``: ours)."""

    def whole_shards() -> Any:
        ds = open_engine(location, OURS)
        with dask_optimization_only():
            return work(ds)

    return {
        OURS: lambda: work(open_engine(location, OURS)),
        f"{OURS}, inner chunks": lambda: work(open_engine(location, OURS, preferred_chunks="inner")),
        f"{OURS}, no pass": whole_shards,
        ZARR: lambda: work(open_engine(theirs, ZARR)),
    }


# ---------------------------------------------------------------- counting reads (untimed)


class DecodeCounter:
    """Counts inner chunks decoded by either engine while active (ours: ``DecodeJob``; zarr-python: zstd)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    @contextmanager
    def active(self) -> Iterator[DecodeCounter]:
        from zarr.codecs.zstd import ZstdCodec

        from zarr3_backend.codecs import read_plan

        run, decode = read_plan.DecodeJob.run, ZstdCodec._decode_single
        counter = self

        def counted_run(job: Any, out: np.ndarray) -> None:
            if job.data is not None:
                counter.add()
            run(job, out)

        async def counted_decode(codec: Any, *args: Any) -> Any:
            counter.add()
            return await decode(codec, *args)

        read_plan.DecodeJob.run, ZstdCodec._decode_single = counted_run, counted_decode  # type: ignore[method-assign]
        try:
            yield self
        finally:
            read_plan.DecodeJob.run, ZstdCodec._decode_single = run, decode  # type: ignore[method-assign]

    def add(self) -> None:
        with self._lock:
            self.count += 1


def counting_stores(ours: Path, theirs: Path) -> tuple[Any, Any, Callable[[], tuple[int, int]]]:
    """Stores of both copies that count the bytes they return, and a function giving (ours, zarr's) byte counts."""
    import zarr.storage

    from zarr3_backend.store import make_store
    from zarr3_backend.testing.stores import CountingStore

    ours_store = CountingStore(make_store(str(ours), read_only=True))

    class ByteCountingStore(zarr.storage.WrapperStore):  # type: ignore[type-arg]
        fetched = 0

        async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
            value = await super().get(key, prototype, byte_range)
            ByteCountingStore.fetched += 0 if value is None else len(value)
            return value

        async def get_partial_values(self, prototype: Any, key_ranges: Any) -> Any:
            values = await super().get_partial_values(prototype, key_ranges)
            ByteCountingStore.fetched += sum(len(v) for v in values if v is not None)
            return values

    theirs_store = ByteCountingStore(zarr.storage.LocalStore(theirs, read_only=True))

    def fetched() -> tuple[int, int]:
        ours_bytes = sum(_range_size(ours / key, byte_range) for key, byte_range in ours_store.requests)
        return ours_bytes, ByteCountingStore.fetched

    return ours_store, theirs_store, fetched


def _range_size(path: Path, byte_range: Any) -> int:
    size = path.stat().st_size if path.exists() else 0
    if byte_range is None:
        return size
    start = byte_range.start if byte_range.start >= 0 else size + byte_range.start
    end = size if byte_range.end is None else min(byte_range.end, size)
    return max(0, end - start)


def subset_reads(ours: Path, theirs: Path) -> dict[str, tuple[int, int]]:
    """(bytes fetched, inner chunks decoded) of one Europe-box mean by each implementation (opening included)."""
    counts = {}
    for impl in variants(ours, theirs, europe_mean):
        ours_store, theirs_store, fetched = counting_stores(ours, theirs)
        calls = variants(ours_store, theirs_store, europe_mean)  # type: ignore[arg-type]
        with DecodeCounter().active() as decoded:
            calls[impl]()
        got = fetched()
        counts[impl] = (got[1] if impl == ZARR else got[0], decoded.count)
    return counts


def print_reads(title: str, counts: dict[str, tuple[int, int]]) -> None:
    print(f"\n{title}: reads of one call")
    print(f"  {'implementation':<24}{'MB fetched':>12}{'inner chunks decoded':>22}")
    for impl, (nbytes, decoded) in counts.items():
        print(f"  {impl:<24}{nbytes / 1e6:>12.2f}{decoded:>22}")


# ---------------------------------------------------------------- workloads


def subset(ours: Path, theirs: Path, repeats: int) -> tuple[ResultTable, dict[str, Any]]:
    """The Europe-box weighted mean through ``chunks={}`` on local disk: timings and reads."""
    expected = europe_mean(open_engine(theirs, ZARR).load())
    calls = variants(ours, theirs, europe_mean)

    def check(result: object) -> None:
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-5)

    timings = time_interleaved(
        {impl: Case(call, check=check) for impl, call in calls.items()}, repeats=repeats
    )
    table = ResultTable(ours=OURS, baselines=[ZARR], floor="-")
    nbytes = 730 * 38 * 41 * 4  # the box: 38 latitudes x 41 longitudes
    for impl, timing in timings.items():
        table.add("Europe box weighted mean, chunks={}", impl, timing, nbytes)
    counts = subset_reads(ours, theirs)
    print_reads("Europe box weighted mean, chunks={}", counts)
    return table, {impl: {"bytes_fetched": b, "inner_chunks_decoded": d} for impl, (b, d) in counts.items()}


def scan(ours: Path, theirs: Path, repeats: int) -> tuple[ResultTable, dict[str, Any]]:
    """The mean of every variable through ``chunks={}``: a full scan, ours with and without the selection pass."""

    def means(ds: Any) -> np.ndarray:
        return np.asarray(ds.mean().to_array().values)

    calls = {k: v for k, v in variants(ours, theirs, means).items() if k != f"{OURS}, inner chunks"}
    timings = time_interleaved({impl: Case(call) for impl, call in calls.items()}, repeats=repeats)
    table = ResultTable(ours=OURS, baselines=[f"{OURS}, no pass", ZARR], floor="-")
    for impl, timing in timings.items():
        table.add("full scan (mean of 4 variables), chunks={}", impl, timing, 4 * 730 * 182 * 360 * 4)
    return table, {}


def subset_s3(
    ours: Path, theirs: Path, repeats: int, latency: float = 0.02
) -> tuple[ResultTable, dict[str, Any]]:
    """The Europe-box mean over the S3 latency server: timings, requests and bytes sent by the server."""
    import zarr.storage
    from bench_cloud import BUCKET, fresh_fs, fresh_store

    from tests.servers.latency_s3 import latency_s3_process

    expected = europe_mean(open_engine(theirs, ZARR).load())
    rows: dict[str, list[float]] = {}
    stats: dict[str, dict[str, Any]] = {}
    with latency_s3_process(0.0, None) as server:
        fs = fresh_fs(server)
        fs.mkdir(BUCKET)
        for name, local in (("ours.zarr", ours), ("zarr.zarr", theirs)):
            for path in sorted(local.rglob("*")):
                top = path.relative_to(local).parts[0]
                if path.is_file() and (top == "zarr.json" or top not in VARIABLES or top == "t2m"):
                    fs.pipe_file(f"{BUCKET}/{name}/{path.relative_to(local).as_posix()}", path.read_bytes())
        server.configure(latency)

        cases: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
            OURS: (lambda: fresh_store(server, "ours.zarr"), lambda s: europe_mean(open_engine(s, OURS))),
            f"{OURS}, inner chunks": (lambda: fresh_store(server, "ours.zarr"),
                                      lambda s: europe_mean(open_engine(s, OURS, preferred_chunks="inner"))),
            ZARR: (lambda: zarr.storage.FsspecStore(fresh_fs(server), path=f"{BUCKET}/zarr.zarr", read_only=True),
                   lambda s: europe_mean(open_engine(s, ZARR))),
        }  # fmt: skip
        for repeat in range(1 + repeats):
            for impl, (setup, run) in cases.items():
                store = setup()
                server.drop_connections()
                gc.collect()
                server.reset_stats()
                start = time.perf_counter()
                result = run(store)
                elapsed = time.perf_counter() - start
                if repeat == 0:
                    np.testing.assert_allclose(result, expected, rtol=1e-5)
                    stats[impl] = server.stats()
                else:
                    rows.setdefault(impl, []).append(elapsed)
    title = f"Europe box weighted mean over S3 at {latency * 1000:.0f} ms"
    print(f"\n{title}")
    print(f"  {'implementation':<24}{'best s':>9}{'median s':>10}{'requests':>10}{'rounds':>8}{'MB sent':>9}")
    for impl, seconds in rows.items():
        s = stats[impl]
        print(
            f"  {impl:<24}{min(seconds):>9.3f}{statistics.median(seconds):>10.3f}{s['requests']:>10}{s['rounds']:>8}"
            f"{s['bytes_sent'] / 1e6:>9.2f}"
        )
    for impl in rows:
        if impl != ZARR:
            print(f"  ratio {impl} / {ZARR} (best): {min(rows[impl]) / min(rows[ZARR]):.2f}")
    table = ResultTable(ours=OURS, baselines=[ZARR], floor="-")
    from common import Timing

    for impl, seconds in rows.items():
        table.add(title, impl, Timing(tuple(seconds)), 730 * 38 * 41 * 4)
    return table, {
        impl: {"requests": s["requests"], "rounds": s["rounds"], "bytes_sent": s["bytes_sent"]}
        for impl, s in stats.items()
    }


def rewrite(ours: Path, theirs: Path, repeats: int) -> tuple[ResultTable, dict[str, Any]]:
    """The one-month ``region="auto"`` rewrite, numpy- and dask-backed, on scratch copies of the stores.

    March 2021 plus 0.5 (every value changes), written by ``month.to_zarr3(path, region="auto")`` and by
    ``month.to_zarr(path, region="auto")`` (``safe_chunks=False``: ``engine="zarr"`` refuses a dask write
    covering part of a shard in ``mode="r+"`` otherwise). Besides time: bytes read and written by the
    process per call (``/proc/self/io``), metadata included.
    """
    import tempfile

    import xarray as xr

    import zarr3_backend
    from zarr3_backend.synthetic import era5_like

    nlat = zarr3_backend.open_array(str(ours), "t2m").shape[1]
    month = era5_like(start="2021-03-01", days=31, nlat=nlat, nlon=360)[VARIABLES] + np.float32(0.5)
    inputs = {"numpy": month, "dask": month.chunk({"time": -1, "latitude": -1, "longitude": -1})}
    io: dict[str, dict[str, int]] = {}

    def write(data: Any, engine: str, path: Path, name: str) -> Callable[[], None]:
        def run() -> None:
            before = io_counters()
            if engine == OURS:
                data.to_zarr3(path, region="auto")
            else:
                data.to_zarr(path, region="auto", zarr_format=3, consolidated=False, safe_chunks=False)
            io[name] = {k: v - before[k] for k, v in io_counters().items()}

        return run

    def check(path: Path, engine: str) -> Callable[[object], None]:
        def verify(_: object) -> None:
            got = xr.open_dataset(path, engine=engine, chunks=None).sel(time=month.time).load()
            for name in VARIABLES:
                np.testing.assert_array_equal(got[name].values, month[name].values)

        return verify

    with tempfile.TemporaryDirectory(dir=ours.parent) as scratch:
        copies = {OURS: Path(scratch) / "ours.zarr", ZARR: Path(scratch) / "zarr.zarr"}
        shutil.copytree(ours, copies[OURS])
        shutil.copytree(theirs, copies[ZARR])
        cases = {}
        for kind, data in inputs.items():
            for engine in (OURS, ZARR):
                name = f"{kind}|{engine}"
                cases[name] = Case(
                    write(data, engine, copies[engine], name), check=check(copies[engine], engine)
                )
        timings = time_interleaved(cases, repeats=repeats)
        coded = {}
        for name, case in cases.items():  # one more call each, untimed, counting compressions
            with zstd_calls() as calls:
                case.run()
            coded[name] = dict(calls)
    table = ResultTable(ours=OURS, baselines=[ZARR], floor="-")
    for name, timing in timings.items():
        kind, impl = name.split("|")
        table.add(
            f"one-month region='auto' rewrite, {nlat} latitudes, {kind}",
            impl,
            timing,
            sum(month[v].nbytes for v in VARIABLES),
        )
    print(
        "\none-month rewrite per call: bytes read / written by the process (/proc/self/io), inner chunks coded (zstd)"
    )
    for name, counts in io.items():
        print(
            f"  {name.replace('|', ', '):<24}{counts['rchar'] / 1e6:>9.1f} MB read{counts['wchar'] / 1e6:>9.1f} MB written"
            f"{coded[name].get('decode', 0):>6} decoded{coded[name].get('encode', 0):>6} encoded"
        )
    return table, {
        name.replace("|", ", "): {
            "bytes_read": c["rchar"],
            "bytes_written": c["wchar"],
            "inner_chunks_decoded": coded[name].get("decode", 0),
            "inner_chunks_encoded": coded[name].get("encode", 0),
        }
        for name, c in io.items()
    }


@contextmanager
def zstd_calls() -> Iterator[dict[str, int]]:
    """Counts zstd compressions (``"encode"``) and decompressions (``"decode"``) by either engine while active."""
    from zarr.codecs.zstd import ZstdCodec as TheirZstd

    from zarr3_backend.codecs.zstd import ZstdCodec as OurZstd

    counts: dict[str, int] = {}
    guard = threading.Lock()
    saved = (
        OurZstd.encode,
        OurZstd.decode_bounded,
        OurZstd.decode_into,
        TheirZstd._encode_single,
        TheirZstd._decode_single,
    )

    def count(kind: str) -> None:
        with guard:
            counts[kind] = counts.get(kind, 0) + 1

    def encode(codec: Any, *args: Any) -> Any:
        count("encode")
        return saved[0](codec, *args)

    def decode_bounded(codec: Any, *args: Any) -> Any:
        count("decode")
        return saved[1](codec, *args)

    def decode_into(codec: Any, *args: Any) -> Any:
        done = saved[2](codec, *args)
        if done:
            count("decode")
        return done

    async def their_encode(codec: Any, *args: Any) -> Any:
        count("encode")
        return await saved[3](codec, *args)

    async def their_decode(codec: Any, *args: Any) -> Any:
        count("decode")
        return await saved[4](codec, *args)

    OurZstd.encode, OurZstd.decode_bounded, OurZstd.decode_into = encode, decode_bounded, decode_into  # type: ignore[method-assign]
    TheirZstd._encode_single, TheirZstd._decode_single = their_encode, their_decode  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        OurZstd.encode, OurZstd.decode_bounded, OurZstd.decode_into = saved[:3]  # type: ignore[method-assign]
        TheirZstd._encode_single, TheirZstd._decode_single = saved[3:]  # type: ignore[method-assign]


def io_counters() -> dict[str, int]:
    """This process's bytes read and written through system calls so far (Linux; zeros elsewhere)."""
    try:
        with open("/proc/self/io") as counters:
            found = dict(line.split(": ") for line in counters.read().splitlines())
        return {k: int(found[k]) for k in ("rchar", "wchar")}
    except (OSError, KeyError, ValueError):
        return {"rchar": 0, "wchar": 0}


WORKLOADS: dict[str, Callable[..., tuple[ResultTable, dict[str, Any]]]] = {
    "subset": subset,
    "scan": scan,
    "subset-s3": subset_s3,
    "rewrite": rewrite,
    "rewrite-181": rewrite,
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only", choices=list(WORKLOADS), action="append", help="workloads to run (default: all)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per case, after one warm-up")
    parser.add_argument(
        "--dir", type=Path, default=Path("/tmp/zarr3_bench_subsets"), help="where the stores are kept"
    )
    parser.add_argument(
        "--latency", type=float, default=0.02, help="seconds per request for subset-s3 (default 0.02)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    print_machine_info(LIBRARIES)
    tables: dict[str, object] = {}
    for name in args.only or list(WORKLOADS):
        ours, theirs = era5_stores(args.dir, 181 if name == "rewrite-181" else 182)
        kwargs = {"latency": args.latency} if name == "subset-s3" else {}
        table, reads = WORKLOADS[name](ours, theirs, args.repeats, **kwargs)
        if name != "subset-s3":
            table.print()
        tables[name] = {**table.to_json(), "reads": reads}
    if args.json:
        write_results(args.json, "benchmarks/bench_subsets.py", LIBRARIES, tables, argv or sys.argv[1:])


if __name__ == "__main__":
    main()
