"""xarray benchmark: engine="zarr3" (ours) vs engine="zarr" (zarr-python 3), in one run.

Workloads
- full load of the climate-like ``t2m`` (730, 361, 720) float32, shards (73, 364, 720), inner
  chunks (73, 91, 180), blosc zstd clevel 3 shuffle, written once by xarray ``to_zarr(zarr_format=3)``
  into a cache dir under /tmp: ``open_dataset(...).load()`` with ``chunks={}`` and without dask,
  next to the floor (read shard files + numcodecs decode on 2 threads, from ``bench_core``);
- point series ``ds.t2m.isel(lat=180, lon=360).load()`` (fresh open each time), next to its floor;
- ``open_dataset`` of a group of 200 small variables, local and on moto's S3 server on loopback,
  with and without consolidated metadata.
Request counts: ours through `CountingStore`; on S3 both engines through a counter on
s3fs's ``_call_s3`` (every S3 API call either engine makes).

``python benchmarks/bench_xarray_open.py --quick`` runs a smaller array with fewer repeats.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

sys.path[:0] = [
    str(Path(__file__).resolve().parent),
    str(Path(__file__).resolve().parents[1]),
]  # a checkout works uninstalled

from common import (  # noqa: E402
    CLIMATE_FIELD_VERSION,
    Case,
    ResultTable,
    climate_field,
    print_machine_info,
    time_interleaved,
    write_results,
)
from floor import CHUNKS, FULL_SHAPE, QUICK_SHAPE, SHARDS, Layout, floor_point, floor_read  # noqa: E402

from zarr3_backend.store import make_store  # noqa: E402
from zarr3_backend.testing.stores import CountingStore  # noqa: E402

CACHE = Path("/tmp/zarr3_backend_bench")
OURS, ZARR, FLOOR = "zarr3 (ours)", "zarr (zarr-python)", "floor"
LIBRARIES = ["zarr3_backend", "xarray", "zarr", "dask", "numcodecs", "numpy", "s3fs", "moto"]
N_VARS = 200
warnings.filterwarnings("ignore")


def climate_store(shape: tuple[int, ...]) -> Path:
    """The t2m store written by xarray, cached under /tmp and reused while the data version matches."""
    path = CACHE / f"xarray_t2m_v{CLIMATE_FIELD_VERSION}_{'x'.join(map(str, shape))}.zarr"
    if (path / "done").exists():
        return path
    from zarr.codecs import BloscCodec

    shutil.rmtree(path, ignore_errors=True)
    nt, ny, nx = shape
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), climate_field(shape), {"units": "K"})},
        coords={
            "time": np.arange(nt),
            "lat": np.linspace(90, -90, ny),
            "lon": np.linspace(0, 360, nx, endpoint=False),
        },
    )
    blosc = BloscCodec(cname="zstd", clevel=3, shuffle="shuffle")
    ds.to_zarr(
        path,
        zarr_format=3,
        consolidated=False,
        encoding={"t2m": {"chunks": CHUNKS, "shards": SHARDS, "compressors": [blosc]}},
    )
    (path / "done").touch()
    return path


def many_variables() -> xr.Dataset:
    x = np.arange(10)
    return xr.Dataset(
        {f"v{i:03d}": (("x",), np.full(10, i, "float32"), {"i": i}) for i in range(N_VARS)}, coords={"x": x}
    )


def open_with(engine: str, target: Any, **kwargs: Any) -> xr.Dataset:
    if engine == "zarr":
        kwargs.setdefault("consolidated", False)
    return xr.open_dataset(target, engine=engine, **kwargs)


def check_equal(expected: np.ndarray) -> Callable[[object], None]:
    def check(result: object) -> None:
        np.testing.assert_array_equal(np.asarray(result), expected)

    return check


def full_load(path: Path, shape: tuple[int, ...], table: ResultTable, repeats: int) -> None:
    layout, data = Layout(shape), climate_field(shape)
    check = check_equal(data)
    cases = {
        FLOOR: Case(lambda: floor_read(path / "t2m", layout), check=check),
        f"{OURS} chunks={{}}": Case(
            lambda: open_with("zarr3", path, chunks={}).t2m.load().values, check=check
        ),
        f"{ZARR} chunks={{}}": Case(
            lambda: open_with("zarr", path, chunks={}).t2m.load().values, check=check
        ),
        f"{OURS} no dask": Case(lambda: open_with("zarr3", path).t2m.load().values, check=check),
        f"{ZARR} no dask": Case(lambda: open_with("zarr", path).t2m.load().values, check=check),
    }
    for name, timing in time_interleaved(
        cases, repeats
    ).items():  # one workload per way of loading, the floor in each
        for way in ("chunks={}", "no dask"):
            if name == FLOOR or name.endswith(way):
                table.add(f"full load, {way}", name.removesuffix(f" {way}"), timing, data.nbytes)
    counted = CountingStore(make_store(str(path), read_only=True))
    open_with("zarr3", counted, chunks={}).load()
    print(
        f"full load, ours chunks={{}}: {counted.counts['get_many']} get_many calls, {len(counted.requests)} requests "
        f"({len(layout.shard_coords())} shards)"
    )


def point_series(path: Path, shape: tuple[int, ...], table: ResultTable, repeats: int) -> None:
    layout = Layout(shape)
    expected = climate_field(shape)[:, 180, 360]
    check = check_equal(expected)
    cases = {
        FLOOR: Case(lambda: floor_point(path / "t2m", layout), check=check),
        OURS: Case(lambda: open_with("zarr3", path).t2m.isel(lat=180, lon=360).load().values, check=check),
        ZARR: Case(lambda: open_with("zarr", path).t2m.isel(lat=180, lon=360).load().values, check=check),
    }
    for name, timing in time_interleaved(cases, repeats * 3).items():
        table.add("point series (fresh open)", name, timing, expected.nbytes)
    counted = CountingStore(make_store(str(path), read_only=True))
    ds = open_with("zarr3", counted)
    counted.reset()
    ds.t2m.isel(lat=180, lon=360).load()
    chunk_requests = [(k, r) for k, r in counted.requests if k.startswith("t2m/c/")]
    print(
        f"point series, ours: {len(chunk_requests)} shard requests for {len(layout.shard_coords())} shards "
        f"(index + one inner chunk each): {chunk_requests[:2]} ..."
    )


@contextmanager
def s3_call_counter() -> Iterator[list[str]]:
    """Count every S3 API call s3fs makes (both engines go through s3fs)."""
    import s3fs.core

    calls: list[str] = []
    original = s3fs.core.S3FileSystem._call_s3

    async def counting(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(method)
        return await original(self, method, *args, **kwargs)

    s3fs.core.S3FileSystem._call_s3 = counting
    try:
        yield calls
    finally:
        s3fs.core.S3FileSystem._call_s3 = original


def many_open(table: ResultTable, repeats: int) -> None:
    ds = many_variables()
    local = {c: CACHE / f"many_{N_VARS}_{c}.zarr" for c in (False, True)}
    for consolidated, path in local.items():
        if not path.exists():
            ds.to_zarr(path, zarr_format=3, consolidated=consolidated)
        _many_cases(
            table,
            f"open {N_VARS} vars, local{', consolidated' if consolidated else ''}",
            str(path),
            {},
            consolidated,
            repeats,
        )
    from tests.servers.servers import moto_s3_server

    with moto_s3_server() as s3:
        options = {**s3.storage_options, "skip_instance_cache": True, "use_listings_cache": False}
        bucket = s3.make_bucket()
        for consolidated in (False, True):
            url = f"{bucket}/many_{consolidated}.zarr"
            ds.to_zarr(url, zarr_format=3, consolidated=consolidated, storage_options=s3.storage_options)
            _many_cases(
                table,
                f"open {N_VARS} vars, S3{', consolidated' if consolidated else ''}",
                url,
                options,
                consolidated,
                repeats,
            )


def _many_cases(
    table: ResultTable, workload: str, target: str, options: dict[str, Any], consolidated: bool, repeats: int
) -> None:
    kwargs = {"storage_options": options} if options else {}
    cases = {
        OURS: Case(lambda: open_with("zarr3", target, **kwargs)),
        ZARR: Case(lambda: open_with("zarr", target, consolidated=consolidated, **kwargs)),
    }
    for name, timing in time_interleaved(cases, repeats).items():
        table.add(workload, name, timing, 0)
    counted = CountingStore(make_store(target, storage_options=options or None, read_only=True))
    open_with("zarr3", counted)
    line = f"{workload}: ours {len(counted.requests)} store requests in {sum(counted.counts.values())} store calls"
    if options:
        with s3_call_counter() as calls:
            open_with("zarr3", target, **kwargs)
        ours_calls = len(calls)
        with s3_call_counter() as calls:
            open_with("zarr", target, consolidated=consolidated, **kwargs)
        line += f"; S3 API calls: ours {ours_calls}, zarr-python {len(calls)}"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller array, fewer repeats")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args()
    shape, repeats = (QUICK_SHAPE, 1) if args.quick else (FULL_SHAPE, 3)
    print_machine_info(LIBRARIES)
    CACHE.mkdir(parents=True, exist_ok=True)
    path = climate_store(shape)
    table = ResultTable(OURS, [ZARR], floor=FLOOR)
    full_load(path, shape, table, repeats)
    point_series(path, shape, table, repeats)
    many_open(table, repeats * 3)
    table.print()
    _print_targets(table)
    if args.json:
        write_results(
            args.json, "benchmarks/bench_xarray_open.py", LIBRARIES, {"xarray": table.to_json()}, sys.argv[1:]
        )


def _print_targets(table: ResultTable) -> None:
    rows = table.rows
    full = rows["full load, chunks={}"]
    point = rows["point series (fresh open)"]
    print("\ntargets")
    print(f"  full load chunks={{}} / floor: {full[OURS].median / full[FLOOR].median:.2f} (target <= 1.5)")
    print(f"  point series ours / zarr:     {point[OURS].median / point[ZARR].median:.2f} (target <= 1.0)")
    for workload, timings in rows.items():
        if workload.startswith("open"):
            print(
                f"  {workload}: zarr / ours = {timings[ZARR].median / timings[OURS].median:.1f}x (target >= 2)"
            )


if __name__ == "__main__":
    main()
