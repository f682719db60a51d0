"""The one host/pid lease: taken, waited for, taken over from a gone holder, released only by its holder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from zarr3_backend.coordination.lease import LEASE_KEY, StoreLease
from zarr3_backend.coordination.records import REGIONS_PREFIX
from zarr3_backend.errors import ConcurrentWriteError, MetadataError
from zarr3_backend.store import make_store
from zarr3_backend.store.local import LocalStore


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _record(pid: int) -> bytes:
    return json.dumps({"host": socket.gethostname(), "pid": pid, "since": time.time(), "id": "x"}).encode()


def test_a_lease_of_a_gone_process_is_taken_over() -> None:
    store = make_store("memory://coordination/gone")
    store.set(LEASE_KEY, _record(_gone_pid()))
    with StoreLease(store, wait=0):
        assert json.loads(store.get(LEASE_KEY) or b"{}")["pid"] == os.getpid()
    assert not store.exists(LEASE_KEY)


def test_a_lease_of_a_running_process_is_waited_for_then_refused_naming_it() -> None:
    store = make_store("memory://coordination/running")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        store.set(LEASE_KEY, _record(other.pid))
        started = time.monotonic()
        with pytest.raises(ConcurrentWriteError, match=rf"taken by process {other.pid} on "):
            StoreLease(store, wait=0.3).__enter__()
        assert time.monotonic() - started >= 0.3
        assert json.loads(store.get(LEASE_KEY) or b"{}")["pid"] == other.pid  # left as it was
    finally:
        other.kill()
        other.wait()


def test_release_deletes_only_the_holders_own_record() -> None:
    store = make_store("memory://coordination/release")
    lease = StoreLease(store, wait=0)
    with lease:
        store.set(LEASE_KEY, _record(os.getpid() + 1))  # someone else's record replaced ours meanwhile
    assert store.exists(LEASE_KEY)


def test_a_directory_at_the_lease_key_is_a_broken_lease_refused_within_the_wait(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    (tmp_path / LEASE_KEY).mkdir()  # create fails, and get finds nothing there
    raised: list[BaseException] = []

    def append() -> None:
        try:
            StoreLease(store, wait=0.3).__enter__()
        except BaseException as exc:
            raised.append(exc)

    started = time.monotonic()
    taker = threading.Thread(target=append, daemon=True)
    taker.start()
    taker.join(timeout=30)
    assert not taker.is_alive(), "the take loop ignores its deadline"
    assert 0.3 <= time.monotonic() - started < 30
    assert len(raised) == 1 and isinstance(raised[0], MetadataError)
    assert str(raised[0]).startswith(f"{LEASE_KEY}: a broken lease")
    assert (tmp_path / LEASE_KEY).is_dir()  # left as it was


def test_a_garbage_region_mark_is_blamed_by_its_own_key() -> None:
    store = make_store("memory://coordination/garbage-mark")
    mark = f"{REGIONS_PREFIX}0123.json"
    store.set(mark, b"not json")
    with pytest.raises(MetadataError) as raised:
        StoreLease(store, wait=0).__enter__()
    assert str(raised.value).startswith(f"{mark}: ")
    assert LEASE_KEY not in str(raised.value) and "region write" in str(raised.value)
    assert not store.exists(LEASE_KEY)  # the lease taken for the check is released
