"""The store-wide lease that serialises ``to_zarr3`` appends from several processes, and region writes' marks.

Contract: an append (``mode="a"``) without ``lock=`` holds a `StoreLease`
(the key `LEASE_KEY`, created atomically, naming its holder) from planning
to commit; a second writer waits up to ``ZARR3_BACKEND_LEASE_WAIT`` seconds
(default 600), then raises `ConcurrentWriteError` naming the holder. A lease or
mark whose holder process is gone, or is this process but no write of it
holds that record any more, is taken over at once; a record we did not write
(`parse_lease()`) raises `MetadataError` naming it. A region write without
``lock=`` holds a `RegionMark` (its own key under `REGIONS_PREFIX`): marks do
not wait for each other, a mark waits while the lease is held, and the lease
waits until no mark is left. Why this ordering excludes both races is on the
architecture page ("How a write commits").

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
from types import TracebackType

from ...core.metadata import decode_document
from ...errors import ConcurrentWriteError, MetadataError
from ...runtime.settings import lease_wait
from ...store.base import Store, plain_values

LEASE_KEY = "__zarr3_backend_writing.json"
REGIONS_PREFIX = "__zarr3_backend_regions/"


def _wait_seconds(wait: float | None) -> float:
    return lease_wait() if wait is None else wait


_held: set[str] = set()  # ids of the leases and marks this process holds now (added before they are written)


def _holder_record() -> tuple[str, bytes]:
    """A new holder's id, and its record."""
    holder = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(), "id": uuid.uuid4().hex}
    return holder["id"], json.dumps(holder).encode()  # type: ignore[return-value]  # the id is a str


class _Backoff:
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
        self.id, self.record = _holder_record()

    def __enter__(self) -> StoreLease:
        deadline = time.monotonic() + self.wait
        _held.add(self.id)
        try:
            self._take(deadline)
            self._wait_for_region_writes(deadline)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _take(self, deadline: float) -> None:
        """Create `LEASE_KEY`, taking an abandoned one over, waiting until ``deadline`` while another is held."""
        backoff = _Backoff(deadline)
        while not self.store.create(LEASE_KEY, self.record):
            held = self.store.get(LEASE_KEY)
            if held is not None and _abandoned(held):  # a broken lease raises MetadataError here
                self.store.delete(LEASE_KEY)  # its writer is gone; the next create decides who takes it
                continue
            if backoff.expired():
                raise ConcurrentWriteError(
                    f"to_zarr3: another append to {self.store!r} has held {LEASE_KEY} for longer than {self.wait:g} s "
                    f"({_describe(held)}); nothing of this write was done. If that writer no longer runs, delete "
                    f"{LEASE_KEY} at the store root; ZARR3_BACKEND_LEASE_WAIT sets how long to wait"
                )
            backoff.sleep()

    def _wait_for_region_writes(self, deadline: float) -> None:
        """Hold the lease until no live `RegionMark` is left (marks of gone processes are removed)."""
        backoff = _Backoff(deadline)
        while True:
            keys = list(self.store.list_prefix(REGIONS_PREFIX))
            marks = plain_values(self.store.get_many_versioned([(key, None) for key in keys]))
            found = [(k, m) for k, m in zip(keys, marks) if m is not None]
            gone = {k for k, m in found if _abandoned(m)}
            for key in gone:
                self.store.delete(key)
            live = [(k, m) for k, m in found if k not in gone]
            if not live:
                return
            if backoff.expired():
                raise ConcurrentWriteError(
                    f"to_zarr3: a region write to {self.store!r} has run for longer than {self.wait:g} s "
                    f"({_describe(live[0][1])}, {live[0][0]}); nothing of this write was done. If that writer no "
                    f"longer runs, delete {live[0][0]}; ZARR3_BACKEND_LEASE_WAIT sets how long to wait"
                )
            backoff.sleep()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self.store.get(LEASE_KEY) == self.record:
                self.store.delete(LEASE_KEY)
        finally:
            _held.discard(self.id)


class RegionMark:
    """Mark a region write in ``store`` for a ``with`` block, waiting up to ``wait`` seconds while an append runs.

    The mark is written only once the lease has been read and found free (a
    broken lease refuses first), and it is deleted on every way out of
    ``__enter__`` that does not return it, and by ``__exit__``.
    """

    def __init__(self, store: Store, wait: float | None = None) -> None:
        self.store = store
        self.wait = _wait_seconds(wait)
        self.id, self.record = _holder_record()
        self.key = f"{REGIONS_PREFIX}{uuid.uuid4().hex}.json"

    def __enter__(self) -> RegionMark:
        backoff = _Backoff(time.monotonic() + self.wait)
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


def parse_lease(raw: bytes) -> dict[str, object]:
    """The holder a lease names; `MetadataError` naming `LEASE_KEY` if it is not one we write.

    >>> parse_lease(b'{"host": "h", "pid": 1e999, "since": 0, "id": "x"}')
    Traceback (most recent call last):
    ...
    zarr3_backend.errors.MetadataError: __zarr3_backend_writing.json: expected {"host": str, "pid": int, "since": time, "id": str}, got {'host': 'h', 'pid': inf, 'since': 0, 'id': 'x'} (this is not a lease a to_zarr3 append took; if no append to this store is running, delete it)
    """
    try:
        holder = decode_document(raw, LEASE_KEY)
    except MetadataError as exc:
        raise _broken(str(exc).removeprefix(f"{LEASE_KEY}: ")) from exc
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
            'expected {"host": str, "pid": int, "since": time, "id": str}, got ' + repr(holder)[:200]
        )
    return holder


def _broken(problem: str) -> MetadataError:
    return MetadataError(
        f"{LEASE_KEY}: {problem} (this is not a lease a to_zarr3 append took; if no append to this store is "
        "running, delete it)"
    )


def _abandoned(raw: bytes) -> bool:
    """Whether the lease or mark ``raw`` was taken by a process of this host that no longer runs, or by this
    process for a write it no longer runs (its id is not held)."""
    holder = parse_lease(raw)
    pid = holder["pid"]
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return holder["id"] not in _held
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it runs, under another user
        return False
    return False


def _describe(raw: bytes | None) -> str:
    holder = parse_lease(raw) if raw is not None else {}
    since = holder.get("since")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since))
        if isinstance(since, int | float)
        else "unknown"
    )
    return f"taken by process {holder.get('pid', '?')} on {holder.get('host', '?')} at {when}"
