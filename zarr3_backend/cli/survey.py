"""What a store holds below a path: its nodes, implicit groups and stored keys (one listing, one batched
fetch), and one JSON-ready entry per node (``zarr3 info --json``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, final

from ..core.metadata import ArrayMetadata, parse_node_metadata
from ..core.metadata.v2 import ZARRAY, ZATTRS, ZGROUP, ZMETADATA, V2ArrayMetadata, is_v2
from ..errors import Zarr3Error
from ..nodes.array import Array
from ..nodes.hierarchy import Group, node_from_metadata, open_node
from ..nodes.paths import normalize_path
from ..store import FsspecStore, LocalStore, ObstoreStore
from ..store.base import Store, plain_values
from ..store.storage_transformers import apply_storage_transformers
from ..validate import assign_keys, is_metadata_key, node_path

V2_DIMENSIONS = "_ARRAY_DIMENSIONS"  # how xarray names a Zarr v2 array's dimensions

V2_DOCUMENTS = frozenset({ZARRAY, ZGROUP, ZATTRS, ZMETADATA})


@dataclass(frozen=True)
class Survey:
    """The nodes below one path, found with one listing and one batched fetch."""

    path: str
    nodes: dict[str, Array | Group | Zarr3Error]  # a node, or why its zarr.json could not be read
    implicit: frozenset[str]
    owned: dict[str, list[str]]  # keys that are not zarr.json, by the node they belong to


def survey(store: Store, path: str) -> Survey:
    path = normalize_path(path)
    top = open_node(store, path, read_only=True, strict=True)
    keys = list(store.list_prefix(f"{path}/" if path else ""))
    if is_v2(top.metadata):
        return _survey_v2(path, top, keys)
    metadata_keys = [k for k in keys if is_metadata_key(k)]
    nodes: dict[str, Array | Group | Zarr3Error] = {path: top}
    for key, raw in zip(
        metadata_keys, plain_values(store.get_many_versioned([(k, None) for k in metadata_keys]))
    ):
        try:
            metadata = parse_node_metadata(raw or b"", key)
            nodes[node_path(key)] = node_from_metadata(store, node_path(key), metadata, read_only=True)
        except Zarr3Error as exc:
            nodes[node_path(key)] = exc
    explicit = {node_path(k) for k in metadata_keys}
    implicit = {a for p in nodes for a in _ancestors(p) if _is_below(a, path) and a not in explicit}
    if isinstance(top, Group) and path not in explicit:
        implicit.add(path)
    owned, _ = assign_keys((k for k in keys if not is_metadata_key(k)), nodes)
    return Survey(path, dict(sorted(nodes.items())), frozenset(implicit), owned)


def _survey_v2(path: str, top: Array | Group, keys: list[str]) -> Survey:
    """A Zarr v2 hierarchy: its nodes as the group lists them (or its ``.zmetadata``), other keys owned by them."""
    nodes: dict[str, Array | Group | Zarr3Error] = {path: top}
    if isinstance(top, Group):
        nodes.update((f"{path}/{relative}" if path else relative, node) for relative, node in top.walk())
    owned, _ = assign_keys((k for k in keys if k.rpartition("/")[2] not in V2_DOCUMENTS), nodes)
    return Survey(path, dict(sorted(nodes.items())), frozenset(), owned)


def _ancestors(path: str) -> list[str]:
    parts = path.split("/") if path else []
    return ["/".join(parts[:i]) for i in range(len(parts))]


def _is_below(path: str, top: str) -> bool:
    return not top or path == top or path.startswith(top + "/")


def value_sizes(store: Store, keys: list[str]) -> int:
    """Total stored bytes of ``keys``: file sizes where the store can tell, else by reading the values."""
    if isinstance(store, LocalStore):
        return sum(os.path.getsize(os.path.join(store.root, key)) for key in keys)
    if isinstance(store, FsspecStore) and keys:
        return sum(
            int(n or 0)
            for n in store.fs.sizes([f"{store.root}/{key}" if store.root else key for key in keys])
        )
    if isinstance(store, ObstoreStore) and keys:
        return sum(n or 0 for n in store.sizes(keys))
    return sum(
        len(value or b"") for value in plain_values(store.get_many_versioned([(key, None) for key in keys]))
    )


@final
class ErrorEntry(TypedDict):
    """A node whose metadata could not be read."""

    path: str
    error: str


@final
class GroupEntry(TypedDict):
    """A group (explicit, or implicit: only arrays below it)."""

    path: str
    node_type: Literal["group"]
    implicit: bool
    attributes: dict[str, Any]
    consolidated: bool


@final
class ArrayEntry(TypedDict):
    """An array: its metadata plus what the store holds for it."""

    path: str
    node_type: Literal["array"]
    shape: list[int]
    data_type: str | dict[str, Any]
    dimension_names: list[str | None] | None
    chunks: list[
        Any
    ]  #: ints; a rectilinear grid's unsharded chunks as its ``chunk_shapes`` (lengths per dimension)
    shards: list[Any] | None  #: likewise for rectilinear shards
    codecs: list[dict[str, Any]]
    fill_value: Any  # the JSON form of the array's data type
    attributes: dict[str, Any]
    stored_chunks: int
    stored_bytes: int
    nbytes: int


Entry = ErrorEntry | GroupEntry | ArrayEntry


def _chunking(array: Array) -> tuple[list[Any], list[Any] | None]:
    """``chunks`` and ``shards`` of an entry; a rectilinear grid's lengths as written (run-length encoded)."""
    grid = array.metadata.chunk_grid
    if grid.is_regular:
        return list(array.chunks), None if array.shards is None else list(array.shards)
    lengths: list[Any] = grid.to_json()["configuration"]["chunk_shapes"]
    return (list(array.chunks), lengths) if array.sharded else (lengths, None)


def dimension_names(array: Array) -> list[str | None] | None:
    """``array``'s dimension names: a Zarr v2 array's from its ``_ARRAY_DIMENSIONS`` attribute, as xarray reads them."""
    if array.dimension_names is not None:
        return list(array.dimension_names)
    names = (
        array.metadata.attributes.get(V2_DIMENSIONS) if isinstance(array.metadata, V2ArrayMetadata) else None
    )
    if isinstance(names, list) and len(names) == array.ndim and all(isinstance(n, str) for n in names):
        return list(names)
    return None


def describe(store: Store, found: Survey) -> list[Entry]:
    """One JSON-ready entry per node (``--json`` output)."""
    entries: list[Entry] = []
    for path, node in found.nodes.items():
        if isinstance(node, Zarr3Error):
            entries.append({"path": "/" + path, "error": str(node)})
        elif isinstance(node, Group):
            entries.append(
                {
                    "path": "/" + path,
                    "node_type": "group",
                    "implicit": path in found.implicit,
                    "attributes": dict(node.attrs),
                    "consolidated": node.metadata.consolidated is not None,
                }
            )
        else:
            keys = found.owned.get(path, [])
            chunks, shards = _chunking(node)
            chunk_store = apply_storage_transformers(store, node.metadata.storage_transformers)
            document = ArrayMetadata.to_json(
                node.metadata
            )  # for a Zarr v2 array: the v3 description that reads it
            entries.append(
                {
                    "path": "/" + path,
                    "node_type": "array",
                    "shape": list(node.shape),
                    "data_type": document["data_type"],
                    "dimension_names": dimension_names(node),
                    "chunks": chunks,
                    "shards": shards,
                    "codecs": document["codecs"],
                    "fill_value": document["fill_value"],
                    "attributes": document["attributes"],
                    "stored_chunks": len(keys),
                    "stored_bytes": value_sizes(chunk_store, keys),
                    "nbytes": node.size * node.dtype.itemsize,
                }
            )
    return entries
