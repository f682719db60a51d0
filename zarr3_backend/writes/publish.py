"""Publishing ``to_zarr3``'s metadata: the documents of a write, the store root's consolidated metadata first.

`publish()` writes the documents a call changes: first the store root's
``zarr.json`` with refreshed consolidated metadata (one atomic write, so
readers of the consolidated root switch trees at once), then each node's own
``zarr.json``. Every write publishes through it (a first write before its
data, any other after it, `roll_forward()` an interrupted one; see the
architecture page, "How a write commits"). `group_document()` is the
document of a group ``to_zarr3`` writes.

>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/publish")
>>> publish(store, {"": group_document(None, {"title": "t"})}, consolidate=True)
>>> sorted(store.list_prefix(""))
['zarr.json']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.metadata import (
    GroupMetadata,
    encode_metadata,
    metadata_key,
    node_metadata_from_json,
    parse_node_metadata,
)
from ..errors import NodeExistsError
from ..nodes.consolidation import Change, ancestors, apply_changes, consolidated_entry, refresh_consolidated
from ..nodes.hierarchy import Group
from ..nodes.lookup import read_node_metadata
from ..nodes.placement import missing_parents
from ..nodes.tree_consolidation import tree_documents
from ..store.base import Store
from .plan import WritePlan

if TYPE_CHECKING:
    from ..api import WriteMode
    from ..nodes.array import Array

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
    if root is not None and (
        consolidate or (isinstance(current, GroupMetadata) and current.consolidated is not None)
    ):
        tree = tree_documents(Group(store, "", GroupMetadata()))
        root = root.with_consolidated(apply_changes(tree, "", changes))
        store.set(metadata_key(""), encode_metadata(root))
    elif "" in documents:
        store.set(metadata_key(""), encode_metadata(node_metadata_from_json(documents[""], metadata_key(""))))
    for path, document in sorted(documents.items()):
        if path:
            store.set(
                metadata_key(path), encode_metadata(node_metadata_from_json(document, metadata_key(path)))
            )
    nested = [c for c in changes if any(a for a in ancestors(c.path))]
    refresh_consolidated(store, nested, skip_root=True)


def array_documents(arrays: Iterable[Array]) -> Documents:
    """The ``zarr.json`` documents of ``arrays``, by path."""
    return {array.path: array.metadata.to_json() for array in arrays}


def group_document(metadata: GroupMetadata | None, attributes: dict[str, Any]) -> dict[str, Any]:
    """The ``zarr.json`` of a group written by ``to_zarr3``: its attributes replaced, no consolidated copy."""
    base = metadata or GroupMetadata()
    return consolidated_entry(base.with_consolidated(None).with_attributes(attributes).to_json())


def group_plan(
    store: Store, path: str, mode: WriteMode, attributes: dict[str, Any], nested: bool
) -> WritePlan:
    """The group's document and its missing ancestors' (defaults; a DataTree plans a ``nested`` group's parents).

    What is at ``path`` is read for ``mode="a"``/``"a-"`` only: ``mode="w"``
    replaces whatever is there (valid or not), ``mode="w-"`` writes only where
    nothing is (both checked by `zarr3_backend.writes.target`).
    """
    existing = read_node_metadata(store, path) if mode in ("a", "a-") else None
    if existing is not None and not isinstance(existing, GroupMetadata):
        raise NodeExistsError(
            f"{path or '/'!r} in {store!r} is an array, not a group; to_zarr3 writes groups"
        )
    parents = missing_parents(store, path) if path and not nested else []
    documents: Documents = {parent: GroupMetadata().to_json() for parent in parents}
    documents[path] = group_document(existing if isinstance(existing, GroupMetadata) else None, attributes)
    return WritePlan(documents=documents, defaults=frozenset(parents))
