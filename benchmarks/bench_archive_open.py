"""Opening a whole ARCO-ERA5-sized archive lazily: open time, CPU and peak memory, each open in a fresh process.

The store is a metadata-only clone of ARCO-ERA5's ``full_37-1h-0p25deg-chunk-1.zarr-v3`` layout:
261 single-level variables ``(time, latitude, longitude)`` = ``(H, 721, 1440)`` and 10 pressure-level
ones ``(time, level, latitude, longitude)`` = ``(H, 37, 721, 1440)``, float32, one chunk per hour
(``H`` = 750,000 hours, about 85 years, so 750,000 chunks per variable), no chunk written (every read
is fill), and the four coordinates written. ``--quick`` uses 27 variables (2 pressure-level) over
75,000 hours. Stores are built once under /tmp, not consolidated and consolidated (a copy with
``zarr3_backend.consolidate_metadata``).

Every case runs in a fresh ``python`` process that imports xarray, dask and the engine (and lets
xarray load its chunk managers and backends, which here import cubed and boto3: 1-3 s that no engine
has a part in) before the clock starts, then times:
- ``open``: ``xr.open_dataset(store, engine=..., chunks=...)`` for ``chunks=None``, ``{}`` and ``"auto"``,
  with the process CPU time of the open and the peak RSS growth during it (``VmHWM``);
- ``series``: the first computed point series after it, ``ds[var].isel(latitude=, longitude=)`` over the
  last ``--series-hours`` hours (default 8,760: a year; a task per hour with ``chunks={}``).
``engine="zarr"`` (zarr-python) opens the same store; with dask it spends about 0.2 s per variable,
so by default it opens only ``--zarr-vars`` (11) of them (``drop_variables`` the rest) and ours is
also timed on that subset, for the ratio. ``--s3`` adds the same stores served by the latency S3
server (``tests.servers.latency_s3``, a child process; ``--latency`` 0.02 s per request). Our
package's bytecode is compiled first, as ``pip`` compiles the peers' (``common.compile_package``).

    python benchmarks/bench_archive_open.py --quick
    python benchmarks/bench_archive_open.py                 # 271 variables x 750,000 hours
    python benchmarks/bench_archive_open.py --s3 --only-consolidated
    python benchmarks/bench_archive_open.py --imports 7     # import xarray, zarr3_backend and both
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]

from common import compile_package  # noqa: E402

CACHE = Path("/tmp/zarr3_backend_bench/archive")
FULL = (271, 10, 750_000)  # variables, of which pressure-level, hours
QUICK = (27, 2, 75_000)
LAT, LON = 361, 720
BUCKET = "archive"
CHUNKS = {"None": None, "{}": {}, "auto": "auto"}


def clone(variables: int, levels: int, hours: int, consolidated: bool) -> Path:
    """The metadata-only clone (cached): coordinates written, no data chunk; a consolidated copy if asked."""
    path = CACHE / f"era5_{variables}_{levels}_{hours}{'_consolidated' if consolidated else ''}.zarr"
    if (path / "done").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    if consolidated:
        import zarr3_backend

        shutil.copytree(clone(variables, levels, hours, False), path)
        zarr3_backend.consolidate_metadata(str(path))
    else:
        _write_clone(path, variables, levels, hours)
    (path / "done").write_text("")
    return path


def _write_clone(path: Path, variables: int, levels: int, hours: int) -> None:
    import zarr3_backend

    group = zarr3_backend.create_group(str(path), attributes={"title": "ARCO-ERA5 layout, metadata only"})
    coordinates = {
        "time": (np.arange(hours, dtype="int64"), {"units": "hours since 1940-01-01", "calendar": "proleptic_gregorian"}),
        "latitude": (np.linspace(90, -90, 721, dtype="float32"), {"units": "degrees_north"}),
        "longitude": (np.arange(1440, dtype="float32") * 0.25, {"units": "degrees_east"}),
        "level": (np.array([1, 2, 3, 5, 7, 10, 20, 30, 50, 70, *range(100, 1001, 25)][:37], "int64"), {"units": "hPa"}),
    }  # fmt: skip
    for name, (values, attributes) in coordinates.items():
        array = group.create_array(
            name, shape=values.shape, dtype=values.dtype, chunks=values.shape,
            dimension_names=[name], attributes=attributes,
        )  # fmt: skip
        array[...] = values
    for i in range(variables):
        level = i < levels
        dims = ["time", "level", "latitude", "longitude"] if level else ["time", "latitude", "longitude"]
        shape = (hours, 37, 721, 1440) if level else (hours, 721, 1440)
        group.create_array(
            f"{'pl' if level else 'sl'}_{i:03d}", shape=shape, dtype="float32", chunks=(1, *shape[1:]),
            dimension_names=dims, fill_value=float("nan"), attributes={"long_name": f"variable {i}", "units": "1"},
        )  # fmt: skip


# ---------------------------------------------------------------- one case, in a fresh process


def _peak_rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def child(case: dict[str, Any]) -> dict[str, Any]:
    """Open once and compute one point series; what `main()` prints for the case."""
    import warnings

    import dask
    import xarray as xr
    from xarray.namedarray.parallelcompat import list_chunkmanagers

    import zarr3_backend  # noqa: F401

    warnings.filterwarnings("ignore")
    list_chunkmanagers()  # imports every installed chunk manager (cubed): not the open's cost
    xr.backends.list_engines()  # and every installed backend (rioxarray imports boto3): not either
    kwargs: dict[str, Any] = {"engine": case["engine"], "chunks": CHUNKS[case["chunks"]]}
    if case.get("storage_options"):
        kwargs["storage_options"] = case["storage_options"]
    if case["engine"] == "zarr":
        kwargs["consolidated"] = case["consolidated"]
    if case.get("keep"):
        kwargs["drop_variables"] = case["drop"]
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # resets VmHWM to the current RSS
    before = _peak_rss()
    cpu, start = time.process_time(), time.perf_counter()
    ds = xr.open_dataset(case["store"], **kwargs)
    opened, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _peak_rss() - before
    name = case["variable"]
    start = time.perf_counter()
    with dask.config.set(scheduler="threads"):
        series = ds[name].isel(latitude=LAT, longitude=LON, time=slice(-case["series_hours"], None)).values
    return {
        "open_s": opened,
        "cpu_s": cpu,
        "peak_mb": peak / 1e6,
        "series_s": time.perf_counter() - start,
        "variables": len(ds.data_vars),
        "nan": bool(np.isnan(series).all()),
    }


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(case)],
        capture_output=True, text=True, env=env, timeout=case.get("timeout", 1800),
    )  # fmt: skip
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------- the table


def cases(
    store: str, names: list[str], args: argparse.Namespace, consolidated: bool, **extra: Any
) -> list[dict[str, Any]]:
    """Ours with every ``chunks``, on all variables and on the ``--zarr-vars`` subset; engine="zarr" likewise."""
    subset = names[: args.zarr_vars] if args.zarr_vars else names
    base = {"store": store, "consolidated": consolidated, "variable": subset[-1],
            "series_hours": args.series_hours, **extra}  # fmt: skip
    drop = [n for n in names if n not in subset]
    out = [{**base, "engine": "zarr3", "chunks": c, "label": "all"} for c in CHUNKS]
    out.append({**base, "engine": "zarr", "chunks": "None", "label": "all"})
    if drop:
        out += [{**base, "engine": e, "chunks": c, "keep": len(subset), "drop": drop, "label": f"{len(subset)} vars"}
                for c in ("{}", "auto") for e in ("zarr3", "zarr")]  # fmt: skip
    else:
        out += [{**base, "engine": "zarr", "chunks": c, "label": "all"} for c in ("{}", "auto")]
    return out


def print_rows(title: str, rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    print(f"\n{title}   (load average {os.getloadavg()[0]:.2f})")
    print(
        f"  {'engine':<7}{'chunks':<8}{'variables':<11}{'open s':>9}{'cpu s':>9}{'peak MB':>9}{'series s':>10}"
    )
    for case, got in rows:
        if "error" in got:
            print(f"  {case['engine']:<7}{case['chunks']:<8}{case['label']:<11}  error: {got['error'][:80]}")
            continue
        print(
            f"  {case['engine']:<7}{case['chunks']:<8}{got['variables']:<11}{got['open_s']:>9.3f}{got['cpu_s']:>9.3f}"
            f"{got['peak_mb']:>9.0f}{got['series_s']:>10.3f}"
        )
    ours = {(c["chunks"], c["label"]): g for c, g in rows if c["engine"] == "zarr3" and "error" not in g}
    none = ours.get(("None", "all"))
    if none and ("{}", "all") in ours:
        print(f"  ours chunks={{}} / ours chunks=None: {ours['{}', 'all']['open_s'] / none['open_s']:.2f}x")
    for case, got in rows:
        mine = ours.get((case["chunks"], case["label"]))
        if case["engine"] == "zarr" and mine and "error" not in got:
            print(
                f"  ours / engine='zarr', chunks={case['chunks']} on {case['label']}: {mine['open_s'] / got['open_s']:.2f}x"
            )


def time_imports(repeats: int) -> None:
    """Wall and CPU seconds of ``import xarray``, ``import zarr3_backend`` (which leaves xarray alone) and of
    both (what an xarray user pays; the hook then adds ``to_zarr3``), fresh processes."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    code = (
        "import time; t = time.perf_counter(); import {}; print(time.perf_counter() - t, time.process_time())"
    )
    got: dict[str, list[tuple[float, float]]] = {
        "xarray": [],
        "zarr3_backend": [],
        "xarray, zarr3_backend": [],
    }
    for _ in range(repeats):  # alternating, so drift hits all alike
        for module in got:
            out = subprocess.run([sys.executable, "-c", code.format(module)], capture_output=True, text=True,
                                 env=env, cwd="/", check=True).stdout.split()  # fmt: skip
            got[module].append((float(out[0]), float(out[1])))
    print(f"fresh-process imports, median of {repeats}   (load average {os.getloadavg()[0]:.2f})")
    for module, runs in got.items():
        print(
            f"  import {module:<22} wall {np.median([w for w, _ in runs]):.3f} s   cpu {np.median([c for _, c in runs]):.3f} s"
        )
    added = np.median([b[0] - a[0] for a, b in zip(got["xarray"], got["xarray, zarr3_backend"], strict=True)])
    print(f"  zarr3_backend adds {added:.3f} s to import xarray (target 0.3 s)")


def variable_names(variables: int, levels: int) -> list[str]:
    return [f"{'pl' if i < levels else 'sl'}_{i:03d}" for i in range(variables)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK[0]} variables x {QUICK[2]} hours")
    parser.add_argument(
        "--zarr-vars", type=int, default=11, help="variables engine='zarr' opens with dask (0: all)"
    )
    parser.add_argument("--series-hours", type=int, default=8760, help="hours of the point series")
    parser.add_argument("--s3", action="store_true", help="also over the latency S3 server")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request on --s3")
    parser.add_argument("--only-consolidated", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    parser.add_argument(
        "--imports", type=int, default=0, metavar="N", help="only time imports, N fresh processes each"
    )
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    print(compile_package())
    if args.imports:
        time_imports(args.imports)
        return 0
    variables, levels, hours = QUICK if args.quick else FULL
    names = variable_names(variables, levels)
    print(f"{variables} variables ({levels} on pressure levels) x {hours:,} hours, one chunk per hour")
    results: list[dict[str, Any]] = []
    layouts = [True] if args.only_consolidated else [False, True]
    for consolidated in layouts:
        store = clone(variables, levels, hours, consolidated)
        rows = [(case, run_case(case)) for case in cases(str(store), names, args, consolidated)]
        print_rows(f"local disk, {'consolidated' if consolidated else 'not consolidated'}", rows)
        results += [{"where": "local", **c, "drop": None, **g} for c, g in rows]
    if args.s3:
        results += s3_rows(args, variables, levels, hours, names, layouts)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def s3_rows(
    args: argparse.Namespace, variables: int, levels: int, hours: int, names: list[str], layouts: list[bool]
) -> list[dict[str, Any]]:
    """The same cases against the latency S3 server (plain http)."""
    import s3fs

    from tests.servers.latency_s3 import latency_s3_process

    results = []
    with latency_s3_process(0.0) as server:
        fs = s3fs.S3FileSystem(**server.storage_options, skip_instance_cache=True)
        fs.mkdir(BUCKET)
        for consolidated in layouts:
            local = clone(variables, levels, hours, consolidated)
            fs.put(str(local) + "/", f"{BUCKET}/{local.name}", recursive=True)
        server.configure(args.latency)
        for consolidated in layouts:
            url = f"s3://{BUCKET}/{clone(variables, levels, hours, consolidated).name}"
            rows = []
            for case in cases(url, names, args, consolidated, storage_options=server.storage_options):
                server.drop_connections()
                rows.append((case, run_case(case)))
            kind = "consolidated" if consolidated else "not consolidated"
            print_rows(f"S3 at {args.latency * 1000:.0f} ms, {kind}", rows)
            results += [{"where": "s3", **c, "drop": None, "storage_options": None, **g} for c, g in rows]
    return results


if __name__ == "__main__":
    sys.exit(main())
