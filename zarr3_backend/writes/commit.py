"""Committing ``to_zarr3``'s metadata: appends and new variables that are all-or-nothing.

`CommitMetadata`, the `WriteStep` ending such a write, checks that no other
writer changed the shapes this write planned from, writes the pending record
(the commit point), publishes the documents and deletes the record; a failure
before the record leaves the store as it was (`roll_back`), one after it is
completed by the next call (`roll_forward`, `finish_pending_write`). Raises
`ConcurrentWriteError` when another writer appended meanwhile: nothing of this
write is then published. The protocol, deferred appends and what the lease
covers: docs/architecture.md, "How a write commits". A transactional store
(`Store.transactional`: an Icechunk session) gets no pending record: the
user's commit is the commit point.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..coordination.pending import read_pending
from ..coordination.records import PENDING_KEY
from ..coordination.reservations import appending_key, hint_groups
from ..core.metadata import ArrayMetadata, metadata_key, parse_node_metadata
from ..errors import ConcurrentWriteError
from ..nodes.array import Array
from ..nodes.lookup import read_node_metadata
from ..nodes.shard_writes import clear_rows
from ..runtime.locks import NO_LOCKS, KeyLocks
from ..store import StoreLike, make_store
from ..store.base import Store, plain_values
from .publish import Documents, publish
from .tasks import WriteStep

SETTLE = (
    0.02  # seconds at least between writing the pending record and reading it back (a scheduler's time slice)
)


@dataclass(frozen=True)
class CommitMetadata(WriteStep):
    """The `WriteStep` ending a ``mode="a"`` write: check, record, publish, clear (picklable, runs on a worker).

    ``expected`` holds, per array path the write grows or creates, the shape
    its plan started from (``None``: no array there); a store that no longer
    matches raises `ConcurrentWriteError` before
    anything is published. So does a pending record of another writer, found
    before writing ours or, read back `SETTLE` seconds (at least) after
    writing it, in its place.
    """

    store: Store
    documents: Documents
    consolidate: bool
    token: str
    expected: Mapping[str, tuple[int, ...] | None] = field(default_factory=dict)
    locked: bool = False  # a lock= or an atomic StoreLease serialises commits: no wait before reading back

    def run(self) -> None:
        """Publish ``documents`` all-or-nothing, or raise `ConcurrentWriteError` having published nothing."""
        paths = sorted(self.expected)
        groups = sorted(
            path for path, document in self.documents.items() if document.get("node_type") == "group"
        )
        started = time.monotonic()
        found = plain_values(
            self.store.get_many_versioned(
                [(PENDING_KEY, None), *self._shapes(paths), *[(appending_key(g), None) for g in groups]]
            )
        )
        settle = max(
            SETTLE, 3 * (time.monotonic() - started)
        )  # longer than a writer takes from such a read to its set
        if found[0] is not None:
            raise _conflict(
                self.store, f"another to_zarr3 call is publishing its metadata ({PENDING_KEY} exists)"
            )
        self._check_unchanged(paths, found[1 : len(paths) + 1])
        documents = hint_groups(self.documents, dict(zip(groups, found[len(paths) + 1 :])))
        if self.store.transactional:  # the user's commit of the transaction is the commit point
            publish(self.store, documents, self.consolidate)
            return
        record = {
            "token": self.token,
            "consolidate": self.consolidate,
            "documents": documents,
            "writer": uuid.uuid4().hex,
        }
        raw = json.dumps(record).encode()
        self.store.set(PENDING_KEY, raw)
        if not self.locked:
            time.sleep(
                settle
            )  # so that a writer that read before our set has set its record when we read back
        again = plain_values(self.store.get_many_versioned([(PENDING_KEY, None), *self._shapes(paths)]))
        if again[0] != raw:  # another writer's record replaced ours: it publishes, we do not
            raise _conflict(self.store, f"another to_zarr3 call wrote its {PENDING_KEY} at the same time")
        try:  # again, now that the record is ours: a writer that published just before is seen
            self._check_unchanged(paths, again[1:])
        except ConcurrentWriteError:
            self.store.delete(PENDING_KEY)
            raise
        publish(self.store, documents, self.consolidate)
        self.store.delete(PENDING_KEY)

    @staticmethod
    def _shapes(paths: list[str]) -> list[tuple[str, None]]:
        return [(metadata_key(path), None) for path in paths]

    def _check_unchanged(self, paths: list[str], raws: list[bytes | None]) -> None:
        """Raise `ConcurrentWriteError` if an array of ``expected`` no longer has the shape planned from."""
        for path, raw in zip(paths, raws):
            node = None if raw is None else parse_node_metadata(raw, metadata_key(path))
            found = node.shape if isinstance(node, ArrayMetadata) else None
            if found != self.expected[path]:
                planned = "no array" if self.expected[path] is None else f"shape {self.expected[path]}"
                now = "no array" if found is None else f"shape {found}"
                raise _conflict(
                    self.store,
                    f"another writer changed {path!r} (this write planned from {planned}, "
                    f"the store now has {now})",
                )


def _conflict(store: Store, what: str) -> ConcurrentWriteError:
    return ConcurrentWriteError(
        f"to_zarr3: {what} in {store!r} while this write ran; nothing of this write was published, and its rows "
        "beyond the other writer's were cleared. Appends to one store from several processes at once need one "
        "lock shared by all of them: pass lock= (e.g. lock=distributed.Lock('<store>')); rows both writers "
        "wrote may hold this write's data, so check them"
    )


def roll_forward(store: Store, token: str | None, *, skip_broken: bool = False) -> bool:
    """Complete a publication a failed ``to_zarr3`` left pending; whether it was the request ``token``.

    The record is checked whole first (`pending.read_pending()`; ``skip_broken``: ``mode="w"`` leaves a broken one).
    """
    raw = store.get(PENDING_KEY)
    record = None if raw is None else read_pending(raw, skip_broken=skip_broken)
    if record is None:
        return False
    publish(store, record.documents, record.consolidate)
    store.delete(PENDING_KEY)
    return token is not None and record.token == token


def finish_pending_write(store: StoreLike, *, storage_options: dict[str, Any] | None = None) -> bool:
    """Complete the metadata publication an interrupted ``to_zarr3`` left pending; whether one was pending.

    Until then the store holds the pending record (`PENDING_KEY`), readers that
    do not use consolidated metadata refuse to open it, and
    `consolidate_metadata()` must not be run (it would copy
    half-published documents into the consolidated metadata). Any later
    ``to_zarr3`` call on the store completes it too.

    >>> finish_pending_write("memory://doc/finish_pending_write")
    False
    """
    target = make_store(store, storage_options=storage_options)
    pending = target.exists(PENDING_KEY)
    roll_forward(target, None)
    return pending


def roll_back(
    store: Store, grown: list[tuple[Array, tuple[int, ...]]], created: list[str], locks: KeyLocks = NO_LOCKS
) -> None:
    """Undo the data of a write that failed before its commit point (best effort, never raises).

    Only what this write wrote goes: the rows each grown array gained (from
    its old shape, or from a longer shape another writer has published since,
    whose rows are not ours to clear) and the chunks of arrays it created
    that nobody has published since.
    """
    try:
        if store.get(PENDING_KEY) is not None:
            return  # committed: roll_forward completes it
        for array, old_shape in grown:
            stored = read_node_metadata(store, array.path)
            if isinstance(stored, ArrayMetadata):
                old_shape = tuple(max(o, n) for o, n in zip(old_shape, stored.shape))
            clear_rows(array, old_shape, locks)
        for path in created:
            if store.get(metadata_key(path)) is None:
                store.delete_prefix(path + "/")
    except Exception:  # the original failure is what the caller must see
        return
