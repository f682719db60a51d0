"""The progress record of a convert in DST (`CONVERT_PREFIX`), which lets an interrupted run continue.

``running.json`` names the run (a `HostLease`: a second run is refused, a
killed one of this host taken over), ``plan.json`` its plan (a later run with
the same plan continues), ``done/<array>/<shard key>`` each shard written and
verified (`Done`). Each key is one atomic ``set``; a record that is not what
a convert writes raises `MetadataError` naming the key. The whole protocol:
the architecture page, "What a write keeps in the store".
"""

from __future__ import annotations

import json
import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..coordination.converted import checksum
from ..coordination.lease import HostLease, holder_gone
from ..coordination.records import CONVERT_DONE_PREFIX as DONE
from ..coordination.records import CONVERT_PLAN_KEY as PLAN_KEY
from ..coordination.records import CONVERT_RUNNING_KEY as RUNNING_KEY
from ..core.json_types import JSON
from ..core.metadata import decode_document
from ..errors import ConcurrentWriteError, MetadataError
from ..store.base import Store, plain_values

__all__ = ["DONE", "OVERWRITE_OPTION", "PLAN_KEY", "RUNNING_KEY", "Done", "Record", "checksum"]

#: How the front end running a convert spells its overwrite option, for the messages that name it:
#: ``overwrite=True`` for the Python API; the ``zarr3 convert`` command sets ``--overwrite``.
OVERWRITE_OPTION: ContextVar[str] = ContextVar("OVERWRITE_OPTION", default="overwrite=True")


@dataclass(frozen=True)
class Done:
    """A shard written and verified: the ``checksum`` of its source values, whether it was ``stored`` (an
    all-fill shard is not), its stored ``generation`` then (``None``: the store does not tell) and the ``run``."""

    checksum: str
    stored: bool
    generation: str | None
    run: str

    def to_json(self) -> bytes:
        return json.dumps(
            {"checksum": self.checksum, "stored": self.stored, "generation": self.generation, "run": self.run}
        ).encode()

    @classmethod
    def parse(cls, raw: bytes | None) -> Done | None:
        """The entry in ``raw``; ``None`` for a missing entry or one a convert does not write."""
        try:
            entry = decode_document(raw, "done") if raw is not None else None
        except MetadataError:
            return None
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("checksum"), str)
            and isinstance(entry.get("stored"), bool)
            and isinstance(entry.get("generation"), str | None)
            and isinstance(entry.get("run"), str)
        ):
            return cls(entry["checksum"], entry["stored"], entry["generation"], entry["run"])
        return None


@dataclass(frozen=True)
class Record:
    """The progress record in ``store`` (DST), written by the run ``run`` (a fresh token per run)."""

    store: Store
    run: str = ""

    @classmethod
    def new_run(cls, store: Store) -> Record:
        return cls(store, uuid.uuid4().hex)

    def plan(self) -> JSON:
        """The recorded plan (parsed JSON), or ``None`` when DST holds no unfinished convert."""
        raw = self.store.get(PLAN_KEY)
        if raw is None:
            return None
        try:
            plan = decode_document(raw, PLAN_KEY)
        except MetadataError as exc:
            raise _broken(PLAN_KEY, str(exc).removeprefix(PLAN_KEY + ": ")) from exc
        if not isinstance(plan, dict) or not {"source", "groups", "arrays"} <= plan.keys():
            raise _broken(
                PLAN_KEY, f"expected an object with source, groups and arrays, got {str(plan)[:200]}"
            )
        return plan

    def start(self, plan: dict[str, Any]) -> bool:
        """Record ``plan`` (before anything else is written); ``False`` if another run recorded one first."""
        return self.store.create(PLAN_KEY, json.dumps(plan, indent=1).encode())

    def done(self) -> dict[str, Done | None]:
        """The entries of the shards verified so far, by store key (``None``: an entry a convert did not write)."""
        keys = sorted(key[len(DONE) :] for key in self.store.list_prefix(DONE))
        values = plain_values(self.store.get_many_versioned([(DONE + key, None) for key in keys]))
        return {key: Done.parse(raw) for key, raw in zip(keys, values, strict=True)}

    def mark(self, key: str, done: Done) -> None:
        """Record the shard stored under ``key`` as written and verified."""
        self.store.set(DONE + key, done.to_json())

    def acquire(self) -> None:
        """Become the running convert of DST; `ConcurrentWriteError` naming the one that runs."""
        lease = HostLease(self.store, RUNNING_KEY, _parse_running, run=self.run)
        lease.take(time.monotonic(), self._refuse)  # a killed run of this host is taken over
        if not self.store.atomic_create:  # checked, then set: a run that set it just after us wins
            time.sleep(0.05)
            raw = self.store.get(RUNNING_KEY)
            if raw is None or _parse_running(raw)["run"] != self.run:
                raise ConcurrentWriteError(
                    f"{self.store!r}: another zarr3 convert into this DST started at the same time; nothing was "
                    "written. Run again once it has finished"
                )

    def _refuse(self, raw: bytes) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"{self.store!r}: another zarr3 convert into this DST is running ({_describe(_parse_running(raw))}); "
            "nothing was written. Wait for it to finish; if it no longer runs (on another host), delete "
            f"{RUNNING_KEY} in DST and run again to resume"
        )

    def release(self) -> None:
        """Stop being the running convert (if still so)."""
        raw = self.store.get(RUNNING_KEY)
        if raw is not None and _parse_running(raw).get("run") == self.run:
            self.store.delete(RUNNING_KEY)

    def running(self) -> str | None:
        """Who runs a convert into DST now, or ``None``."""
        raw = self.store.get(RUNNING_KEY)
        if raw is None:
            return None
        running = _parse_running(raw)
        return None if holder_gone(running) else _describe(running)

    def clear(self) -> None:
        """Delete the record: the shard entries first, then the plan, then the running mark."""
        self.store.delete_prefix(DONE)
        self.store.delete(PLAN_KEY)
        self.store.delete(RUNNING_KEY)


def _broken(key: str, problem: str) -> MetadataError:
    return MetadataError(
        f"{key}: {problem} (this is not the record of an unfinished zarr3 convert; convert again with "
        f"{OVERWRITE_OPTION.get()} to start afresh)"
    )


def _parse_running(raw: bytes) -> dict[str, Any]:
    try:
        running = decode_document(raw, RUNNING_KEY)
    except MetadataError as exc:
        raise _broken(RUNNING_KEY, str(exc).removeprefix(RUNNING_KEY + ": ")) from exc
    if (
        not isinstance(running, dict)
        or not isinstance(running.get("host"), str)
        or type(running.get("pid")) is not int
        or not 0 < running["pid"] < 2**31
        or type(running.get("since")) not in (int, float)
        or not 0 <= running["since"] < 2**40
        or not isinstance(running.get("run"), str)
    ):
        raise _broken(RUNNING_KEY, f"expected host, pid, since and run, got {str(running)[:200]}")
    return running


def _describe(running: dict[str, Any]) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(running["since"]))
    return f"process {running['pid']} on {running['host']}, since {since}"
