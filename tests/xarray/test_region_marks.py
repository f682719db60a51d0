"""A region write's mark (under __zarr3_backend_regions/) is released on every way out, and a leaked one of this
process is taken over at once: a refused region write never makes later appends wait."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.coordination.lease import LEASE_KEY, REGIONS_PREFIX, RegionMark, StoreLease
from zarr3_backend.store import make_store

ENCODING = {"v": {"chunks": (2, 4), "shards": (4, 4)}}


def template(path: Path) -> str:
    location = str(path / "s.zarr")
    xr.Dataset({"v": (("time", "x"), np.zeros((8, 4)))}, coords={"time": np.arange(8)}).to_zarr3(
        location, encoding=ENCODING
    )
    return location


def region(value: float, rows: int = 4) -> xr.Dataset:
    return xr.Dataset({"v": (("time", "x"), np.full((rows, 4), value))})


def marks(location: str) -> list[str]:
    return list(make_store(location).list_prefix(REGIONS_PREFIX))


def append_promptly(location: str) -> None:
    """An append that must not wait for any mark (the lease wait is 60 s: waiting would show)."""
    started = time.monotonic()
    xr.Dataset({"v": (("time", "x"), np.ones((1, 4)))}, coords={"time": [8]}).to_zarr3(
        location, append_dim="time"
    )
    assert time.monotonic() - started < 30
    assert xr.open_dataset(location, engine="zarr3").sizes["time"] == 9


def fail(block: np.ndarray) -> np.ndarray:
    raise RuntimeError("injected failure")


@pytest.fixture(autouse=True)
def long_wait(monkeypatch):
    monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "60")


def test_a_broken_lease_refuses_the_region_write_before_any_mark(tmp_path) -> None:
    location = template(tmp_path)
    (Path(location) / LEASE_KEY).write_text('{"appends": []}')
    with pytest.raises(zarr3_backend.MetadataError, match=LEASE_KEY):
        region(5.0).to_zarr3(location, region={"time": slice(0, 4)})
    assert marks(location) == []
    (Path(location) / LEASE_KEY).unlink()
    append_promptly(location)


def test_a_lease_broken_between_mark_and_check_releases_the_mark(tmp_path, monkeypatch) -> None:
    location = template(tmp_path)
    store = make_store(location)
    real = RegionMark._live_lease
    calls = []

    def second_check_breaks(self):
        calls.append(1)
        if len(calls) == 2:  # after the mark was written
            assert len(marks(location)) == 1
            raise zarr3_backend.MetadataError(f"{LEASE_KEY}: broken")
        return real(self)

    monkeypatch.setattr(RegionMark, "_live_lease", second_check_breaks)
    with pytest.raises(zarr3_backend.MetadataError, match="broken"):
        RegionMark(store).__enter__()
    assert marks(location) == []


@pytest.mark.parametrize(
    "refusal",
    ["outside the array", "unknown variable", "task fails", "append holds the lease"],
)
def test_every_refusal_of_a_region_write_releases_its_mark(tmp_path, monkeypatch, refusal) -> None:
    location = template(tmp_path)
    seen = []
    real_enter = RegionMark.__enter__

    def spy(self):
        entered = real_enter(self)
        seen.append(marks(location))
        return entered

    monkeypatch.setattr(RegionMark, "__enter__", spy)
    if refusal == "outside the array":
        call, error = (
            lambda: region(5.0).to_zarr3(location, region={"time": slice(6, 10)}),
            zarr3_backend.Zarr3Error,
        )
    elif refusal == "unknown variable":
        extra = region(5.0).assign(w=(("time", "x"), np.zeros((4, 4))))
        call, error = lambda: extra.to_zarr3(location, region={"time": slice(0, 4)}), zarr3_backend.Zarr3Error
    elif refusal == "task fails":
        broken = region(5.0).chunk(time=4)
        broken["v"] = broken.v.copy(data=da.map_blocks(fail, broken.v.data, dtype="float64"))
        call, error = lambda: broken.to_zarr3(location, region={"time": slice(0, 4)}), RuntimeError
    else:
        holder = {"host": socket.gethostname(), "pid": os.getppid(), "since": 0, "id": "other"}
        (Path(location) / LEASE_KEY).write_text(json.dumps(holder))
        monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "0.2")
        call, error = (
            lambda: region(5.0).to_zarr3(location, region={"time": slice(0, 4)}),
            zarr3_backend.ConcurrentWriteError,
        )
    with pytest.raises(error):
        call()
    if refusal == "append holds the lease":
        assert seen == []  # never entered
        (Path(location) / LEASE_KEY).unlink()
        monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "60")
    else:
        assert len(seen) == 1 and len(seen[0]) == 1  # the mark was held while it planned and wrote
    assert marks(location) == []
    append_promptly(location)


def test_a_mark_this_process_leaked_is_taken_over_at_once(tmp_path) -> None:
    location = template(tmp_path)
    store = make_store(location)
    leaked = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(), "id": "no-live-write"}
    store.set(f"{REGIONS_PREFIX}leaked.json", json.dumps(leaked).encode())
    append_promptly(location)
    assert marks(location) == []


def test_a_live_mark_of_this_process_is_waited_for(tmp_path) -> None:
    store = make_store(template(tmp_path))
    with RegionMark(store, wait=0):
        with pytest.raises(zarr3_backend.ConcurrentWriteError, match="a region write"):
            StoreLease(store, wait=0.2).__enter__()
    assert not store.exists(LEASE_KEY)
    with StoreLease(store, wait=0):
        assert store.exists(LEASE_KEY)


def test_a_lease_this_process_leaked_is_taken_over_at_once(tmp_path) -> None:
    store = make_store(template(tmp_path))
    leaked = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(), "id": "no-live-write"}
    store.set(LEASE_KEY, json.dumps(leaked).encode())
    with StoreLease(store, wait=0):
        assert json.loads(store.get(LEASE_KEY))["id"] != "no-live-write"
    assert not store.exists(LEASE_KEY)
