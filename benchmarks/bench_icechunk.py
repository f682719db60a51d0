"""Icechunk benchmark: engine="zarr3" / to_zarr3 through an Icechunk session vs xarray + zarr-python and
icechunk.xarray.to_icechunk on the same repository, and vs our own plain local store, in one run.

Workloads (the ``t2m`` field of ``bench_core``: shards (73, 364, 720), inner chunks (73, 91, 180),
blosc zstd clevel 3 shuffle; ``--quick``: (146, 361, 720), else (730, 361, 720) = 759 MB):
- full read with ``chunks={}`` (``.load()``): ours on a read-only session, ``engine="zarr"`` on the
  same session, ours on a plain local store of the same data;
- write + commit of the dataset chunked like the shards, threaded: ``ds.to_zarr3(session.store)`` +
  ``session.commit``, ``icechunk.xarray.to_icechunk`` + ``session.commit`` (a fresh repository each
  call, made untimed), ``ds.to_zarr3`` into a fresh local directory;
- the same writes on ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``, the data
  persisted on the workers first;
- append + commit on that cluster: the second half of the time steps appended along ``time`` to a
  repository holding the first half (written and committed untimed), by ``to_zarr3(append_dim=...)`` and
  by ``to_icechunk(append_dim=...)``.
Ratios: ours / theirs on Icechunk, and ours on Icechunk / ours on a plain store (the adapter's cost).

``python benchmarks/bench_icechunk.py --quick``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from common import Case, climate_field, print_machine_info, time_interleaved  # noqa: E402
from floor import CHUNKS, FULL_SHAPE, QUICK_SHAPE, SHARDS  # noqa: E402

import zarr3_backend  # noqa: E402, F401

WORK = Path("/tmp/zarr3_backend_bench/icechunk")
warnings.filterwarnings("ignore")


def dataset(shape: tuple[int, int, int]) -> xr.Dataset:
    nt, ny, nx = shape
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), climate_field(shape), {"units": "K"})},
        coords={
            "time": np.arange(nt),
            "lat": np.linspace(90, -90, ny),
            "lon": np.linspace(0, 360, nx, endpoint=False),
        },
    )


def encoding() -> dict[str, dict[str, object]]:
    from zarr.codecs import BloscCodec

    blosc = BloscCodec(cname="zstd", clevel=3, shuffle="shuffle")
    return {"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [blosc]}}


class Fresh:
    """A new Icechunk repository (or local directory) per call, made in ``setup`` (untimed)."""

    def __init__(self, name: str) -> None:
        self.path = WORK / name
        self.session = None

    def repo(self) -> None:
        import icechunk

        shutil.rmtree(self.path, ignore_errors=True)
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(self.path)))
        self.session = repo.writable_session("main")

    def directory(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def holding(self, first: xr.Dataset) -> None:
        """A new repository holding ``first`` (committed), and a writable session on it."""
        self.repo()
        first.to_zarr(self.session.store, zarr_format=3, consolidated=False, encoding=encoding())  # type: ignore[attr-defined]
        self.session.commit("first half")  # type: ignore[attr-defined]
        import icechunk

        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(self.path)))
        self.session = repo.writable_session("main")


def icechunk_on_this_xarray() -> None:
    """icechunk 1.1's ``to_icechunk`` passes ``synchronizer``/``zarr_version``, which xarray 2026.9's
    ``ZarrStore.open_group`` no longer takes (both unused, ``None``): drop them, change nothing else."""
    import inspect

    import icechunk.xarray as icechunk_xarray

    original = icechunk_xarray.ZarrStore.open_group
    if "synchronizer" in inspect.signature(original).parameters:
        return

    class ZarrStore(icechunk_xarray.ZarrStore):  # type: ignore[misc]
        @classmethod
        def open_group(cls, *args, synchronizer=None, zarr_version=None, **kwargs):  # type: ignore[no-untyped-def]
            return original(*args, **kwargs)

    icechunk_xarray.ZarrStore = ZarrStore


def write_cases(ds: xr.Dataset, label: str) -> dict[str, Case]:
    from icechunk.xarray import to_icechunk

    icechunk_on_this_xarray()

    ours, theirs, plain = Fresh(f"w-ours{label}"), Fresh(f"w-theirs{label}"), Fresh(f"w-plain{label}")

    def run_ours() -> None:
        ds.to_zarr3(ours.session.store, encoding=encoding())
        ours.session.commit("ours")

    def run_theirs() -> None:
        to_icechunk(ds, theirs.session, encoding=encoding())
        theirs.session.commit("theirs")

    return {
        "to_zarr3 + commit": Case(run_ours, setup=ours.repo),
        "to_icechunk + commit": Case(run_theirs, setup=theirs.repo),
        "to_zarr3, plain store": Case(
            lambda: ds.to_zarr3(plain.path, encoding=encoding()), setup=plain.directory
        ),
    }


def append_cases(first: xr.Dataset, second: xr.Dataset) -> dict[str, Case]:
    from icechunk.xarray import to_icechunk

    icechunk_on_this_xarray()
    ours, theirs = Fresh("a-ours"), Fresh("a-theirs")

    def run_ours() -> None:
        second.to_zarr3(ours.session.store, append_dim="time")
        ours.session.commit("ours")

    def run_theirs() -> None:
        to_icechunk(second, theirs.session, append_dim="time")
        theirs.session.commit("theirs")

    return {
        "to_zarr3 append + commit": Case(run_ours, setup=lambda: ours.holding(first.load())),
        "to_icechunk append + commit": Case(run_theirs, setup=lambda: theirs.holding(first.load())),
    }


def read_cases(ds: xr.Dataset) -> dict[str, Case]:
    import icechunk

    path = WORK / "source"
    shutil.rmtree(path, ignore_errors=True)
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    session = repo.writable_session("main")
    ds.to_zarr(session.store, zarr_format=3, consolidated=False, encoding=encoding())
    session.commit("source")
    store = repo.readonly_session(branch="main").store
    plain = WORK / "source.zarr"
    shutil.rmtree(plain, ignore_errors=True)
    ds.to_zarr(plain, zarr_format=3, consolidated=False, encoding=encoding())
    expected = ds.t2m.values

    def check(result: object) -> None:
        assert np.array_equal(np.asarray(result), expected)

    return {
        "zarr3 (ours)": Case(
            lambda: xr.open_dataset(store, engine="zarr3", chunks={}).t2m.values, check=check
        ),
        "zarr (zarr-python)": Case(
            lambda: xr.open_dataset(store, engine="zarr", chunks={}, consolidated=False).t2m.values,
            check=check,
        ),
        "zarr3 (ours), plain store": Case(
            lambda: xr.open_dataset(plain, engine="zarr3", chunks={}).t2m.values, check=check
        ),
    }


def report(title: str, timings: dict[str, object], ratios: list[tuple[str, str]]) -> None:
    print(f"\n{title}")
    for name, timing in timings.items():
        print(f"  {name:32s} {timing.median:7.2f} s  (cpu {timing.cpu_median or 0:6.2f} s)")  # type: ignore[attr-defined]
    for ours, theirs in ratios:
        ratio = timings[ours].median / timings[theirs].median  # type: ignore[attr-defined]
        print(f"  ratio {ours} / {theirs}: {ratio:.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"shape {QUICK_SHAPE} instead of {FULL_SHAPE}")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    shape = QUICK_SHAPE if args.quick else FULL_SHAPE
    print_machine_info(["zarr3_backend", "icechunk", "zarr", "xarray", "dask", "numpy"])
    print(f"shape {shape}, shards {SHARDS}, inner chunks {CHUNKS}")
    ds = dataset(shape)
    WORK.mkdir(parents=True, exist_ok=True)

    reads = time_interleaved(read_cases(ds), repeats=args.repeats)
    report(
        "full read, chunks={}",
        reads,
        [("zarr3 (ours)", "zarr (zarr-python)"), ("zarr3 (ours)", "zarr3 (ours), plain store")],
    )
    write_ratios = [
        ("to_zarr3 + commit", "to_icechunk + commit"),
        ("to_zarr3 + commit", "to_zarr3, plain store"),
    ]
    lazy = ds.chunk({"time": SHARDS[0]})
    report("write, threaded", time_interleaved(write_cases(lazy, ""), repeats=args.repeats), write_ratios)

    from distributed import Client, LocalCluster, wait

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster),
    ):
        persisted = lazy.persist()
        wait(persisted)
        timings = time_interleaved(write_cases(persisted, "-cluster"), repeats=args.repeats)
        half = shape[0] // 2 // SHARDS[0] * SHARDS[0] or shape[0] // 2
        appends = time_interleaved(
            append_cases(persisted.isel(time=slice(0, half)), persisted.isel(time=slice(half, None))),
            repeats=args.repeats,
        )
    report("write, LocalCluster 2 procs x 1 thread", timings, write_ratios)
    report(
        "append + commit, LocalCluster 2 procs x 1 thread",
        appends,
        [("to_zarr3 append + commit", "to_icechunk append + commit")],
    )


if __name__ == "__main__":
    main()
