"""``bench_write.py --executors dask,cubed``: to_zarr3 on each executor beside xarray's to_zarr on Cubed.

The dataset is stored once (our write, the benchmark's shards and codecs),
then opened lazily with one chunk per shard (``chunks={}``) by each engine,
so every case reads shards and writes shards: on dask's threaded scheduler,
and on Cubed's ``threads`` and ``processes`` executors (2 workers, one
``Spec`` with ``allowed_mem`` 2 GB), ``to_zarr3`` against xarray's own
``to_zarr(zarr_format=3)`` (cubed-xarray's ``store``) with the same encoding.
Printed per case: median seconds, CPU seconds (this process plus finished
child processes: Cubed's process pool), peak RSS growth of this process,
and the ratio of our Cubed write to xarray's on the same executor.
"""

from __future__ import annotations

import resource
import shutil
import statistics
from pathlib import Path

from common import Case, time_interleaved
from floor import BLOSC_JSON, CHUNKS, SHARDS

CUBED_EXECUTORS = ("threads", "processes")


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _cases(source: Path, out: Path, executors: list[str], verify) -> dict[str, Case]:
    import cubed
    import dask
    import xarray as xr
    import zarr.codecs

    ours = {"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [BLOSC_JSON]}}
    blosc = zarr.codecs.BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=4)
    theirs = {"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [blosc]}}
    opened = {}
    if "dask" in executors:
        opened["dask threads"] = xr.open_dataset(source, engine="zarr3", chunks={})
    if "cubed" in executors:
        for name in CUBED_EXECUTORS:
            spec = cubed.Spec(
                work_dir=str(out / f"work-{name}"),
                allowed_mem="2GB",
                executor_name=name,
                executor_options={"max_workers": 2},
            )
            opened[f"cubed {name}"] = xr.open_dataset(
                source,
                engine="zarr3",
                chunks={},
                chunked_array_type="cubed",
                from_array_kwargs={"spec": spec},
            )
    cases = {}
    for label, ds in opened.items():
        writes = {"to_zarr3": lambda p, ds=ds: ds.to_zarr3(p, mode="w", encoding=ours)}
        if label.startswith("cubed"):
            writes["xarray to_zarr"] = lambda p, ds=ds: ds.to_zarr(
                p, mode="w", zarr_format=3, encoding=theirs, consolidated=False
            )
        for writer, write in writes.items():
            path = out / f"{writer}-{label}.zarr".replace(" ", "_")

            def run(write=write, path=path) -> None:
                with dask.config.set(scheduler="threads"):
                    write(path)

            cases[f"{writer} ({label})"] = Case(
                run=run,
                setup=lambda path=path: shutil.rmtree(path, ignore_errors=True),
                check=lambda _, path=path, name=f"{writer} ({label})": verify(path, name),
            )
    return cases


def run_executors(ds, data, out: Path, failures: list[str], repeats: int, executors: list[str]) -> None:
    """Print the executor table (see the module docstring)."""
    import os
    import warnings

    import numpy as np

    import zarr3_backend

    source = out / "executors-source.zarr"
    ds.to_zarr3(
        source, mode="w", encoding={"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [BLOSC_JSON]}}
    )

    def verify(path: Path, name: str) -> None:
        if not np.array_equal(zarr3_backend.open_array(path, "t2m")[...], data):
            failures.append(f"executors/{name}: reads different data from {path}")

    cases = _cases(source, out, executors, verify)
    cpu: dict[str, list[float]] = {}
    for name, case in cases.items():
        cases[name] = _with_cpu(case, cpu.setdefault(name, []))
    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timings = time_interleaved(cases, repeats=repeats)
    print(
        f"\n== executors: t2m {data.shape} float32 ({data.nbytes / 1e6:.0f} MB), one chunk per shard read and written"
    )
    print(f"  load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"  {'case':42s} {'median s':>9s} {'MB/s':>7s} {'cpu s':>7s} {'peak dRSS MB':>13s}")
    for name, timing in timings.items():
        seconds = timing.median
        print(
            f"  {name:42s} {seconds:9.2f} {data.nbytes / 1e6 / seconds:7.0f} "
            f"{statistics.median(cpu[name][-repeats:]):7.1f} {timing.peak_rss_bytes / 1e6:13.0f}"
        )
    for executor in CUBED_EXECUTORS:
        ours, theirs = (
            timings.get(f"to_zarr3 (cubed {executor})"),
            timings.get(f"xarray to_zarr (cubed {executor})"),
        )
        if ours is not None and theirs is not None:
            print(f"  cubed {executor}: to_zarr3 / xarray to_zarr = {ours.median / theirs.median:.2f}x")


def _with_cpu(case: Case, cpu: list[float]) -> Case:
    def run() -> object:
        start = _cpu()
        result = case.run()
        cpu.append(_cpu() - start)
        return result

    return Case(run=run, setup=case.setup, check=case.check)
