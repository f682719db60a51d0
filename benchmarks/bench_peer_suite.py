"""The zarrs/zarr_benchmarks suite side by side: zarr-python, tensorstore, zarrs-python and zarr3_backend.

    python benchmarks/bench_peer_suite.py --suite /tmp/zarr_benchmarks            # 1024^3, as published
    python benchmarks/bench_peer_suite.py --suite /tmp/zarr_benchmarks --quick    # 512^3
    python benchmarks/bench_peer_suite.py --only read_all --only roundtrip

``--suite`` is a checkout of https://github.com/zarrs/zarr_benchmarks (its scripts are run, never
copied here); without it, or where a peer's package is missing, those rows are skipped and only
ours run. The three stores (uint16, 256^3 chunks raw; 256^3 chunks zstd level 0; 256^3 shards of
64^3 inner chunks, zstd level 0) are written once by tensorstore with the suite's value formula
(``generate_benchmark_array.rs``), under ``--data``. Each measurement is a fresh process under
``/usr/bin/time -v``, as the suite runs them: wall time of the whole process (imports included,
the suite's metric), the workload's own time as the script prints it, CPU (user, then system),
minor page faults (fresh memory the kernel hands the process) and peak RSS. Implementations
alternate within each repeat; the best of ``--repeats`` is kept, and each row's ratio is ours
over the peer's in the same run. The page cache is warm (the suite drops
it, which needs root). Our package's bytecode is compiled first, as ``pip`` compiled the peers'
(``common.compile_package``): otherwise, where ``PYTHONDONTWRITEBYTECODE`` is set, each of our
processes would compile the package from source.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import compile_package  # noqa: E402

OURS = HERE / "peer_suite_zarr3.py"
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
ZSTD0 = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
INDEX = [BYTES, {"name": "crc32c"}]
STORES = {
    "uncompressed": [BYTES],
    "zstd": [BYTES, ZSTD0],
    "sharded": [
        {
            "name": "sharding_indexed",
            "configuration": {"chunk_shape": [64] * 3, "codecs": [BYTES, ZSTD0], "index_codecs": INDEX},
        }
    ],
}
#: Each implementation's script (ours: relative to this file; peers': to the suite's src/zarr_benchmarks) and the package it needs.
SCRIPTS = {
    "tensorstore": ("tensorstore_python_benchmark_{}.py", "tensorstore"),
    "zarr-python": ("zarr_python_benchmark_{}.py", "zarr"),
    "zarrs-python": ("zarrs_python_benchmark_{}.py", "zarrs"),
    "zarr+dask": ("zarr_dask_python_benchmark_{}.py", "dask"),
    "zarrs+dask": ("zarrs_dask_python_benchmark_{}.py", "zarrs"),
}
#: Runs a peer's script (``sys.argv[1]``) as ``__main__``; on Python 3.11 it first adds `itertools.batched`
#: (3.12), which the tensorstore roundtrip script uses.
SHIM = """import itertools, runpy, sys
if not hasattr(itertools, "batched"):
    itertools.batched = lambda items, n: iter(lambda it=iter(items): tuple(itertools.islice(it, n)), ())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
PLAIN = ["tensorstore", "zarr-python", "zarrs-python", "zarr3"]
DASK = ["zarr+dask", "zarrs+dask", "zarr3+dask"]


@dataclass(frozen=True)
class Workload:
    """One row group: a suite workload, its options and the implementations it compares."""

    name: str
    kind: str  # "read" or "roundtrip"
    options: tuple[str, ...]
    implementations: tuple[str, ...]
    stores: tuple[str, ...] = tuple(STORES)


WORKLOADS = [
    Workload("read_all", "read", ("--read_all",), tuple(PLAIN)),
    Workload("read_chunks 1", "read", ("--concurrent_chunks", "1"), tuple(PLAIN)),
    Workload("read_chunks 8", "read", ("--concurrent_chunks", "8"), tuple(PLAIN)),
    Workload(
        "read_subchunks 1", "read", ("--concurrent_chunks", "1", "--subchunks"), tuple(PLAIN), ("sharded",)
    ),
    Workload(
        "read_subchunks 8", "read", ("--concurrent_chunks", "8", "--subchunks"), tuple(PLAIN), ("sharded",)
    ),
    Workload("roundtrip", "roundtrip", (), tuple(PLAIN)),
    Workload("dask read_all", "read", ("--read_all",), tuple(DASK)),
    Workload("dask roundtrip", "roundtrip", (), tuple(DASK)),
]


@dataclass(frozen=True)
class Run:
    """One fresh process: seconds of wall, of the workload and of CPU; minor page faults; peak RSS bytes."""

    wall: float
    inner: float
    user: float
    system: float
    faults: int
    rss: int

    @property
    def cpu(self) -> float:
        """User plus system CPU seconds."""
        return self.user + self.system


def benchmark_values(origin: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """The suite's values for the box at ``origin``: ``(g2 + g1*g1 // 32 + g0**3) % 65536`` as uint16.

    >>> benchmark_values((1, 64, 3), (1, 1, 2)).tolist()
    [[[132, 133]]]
    """
    g0, g1, g2 = (np.arange(o, o + n, dtype=np.int64) for o, n in zip(origin, shape))
    total = g2[None, None, :] + (g1 * g1 // 32)[None, :, None] + (g0**3)[:, None, None]
    return (total % 65536).astype(np.uint16)


def write_stores(data: Path, edge: int) -> dict[str, Path]:
    """The three stores under ``data`` (written by tensorstore unless a finished one is there)."""
    import tensorstore as ts

    paths = {}
    for name, codecs in STORES.items():
        path = paths[name] = data / f"{name}_{edge}.zarr"
        if (path / ".complete").exists():
            continue
        shutil.rmtree(path, ignore_errors=True)
        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(path)},
            "metadata": {
                "shape": [edge] * 3,
                "data_type": "uint16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [256] * 3}},
                "codecs": codecs,
                "fill_value": 0,
            },
            "create": True,
        }
        store = ts.open(spec).result()
        for origin in np.ndindex(*(edge // 256,) * 3):
            start = tuple(256 * o for o in origin)
            store[tuple(slice(s, s + 256) for s in start)] = benchmark_values(start, (256,) * 3)
        (path / ".complete").touch()
    return paths


def command(
    implementation: str, workload: Workload, store: Path, output: Path, suite: Path | None
) -> list[str] | None:
    """The command line of one measurement; ``None`` when the implementation is not available here."""
    target = [str(store), str(output)] if workload.kind == "roundtrip" else [str(store)]
    if implementation.startswith("zarr3"):
        mode = ("dask_" if implementation.endswith("dask") else "") + workload.kind
        return [sys.executable, str(OURS), mode, *target, *workload.options]
    pattern, package = SCRIPTS[implementation]
    if suite is None or importlib.util.find_spec(package) is None:
        return None
    script = suite / "src" / "zarr_benchmarks" / pattern.format(workload.kind)
    if not script.exists():
        return None
    return [sys.executable, "-c", SHIM, str(script), *workload.options, *target]


def measure(args: list[str]) -> Run | None:
    """Run ``args`` under ``/usr/bin/time -v``; ``None`` if it fails (its stderr tail is printed)."""
    done = subprocess.run(["/usr/bin/time", "-v", *args], capture_output=True, text=True)
    report = done.stderr
    if done.returncode != 0:
        error = report.split("Command exited with non-zero status")[0].strip().splitlines()[-3:]
        print(f"  failed: {' '.join(args[-3:])}: {error}", file=sys.stderr)
        return None
    minutes, seconds = re.search(
        r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\d+):([\d.]+)", report
    ).groups()
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", report).group(1))
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", report).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", report).group(1)) * 1024
    faults = int(re.search(r"Minor \(reclaiming a frame\) page faults: (\d+)", report).group(1))
    inner = re.search(r"(?:Decoded|Round trip) in ([\d.]+)ms", done.stdout)
    return Run(
        int(minutes) * 60 + float(seconds),
        float(inner.group(1)) / 1000 if inner else float("nan"),
        user,
        system,
        faults,
        rss,
    )


def best(runs: list[Run]) -> Run:
    """The fastest run (by the workload's own time), as the suite keeps the best of its repeats."""
    return min(runs, key=lambda r: (r.inner, r.wall))


def run_workload(
    workload: Workload, stores: dict[str, Path], suite: Path | None, repeats: int
) -> Iterator[str]:
    """Table lines for ``workload``: a line per store and implementation, ratios ours / peer."""
    ours = next(i for i in workload.implementations if i.startswith("zarr3"))
    for store_name in workload.stores:
        results: dict[str, list[Run]] = {}
        with tempfile.TemporaryDirectory(dir=stores[store_name].parent) as scratch:
            for _ in range(repeats):
                for implementation in workload.implementations:
                    output = Path(scratch) / "out.zarr"
                    args = command(implementation, workload, stores[store_name], output, suite)
                    run = None if args is None else measure(args)
                    shutil.rmtree(output, ignore_errors=True)
                    if run is not None:
                        results.setdefault(implementation, []).append(run)
        mine = best(results[ours]) if ours in results else None
        for implementation in workload.implementations:
            if implementation not in results:
                yield f"| {workload.name} | {store_name} | {implementation} | skipped | | | | | | |"
                continue
            r = best(results[implementation])
            ratios = "" if mine is None or implementation == ours else _ratios(mine, r)
            yield (
                f"| {workload.name} | {store_name} | {implementation} | {r.inner:.2f} | {r.wall:.2f} "
                f"| {r.user:.2f} | {r.system:.2f} | {r.faults / 1000:.0f} | {r.rss / 1e9:.2f} | {ratios} |"
            )


def _ratios(mine: Run, peer: Run) -> str:
    """Ours over ``peer``: the workload's time, process wall time, CPU and peak RSS."""
    return " / ".join(
        f"{a / b:.2f}x"
        for a, b in (
            (mine.inner, peer.inner),
            (mine.wall, peer.wall),
            (mine.cpu, peer.cpu),
            (mine.rss, peer.rss),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=None, help="a checkout of zarrs/zarr_benchmarks")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "zarr3_peer_suite")
    parser.add_argument("--quick", action="store_true", help="512^3 instead of 1024^3")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", action="append", default=[], help="workload names (repeatable)")
    args = parser.parse_args()
    suite = (
        args.suite if args.suite is not None and (args.suite / "src" / "zarr_benchmarks").is_dir() else None
    )
    if suite is None:
        print("no zarrs/zarr_benchmarks checkout (--suite): peers' rows skipped")
    print(compile_package())
    edge = 512 if args.quick else 1024
    args.data.mkdir(parents=True, exist_ok=True)
    stores = write_stores(args.data, edge)
    print(f"edge {edge}^3 uint16, best of {args.repeats}, load average {os.getloadavg()[0]:.2f} at start")
    print(
        "| workload | store | implementation | time (s) | process wall (s) | user CPU (s) | system CPU (s) "
        "| minor faults (10^3) | peak RSS (GB) | zarr3 / peer: time / wall / CPU / peak RSS |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for workload in WORKLOADS:
        if args.only and workload.name not in args.only:
            continue
        for line in run_workload(workload, stores, suite, args.repeats):
            print(line, flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
