"""Reading the pending-write record (``__zarr3_backend_pending.json``) of an interrupted ``to_zarr3`` commit.

`roll_forward()` publishes what the record holds, so the record
is checked whole first, as any metadata from a store is: a record that is
not a JSON object, lacks a field, has a field of the wrong type, names a path
that is not a node path under the store's key rules (``..``, an absolute
path, a backslash ...), or holds a document that is not valid node metadata
raises `MetadataError`, naming the problem and
how to recover, before anything is published.

>>> parse_pending(b'{"token": "t", "consolidate": true, "documents": {"/etc": {}}}')
Traceback (most recent call last):
...
zarr3_backend.errors.MetadataError: __zarr3_backend_pending.json: the pending-write record of an interrupted to_zarr3 call names the path '/etc', which is not a node path (a relative path of valid node names); nothing was published from it. Delete it to go on (the write it records may then be half published: check the store with zarr3 validate), or replace the whole store with to_zarr3(..., mode='w'), which deletes what it holds
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.metadata import decode_document, metadata_key, node_metadata_from_json
from ..errors import MetadataError, Zarr3Error
from ..nodes.paths import normalize_path
from .records import PENDING_KEY


@dataclass(frozen=True)
class PendingRecord:
    """A checked record: the request's ``token``, whether to ``consolidate``, the ``documents`` to publish by path."""

    token: str
    consolidate: bool
    documents: dict[str, dict[str, Any]]


def parse_pending(raw: bytes) -> PendingRecord:
    """The record in ``raw``, every path and document checked; `MetadataError` if anything is wrong."""
    try:
        record = decode_document(raw, PENDING_KEY)
    except MetadataError as exc:
        raise broken(f"is not JSON within the parse limits ({exc})") from exc
    if not isinstance(record, dict):
        raise broken(f"must be a JSON object, got {type(record).__name__}")
    token, consolidate, documents = record.get("token"), record.get("consolidate"), record.get("documents")
    if not isinstance(token, str) or not isinstance(consolidate, bool) or not isinstance(documents, dict):
        found = {k: type(record.get(k)).__name__ for k in ("token", "consolidate", "documents")}
        raise broken(
            f"must hold a string 'token', a boolean 'consolidate' and an object 'documents', got {found}"
        )
    for path, document in documents.items():
        _check_document(path, document)
    return PendingRecord(token, consolidate, documents)


def read_pending(raw: bytes, *, skip_broken: bool = False) -> PendingRecord | None:
    """`parse_pending()`; with ``skip_broken`` (a ``mode="w"`` write, which can always replace a store) ``None`` for a broken record."""
    try:
        return parse_pending(raw)
    except MetadataError:
        if skip_broken:
            return None
        raise


def _check_document(path: str, document: object) -> None:
    try:
        valid = normalize_path(path) == path
    except Zarr3Error:
        valid = False
    if not valid:
        raise broken(
            f"names the path {path!r}, which is not a node path (a relative path of valid node names)"
        )
    try:
        node_metadata_from_json(document, metadata_key(path))
    except (Zarr3Error, RecursionError, TypeError, ValueError, KeyError, AttributeError) as exc:
        raise broken(
            f"holds a document for {path!r} that is not valid metadata ({type(exc).__name__}: {exc})"
        ) from exc


def broken(problem: str) -> MetadataError:
    """The error for a record that ``problem`` makes unusable, with how to recover."""
    return MetadataError(
        f"{PENDING_KEY}: the pending-write record of an interrupted to_zarr3 call {problem}; nothing was published "
        "from it. Delete it to go on (the write it records may then be half published: check the store with "
        "zarr3 validate), or replace the whole store with to_zarr3(..., mode='w'), which deletes what it holds"
    )
