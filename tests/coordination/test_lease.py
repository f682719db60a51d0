"""The one host/pid lease: taken, waited for, taken over from a gone holder, released only by its holder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from zarr3_backend.coordination.lease import LEASE_KEY, StoreLease
from zarr3_backend.errors import ConcurrentWriteError
from zarr3_backend.store import make_store


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
