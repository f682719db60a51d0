"""The one host/pid lease (`HostLease`: take, wait, take over a gone holder, release) and its two write uses.

An append without ``lock=`` holds a `StoreLease` (`LEASE_KEY`) from planning
to commit; a region write without ``lock=`` holds a `RegionMark` (its own key
under `REGIONS_PREFIX`). Marks do not wait for each other, a mark waits while
the lease is held, and the lease waits until no mark is left, each up to
``ZARR3_BACKEND_LEASE_WAIT`` seconds (default 600), then `ConcurrentWriteError`
names the holder. A record whose holder is gone, or is this process but no
write of it holds it any more, is taken over; one we did not write raises
`MetadataError`. Convert's run record is a `HostLease` too. Why the ordering
excludes both races: the architecture page, "How a write commits".

>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/lease")
>>> with StoreLease(store):
...     store.exists(LEASE_KEY)
True
>>> store.exists(LEASE_KEY)
False
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from ..core.metadata import decode_document
from ..errors import ConcurrentWriteError, MetadataError
from ..runtime.settings import lease_wait
from ..store.base import Store, plain_values
from .records import LEASE_KEY, REGIONS_PREFIX


def _wait_seconds(wait: float | None) -> float:
    return lease_wait() if wait is None else wait


_held: set[str] = set()  # ids of the leases and marks this process holds now (added before they are written)


def holder_record(**fields: str) -> bytes:
    """A lease's record: this host and process, the time, and ``fields`` (which make it unique)."""
    return json.dumps(
        {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(), **fields}
    ).encode()


def holder_gone(holder: Mapping[str, Any]) -> bool:
    """Whether ``holder`` (a parsed record) was a process of this host that no longer runs, or this process
    for a lease or mark it no longer holds (its ``id`` is not held)."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return "id" in holder and holder["id"] not in _held
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it runs, under another user
        return False
    return False


class HostLease:
    """The key ``key`` of ``store`` naming its holder: created atomically, taken over from a gone holder.

    ``parse`` reads a record found there (raising `MetadataError` for one we
    did not write); only the holder's own record is deleted on `release()`.
    A lease with an ``id`` counts as held by this process from `take()` to `release()`.
    """

    def __init__(
        self, store: Store, key: str, parse: Callable[[bytes], Mapping[str, Any]], **fields: str
    ) -> None:
        self.store, self.key, self.parse = store, key, parse
        self.id = fields.get("id")
        self.record = holder_record(**fields)

    def gone(self, raw: bytes) -> bool:
        return holder_gone(self.parse(raw))

    def try_take(self, backoff: Backoff) -> bytes | None:
        """Take the key: ``None`` once held, else the record of the live holder that has it.

        A key that cannot be created and holds no record (a directory there, a
        store that refuses it) is tried again until ``backoff`` expires, then
        raises `MetadataError` naming the key: a broken lease.
        """
        while not self.store.create(self.key, self.record):
            held = self.store.get(self.key)
            if held is None:  # released meanwhile, or nothing readable there
                if backoff.expired():
                    raise MetadataError(
                        f"{self.key}: a broken lease: it cannot be created, and no record can be read there "
                        f"(a directory or another object that is not a lease?) in {self.store!r}; remove it"
                    )
                backoff.sleep()
                continue
            if not self.gone(held):
                return held
            self.store.delete(self.key)  # its holder is gone; the next create decides who takes it
        return None

    def take(self, deadline: float, refuse: Callable[[bytes], BaseException]) -> None:
        """Take the key, waiting until ``deadline`` (`time.monotonic()`), then raise ``refuse(holder's record)``."""
        if self.id is not None:
            _held.add(self.id)
        backoff = Backoff(deadline)
        while (held := self.try_take(backoff)) is not None:
            if backoff.expired():
                raise refuse(held)
            backoff.sleep()

    def release(self) -> None:
        try:
            if self.store.get(self.key) == self.record:
                self.store.delete(self.key)
        finally:
            _held.discard(self.id or "")


class Backoff:
    """Pauses between tries until ``deadline`` (a `time.monotonic()` value): 10 ms, doubling up to 1 s."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.pause = 0.01

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def sleep(self) -> None:
        time.sleep(self.pause)
        self.pause = min(2 * self.pause, 1.0)


class StoreLease:
    """Hold `LEASE_KEY` of ``store`` for a ``with`` block, waiting up to ``wait`` seconds for it."""

    def __init__(self, store: Store, wait: float | None = None) -> None:
        self.store = store
        self.wait = _wait_seconds(wait)
        self.lease = HostLease(store, LEASE_KEY, parse_lease, id=uuid.uuid4().hex)
        self.record = self.lease.record

    def __enter__(self) -> StoreLease:
        deadline = time.monotonic() + self.wait
        try:
            self.lease.take(deadline, self._refuse)  # a broken lease raises MetadataError here
            self._wait_for_region_writes(deadline)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _refuse(self, held: bytes) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"to_zarr3: another append to {self.store!r} has held {LEASE_KEY} for longer than {self.wait:g} s "
            f"({_describe(held)}); nothing of this write was done. If that writer no longer runs, delete "
            f"{LEASE_KEY} at the store root; ZARR3_BACKEND_LEASE_WAIT sets how long to wait"
        )

    def _wait_for_region_writes(self, deadline: float) -> None:
        """Hold the lease until no live `RegionMark` is left (marks of gone processes are removed)."""
        backoff = Backoff(deadline)
        while True:
            keys = list(self.store.list_prefix(REGIONS_PREFIX))
            marks = plain_values(self.store.get_many_versioned([(key, None) for key in keys]))
            found = [(k, m) for k, m in zip(keys, marks) if m is not None]
            gone = {k for k, m in found if _abandoned(m, k)}
            for key in gone:
                self.store.delete(key)
            live = [(k, m) for k, m in found if k not in gone]
            if not live:
                return
            if backoff.expired():
                raise ConcurrentWriteError(
                    f"to_zarr3: a region write to {self.store!r} has run for longer than {self.wait:g} s "
                    f"({_describe(live[0][1], live[0][0])}, {live[0][0]}); nothing of this write was done. If that writer no "
                    f"longer runs, delete {live[0][0]}; ZARR3_BACKEND_LEASE_WAIT sets how long to wait"
                )
            backoff.sleep()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.lease.release()


class RegionMark:
    """Mark a region write in ``store`` for a ``with`` block, waiting up to ``wait`` seconds while an append runs.

    The mark is written only once the lease has been read and found free (a
    broken lease refuses first), and it is deleted on every way out of
    ``__enter__`` that does not return it, and by ``__exit__``.
    """

    def __init__(self, store: Store, wait: float | None = None) -> None:
        self.store = store
        self.wait = _wait_seconds(wait)
        self.id = uuid.uuid4().hex
        self.record = holder_record(id=self.id)
        self.key = f"{REGIONS_PREFIX}{uuid.uuid4().hex}.json"

    def __enter__(self) -> RegionMark:
        backoff = Backoff(time.monotonic() + self.wait)
        while True:
            held = self._live_lease()  # refuses (a broken lease) before any mark is written
            if held is None:
                _held.add(self.id)
                try:
                    self.store.set(self.key, self.record)
                    held = self._live_lease()  # an append that took the lease meanwhile goes first
                except BaseException:
                    self.__exit__(None, None, None)
                    raise
                if held is None:  # whoever takes an abandoned lease over sees this mark
                    return self
                self.__exit__(None, None, None)
            if backoff.expired():
                raise ConcurrentWriteError(
                    f"to_zarr3: an append to {self.store!r} has held {LEASE_KEY} for longer than {self.wait:g} s "
                    f"({_describe(held)}); nothing of this region write was done. If that writer no longer runs, "
                    f"delete {LEASE_KEY} at the store root; ZARR3_BACKEND_LEASE_WAIT sets how long to wait"
                )
            backoff.sleep()

    def _live_lease(self) -> bytes | None:
        """The lease record of an append that runs, if any (`MetadataError` if it is broken)."""
        held = self.store.get(LEASE_KEY)
        return None if held is None or _abandoned(held) else held

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.store.delete(self.key)
        finally:
            _held.discard(self.id)


def parse_lease(raw: bytes, key: str = LEASE_KEY) -> dict[str, object]:
    """The holder a lease or region mark stored under ``key`` names; `MetadataError` naming ``key`` if it is not
    one we write.

    >>> parse_lease(b'{"host": "h", "pid": 1e999, "since": 0, "id": "x"}')
    Traceback (most recent call last):
    ...
    zarr3_backend.errors.MetadataError: __zarr3_backend_writing.json: expected {"host": str, "pid": int, "since": time, "id": str}, got {'host': 'h', 'pid': inf, 'since': 0, 'id': 'x'} (this is not a lease a to_zarr3 append took; if no append to this store is running, delete it)
    """
    try:
        holder = decode_document(raw, key)
    except MetadataError as exc:
        raise _broken(key, str(exc).removeprefix(f"{key}: ")) from exc
    if (
        not isinstance(holder, dict)
        or not isinstance(holder.get("host"), str)
        or not isinstance(holder.get("id"), str)
        or type(holder.get("pid")) is not int
        or not 0 < holder["pid"] < 2**31
        or type(holder.get("since")) not in (int, float)
        or not math.isfinite(holder["since"])
        or not 0 <= holder["since"] < 2**40
    ):
        raise _broken(
            key, 'expected {"host": str, "pid": int, "since": time, "id": str}, got ' + repr(holder)[:200]
        )
    return holder


def _broken(key: str, problem: str) -> MetadataError:
    what = (
        "a lease a to_zarr3 append took; if no append to this store is running"
        if key == LEASE_KEY
        else "a mark a to_zarr3 region write made; if no region write to this store is running"
    )
    return MetadataError(f"{key}: {problem} (this is not {what}, delete it)")


def _abandoned(raw: bytes, key: str = LEASE_KEY) -> bool:
    """Whether the lease or mark ``raw`` (stored under ``key``) was taken by a process of this host that no longer
    runs, or by this process for a write it no longer runs (its id is not held)."""
    return holder_gone(parse_lease(raw, key))


def _describe(raw: bytes | None, key: str = LEASE_KEY) -> str:
    holder = parse_lease(raw, key) if raw is not None else {}
    since = holder.get("since")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since))
        if isinstance(since, int | float)
        else "unknown"
    )
    return f"taken by process {holder.get('pid', '?')} on {holder.get('host', '?')} at {when}"
