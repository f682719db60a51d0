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
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # a checkout works without installing

from common import Case, climate_field, print_machine_info, time_interleaved  # noqa: E402

FULL_SHAPE, QUICK_SHAPE = (365, 181, 360), (73, 181, 360)
LIBRARIES = ["zarr3_backend", "xarray", "dask", "obstore", "moto", "numpy"]


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from tests.servers.latency_s3 import latency_s3_process
    from tests.servers.servers import moto_s3_server

    print_machine_info(LIBRARIES)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
