"""What a store holds at a hierarchy path, answered from keys and documents without building a node.

A path holds a node if it has a ``zarr.json``; a path without one that has
nodes further down is an implicit group. Opening a path that holds neither
names the Zarr stores found below it (`stores_below()`), so that a
directory of stores is not mistaken for an empty group.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.metadata import NodeMetadata, metadata_key, parse_node_metadata
from ..store.base import Store, plain_values


def read_node_metadata(store: Store, path: str) -> NodeMetadata | None:
    """The metadata at ``path``; ``None`` if there is no ``zarr.json`` there."""
    key = metadata_key(path)
    raw = store.get(key)
    return None if raw is None else parse_node_metadata(raw, key)


def is_implicit_group(store: Store, path: str) -> bool:
    """Whether nodes exist below ``path`` although it has no ``zarr.json`` itself."""
    prefix = f"{path}/" if path else ""
    return any(key.endswith("zarr.json") for key in store.list_prefix(prefix))


def has_child_array(store: Store, path: str) -> bool:
    """Whether an array sits directly below ``path`` (one listing, one batched fetch)."""
    prefix = f"{path}/" if path else ""
    _, prefixes = store.list_dir(prefix)
    raws = plain_values(store.get_many_versioned([(metadata_key(p[:-1]), None) for p in prefixes]))
    return any(raw is not None and _node_type(raw) == "array" for raw in raws)


def _node_type(raw: bytes) -> Any:
    try:
        document = json.loads(raw)
    except ValueError:
        return None
    return document.get("node_type") if isinstance(document, dict) else None


def stores_below(store: Store, path: str, limit: int = 5, max_listings: int = 200) -> list[str]:
    """Up to ``limit`` top-most paths below ``path`` holding a ``zarr.json``, breadth first."""
    found: list[str] = []
    pending = [f"{path}/" if path else ""]
    listings = 0
    while pending and len(found) < limit and listings < max_listings:
        prefix = pending.pop(0)
        keys, prefixes = store.list_dir(prefix)
        listings += 1
        if prefix and prefix + "zarr.json" in keys:
            found.append(prefix[:-1])
        else:
            pending.extend(prefixes)
    return found
