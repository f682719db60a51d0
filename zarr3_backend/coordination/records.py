"""The one table of every key and attribute the library keeps in a store beside ``zarr.json``.

Every other module imports these names from here (the temporary-file
prefix, which stores below this layer need, is spelled in `store.base`
and listed here). `RECORDS` says for each name what it is, which module
owns it and what ``zarr3 validate`` says about it; the architecture page's
table "What a write keeps in the store" is generated from it.

>>> [r.name for r in RECORDS if r.kind == "attribute"]
['_zarr3_backend_unfinished', '_zarr3_backend_appending']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..store.base import TMP_PREFIX

#: Store root: the record of a ``to_zarr3`` commit publishing its metadata.
PENDING_KEY = "__zarr3_backend_pending.json"
#: Store root: the lease a ``to_zarr3`` append without ``lock=`` holds.
LEASE_KEY = "__zarr3_backend_writing.json"
#: Store root: one mark per region write without ``lock=`` under this prefix.
REGIONS_PREFIX = "__zarr3_backend_regions/"
#: In a group: the rows deferred appends reserved and have not written yet.
APPENDING_KEY = "__zarr3_backend_appending.json"
#: Group attribute: the group's `APPENDING_KEY` may hold rows (read it).
APPENDING_ATTRIBUTE = "_zarr3_backend_appending"
#: Group attribute: a first write published this group and has not stored all its data yet.
UNFINISHED_ATTRIBUTE = "_zarr3_backend_unfinished"
#: Store root: the checksum of every shard a finished ``zarr3 convert`` verified.
MANIFEST_KEY = "__zarr3_backend_converted.json"
#: Store root: the progress record of a running or interrupted ``zarr3 convert``.
CONVERT_PREFIX = "__zarr3_convert/"
CONVERT_PLAN_KEY = CONVERT_PREFIX + "plan.json"
CONVERT_RUNNING_KEY = CONVERT_PREFIX + "running.json"
CONVERT_DONE_PREFIX = CONVERT_PREFIX + "done/"


@dataclass(frozen=True)
class StoredName:
    """A name the library keeps in a store: ``kind``, the ``owner`` module, what it ``holds`` and what ``validate`` says."""

    name: str
    kind: Literal["key", "prefix", "attribute"]
    owner: str
    holds: str
    validate: str


RECORDS: tuple[StoredName, ...] = (
    StoredName(
        PENDING_KEY,
        "key",
        "coordination.pending",
        "a commit's documents while it publishes them",
        "error until the write is finished (`finish_pending_write`, or any `to_zarr3` call)",
    ),
    StoredName(
        LEASE_KEY,
        "key",
        "coordination.lease",
        "the host and process of the append that runs",
        "skipped (a reserved `__` name)",
    ),
    StoredName(
        REGIONS_PREFIX,
        "prefix",
        "coordination.lease",
        "one host/process mark per region write that runs",
        "skipped (a reserved `__` name)",
    ),
    StoredName(
        APPENDING_KEY,
        "key",
        "coordination.reservations",
        "rows a `compute=False` append reserved, not written yet",
        "a warning naming the rows and how to write them",
    ),
    StoredName(
        UNFINISHED_ATTRIBUTE,
        "attribute",
        "coordination.unfinished",
        "a first write whose data is not all stored",
        "an error (a warning for a `compute=False` template)",
    ),
    StoredName(
        APPENDING_ATTRIBUTE,
        "attribute",
        "coordination.reservations",
        "the group's reservation list may hold rows",
        "nothing (the list itself is reported)",
    ),
    StoredName(
        MANIFEST_KEY,
        "key",
        "coordination.converted",
        "the checksum of every shard a convert verified",
        "with `--deep`, a warning for each shard that changed since",
    ),
    StoredName(
        CONVERT_PREFIX,
        "prefix",
        "conversion.progress_record",
        "a convert's plan, its running holder and its shards done",
        "skipped (a reserved `__` name); deleted when the convert finishes",
    ),
    StoredName(
        TMP_PREFIX,
        "prefix",
        "store.base",
        "a value being written, renamed into place when whole",
        "never listed (stores skip it)",
    ),
)


def markdown_table() -> str:
    """`RECORDS` as the Markdown table of the architecture page."""
    rows = [
        "| name | kind | owner | holds | `zarr3 validate` says |",
        "|---|---|---|---|---|",
        *(f"| `{r.name}` | {r.kind} | `{r.owner}` | {r.holds} | {r.validate} |" for r in RECORDS),
    ]
    return "\n".join(rows) + "\n"
