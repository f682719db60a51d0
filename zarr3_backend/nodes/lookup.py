"""What a store holds at a hierarchy path, answered from keys and documents without building a node.

A path holds a node if it has a ``zarr.json`` (`read_node_metadata()`) or,
Zarr v2, a ``.zarray`` or ``.zgroup`` (`read_v2_node()`, `read_v2_children()`);
`zarr3_backend.core.metadata` parses what they read. A path without one that
has nodes further down is an implicit group. Opening a path that holds neither
names the Zarr stores found below it (`stores_below()`), so that a
directory of stores is not mistaken for an empty group.
"""

from __future__ import annotations

import json
from typing import Any

from ..codecs.chain import array_chain
from ..core.metadata import NodeMetadata, decode_document, metadata_key, parse_node_metadata
from ..core.metadata.v2 import (
    ZARRAY,
    ZATTRS,
    ZGROUP,
    ZMETADATA,
    V2ArrayMetadata,
    V2GroupMetadata,
    parse_zmetadata,
    v2_node_from_documents,
)
from ..store.base import Store, plain_values


def read_node_metadata(store: Store, path: str) -> NodeMetadata | None:
    """The metadata at ``path``; ``None`` if there is no ``zarr.json`` there."""
    key = metadata_key(path)
    raw = store.get(key)
    return None if raw is None else parse_node_metadata(raw, key)


def read_v2_node(store: Store, path: str) -> NodeMetadata | None:
    """The v2 node at ``path`` (``None`` if it has neither ``.zarray`` nor ``.zgroup``), in one batched fetch.

    A group with a ``.zmetadata`` carries it as its consolidated metadata.
    """
    names = (ZARRAY, ZGROUP, ZATTRS, ZMETADATA)
    documents = _documents(
        plain_values(store.get_many_versioned([(_key(path, n), None) for n in names])), names, path
    )
    if ZARRAY not in documents and ZGROUP not in documents:
        return None
    node = v2_node(documents, path or "/")
    if isinstance(node, V2GroupMetadata) and ZMETADATA in documents:
        consolidated = parse_zmetadata(documents[ZMETADATA], _key(path, ZMETADATA))
        consolidated.pop("", None)
        node = node.with_consolidated(consolidated)
    return node


def read_v2_children(store: Store, path: str, names: list[str]) -> dict[str, NodeMetadata]:
    """The v2 nodes among the children ``names`` of ``path``, fetched in one batched call."""
    keys = (ZARRAY, ZGROUP, ZATTRS)
    child_paths = [_key(path, name) for name in names]
    raws = plain_values(store.get_many_versioned([(_key(p, k), None) for p in child_paths for k in keys]))
    found: dict[str, NodeMetadata] = {}
    for index, (name, child) in enumerate(zip(names, child_paths)):
        documents = _documents(raws[3 * index : 3 * index + 3], keys, child)
        if ZARRAY in documents or ZGROUP in documents:
            found[name] = v2_node(documents, child)
    return found


def v2_node(documents: dict[str, Any], where: str) -> NodeMetadata:
    """`v2_node_from_documents()`, an array's codec chain checked so that its errors name the ``.zarray``.

    (The array builds its chain again; its own errors would name a ``zarr.json``.)
    """
    node = v2_node_from_documents(documents, where)
    if isinstance(node, V2ArrayMetadata):
        array_chain(node, f"{where}/{ZARRAY}")
    return node


def _key(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _documents(raws: list[bytes | None], names: tuple[str, ...], path: str) -> dict[str, Any]:
    return {name: decode_document(raw, _key(path, name)) for name, raw in zip(names, raws) if raw is not None}


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
