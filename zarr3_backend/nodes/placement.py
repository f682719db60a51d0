"""Writing a new node into a store: make room at its path, create missing ancestor groups, refresh consolidated ancestors.

A new node refuses a node already at its path (or erases it, with
``overwrite``), refuses to nest under an array or a Zarr v2 node, writes a
group ``zarr.json`` for each ancestor that has none, and patches every
consolidating ancestor (`refresh_consolidated()`).

>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/placement")
>>> _ = write_group_at(store, "a/b", {"k": 1}, overwrite=True)
>>> sorted(key for key in store.list_prefix("") if key.endswith("zarr.json"))
['a/b/zarr.json', 'a/zarr.json', 'zarr.json']
"""

from __future__ import annotations

from typing import Any

from ..core.metadata import (
    ArrayMetadata,
    GroupMetadata,
    NodeMetadata,
    encode_metadata,
    metadata_key,
    parse_node_metadata,
)
from ..core.metadata.v2 import READ_ONLY_HINT, ZARRAY, ZGROUP
from ..errors import NodeExistsError, ReadOnlyError
from ..store.base import Store, plain_values
from .array import Array
from .consolidation import Change, refresh_consolidated


def create_array_at(store: Store, path: str, metadata: ArrayMetadata, overwrite: bool) -> Array:
    """Write ``metadata`` as a new array at ``path`` (and any missing ancestor groups); consolidated ancestors are refreshed."""
    created = _prepare_path(store, path, overwrite)
    store.set(metadata_key(path), encode_metadata(metadata))
    refresh_consolidated(store, [*created, Change(path, metadata.to_json(), replaces_subtree=overwrite)])
    return Array(store, path, metadata)


def write_group_at(
    store: Store, path: str, attributes: dict[str, Any] | None, overwrite: bool
) -> GroupMetadata:
    """Write a new group at ``path`` (and any missing ancestor groups) and return its metadata; consolidated ancestors are refreshed."""
    created = _prepare_path(store, path, overwrite)
    metadata = GroupMetadata(attributes=dict(attributes or {}))
    store.set(metadata_key(path), encode_metadata(metadata))
    refresh_consolidated(store, [*created, Change(path, metadata.to_json(), replaces_subtree=overwrite)])
    return metadata


def missing_parents(store: Store, path: str) -> list[str]:
    """The ancestors of ``path`` that have no ``zarr.json`` (root first); refuse to nest under an array."""
    parts = path.split("/")[:-1] if path else []
    ancestors = [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]
    raws = plain_values(
        store.get_many_versioned(
            [(metadata_key(p), None) for p in ancestors] + [(k, None) for p in ancestors for k in _v2_keys(p)]
        )
    )
    missing = []
    for index, (ancestor, raw) in enumerate(zip(ancestors, raws)):
        v2_found = raws[len(ancestors) + 2 * index : len(ancestors) + 2 * index + 2]
        if raw is None and any(found is not None for found in v2_found):
            raise ReadOnlyError(
                f"cannot create {path!r}: its ancestor {ancestor or '/'!r} is a Zarr v2 node. {READ_ONLY_HINT}"
            )
        if raw is None:
            missing.append(ancestor)
        elif isinstance(parse_node_metadata(raw, metadata_key(ancestor)), ArrayMetadata):
            raise NodeExistsError(f"cannot create {path!r}: its ancestor {ancestor or '/'!r} is an array")
    return missing


def ensure_parents(store: Store, path: str) -> list[Change]:
    """Write group metadata for every ancestor of ``path`` that has none; refuse to nest under an array.

    Returns the groups it created, as changes for `refresh_consolidated()`.
    """
    created = []
    for ancestor in missing_parents(store, path):
        store.set(metadata_key(ancestor), encode_metadata(GroupMetadata()))
        created.append(Change(ancestor, GroupMetadata().to_json()))
    return created


def _v2_keys(path: str) -> list[str]:
    return [f"{path}/{name}" if path else name for name in (ZARRAY, ZGROUP)]


def _existing_node(store: Store, path: str) -> NodeMetadata | None:
    """The v3 node at ``path`` (``None``: none); `ReadOnlyError` for a v2 node. One batched fetch."""
    raw, *v2_found = plain_values(
        store.get_many_versioned([(metadata_key(path), None)] + [(k, None) for k in _v2_keys(path)])
    )
    if raw is not None:
        return parse_node_metadata(raw, metadata_key(path))
    if any(found is not None for found in v2_found):
        raise ReadOnlyError(f"a Zarr v2 node exists at {path or '/'!r} in {store!r}. {READ_ONLY_HINT}")
    return None


def _prepare_path(store: Store, path: str, overwrite: bool) -> list[Change]:
    """Make room for a new node at ``path``: erase (``overwrite``) or refuse an existing one.

    ``overwrite`` erases whatever is there without reading it, so a node whose
    metadata is invalid can always be replaced. Returns the ancestor groups
    it had to create.
    """
    existing = None if overwrite else _existing_node(store, path)
    if existing is not None:
        raise NodeExistsError(
            f"a {existing.node_type} already exists at {path or '/'!r} in {store!r}; pass overwrite=True (mode='w') "
            "to replace it (this deletes it and everything below it)"
        )
    if overwrite:
        if path:
            missing_parents(store, path)  # refuses to nest under an array before anything is erased
        store.delete_prefix(f"{path}/" if path else "")
    return ensure_parents(store, path) if path else []
