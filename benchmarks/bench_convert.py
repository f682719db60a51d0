"""Convert benchmark: the climate-like ``t2m`` archived as Zarr v2 with blosc-lz4 + shuffle, rewritten as sharded v3.

The source is what ``xr.Dataset(...).to_zarr(path, zarr_format=2)`` writes
for the workload array (float32 (730, 361, 720), ~760 MB; ``--quick``:
(146, 361, 720)) with its lat/lon coordinates: zarr-python's automatic
chunks, compressed with ``Blosc(cname="lz4", clevel=5, shuffle=SHUFFLE)``
(a common archive choice). Both implementations produce the same layout
and the same codecs (like for like): inner chunks = the source chunks,
shards = convert's default, inner codecs ``bytes``, blosc-lz4 + shuffle,
``crc32c``. Cases, interleaved round-robin in one run:

* ``convert``: ``zarr3_backend.convert(src, dst, overwrite=True)`` (keeps
  the source's blosc and adds crc32c; every shard read back and verified);
* ``xarray+zarr-python``: ``xr.open_dataset(src, engine="zarr", chunks={})``,
  rechunked to the shards, encodings dropped, then
  ``to_zarr(zarr_format=3, encoding={"t2m": {"chunks", "shards",
  "compressors": [BloscCodec(lz4, 5, shuffle), Crc32cCodec()]}})`` (nothing
  verified);

each on dask's threaded scheduler and on ``LocalCluster(n_workers=2,
threads_per_worker=1, processes=True)``. Printed: median seconds, CPU seconds
of this process (threaded), the stored bytes of each output over the
source's (size ratio) and the time ratios; for cluster rows, the peak RSS
growth of the largest worker during a call, against the target of two
shards plus 64 MB. Every output is checked once (after the warm-up) against
the source values.

Run ``python benchmarks/bench_convert.py --quick`` for a smoke test.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path

import numcodecs
import numpy as np

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # a checkout works without installing

from common import (  # noqa: E402
    Case,
    ResultTable,
    climate_field,
    print_machine_info,
    reset_peak_rss,
    rss_bytes,
    time_interleaved,
    write_results,
)

FULL_SHAPE = (730, 361, 720)
QUICK_SHAPE = (146, 361, 720)
OURS, ZARR = "convert", "xarray+zarr-python"
SOURCE_COMPRESSOR = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
LIBRARIES = ["zarr3_backend", "xarray", "zarr", "dask", "distributed", "numcodecs", "numpy"]


def write_source(path: Path, shape: tuple[int, int, int]) -> np.ndarray:
    """The v2 store as xarray + zarr-python write it by default (reused when present); returns the values."""
    import xarray as xr

    data = climate_field(shape)
    if not (path / ".zmetadata").exists():
        ds = xr.Dataset(
            {"t2m": (("time", "lat", "lon"), data, {"units": "K"})},
            coords={
                "lat": np.linspace(90, -90, shape[1]),
                "lon": np.linspace(0, 360, shape[2], endpoint=False),
            },
        )
        ds.to_zarr(path, zarr_format=2, mode="w", encoding={"t2m": {"compressors": [SOURCE_COMPRESSOR]}})
    return data


def stored_bytes(path: Path) -> int:
    """Bytes of ``path``'s chunk and shard files (metadata documents left out)."""
    names = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name not in names)


def cases(src: Path, out: Path, data: np.ndarray, scheduler: str, client=None) -> dict[str, Case]:
    import dask
    import xarray as xr
    import zarr
    from zarr.codecs import BloscCodec, Crc32cCodec

    import zarr3_backend
    from zarr3_backend.conversion import default_shards

    chunks = zarr.open_array(src / "t2m").chunks
    shards = default_shards(data.shape, chunks, data.dtype.itemsize)
    compressors = [BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=4), Crc32cCodec()]

    def ours(path: Path) -> None:
        zarr3_backend.convert(src, path, overwrite=True)

    def theirs(path: Path) -> None:
        ds = xr.open_dataset(src, engine="zarr", chunks={})
        ds = ds.chunk(dict(zip(ds.t2m.dims, shards)))
        for variable in ds.variables.values():
            variable.encoding = {}
        ds.to_zarr(
            path,
            mode="w",
            zarr_format=3,
            consolidated=True,
            encoding={"t2m": {"chunks": chunks, "shards": shards, "compressors": compressors}},
        )

    def check(path: Path) -> None:
        written = zarr3_backend.open_array(path, "t2m")
        assert (written.chunks, written.shards) == (chunks, shards), (written.chunks, written.shards)
        inner = written.metadata.to_json()["codecs"][0]["configuration"]["codecs"]
        assert [c["name"] for c in inner] == ["bytes", "blosc", "crc32c"], inner
        blosc = inner[1]["configuration"]
        assert (blosc["cname"], blosc["clevel"], blosc["shuffle"]) == ("lz4", 5, "shuffle"), blosc
        assert np.array_equal(written[:], data), f"{path}: values differ from the source"

    made = {}
    for name, convert in ((OURS, ours), (ZARR, theirs)):
        path = out / f"{name.split('+')[0]}_{scheduler}.zarr"
        OUTPUTS[f"{name} ({scheduler})"] = path

        def run(convert=convert, path=path) -> None:
            shutil.rmtree(path, ignore_errors=True)
            with dask.config.set(scheduler="threads" if client is None else client.get):
                convert(path)

        made[f"{name} ({scheduler})"] = Case(run=run, check=lambda _, path=path: check(path))
    print(f"  source chunks {chunks}, shards {shards} ({shard_bytes(shards, data) / 1e6:.0f} MB decoded)")
    return made


OUTPUTS: dict[str, Path] = {}  # where each case writes, for the size ratios


def shard_bytes(shards: tuple[int, ...], data: np.ndarray) -> int:
    return int(np.prod(shards)) * data.dtype.itemsize


def with_worker_peaks(case: Case, client, peaks: list[int]) -> Case:
    """``case`` recording the largest worker's peak RSS growth of each call."""
    before: dict[str, int] = {}

    def setup() -> None:
        client.run(reset_peak_rss)
        before.update(client.run(rss_bytes))

    def run() -> object:
        result = case.run()
        highs = client.run(rss_bytes, "VmHWM")
        peaks.append(max(highs[w] - before[w] for w in highs))
        return result

    return Case(run=run, setup=setup, check=case.check)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"a {QUICK_SHAPE} array instead of {FULL_SHAPE}")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("/tmp/zarr3_bench_convert"),
        help="where the v2 source is kept between runs, and the outputs written",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # zarr-python's warnings about v3 specs and consolidated metadata
    from distributed import Client, LocalCluster

    shape = QUICK_SHAPE if args.quick else FULL_SHAPE
    print_machine_info(LIBRARIES)
    src = args.data / f"t2m_{'x'.join(map(str, shape))}_v2_blosc_lz4.zarr"
    data = write_source(src, shape)
    print(f"\nconvert {src} ({data.nbytes / 1e6:.0f} MB of t2m), {args.repeats} repeats after 1 warm-up")
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        all_cases = cases(src, args.data, data, "threaded")
        peaks: dict[str, list[int]] = {}
        for name, case in cases(src, args.data, data, "cluster", client).items():
            all_cases[name] = with_worker_peaks(case, client, peaks.setdefault(name, []))
        timings = time_interleaved(all_cases, repeats=args.repeats, warmup=1)
    print(f"\n  {'case':<32}{'median s':>10}{'min s':>9}{'MB/s':>8}{'cpu s':>8}{'worker peak MB':>16}")
    for name, timing in timings.items():
        worker = f"{max(peaks[name][1:] or peaks[name]) / 1e6:.0f}" if name in peaks else "-"
        print(
            f"  {name:<32}{timing.median:>10.2f}{min(timing.seconds):>9.2f}{data.nbytes / 1e6 / timing.median:>8.0f}"
            f"{timing.cpu_median or 0:>8.2f}{worker:>16}"
        )
    import zarr

    from zarr3_backend.conversion import default_shards

    limit = 2 * shard_bytes(default_shards(shape, zarr.open_array(src / "t2m").chunks, 4), data) + (64 << 20)
    print(f"  worker peak target: two shards + 64 MB = {limit / 1e6:.0f} MB")
    source_bytes = stored_bytes(src)
    print(
        f"\nstored bytes over the source's ({source_bytes / 1e6:.0f} MB, blosc-lz4 + shuffle; target <= 1.10)"
    )
    for name, path in OUTPUTS.items():
        print(f"  {name:<32}{stored_bytes(path) / 1e6:>8.0f} MB{stored_bytes(path) / source_bytes:>8.3f}")
    print("\nratios of medians (xarray+zarr-python / convert; > 1: convert is faster; target >= 1.3)")
    for scheduler in ("threaded", "cluster"):
        print(
            f"  {scheduler:<10}{timings[f'{ZARR} ({scheduler})'].median / timings[f'{OURS} ({scheduler})'].median:>8.2f}"
        )
    if args.json is not None:
        table = ResultTable(OURS, [ZARR])
        for scheduler in ("threaded", "cluster"):
            for impl in (OURS, ZARR):
                table.add(
                    f"v2 to sharded v3 ({scheduler})", impl, timings[f"{impl} ({scheduler})"], data.nbytes
                )
        write_results(
            args.json, "benchmarks/bench_convert.py", LIBRARIES, {"convert": table.to_json()}, sys.argv[1:]
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
