"""Object storage benchmark: zarr3_backend vs zarr-python (+xarray) vs tensorstore behind injected latency.

The data sits in a loopback S3-compatible server (``tests.servers.latency_s3``, run in a
child process so that its threads do not compete with the clients for the GIL) that delays the
first byte of every response by the latency (0, 20 and 50 ms by default) and caps each
connection at 100 MB/s, close to real S3. Each case builds fresh clients (ours: an obstore
client made by the first request after ``clear_store_cache()``; zarr-python: a new s3fs file system
with a constructed but unconnected client; a new tensorstore context), so connections and caches
start cold. The server speaks plain http unless ``--tls`` (https with a self-signed P-256
certificate, which every client is told to trust: s3fs's ``verify=``, ``TENSORSTORE_CA_BUNDLE``);
over plain http the s3fs clients skip TLS verification (``verify=False``), as aiobotocore would load
the CA bundle on the first request anyway (~20 ms of CPU), which tensorstore's curl does not do for
http. Real S3 speaks https, where every new connection costs a handshake. Every row reports the median time, requests per operation, the most requests in
flight and the *rounds* (longest chain of requests each sent after the previous was answered).

Workloads (the ``t2m`` store of ``bench_xarray_open.py``: float32, shards (73, 364, 720), inner
chunks (73, 91, 180), blosc zstd; plus a group of 200 small variables, not consolidated):
- full read, no dask: ``open_array(...)[...]`` / ``zarr.open_array(...)[...]`` / tensorstore read;
- full read, ``chunks={}``: ``xr.open_dataset(..., chunks={}).t2m.values`` (not tensorstore), with the
  time of dask's last task, which concatenates the blocks (no engine has a part in it);
- open + point series: open the array and read ``[:, 180, 360]`` (one inner chunk per shard);
- point series, long-lived reader: that read, then (timed) ``[:, 181, 361]`` through the same open array,
  whose shard indexes ours has cached (and checks again beside the chunks, in the same round);
- xarray open + point series (and ``, consolidated``: a copy of the store with consolidated
  metadata): ``xr.open_dataset(...).t2m[:, 180, 360]``, both engines; tensorstore as above;
- open a 200-variable group: ``xr.open_dataset(..., consolidated=False)``, both engines
  (tensorstore: list the group, open every array; ``requests only``: the same listing and GETs through
  our obstore store, with no Zarr or xarray work: the floor of any client sending them).
- ``--only "obstore API: GET every key of the group"`` (not run by default): every key of that group
  by obstore's blocking API on our request threads (what ``ObstoreStore`` does) and by its asyncio
  API on the runtime's event loop; time and CPU per request.

``python benchmarks/bench_cloud.py --quick`` uses the (146, 361, 720) array (2 shards).
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import xarray as xr

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from bench_xarray_open import CACHE, N_VARS, climate_store, many_variables  # noqa: E402
from common import print_machine_info, write_results  # noqa: E402
from floor import FULL_SHAPE, POINT, QUICK_SHAPE  # noqa: E402

NEXT_POINT = (slice(None), POINT[1] + 1, POINT[2] + 1)  # in the same inner chunks as POINT

import zarr3_backend  # noqa: E402
from tests.servers.latency_s3 import RemoteServer, latency_s3_process  # noqa: E402
from zarr3_backend import clear_store_cache  # noqa: E402
from zarr3_backend.runtime import io_concurrency  # noqa: E402
from zarr3_backend.store import ObstoreStore  # noqa: E402

OURS, ZARR, TS = "zarr3_backend", "zarr-python", "tensorstore"
FLOOR = "requests only"
_FINALIZE: dict[str, float] = {}
LIBRARIES = ["zarr3_backend", "zarr", "tensorstore", "obstore", "s3fs", "xarray", "dask"]
BUCKET = "bench"
_CLIENTS: list[Any] = []
warnings.filterwarnings("ignore")


def fresh_fs(server: RemoteServer) -> Any:
    """A new s3fs file system whose client is built (not timed: constant CPU) but has no connection yet."""
    import s3fs

    options = server.storage_options
    client_kwargs = {
        "verify": False,
        **options["client_kwargs"],
    }  # plain http: no CA bundle to load (see the docstring)
    fs = s3fs.S3FileSystem(**{**options, "client_kwargs": client_kwargs}, skip_instance_cache=True,
                           config_kwargs={"max_pool_connections": io_concurrency()})  # fmt: skip
    fs.connect()
    _CLIENTS.append(
        fs
    )  # closed at exit: s3fs closing a client from another loop on garbage collection only adds noise
    return fs


def fresh_store(server: RemoteServer, path: str) -> ObstoreStore:
    """Our store of ``path``, read through obstore with a client that does not exist yet (made by its first request)."""
    clear_store_cache()
    return ObstoreStore(f"s3://{BUCKET}/{path}", server.storage_options, read_only=True)


def ts_spec(server: RemoteServer, path: str) -> dict[str, Any]:
    return {"driver": "zarr3", "kvstore": server.tensorstore_kvstore(BUCKET, path.rstrip("/") + "/")}


# ---------------------------------------------------------------- the workloads
# each maker returns {implementation: (setup, run)}: setup builds fresh clients (not timed), run(clients) is timed


def full_read(server: RemoteServer) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import tensorstore as ts
    import zarr

    import zarr3_backend

    return {
        OURS: (lambda: fresh_store(server, "t2m.zarr"),
               lambda store: zarr3_backend.open_array(store, "t2m")[...]),
        ZARR: (lambda: zarr.storage.FsspecStore(fresh_fs(server), path=f"{BUCKET}/t2m.zarr", read_only=True),
               lambda store: zarr.open_array(store, path="t2m", mode="r")[...]),
        TS: (ts.Context, lambda ctx: ts.open(ts_spec(server, "t2m.zarr/t2m"), context=ctx).result().read().result()),
    }  # fmt: skip


def full_read_dask(server: RemoteServer) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import zarr
    from dask.callbacks import Callback

    class FinalizeTimer(Callback):  # type: ignore[misc]
        """Times dask's last task, which concatenates the blocks into ``.values`` (an engine has no part in it)."""

        def _pretask(self, key: Any, dsk: Any, state: Any) -> None:
            if str(key).startswith("finalize"):
                _FINALIZE["start"] = time.perf_counter()

        def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
            if str(key).startswith("finalize"):
                _FINALIZE["finalize_s"] = time.perf_counter() - _FINALIZE.pop("start")

    def xarray_values(engine: str, **kwargs: Any) -> Callable[[Any], Any]:
        def run(store: Any) -> Any:
            with FinalizeTimer():
                return xr.open_dataset(store, engine=engine, chunks={}, **kwargs).t2m.values

        return run

    return {
        OURS: (lambda: fresh_store(server, "t2m.zarr"), xarray_values("zarr3")),
        ZARR: (lambda: zarr.storage.FsspecStore(fresh_fs(server), path=f"{BUCKET}/t2m.zarr", read_only=True),
               xarray_values("zarr", consolidated=False, zarr_format=3)),
    }  # fmt: skip


def point_series(server: RemoteServer) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import tensorstore as ts
    import zarr

    import zarr3_backend

    return {
        OURS: (lambda: fresh_store(server, "t2m.zarr"),
               lambda store: zarr3_backend.open_array(store, "t2m")[POINT]),
        ZARR: (lambda: zarr.storage.FsspecStore(fresh_fs(server), path=f"{BUCKET}/t2m.zarr", read_only=True),
               lambda store: zarr.open_array(store, path="t2m", mode="r")[POINT]),
        TS: (ts.Context,
             lambda ctx: ts.open(ts_spec(server, "t2m.zarr/t2m"), context=ctx).result()[POINT].read().result()),
    }  # fmt: skip


def warm_point_series(server: RemoteServer) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """A long-lived reader's second point series (setup opens the array and reads one, untimed)."""
    import tensorstore as ts
    import zarr

    import zarr3_backend

    def warmed(array: Any) -> Any:
        array[POINT]
        return array

    def warmed_ts(array: Any) -> Any:
        array[POINT].read().result()
        return array

    return {
        OURS: (lambda: warmed(zarr3_backend.open_array(fresh_store(server, "t2m.zarr"), "t2m")),
               lambda array: array[NEXT_POINT]),
        ZARR: (lambda: warmed(zarr.open_array(
                   zarr.storage.FsspecStore(fresh_fs(server), path=f"{BUCKET}/t2m.zarr", read_only=True),
                   path="t2m", mode="r")),
               lambda array: array[NEXT_POINT]),
        TS: (lambda: warmed_ts(ts.open(ts_spec(server, "t2m.zarr/t2m"), context=ts.Context()).result()),
             lambda array: array[NEXT_POINT].read().result()),
    }  # fmt: skip


def open_many(server: RemoteServer) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import tensorstore as ts
    import zarr

    def ts_open_all(ctx: Any) -> int:
        kvstore = ts.KvStore.open(server.tensorstore_kvstore(BUCKET, "many.zarr/"), context=ctx).result()
        names = sorted(
            {k.decode().split("/")[0] for k in kvstore.list().result() if k.endswith(b"/zarr.json")}
        )
        opened = [ts.open(ts_spec(server, f"many.zarr/{n}"), context=ctx) for n in names]
        return len([future.result() for future in opened])

    return {
        OURS: (lambda: fresh_store(server, "many.zarr"),
               lambda store: xr.open_dataset(store, engine="zarr3", consolidated=False)),  # as zarr-python's
        ZARR: (lambda: zarr.storage.FsspecStore(fresh_fs(server), path=f"{BUCKET}/many.zarr", read_only=True),
               lambda store: xr.open_dataset(store, engine="zarr", consolidated=False, zarr_format=3)),
        TS: (ts.Context, ts_open_all),
        FLOOR: (lambda: fresh_store(server, "many.zarr"), _members_requests),
    }  # fmt: skip


def _members_requests(store: ObstoreStore) -> int:
    """The open's requests with no Zarr or xarray: list the group, then GET the documents and the coordinate."""
    keys = [key for key in store.list_prefix("") if key.endswith("zarr.json") or key == "x/c/0"]
    return len(store.get_many_versioned([(key, None) for key in keys]))


def xarray_point_series(path: str, consolidated: bool) -> Callable[[RemoteServer], dict[str, Any]]:
    """``xr.open_dataset`` then the point series, each engine; tensorstore opens the array and reads it."""

    def cases(server: RemoteServer) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
        import tensorstore as ts
        import zarr

        def series(engine: str, **kwargs: Any) -> Callable[[Any], Any]:
            return lambda store: xr.open_dataset(store, engine=engine, **kwargs).t2m[POINT].values

        return {
            OURS: (lambda: fresh_store(server, path), series("zarr3")),
            ZARR: (lambda: zarr.storage.FsspecStore(fresh_fs(server), path=f"{BUCKET}/{path}", read_only=True),
                   series("zarr", consolidated=consolidated, zarr_format=3)),
            TS: (ts.Context,
                 lambda ctx: ts.open(ts_spec(server, f"{path}/t2m"), context=ctx).result()[POINT].read().result()),
        }  # fmt: skip

    return cases


OBSTORE_SYNC, OBSTORE_ASYNC = "obstore sync, threads", "obstore async, 1 loop"
OBSTORE_APIS = "obstore API: GET every key of the group"


def obstore_apis(server: RemoteServer) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """Every key of the 200-variable group (about 400 GETs), by obstore's two APIs, cold clients each.

    ``sync``: what ``ObstoreStore.get_many_versioned`` does (blocking ``obstore.get`` on the runtime's
    request threads, ``io_concurrency`` at once). ``async``: ``obstore.get_async`` on the runtime's
    background event loop (``run_on_loop``), ``io_concurrency`` at once (the runtime's ``gather``),
    each answer checked and versioned as ``ObstoreStore._read`` does: what an async store would run.
    """
    keys = sorted(fresh_store(server, "many.zarr").list_prefix(""))

    def run_async(store: ObstoreStore) -> int:
        import obstore

        from zarr3_backend.core.buffers import Versioned
        from zarr3_backend.errors import StoreError
        from zarr3_backend.runtime import run_on_loop
        from zarr3_backend.runtime.batches import gather
        from zarr3_backend.store.obstore_options import endpoint_name, generation, span

        client = store.client  # made here, as the sync case makes it with its first request
        endpoint = endpoint_name(store.url, store.settings)

        async def get(key: str) -> Versioned:
            result = await obstore.get_async(client, key)
            data = await result.bytes_async()
            meta = result.meta
            expected = span(None, meta["size"])
            if tuple(result.range) != expected or len(data) != expected[1] - expected[0]:
                raise StoreError(f"key {key!r}: bytes {list(result.range)} for {expected}")
            return Versioned(memoryview(data), generation(meta, endpoint, key))

        reads = run_on_loop(gather([get(key) for key in keys], store.io_concurrency))
        failed = [read for read in reads if isinstance(read, BaseException)]
        if failed:
            raise failed[0]
        return len(reads)

    return {
        OBSTORE_SYNC: (lambda: fresh_store(server, "many.zarr"),
                       lambda store: len(store.get_many_versioned([(key, None) for key in keys]))),
        OBSTORE_ASYNC: (lambda: fresh_store(server, "many.zarr"), run_async),
    }  # fmt: skip


WORKLOADS = {
    "full read, no dask": full_read,
    "full read, chunks={}": full_read_dask,
    "open + point series": point_series,
    "point series, long-lived reader": warm_point_series,
    "xarray open + point series": xarray_point_series("t2m.zarr", consolidated=False),
    "xarray open + point series, consolidated": xarray_point_series(
        "t2m_consolidated.zarr", consolidated=True
    ),
    f"open {N_VARS}-variable group": open_many,
    OBSTORE_APIS: obstore_apis,
}
#: What runs without ``--only``: the obstore API comparison runs only when asked.
DEFAULT_WORKLOADS = [workload for workload in WORKLOADS if workload != OBSTORE_APIS]


# ---------------------------------------------------------------- measuring


def measure(
    server: RemoteServer, setup: Callable[[], Any], run: Callable[[Any], Any]
) -> tuple[float, dict[str, Any]]:
    clients = setup()
    server.drop_connections()  # every client starts without connections (tensorstore keeps one pool per process)
    gc.collect()  # the earlier calls' leftovers are not collected during this one (see benchmarks/README.md)
    server.reset_stats()
    cpu = time.process_time()  # this process's threads only: the server runs in a child process
    start = time.perf_counter()
    _FINALIZE.clear()
    run(clients)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    return elapsed, {
        **server.stats(),
        "cpu_s": cpu,
        "per_round": requests_per_round(server.chain()),
        **_FINALIZE,
    }


def requests_per_round(chain: list[tuple[int, str, str]]) -> list[int]:
    """How many requests each round sent: ``[2, 19, 37]`` = 2 at first, 19 after one was answered, ..."""
    depths = collections.Counter(depth for depth, _, _ in chain)
    return [depths[depth] for depth in range(1, max(depths, default=0) + 1)]


def many_variables_store() -> Path:
    """The 200-variable group (not consolidated) written by xarray + zarr-python, cached under /tmp."""
    path = CACHE / f"many_{N_VARS}_False.zarr"
    if not (path / "zarr.json").exists():
        many_variables().to_zarr(path, zarr_format=3, consolidated=False)
    return path


def upload(server: RemoteServer, shape: tuple[int, ...]) -> None:
    fs = fresh_fs(server)
    fs.mkdir(BUCKET)
    fs.put(str(climate_store(shape)) + "/", f"{BUCKET}/t2m.zarr", recursive=True)
    fs.put(str(climate_store(shape)) + "/", f"{BUCKET}/t2m_consolidated.zarr", recursive=True)
    zarr3_backend.consolidate_metadata(
        f"s3://{BUCKET}/t2m_consolidated.zarr", storage_options=server.storage_options
    )
    fs.put(str(many_variables_store()) + "/", f"{BUCKET}/many.zarr", recursive=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"smaller array {QUICK_SHAPE}")
    parser.add_argument(
        "--latency", type=float, action="append", help="seconds (repeatable; default 0, 0.02, 0.05)"
    )
    parser.add_argument(
        "--bandwidth", type=float, default=100e6, help="bytes/s per connection (default 100e6)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats after one warm-up")
    parser.add_argument("--only", choices=list(WORKLOADS), action="append")
    parser.add_argument(
        "--tls", action="store_true", help="serve https (self-signed certificate), as S3 does"
    )
    parser.add_argument(
        "--rounds", action="store_true", help="also print the requests of each round (last call)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    print_machine_info(LIBRARIES)
    shape = QUICK_SHAPE if args.quick else FULL_SHAPE
    rows = []
    with latency_s3_process(0.0, args.bandwidth, tls=args.tls) as server:
        print(f"server: {server.endpoint_url}")
        if server.ca_file:
            os.environ["TENSORSTORE_CA_BUNDLE"] = server.ca_file  # read when tensorstore first speaks https
        upload(server, shape)
        for latency in args.latency or [0.0, 0.02, 0.05]:
            server.configure(latency, args.bandwidth)
            for workload in args.only or DEFAULT_WORKLOADS:
                cases = WORKLOADS[workload](server)
                times: dict[str, list[float]] = {impl: [] for impl in cases}
                stats: dict[str, dict[str, Any]] = {}
                cpus: dict[str, list[float]] = {impl: [] for impl in cases}
                for repeat in range(1 + args.repeats):  # round-robin, first round is a warm-up
                    for impl, (setup, run) in cases.items():
                        elapsed, stats[impl] = measure(server, setup, run)
                        if repeat:
                            times[impl].append(elapsed)
                            cpus[impl].append(stats[impl]["cpu_s"])
                for impl in cases:
                    stats[impl]["cpu_s"] = statistics.median(cpus[impl])
                    rows.append((latency, workload, impl, statistics.median(times[impl]), stats[impl]))
                _print_block(latency, workload, rows[-len(cases) :], args.rounds)
    _print_ratios(rows)
    if args.json:
        transport = "https" if args.tls else "http"
        write_results(
            args.json, "benchmarks/bench_cloud.py", LIBRARIES, _tables(rows, transport), argv or sys.argv[1:]
        )
    return 0


def _tables(rows: list[tuple[Any, ...]], transport: str) -> dict[str, object]:
    """One results table per latency, in ``common.ResultTable.to_json``'s shape, with requests and rounds."""
    tables: dict[str, Any] = {}
    for latency, workload, impl, median, stats in rows:
        name = f"S3 over {transport}, {latency * 1000:.0f} ms per request"
        table = tables.setdefault(
            name, {"ours": OURS, "baselines": [ZARR, TS, FLOOR], "floor": FLOOR, "workloads": []}
        )
        if not table["workloads"] or table["workloads"][-1]["workload"] != workload:
            table["workloads"].append({"workload": workload, "logical_mb": None, "results": {}})
        table["workloads"][-1]["results"][impl] = {
            "median_s": median,
            "cpu_s": stats["cpu_s"],
            "requests": stats["requests"],
            "rounds": stats["rounds"],
            **({"finalize_s": stats["finalize_s"]} if "finalize_s" in stats else {}),
        }
    for table in tables.values():
        for row in table["workloads"]:
            ours = row["results"].get(OURS)
            for impl, cell in row["results"].items():
                cell["ours_over_this"] = (
                    ours["median_s"] / cell["median_s"] if ours and impl != OURS else None
                )
    return tables


def _print_block(latency: float, workload: str, rows: list[tuple[Any, ...]], rounds: bool) -> None:
    print(f"\n{workload} @ {latency * 1000:.0f} ms")
    print(f"  {'implementation':<16}{'median s':>10}{'requests':>10}{'in flight':>11}{'rounds':>8}")
    for _, _, impl, median, stats in rows:
        print(
            f"  {impl:<16}{median:>10.3f}{stats['requests']:>10}{stats['max_in_flight']:>11}{stats['rounds']:>8}"
            f"{stats['cpu_s']:>8.3f} s CPU ({1000 * stats['cpu_s'] / max(1, stats['requests']):.2f} ms/request)"
            + (
                f", of which dask's final concatenate {stats['finalize_s']:.3f} s"
                if "finalize_s" in stats
                else ""
            )
        )
    if rounds:
        for _, _, impl, _, stats in rows:
            rounds_sent = stats["per_round"]
            more = f" ... ({len(rounds_sent)} rounds)" if len(rounds_sent) > 40 else ""
            print(f"    {impl} requests per round: {' '.join(map(str, rounds_sent[:40]))}{more}")


def _print_ratios(rows: list[tuple[Any, ...]]) -> None:
    print(f"\nratios ({OURS} / other, < 1 favours {OURS}): time | requests")
    table: dict[tuple[float, str], dict[str, tuple[float, int]]] = {}
    for latency, workload, impl, median, stats in rows:
        table.setdefault((latency, workload), {})[impl] = (median, stats["requests"])
    for (latency, workload), cells in table.items():
        ours = cells.get(OURS)
        parts = []
        for other in (ZARR, TS, FLOOR):
            if ours and other in cells:
                parts.append(
                    f"{other}: {ours[0] / cells[other][0]:.2f} | {ours[1] / max(1, cells[other][1]):.2f}"
                )
        print(f"  {latency * 1000:>3.0f} ms  {workload:<28}" + "   ".join(parts))


if __name__ == "__main__":
    raise SystemExit(main())
