"""Writes of many small shards, and the metadata tools, at 10^2 to 10^5 shards (issue 55, items 3 and 5).

The arrays are shaped as in ``bench_scale.py``: ``v`` float32 ``(time=N, 32, 64)``,
one shard ``(1, 32, 64)`` per step holding 4 inner chunks ``(1, 16, 32)``.

* `write_rows()`: ``ds.to_zarr3`` against ``ds.to_zarr(zarr_format=3)``
  (zarr-python) of a dask dataset chunked one step per block, on dask's
  threaded scheduler and on ``LocalCluster(n_workers=2, threads_per_worker=1)``
  (the source persisted on the workers first, so only the write is timed).
  ``cpu_s`` is this process's CPU (the client, and the cluster's scheduler),
  ``workers_cpu_s`` the workers' (per write, warm-up included in the mean).
* `metadata_rows()`: ``zarr3 info`` (metadata only, the default) and
  ``zarr3 info --stored`` in this process (``print_info``, output discarded),
  and ``zarr3 info`` as a command beside ``zarr3 --version`` (its start-up);
  ``validate_store()`` and a plain ``os.walk`` of the store, in this process. The stores are written by zarr-python (zstd,
  crc32c index) when it is installed, by us otherwise; every shard is present
  (the first one written, its bytes copied to the others).

``bench_scale.py`` imports both functions; run alone, this prints a table
(``--quick``: only the small sizes).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

SPACE = (32, 64)
INNER = (1, 16, 32)
SHARD = (1, 32, 64)
ZARR3 = [sys.executable, "-m", "zarr3_backend"]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _best(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeats`` calls of ``fn`` after one warm-up call."""
    fn()
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), _cpu()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


#: Print each row to stderr as it is measured (set when run alone).
ECHO = False


def _row(workload: str, impl: str, shards: int, seconds: float, **extra: object) -> dict[str, object]:
    row = {
        "workload": workload,
        "impl": impl,
        "shards": shards,
        "seconds": round(seconds, 4),
        "us_per_shard": round(seconds / shards * 1e6, 1),
        **extra,
    }
    if ECHO:
        print(row, f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    return row


# ---------------------------------------------------------------- writes


def _dataset(n: int, lazy: bool = False):  # -> xr.Dataset
    """``v`` chunked one step per block: numpy-backed, or (``lazy``) drawn by dask, to persist on a cluster."""
    import dask.array as da
    import xarray as xr

    shape = (n, *SPACE)
    if lazy:
        values = da.random.default_rng(0).random(shape, dtype="float32", chunks=(1, *SPACE))
        return xr.Dataset({"v": (("time", "lat", "lon"), values)})
    values = np.random.default_rng(0).random(shape, dtype="float32")
    return xr.Dataset({"v": (("time", "lat", "lon"), values)}).chunk({"time": 1})


def _writers(ds, out: Path) -> dict[str, Callable[[], object]]:
    """Writers of ``ds``; each call writes a new store under ``out`` (removing stores is never timed)."""
    import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3)

    encoding = {"v": {"chunks": INNER, "shards": SHARD}}
    calls = itertools.count()

    def to_zarr3() -> None:
        ds.to_zarr3(out / f"ours-{next(calls)}.zarr", encoding=encoding)

    def to_zarr() -> None:
        ds.to_zarr(out / f"theirs-{next(calls)}.zarr", zarr_format=3, encoding=encoding, consolidated=False)

    return {"to_zarr3": to_zarr3, "to_zarr": to_zarr}


def write_rows(
    quick: bool, sizes: Sequence[int] | None = None, schedulers: Sequence[str] = ("cluster", "threaded")
) -> list[dict[str, object]]:
    """``to_zarr3`` vs ``to_zarr`` of N small shards, on a 2-process LocalCluster and threaded."""
    import dask
    from distributed import Client, LocalCluster, wait

    sizes = sizes or ((100, 300) if quick else (100, 1000, 3000, 10000))
    on_cluster = sizes if "cluster" in schedulers else ()
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale-writes-") as tmp:
        out = Path(tmp)
        with (
            LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            Client(cluster) as client,
        ):
            for n in on_cluster:
                ds = _dataset(n, lazy=True).persist()
                wait(ds.v.data)
                for impl, write in _writers(ds, out).items():
                    repeats = 1 if n > 1000 else 3
                    workers = sum(client.run(_cpu).values())
                    wall, cpu = _best(write, repeats)
                    workers = (sum(client.run(_cpu).values()) - workers) / (repeats + 1)  # with the warm-up
                    rows.append(_row("write cluster", impl, n, wall, cpu_s=round(cpu, 3),
                                     workers_cpu_s=round(workers, 3)))  # fmt: skip
                del ds
                _clear(out)
            client.close()
        for n in sizes if "threaded" in schedulers else ():
            ds = _dataset(n)
            with dask.config.set(scheduler="threads"):
                for impl, write in _writers(ds, out).items():
                    wall, cpu = _best(write, 1 if n > 1000 else 3)
                    rows.append(_row("write threaded", impl, n, wall, cpu_s=round(cpu, 3)))
            _clear(out)
    return rows


def _clear(out: Path) -> None:
    for path in out.iterdir():
        shutil.rmtree(path)


# ---------------------------------------------------------------- info and validate


def build_store(root: Path, n: int) -> Path:
    """``v`` (time=n, 32, 64) with every shard present: the first written, its bytes copied to the rest."""
    first = np.arange(np.prod(SPACE), dtype="float32").reshape(1, *SPACE)
    try:
        import zarr

        group = zarr.open_group(root, mode="w", zarr_format=3)
        codecs = [zarr.codecs.ZstdCodec(level=3)]
        array = group.create_array(
            "v", shape=(n, *SPACE), dtype="float32", chunks=INNER, shards=SHARD, compressors=codecs,
            dimension_names=("time", "lat", "lon"), fill_value=np.nan,
        )  # fmt: skip
        array[0:1] = first
    except ImportError:
        import zarr3_backend

        array = zarr3_backend.create_array(root, "v", shape=(n, *SPACE), dtype="float32", chunks=INNER,
                                           shards=SHARD, dimension_names=("time", "lat", "lon"))  # fmt: skip
        array[0:1] = first
    shard = (root / "v" / "c" / "0" / "0" / "0").read_bytes()
    for t in range(1, n):
        place = root / "v" / "c" / str(t) / "0"
        place.mkdir(parents=True, exist_ok=True)
        (place / "0").write_bytes(shard)
    return root


def _command(*args: str, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of the ``zarr3`` command (CPU: the child's, less disturbed by load)."""

    def run() -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([*ZARR3, *args], check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    run()
    walls, cpus = [], []
    for _ in range(repeats):
        wall = time.perf_counter()
        cpus.append(run())
        walls.append(time.perf_counter() - wall)
    return statistics.median(walls), statistics.median(cpus)


def _info(root: Path, stored: bool) -> None:
    from zarr3_backend.cli.info import print_info
    from zarr3_backend.store import make_store

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        print_info(make_store(str(root), read_only=True), "", stored=stored)


def _walk(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def metadata_rows(quick: bool) -> list[dict[str, object]]:
    """``zarr3 info`` (default and ``--stored``) and ``validate_store`` against ``os.walk``, N shards present."""
    from zarr3_backend.validate import validate_store

    sizes = (1000,) if quick else (10_000, 100_000)
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale-tools-") as tmp:
        for n in sizes:
            root = build_store(Path(tmp) / f"{n}.zarr", n)
            repeats = 3 if n <= 10_000 else 1
            start, start_cpu = _command("--version", repeats=repeats)
            rows.append(_row("zarr3 command", "zarr3 --version", n, start, cpu_s=round(start_cpu, 3)))
            wall, cpu = _command("info", str(root), repeats=repeats)
            rows.append(_row("zarr3 command", "zarr3 info", n, wall, cpu_s=round(cpu, 3)))
            for impl, stored in (("info", False), ("info --stored", True)):
                wall, cpu = _best(lambda root=root, stored=stored: _info(root, stored), repeats)
                rows.append(_row("zarr3 info (in process)", impl, n, wall, cpu_s=round(cpu, 3)))
            walk, walk_cpu = _best(lambda root=root: _walk(root), repeats)
            rows.append(_row("list the store", "os.walk", n, walk, cpu_s=round(walk_cpu, 3)))
            wall, cpu = _best(lambda root=root: validate_store(root), repeats)
            rows.append(_row("list the store", "validate_store", n, wall, cpu_s=round(cpu, 3),
                             vs_walk=round(wall / walk, 2)))  # fmt: skip
            shutil.rmtree(root)
    return rows


# ---------------------------------------------------------------- alone


def print_rows(rows: list[dict[str, object]]) -> None:
    """A table: one line per row, with the extras at the end."""
    print(f"{'workload':<30} {'impl':<22} {'shards':>7} {'seconds':>9} {'us/shard':>9}  extras")
    for row in rows:
        extras = {
            k: v for k, v in row.items() if k not in ("workload", "impl", "shards", "seconds", "us_per_shard")
        }
        print(f"{row['workload']:<30} {row['impl']:<22} {row['shards']:>7} {row['seconds']:>9.3f} "
              f"{row['us_per_shard']:>9.1f}  {' '.join(f'{k}={v}' for k, v in extras.items())}")  # fmt: skip


@contextlib.contextmanager
def _load_lines() -> Iterator[None]:
    print(f"load average {os.getloadavg()[0]:.2f} before")
    yield
    print(f"load average {os.getloadavg()[0]:.2f} after")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the small sizes")
    parser.add_argument("--only", choices=("writes", "metadata"), help="one half only")
    parser.add_argument("--sizes", type=int, nargs="+", help="numbers of shards of the writes")
    parser.add_argument(
        "--schedulers", nargs="+", choices=("cluster", "threaded"), default=("cluster", "threaded")
    )
    args = parser.parse_args(argv)
    global ECHO
    ECHO = True
    with _load_lines():
        if args.only != "writes":
            print_rows(metadata_rows(args.quick))
        if args.only != "metadata":
            print_rows(write_rows(args.quick, args.sizes, args.schedulers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
