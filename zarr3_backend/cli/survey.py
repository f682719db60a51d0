"""What a store holds below a path: its nodes and implicit groups, read from metadata alone (one
directory listing per group, none with consolidated metadata, never a listing of an array's chunks), and
on request how many chunks each array stores and their size (a streamed listing per array); one
JSON-ready entry per node (``zarr3 info --json``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypedDict, final

from ..core.metadata import ArrayMetadata, metadata_key, parse_node_metadata
from ..core.metadata.v2 import ZARRAY, ZATTRS, ZGROUP, ZMETADATA, V2ArrayMetadata, is_v2
from ..errors import Zarr3Error
from ..nodes.array import Array
from ..nodes.hierarchy import Group, node_from_metadata, open_node
from ..nodes.paths import join_path, normalize_path
from ..store import FsspecStore, LocalStore, ObstoreStore
from ..store.base import Store, plain_values
from ..store.storage_transformers import apply_storage_transformers
from ..validate.scoped import batches

V2_DIMENSIONS = "_ARRAY_DIMENSIONS"  # how xarray names a Zarr v2 array's dimensions

V2_DOCUMENTS = frozenset({ZARRAY, ZGROUP, ZATTRS, ZMETADATA})

#: Keys sized per batch of a streamed listing (``--stored``): memory stays bounded.
BATCH = 10_000


class Stored(NamedTuple):
    """How many chunks (shards) an array stores, and their size in bytes."""

    chunks: int
    nbytes: int


#: ``progress(array path, chunks counted so far)``, called once per batch of a ``--stored`` listing.
StoredProgress = Callable[[str, int], None]


@dataclass(frozen=True)
class Survey:
    """The nodes below one path, and (when asked) what each array stores."""

    path: str
    nodes: dict[str, Array | Group | Zarr3Error]  # a node, or why its zarr.json could not be read
    implicit: frozenset[str]
    stored: dict[str, Stored] | None  # by array path; None when not counted


def survey(
    store: Store, path: str, *, stored: bool = False, progress: StoredProgress | None = None
) -> Survey:
    """The nodes below ``path`` from their metadata; with ``stored``, also each array's stored chunks.

    Without ``stored`` no array's keys are listed: a group with consolidated
    metadata answers from it, any other group with one directory listing.
    """
    path = normalize_path(path)
    top = open_node(store, path, read_only=True, strict=True)
    nodes: dict[str, Array | Group | Zarr3Error] = {path: top}
    implicit: set[str] = set()
    if isinstance(top, Group) and not _from_consolidated(top, nodes):
        if not is_v2(top.metadata):
            _walk(store, path, nodes, implicit)
            if not store.exists(metadata_key(path)):
                implicit.add(path)
        else:
            nodes.update((join_path(path, relative), node) for relative, node in top.walk())
    counts = None
    if stored:
        counts = {p: count_stored(store, n, progress) for p, n in nodes.items() if isinstance(n, Array)}
    return Survey(path, dict(sorted(nodes.items())), frozenset(implicit), counts)


def _from_consolidated(top: Group, nodes: dict[str, Array | Group | Zarr3Error]) -> bool:
    """Add the nodes ``top``'s consolidated metadata describes; False (nothing added) when it has none."""
    if top.metadata.consolidated is None:
        return False
    try:
        found = list(top.walk())  # a read-only group walks its consolidated metadata
    except Zarr3Error:
        return False  # an unreadable entry: the nodes' own documents say what is wrong
    nodes.update((join_path(top.path, relative), node) for relative, node in found)
    return True


def _walk(store: Store, path: str, nodes: dict[str, Array | Group | Zarr3Error], implicit: set[str]) -> bool:
    """Add the nodes below the group ``path`` (one directory listing and one batched fetch per group,
    never inside an array); whether any was found. A directory without zarr.json holding nodes is implicit."""
    prefix = f"{path}/" if path else ""
    _, prefixes = store.list_dir(prefix)
    children = [join_path(path, p[len(prefix) :].rstrip("/")) for p in sorted(prefixes)]
    raws = plain_values(store.get_many_versioned([(metadata_key(c), None) for c in children]))
    found = False
    for child, raw in zip(children, raws):
        if raw is None:
            if _walk(store, child, nodes, implicit):
                implicit.add(child)
                found = True
            continue
        found = True
        try:
            node = node_from_metadata(store, child, parse_node_metadata(raw, metadata_key(child)), True)
        except Zarr3Error as exc:
            nodes[child] = exc
            continue
        nodes[child] = node
        if isinstance(node, Group):
            _walk(store, child, nodes, implicit)
    return found


def count_stored(store: Store, array: Array, progress: StoredProgress | None = None) -> Stored:
    """The chunks (shards) ``array`` stores and their total size, from a listing streamed in batches."""
    chunk_store = apply_storage_transformers(store, array.metadata.storage_transformers)
    documents = V2_DOCUMENTS if is_v2(array.metadata) else {"zarr.json"}
    keys = (k for k in store.list_prefix(f"{array.path}/" if array.path else "") if _leaf(k) not in documents)
    count = nbytes = 0
    for batch in batches(keys, BATCH):
        count += len(batch)
        nbytes += value_sizes(chunk_store, batch)
        if progress is not None:
            progress(array.path, count)
    return Stored(count, nbytes)


def _leaf(key: str) -> str:
    return key.rpartition("/")[2]


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
    stored_chunks: int | None  #: None unless counted (``zarr3 info --stored``)
    stored_bytes: int | None
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


def describe(found: Survey) -> list[Entry]:
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
            stored = None if found.stored is None else found.stored[path]
            chunks, shards = _chunking(node)
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
                    "stored_chunks": None if stored is None else stored.chunks,
                    "stored_bytes": None if stored is None else stored.nbytes,
                    "nbytes": node.size * node.dtype.itemsize,
                }
            )
    return entries
