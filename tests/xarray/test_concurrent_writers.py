"""Writers in several processes at once: every write that returned keeps its rows.

Appends race region writes into the array's last, partial shard, and appends
race appends, on local files and moto S3 (obstore: the lease and region marks),
on fsspec local files and S3 through s3fs (no atomic create: appends need
``lock=``), with and without a shared ``lock=``. Each configuration runs its
trials in one pair of spawned processes, meeting at a barrier before each.
"""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (registers to_zarr3)
from tests.forking import dead_pid
from tests.xarray.test_region_lock import FileLocks
from zarr3_backend.coordination.records import PENDING_KEY
from zarr3_backend.errors import WriteError
from zarr3_backend.store import make_store
from zarr3_backend.store.base import Store
from zarr3_backend.store.fsspec_store import FsspecStore

pytestmark = pytest.mark.validate_stores

TRIALS = 4
ROWS, WIDTH, SHARD = 10, 32, 8  # rows 8..9 lie in the last shard, which reaches row 16
WRITES = 4  # per process and trial
REGION = slice(8, 10)

StoreSpec = tuple[str, str, dict[str, Any] | None]  # kind, location, storage options


def open_store(spec: StoreSpec) -> Store:
    kind, location, options = spec
    if kind == "fsspec-local":
        return FsspecStore(fsspec.filesystem("file", auto_mkdir=True), location)
    return make_store(location, storage_options=options)


def template(spec: StoreSpec) -> None:
    ds = xr.Dataset(
        {"v": (("time", "x"), np.repeat(np.arange(1.0, ROWS + 1)[:, None], WIDTH, axis=1))},
        coords={"time": np.arange(ROWS)},
    )
    ds.to_zarr3(open_store(spec), encoding={"v": {"chunks": (2, WIDTH), "shards": (SHARD, WIDTH)}})


def appended(t: int) -> xr.Dataset:
    return xr.Dataset({"v": (("time", "x"), np.full((1, WIDTH), float(t)))}, coords={"time": [t]})


def _appender(specs: list[StoreSpec], first: int, lock: Any, barrier: Any, results: Any) -> None:
    for trial, spec in enumerate(specs):
        barrier.wait()
        for i in range(WRITES):
            t = first + i
            try:
                appended(t).to_zarr3(open_store(spec), append_dim="time", lock=lock)
                results.put((trial, "append", t, "ok"))
            except Exception as exc:  # reported to the test, which decides
                results.put((trial, "append", t, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def _region_writer(specs: list[StoreSpec], lock: Any, barrier: Any, results: Any) -> None:
    for trial, spec in enumerate(specs):
        barrier.wait()
        for j in range(WRITES):
            value = 1000.0 + j
            ds = xr.Dataset({"v": (("time", "x"), np.full((REGION.stop - REGION.start, WIDTH), value))})
            try:
                ds.to_zarr3(open_store(spec), region={"time": REGION}, lock=lock)
                results.put((trial, "region", value, "ok"))
            except Exception as exc:
                results.put(
                    (trial, "region", value, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
                )


def race(specs: list[StoreSpec], tmp_path: Path, locked: bool | str, second: str) -> list[tuple[Any, ...]]:
    """Run an appender and a ``second`` writer ("region" or "append") against each store; what each write got.

    ``locked``: one ``flock`` file per key (a callable ``lock=``), ``"one"``: one ``multiprocessing.Lock``.
    """
    context = multiprocessing.get_context("spawn")
    lock: Any = None
    if locked == "one":
        lock = context.Lock()
    elif locked:
        (tmp_path / "locks").mkdir(exist_ok=True)
        lock = FileLocks(str(tmp_path / "locks"))
    barrier, results = context.Barrier(2), context.Queue()
    other = (
        context.Process(target=_region_writer, args=(specs, lock, barrier, results))
        if second == "region"
        else context.Process(target=_appender, args=(specs, 200, lock, barrier, results))
    )
    workers = [context.Process(target=_appender, args=(specs, 100, lock, barrier, results)), other]
    for w in workers:
        w.start()
    got = [results.get(timeout=600) for _ in range(2 * WRITES * len(specs))]
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    return got


def check_trial(spec: StoreSpec, got: list[tuple[Any, ...]]) -> None:
    """Every write told ok has its rows; the store opens with both engines alike."""
    failed = [g for g in got if g[3] != "ok"]
    assert not failed, failed[0][3]
    ds = xr.open_dataset(open_store(spec), engine="zarr3").load()
    times = ds["time"].values.tolist()
    appends = sorted(g[2] for g in got if g[1] == "append")
    assert sorted(times[ROWS:]) == appends and times[:ROWS] == list(range(ROWS))
    for t in appends:
        np.testing.assert_array_equal(ds["v"].sel(time=t).values, float(t), err_msg=f"appended row {t}")
    np.testing.assert_array_equal(ds["v"].values[:8], np.repeat(np.arange(1.0, 9)[:, None], WIDTH, axis=1))
    regions = [g[2] for g in got if g[1] == "region"]
    if regions:
        np.testing.assert_array_equal(ds["v"].values[REGION], max(regions))  # one process: in order
    assert not open_store(spec).exists(PENDING_KEY)


def specs_for(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> list[StoreSpec]:
    if kind in ("local", "fsspec-local"):
        return [(kind, str(tmp_path / f"{kind}{trial}.zarr"), None) for trial in range(TRIALS)]
    server = request.getfixturevalue("s3_server")
    options = dict(server.storage_options)
    if kind == "s3fs":
        options["backend"] = "fsspec"
    return [(kind, f"{server.make_bucket()}/s.zarr", options) for _ in range(TRIALS)]


def race_and_check(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, locked: bool | str, second: str
) -> None:
    """`race()` on fresh stores of ``kind``, then `check_trial()` of each store."""
    specs = specs_for(kind, tmp_path, request)
    for spec in specs:
        template(spec)
    got = race(specs, tmp_path, locked, second)
    for trial, spec in enumerate(specs):
        check_trial(spec, [g for g in got if g[0] == trial])


@pytest.mark.parametrize(
    ("kind", "locked"),
    [("local", False), ("local", True), ("local", "one"), ("s3", False), ("s3", True)],
    ids=["local-no-lock", "local-lock", "local-one-lock", "s3-no-lock", "s3-lock"],
)
def test_appends_racing_region_writes_into_the_last_shard_keep_every_row(
    kind: str, locked: bool | str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    race_and_check(kind, tmp_path, request, locked, "region")


@pytest.mark.parametrize("kind", ["fsspec-local", "s3fs"])
def test_without_atomic_create_appends_with_a_lock_all_land(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    race_and_check(kind, tmp_path, request, True, "append")


@pytest.mark.parametrize("kind", ["fsspec-local", "s3fs"])
def test_without_atomic_create_a_region_write_with_a_lock_keeps_appended_rows(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    race_and_check(kind, tmp_path, request, True, "region")


@pytest.mark.parametrize("kind", ["fsspec-local", "s3fs"])
def test_without_atomic_create_an_append_without_a_lock_is_refused_before_anything_is_written(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    (spec, *_) = specs_for(kind, tmp_path, request)
    template(spec)
    store = open_store(spec)
    before = {key: store.get(key) for key in store.list()}
    with pytest.raises(WriteError, match=r"needs lock=.*cannot create a key atomically"):
        appended(100).to_zarr3(store, append_dim="time")
    assert {key: store.get(key) for key in store.list()} == before


def test_an_append_to_memory_needs_no_lock() -> None:
    """No other process reaches ``memory://``: threads of this one take turns without a lease."""
    spec: StoreSpec = ("memory", "memory://concurrent/appends", None)
    template(spec)
    appended(100).to_zarr3(open_store(spec), append_dim="time")
    assert xr.open_dataset(open_store(spec), engine="zarr3")["time"].values[-1] == 100


def _holder(pid: int) -> str:
    import json
    import socket

    return json.dumps({"host": socket.gethostname(), "pid": pid, "since": 0, "id": "x"})


@pytest.mark.parametrize("marker", ["alive", "gone"])
def test_an_append_waits_for_region_writes_and_removes_the_marks_of_gone_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: str
) -> None:
    import os

    from zarr3_backend.coordination.lease import LEASE_KEY, REGIONS_PREFIX
    from zarr3_backend.errors import ConcurrentWriteError

    spec: StoreSpec = ("local", str(tmp_path / "s.zarr"), None)
    template(spec)
    mark = tmp_path / "s.zarr" / REGIONS_PREFIX / "other.json"
    mark.parent.mkdir()
    mark.write_text(_holder(os.getppid() if marker == "alive" else dead_pid()))
    monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "0.3")
    if marker == "alive":
        with pytest.raises(ConcurrentWriteError, match=r"a region write .* process .*other\.json.*nothing"):
            appended(100).to_zarr3(open_store(spec), append_dim="time")
        assert xr.open_dataset(open_store(spec), engine="zarr3").sizes["time"] == ROWS
        assert mark.exists() and not (tmp_path / "s.zarr" / LEASE_KEY).exists()
        return
    appended(100).to_zarr3(open_store(spec), append_dim="time")
    assert xr.open_dataset(open_store(spec), engine="zarr3").sizes["time"] == ROWS + 1
    assert not mark.exists()


def test_a_region_write_waits_while_an_append_holds_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from zarr3_backend.coordination.lease import LEASE_KEY, REGIONS_PREFIX
    from zarr3_backend.errors import ConcurrentWriteError

    spec: StoreSpec = ("local", str(tmp_path / "s.zarr"), None)
    template(spec)
    (tmp_path / "s.zarr" / LEASE_KEY).write_text(_holder(os.getppid()))
    monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "0.3")
    ds = xr.Dataset({"v": (("time", "x"), np.full((2, WIDTH), 5.0))})
    with pytest.raises(
        ConcurrentWriteError, match=rf"an append .*held {LEASE_KEY}.*nothing of this region write"
    ):
        ds.to_zarr3(open_store(spec), region={"time": REGION})
    assert not (tmp_path / "s.zarr" / REGIONS_PREFIX).exists()
    (tmp_path / "s.zarr" / LEASE_KEY).unlink()
    ds.to_zarr3(open_store(spec), region={"time": REGION})
    np.testing.assert_array_equal(xr.open_dataset(open_store(spec), engine="zarr3")["v"].values[REGION], 5.0)


def test_region_writes_do_not_wait_for_each_other(tmp_path: Path) -> None:
    from zarr3_backend.coordination.lease import REGIONS_PREFIX, RegionMark

    store = open_store(("local", str(tmp_path / "s.zarr"), None))
    with RegionMark(store, wait=0), RegionMark(store, wait=0):
        assert len(list(store.list_prefix(REGIONS_PREFIX))) == 2
    assert not list(store.list_prefix(REGIONS_PREFIX))
