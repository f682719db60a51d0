"""A monthly climatology from calendar-chunked stores: monthly shards (rectilinear) vs regular 30-day shards.

The data: ``t2m`` of ``zarr3_backend.synthetic.era5_like``, 2 years daily
(2021-2022) on a 1 degree grid (730 x 181 x 360 float32, 190 MB), zstd (level
3) then crc32c, inner chunks of one day (1, 181, 360). Three stores, written
once and kept under ``--dir``:

* ``monthly``: rectilinear shards of one calendar month each (24 shards),
  written by ``to_zarr3`` from ``TimeResampler("ME")`` dask chunks with
  ``shards="dask"``;
* ``regular30``: regular 30-day shards, same inner chunks, written by ``to_zarr3``;
* ``zarr-best``: zarr-python's best regular layout for the job, written by
  ``to_zarr(zarr_format=3)``: unsharded (30, 181, 360) chunks (a month each, near enough;
  a task per chunk, no shard index to read).

Two workloads, each opening with ``chunks={}``:

* ``resample``: ``t2m.resample(time="ME").mean()`` on every store. On the
  monthly store every month is one dask block; on 30-day shards most months
  span two blocks;
* ``best per layout``: the monthly store computed block by block
  (``map_blocks`` of a mean: one task per month reads, decodes and reduces its
  shard), which only a calendar grid allows; the regular stores as in ``resample``.

Both workloads also time the floor: the monthly store's shard files read
whole, every inner chunk checked (crc32c) and decompressed (numcodecs zstd)
into its month's buffer, a mean per month; a task per month on 2 threads, no
xarray, dask or zarr logic. What separates us from it is our overhead; what
separates it from a target is the decoding itself.

Cases run interleaved, median of ``--repeats`` after a warm-up; ratios are the
monthly store over each other case (targets: <= 0.7 vs ``regular30``, <= 0.5 vs
``engine="zarr"``). The CPU-seconds ratios are the steadier ones on a shared machine.
``python benchmarks/bench_calendar.py --json benchmarks/results/bench_calendar.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from common import Case, ResultTable, print_machine_info, time_interleaved, write_results  # noqa: E402

LIBRARIES = ["zarr3_backend", "xarray", "zarr", "dask", "numcodecs", "numpy"]
COMPRESSORS = [{"name": "zstd", "configuration": {"level": 3, "checksum": False}}, {"name": "crc32c"}]
STORE_VERSION = 1  # bump when the stores' contents change: cached copies are then rewritten
OURS = "monthly shards (zarr3)"
FLOOR = "floor: numcodecs + numpy, 2 threads"
_FLOOR_POOL = ThreadPoolExecutor(2, thread_name_prefix="floor")


def _dataset(quick: bool):  # type: ignore[no-untyped-def]
    from zarr3_backend.synthetic import era5_like

    days, nlat, nlon = (365, 46, 90) if quick else (730, 181, 360)
    return era5_like(start="2021-01-01", days=days, nlat=nlat, nlon=nlon)[["t2m"]].load()


def _write_stores(root: Path, quick: bool) -> dict[str, Path]:
    from xarray.groupers import TimeResampler

    import zarr3_backend  # noqa: F401  (registers to_zarr3)

    stamp = root / f"stores-v{STORE_VERSION}{'-quick' if quick else ''}"
    paths = {name: stamp / f"{name}.zarr" for name in ("monthly", "regular30", "zarr-best")}
    if all(p.exists() for p in paths.values()):
        return paths
    shutil.rmtree(stamp, ignore_errors=True)
    ds = _dataset(quick)
    _, nlat, nlon = ds.t2m.shape
    inner = (1, nlat, nlon)
    monthly = ds.chunk(time=TimeResampler("ME"))
    monthly.to_zarr3(
        paths["monthly"], encoding={"t2m": {"chunks": inner, "shards": "dask", "compressors": COMPRESSORS}}
    )
    encoding = {"t2m": {"chunks": inner, "shards": (30, nlat, nlon), "compressors": COMPRESSORS}}
    ds.to_zarr3(paths["regular30"], encoding=encoding)
    from zarr.codecs import Crc32cCodec, ZstdCodec

    best = {"t2m": {"chunks": (30, nlat, nlon), "compressors": [ZstdCodec(level=3), Crc32cCodec()]}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(paths["zarr-best"], zarr_format=3, encoding=best, consolidated=True)
    return paths


def _climatology(path: Path, engine: str) -> np.ndarray:
    import xarray as xr

    ds = xr.open_dataset(path, engine=engine, chunks={})
    return ds.t2m.resample(time="ME").mean().values


def _block_by_block(path: Path) -> np.ndarray:
    import xarray as xr

    data = xr.open_dataset(path, engine="zarr3", chunks={}).t2m.data
    chunks = ((1,) * data.numblocks[0], *data.chunks[1:])
    return np.asarray(data.map_blocks(_block_mean, chunks=chunks, dtype=data.dtype).compute())


def _block_mean(block: np.ndarray) -> np.ndarray:
    return block.mean(axis=0, keepdims=True)


def _floor(path: Path) -> np.ndarray:
    """The monthly means straight from the monthly store's shard files (see the module docstring)."""
    meta = json.loads((path / "t2m" / "zarr.json").read_text())
    months = _run_lengths(meta["chunk_grid"]["configuration"]["chunk_shapes"][0])
    _, nlat, nlon = meta["shape"]
    shards = [path / "t2m" / "c" / str(m) / "0" / "0" for m in range(len(months))]
    return np.concatenate(list(_FLOOR_POOL.map(lambda f, n: _floor_month(f, n, nlat, nlon), shards, months)))


def _floor_month(shard: Path, days: int, nlat: int, nlon: int) -> np.ndarray:
    from crc32c import crc32c
    from numcodecs.zstd import decompress

    data = memoryview(shard.read_bytes())
    index = np.frombuffer(data[len(data) - 16 * days - 4 : len(data) - 4], dtype="<u8").reshape(days, 2)
    out = np.empty((days, nlat, nlon), dtype="<f4")
    for day, (offset, nbytes) in enumerate(index.tolist()):
        frame = data[offset : offset + nbytes - 4]
        if crc32c(frame) != int.from_bytes(data[offset + nbytes - 4 : offset + nbytes], "little"):
            raise ValueError(f"{shard}: checksum mismatch in day {day}")
        decompress(frame, out[day])
    return out.mean(axis=0, keepdims=True)


def _run_lengths(spec: list[int | list[int]]) -> list[int]:
    """A rectilinear dimension's chunk lengths with its ``[length, count]`` runs expanded."""
    return [n for item in spec for n in ([item[0]] * item[1] if isinstance(item, list) else [item])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/zarr3_bench_calendar"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 year on a 4 degree grid")
    parser.add_argument("--json", type=Path, help="write the results here (docs/render_performance.py)")
    args = parser.parse_args(argv)
    print_machine_info(LIBRARIES)
    paths = _write_stores(args.dir, args.quick)
    expected = _dataset(args.quick).t2m.resample(time="ME").mean().values

    def check(result: object) -> None:
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-5)

    import dask

    dask.config.set(scheduler="threads")
    regular = {
        "regular 30-day shards (zarr3)": Case(lambda: _climatology(paths["regular30"], "zarr3"), check=check),
        'zarr-python best regular (engine="zarr")': Case(
            lambda: _climatology(paths["zarr-best"], "zarr"), check=check
        ),
    }
    floor = {FLOOR: Case(lambda: _floor(paths["monthly"]), check=check)}
    workloads = {
        "monthly climatology, resample": {
            OURS: Case(lambda: _climatology(paths["monthly"], "zarr3"), check=check),
            **regular,
            **floor,
        },
        "monthly climatology, best per layout": {
            OURS: Case(lambda: _block_by_block(paths["monthly"]), check=check),
            **regular,
            **floor,
        },
    }
    nbytes = int(np.prod(_shape(paths["monthly"]))) * 4
    table = ResultTable(OURS, [*regular, FLOOR], floor=FLOOR)
    for workload, cases in workloads.items():
        for name, timing in time_interleaved(cases, repeats=args.repeats).items():
            table.add(workload, name, timing, nbytes)
    table.print()
    if args.json:
        write_results(
            args.json, "benchmarks/bench_calendar.py", LIBRARIES, {"calendar": table.to_json()}, argv or []
        )
    return 0


def _shape(path: Path) -> tuple[int, ...]:
    import zarr3_backend

    return zarr3_backend.open_array(str(path), "t2m").shape


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
