"""Loading a whole variable into memory from object storage: opened without ``chunks`` or with ``chunks={}``.

The dask guide advises how to bring a whole variable into memory; this
measures the two ways on the same sharded store, ``t2m`` float32
(365, 181, 360) (~95 MB; ``--quick``: (73, 181, 360)) in 4 shards of
inner chunks (73, 91, 180):

* ``no chunks``: ``xr.open_dataset(url, engine="zarr3").t2m.load()`` (one
  read decoding straight into the output, on the engine's threads);
* ``chunks={}``: ``xr.open_dataset(url, engine="zarr3", chunks={}).t2m.load()``
  (one dask task per shard on the threaded scheduler, then dask's copy
  into one array);

on the latency server (``tests/servers/latency_s3.py``, in its own process)
at 0 and 20 ms first-byte latency and 100 MB/s per connection, and on moto's
S3 server. Cases run interleaved round-robin; printed: median seconds and
the ratio.

Then the whole dataset against ``engine="zarr"`` (``--dataset``; alone with
``--dataset-only``): ``era5_like`` daily, one year of 181 x 360 (4 variables
of 95 MB and ``lsm``), written by ``to_zarr3`` with its default encoding to
moto's S3 server in its own process (``python -m moto.server``), then
``xr.open_dataset(url, engine=...).load()`` without dask and with
``chunks={}``, both engines, interleaved; once with ``to_zarr3``'s default
encoding (unsharded chunks) and once sharded (4 shards of 24 MB per
variable). Printed per case: median seconds, this process's CPU seconds and
the server process's CPU seconds, and ``engine="zarr3"`` over
``engine="zarr"``; with the load average, since the server competes with the
client for the cores.

moto answers a ranged GET by copying the whole object under the object's
lock, so a read that splits a large shard into side-by-side ranges (what
fills the connections of a real object store, see ``nodes/reads.splits_shards``)
costs moto one copy of the shard per range, where ``engine="zarr"`` fetches
the shard whole: the server CPU column shows it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # a checkout works without installing

from common import Case, climate_field, print_machine_info, time_interleaved  # noqa: E402

FULL_SHAPE, QUICK_SHAPE = (365, 181, 360), (73, 181, 360)
LIBRARIES = ["zarr3_backend", "xarray", "dask", "obstore", "moto", "numpy", "zarr", "s3fs"]


def measure(label: str, url: str, options: dict, data, repeats: int) -> None:
    import numpy as np
    import xarray as xr

    import zarr3_backend  # noqa: F401  (ds.to_zarr3)

    ds = xr.Dataset({"t2m": (("time", "lat", "lon"), data)})
    encoding = {"t2m": {"chunks": (73, 91, 180), "shards": (data.shape[0], 91, 180)}}
    ds.to_zarr3(url, mode="w", encoding=encoding, storage_options=options)

    def load(chunks: dict | None) -> object:
        return xr.open_dataset(url, engine="zarr3", chunks=chunks, storage_options=options).t2m.load()

    def check(result: object) -> None:
        assert np.array_equal(result.values, data), f"{label}: values differ"

    cases = {
        "no chunks": Case(run=lambda: load(None), check=check),
        "chunks={}": Case(run=lambda: load({}), check=check),
    }
    timings = time_interleaved(cases, repeats=repeats, warmup=1)
    plain, dask = timings["no chunks"].median, timings["chunks={}"].median
    print(f"  {label:<34}{plain:>12.2f}{dask:>12.2f}{dask / plain:>10.2f}")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: The whole-dataset layouts: to_zarr3's default (unsharded chunks), and 4 shards of 5 inner chunks per variable.
LAYOUTS: dict[str, dict[str, object] | None] = {
    "to_zarr3's default": None,
    "shards (365, 91, 180)": {"chunks": (73, 91, 180), "shards": (365, 91, 180)},
}


def measure_dataset(repeats: int, quick: bool) -> None:
    """The whole-dataset rows: ``.load()`` of every variable, engine="zarr3" against engine="zarr", on moto."""
    from tests.servers.servers import moto_s3_process
    from zarr3_backend.synthetic import era5_like

    ds = era5_like(days=73 if quick else 365, nlat=181, nlon=360)
    with moto_s3_process() as s3:
        for layout, encoding in LAYOUTS.items():
            url = f"{s3.make_bucket()}/era5.zarr"
            ds.to_zarr3(url, mode="w", storage_options=s3.storage_options,
                        encoding=encoding and {name: encoding for name in ("t2m", "tp", "u10", "v10")})  # fmt: skip
            cases, server = _dataset_cases(url, s3, ds)
            timings = time_interleaved(cases, repeats=repeats, warmup=1)
            _print_dataset(
                f"{ds.nbytes / 1e6:.0f} MB, {len(ds.data_vars)} variables, {layout}", timings, server
            )


def _dataset_cases(url: str, s3: Any, ds: Any) -> tuple[dict[str, Case], dict[str, list[float]]]:
    """Each engine, without dask and with ``chunks={}``; each call also records the server's CPU seconds."""
    import xarray as xr

    import zarr3_backend  # noqa: F401  (ds.to_zarr3)

    server: dict[str, list[float]] = {}

    def case(name: str, engine: str, chunks: dict | None) -> Case:
        def run() -> object:  # clients as a user's second call finds them: made by the warm-up (both engines)
            before = process_cpu(s3.pid)
            result = xr.open_dataset(
                url, engine=engine, chunks=chunks, storage_options=s3.storage_options
            ).load()
            server.setdefault(name, []).append(process_cpu(s3.pid) - before)
            return result

        return Case(run=run, check=lambda result: xr.testing.assert_equal(result.drop_encoding(), ds))

    cases = {
        f"{engine}, {label}": case(f"{engine}, {label}", engine, chunks)
        for label, chunks in (("no chunks", None), ("chunks={}", {}))
        for engine in ("zarr3", "zarr")
    }
    return cases, server


def _print_dataset(what: str, timings: dict[str, Any], server: dict[str, list[float]]) -> None:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nload the whole dataset ({what}), moto in its own process, median after 1 warm-up, load {load}")
    print(f"  {'case':<22}{'median s':>10}{'cpu s':>8}{'server cpu s':>14}{'zarr3 / zarr':>14}")
    for name, timing in timings.items():
        engine, label = name.split(", ", 1)
        ratio = timing.median / timings[f"zarr, {label}"].median if engine == "zarr3" else float("nan")
        server_cpu = statistics.median(server[name][1:])  # the warm-up call first
        print(f"  {name:<22}{timing.median:>10.2f}{timing.cpu_median or 0:>8.2f}{server_cpu:>14.2f}"
              f"{ratio:>14.2f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dataset", action="store_true", help="also load a whole dataset, both engines")
    parser.add_argument("--dataset-only", action="store_true", help="only the whole-dataset rows")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from tests.servers.latency_s3 import latency_s3_process
    from tests.servers.servers import moto_s3_server

    print_machine_info(LIBRARIES)
    if args.dataset_only:
        measure_dataset(args.repeats, args.quick)
        return 0
    data = climate_field(QUICK_SHAPE if args.quick else FULL_SHAPE)
    print(f"\nload t2m {data.shape} ({data.nbytes / 1e6:.0f} MB), median of {args.repeats} after 1 warm-up")
    print(f"  {'store':<34}{'no chunks s':>12}{'chunks={} s':>12}{'ratio':>10}")
    for latency in (0.0, 0.02):
        with latency_s3_process(latency=latency, bandwidth=100e6) as server:
            import s3fs

            s3fs.S3FileSystem(**server.storage_options).mkdir("bench")
            label = f"latency server, {latency * 1000:.0f} ms, 100 MB/s"
            measure(label, "s3://bench/load.zarr", server.storage_options, data, args.repeats)
    with moto_s3_server() as s3:
        measure("moto", f"{s3.make_bucket()}/load.zarr", s3.storage_options, data, args.repeats)
    print("ratio: chunks={} / no chunks (> 1: loading without chunks is faster)")
    if args.dataset:
        measure_dataset(args.repeats, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
