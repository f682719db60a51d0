"""The progress record of a convert in DST, which lets an interrupted run continue.

While a convert runs, DST holds, besides the nodes being written:

- ``__zarr3_convert/plan.json``: the plan (:meth:`~zarr3_backend.conversion.plan.Plan.to_json`),
  written before anything else; a later run finds it and continues, if its
  own plan is the same;
- ``__zarr3_convert/done/<array path>/<shard key>``: one small value per
  shard written and verified, holding the checksum it was verified with
  (:func:`checksum`), written by the shard's task after verification.

Every key is written with one atomic store ``set``, so concurrent tasks
(threads, cluster workers) never share a value and a killed run leaves no
torn one. A resumed run skips the shards listed as done and writes the
others again. The record is deleted when the convert finishes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from crc32c import crc32c

from ..core.json_types import JSON
from ..store.base import Store

RECORD = "__zarr3_convert/"
PLAN_KEY = RECORD + "plan.json"
DONE = RECORD + "done/"


def checksum(values: np.ndarray) -> str:
    """The checksum of decoded values: CRC32C of their shape, data type and elements in C order.

    Variable-length elements (strings, bytes) enter as their UTF-8 or raw
    bytes, each after its length.

    >>> checksum(np.arange(4, dtype="int16")) == checksum(np.arange(4, dtype="int16").copy())
    True
    >>> checksum(np.array(["a", "bc"], dtype=object)) == checksum(np.array(["ab", "c"], dtype=object))
    False
    """
    state = crc32c(repr((values.shape, values.dtype.str)).encode())
    if values.dtype.hasobject or values.dtype.kind == "T":
        for item in values.ravel():
            data = item if isinstance(item, bytes) else str(item).encode("utf-8", "surrogatepass")
            state = crc32c(data, crc32c(len(data).to_bytes(8, "little"), state))
    elif values.size:
        state = crc32c(np.ascontiguousarray(values).reshape(-1).view(np.uint8).data, state)
    return f"crc32c:{state:08x}"


@dataclass(frozen=True)
class Record:
    """The progress record in ``store`` (DST)."""

    store: Store

    def plan(self) -> JSON:
        """The recorded plan (parsed JSON), or ``None`` when DST holds no unfinished convert."""
        raw = self.store.get(PLAN_KEY)
        return None if raw is None else json.loads(raw)

    def start(self, plan: dict[str, Any]) -> bool:
        """Record ``plan`` (before anything else is written); ``False`` if another run recorded one first."""
        return self.store.create(PLAN_KEY, json.dumps(plan, indent=1).encode())

    def done(self) -> set[str]:
        """The store keys of the shards verified so far (one listing; their checksums are not fetched)."""
        return {key[len(DONE) :] for key in self.store.list_prefix(DONE)}

    def mark(self, key: str, digest: str) -> None:
        """Record the shard stored under ``key`` as written and verified with ``digest``."""
        self.store.set(DONE + key, digest.encode())

    def clear(self) -> None:
        """Delete the record: the shard entries first, the plan last."""
        self.store.delete_prefix(DONE)
        self.store.delete(PLAN_KEY)
