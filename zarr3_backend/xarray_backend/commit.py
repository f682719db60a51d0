"""Publishing ``to_zarr3``'s metadata: one consolidated root, and appends that are all-or-nothing.

Every ``to_zarr3`` call gathers the metadata documents it changes (new
arrays, grown shapes, group attributes, missing ancestor groups) and
publishes them together with :func:`publish`: first the store root's
``zarr.json`` with refreshed consolidated metadata (when the call
consolidates, or the root already did), then each node's own ``zarr.json``.
The root is one atomic write, so readers that go through the consolidated
root (both engines' default) switch from the old tree to the new one at
once; nested groups carrying their own consolidated copy are patched after.

Appends and other ``mode="a"`` writes put data first: new chunks land
beyond the old shapes (invisible to readers of the old metadata; an edge
shard holding old data is rewritten whole, atomically, with the old part
unchanged) or under new arrays whose ``zarr.json`` does not exist yet. Only
when every data task succeeded does :class:`Commit` run:

1. write the pending record ``__zarr3_backend_pending.json`` (a token of
   the request and every document to publish): **the commit point**, after
   it the write is durable and is always completed, never redone;
2. :func:`publish` the documents (root first, the switch for readers);
3. delete the record.

A failure before step 1 leaves the store as it was: :func:`roll_back` then
deletes the new arrays' chunks and clears what was written beyond the old
shapes (best effort; anything it misses is invisible, and overwritten by
a retry). A failure after it leaves the record, and the next
``to_zarr3`` call on the store completes the publication first
(:func:`roll_forward`); when that call is the retry of the same request
(same token), it stops there, so a retry never appends twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..array import Array
from ..consolidation import Change, ancestors, apply_changes, consolidated_entry, refresh_consolidated
from ..errors import MetadataError
from ..hierarchy import Group, tree_documents
from ..metadata import GroupMetadata, encode_metadata, node_metadata_from_json, metadata_key, parse_node_metadata
from ..store.base import Store

PENDING_KEY = "__zarr3_backend_pending.json"
Documents = dict[str, dict[str, Any]]


def publish(store: Store, documents: Documents, consolidate: bool) -> None:
    """Write ``documents`` (path -> ``zarr.json`` content): the root (with consolidated metadata) first."""
    raw = store.get(metadata_key(""))
    current = None if raw is None else parse_node_metadata(raw, metadata_key(""))
    root = current if isinstance(current, GroupMetadata) else None
    if "" in documents:
        new_root = node_metadata_from_json(documents[""], metadata_key(""))
        root = new_root if isinstance(new_root, GroupMetadata) else None
    changes = [Change(path, doc) for path, doc in documents.items() if path]
    if root is not None and (consolidate or (isinstance(current, GroupMetadata) and current.consolidated is not None)):
        tree = tree_documents(Group(store, "", GroupMetadata()))
        root = root.with_consolidated(apply_changes(tree, "", changes))
        store.set(metadata_key(""), encode_metadata(root))
    elif "" in documents:
        store.set(metadata_key(""), encode_metadata(node_metadata_from_json(documents[""], metadata_key(""))))
    for path, document in sorted(documents.items()):
        if path:
            store.set(metadata_key(path), encode_metadata(node_metadata_from_json(document, metadata_key(path))))
    nested = [c for c in changes if any(a for a in ancestors(c.path))]
    refresh_consolidated(store, nested, skip_root=True)


@dataclass(frozen=True)
class Commit:
    """The last task of a ``mode="a"`` write: record, publish, clear (picklable, runs on a worker)."""

    store: Store
    documents: Documents
    consolidate: bool
    token: str

    def __call__(self) -> None:
        record = {"token": self.token, "consolidate": self.consolidate, "documents": self.documents}
        self.store.set(PENDING_KEY, json.dumps(record).encode())
        publish(self.store, self.documents, self.consolidate)
        self.store.delete(PENDING_KEY)


def roll_forward(store: Store, token: str | None) -> bool:
    """Complete a publication a failed ``to_zarr3`` left pending; whether it was the request ``token``."""
    raw = store.get(PENDING_KEY)
    if raw is None:
        return False
    try:
        record = json.loads(raw)
        documents, consolidate = dict(record["documents"]), bool(record["consolidate"])
    except (ValueError, KeyError, TypeError) as exc:
        raise MetadataError(
            f"{PENDING_KEY}: the pending-write record of an interrupted to_zarr3 call is unreadable ({exc}); "
            "delete it, then check the store (the interrupted write may be half published)"
        ) from exc
    publish(store, documents, consolidate)
    store.delete(PENDING_KEY)
    return token is not None and record["token"] == token


def roll_back(store: Store, grown: list[tuple[Array, tuple[int, ...]]], created: list[str]) -> None:
    """Undo the data of a write that failed before its commit point (best effort, never raises)."""
    try:
        if store.get(PENDING_KEY) is not None:
            return  # committed: roll_forward completes it
        for array, old_shape in grown:
            array.clear_outside(old_shape)
        for path in created:
            store.delete_prefix(path + "/")
    except Exception:  # the original failure is what the caller must see
        return


def group_document(metadata: GroupMetadata | None, attributes: dict[str, Any]) -> dict[str, Any]:
    """The ``zarr.json`` of a group written by ``to_zarr3``: its attributes replaced, no consolidated copy."""
    base = metadata or GroupMetadata()
    return consolidated_entry(base.with_consolidated(None).with_attributes(attributes).to_json())
