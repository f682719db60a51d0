"""``zarr3 info`` (every node in detail, like ``ncdump -h``) and ``zarr3 tree`` (the hierarchy at a glance)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, final

from ..array import Array
from ..errors import Zarr3Error
from ..hierarchy import Group, node_from_metadata, normalize_path, open_node
from ..metadata import parse_node_metadata
from ..storage_transformers import apply_storage_transformers
from ..store import FsspecStore, LocalStore
from ..store.base import Store
from ..validate import assign_keys, is_metadata_key, node_path
from .options import open_store


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser], store_options: argparse.ArgumentParser) -> None:
    info = commands.add_parser(
        "info", parents=[store_options], help="describe every array and group, like ncdump -h",
        description="Describe every array and group below PATH: shape, data type, dimension names, chunks and "
                    "shards, codecs, fill value, attributes, and how many chunks are stored and their size.",
    )
    info.add_argument("store", metavar="STORE")
    info.add_argument("path", metavar="PATH", nargs="?", default="", help="a node inside the store (default: the root)")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.set_defaults(run=run_info)
    tree = commands.add_parser("tree", parents=[store_options], help="show the hierarchy at a glance",
                               description="Show the hierarchy below PATH; implicit groups (no zarr.json) are marked.")
    tree.add_argument("store", metavar="STORE")
    tree.add_argument("path", metavar="PATH", nargs="?", default="")
    tree.set_defaults(run=run_tree)


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
    metadata_keys = [k for k in keys if is_metadata_key(k)]
    nodes: dict[str, Array | Group | Zarr3Error] = {path: top}
    for key, raw in zip(metadata_keys, store.get_many([(k, None) for k in metadata_keys])):
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
        return sum(int(n or 0) for n in store.fs.sizes([f"{store.root}/{key}" if store.root else key for key in keys]))
    return sum(len(value or b"") for value in store.get_many([(key, None) for key in keys]))


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
    chunks: list[int]
    shards: list[int] | None
    codecs: list[dict[str, Any]]
    fill_value: Any  # the JSON form of the array's data type
    attributes: dict[str, Any]
    stored_chunks: int
    stored_bytes: int
    nbytes: int


Entry = ErrorEntry | GroupEntry | ArrayEntry


def describe(store: Store, found: Survey) -> list[Entry]:
    """One JSON-ready entry per node (``--json`` output)."""
    entries: list[Entry] = []
    for path, node in found.nodes.items():
        if isinstance(node, Zarr3Error):
            entries.append({"path": "/" + path, "error": str(node)})
        elif isinstance(node, Group):
            entries.append({"path": "/" + path, "node_type": "group", "implicit": path in found.implicit,
                            "attributes": dict(node.attrs), "consolidated": node.metadata.consolidated is not None})
        else:
            keys = found.owned.get(path, [])
            chunk_store = apply_storage_transformers(store, node.metadata.storage_transformers)
            document = node.metadata.to_json()
            entries.append({
                "path": "/" + path, "node_type": "array", "shape": list(node.shape), "data_type": document["data_type"],
                "dimension_names": document.get("dimension_names"), "chunks": list(node.chunks),
                "shards": None if node.shards is None else list(node.shards), "codecs": document["codecs"],
                "fill_value": document["fill_value"], "attributes": document["attributes"],
                "stored_chunks": len(keys), "stored_bytes": value_sizes(chunk_store, keys),
                "nbytes": node.size * node.dtype.itemsize,
            })
    return entries


def run_info(args: argparse.Namespace) -> int:
    print_info(open_store(args), args.path, args.json, title=args.store)
    return 0


def print_info(store: Store, path: str, as_json: bool = False, title: str = "") -> None:
    """Print every node below ``path``: as text like ``ncdump -h``, or as JSON."""
    entries = describe(store, survey(store, path))
    if as_json:
        print(json.dumps(entries, indent=2, default=str))
        return
    print(f"store {title or store!r}" + (f", path /{normalize_path(path)}" if normalize_path(path) else ""))
    for entry in entries:
        print()
        print("\n".join(_entry_lines(entry)))


def _entry_lines(entry: Entry) -> list[str]:
    if "error" in entry:
        return [f"{entry['path']}  unreadable: {entry['error']}"]
    if entry["node_type"] == "group":
        kind = "implicit group (no zarr.json)" if entry["implicit"] else "group"
        lines = [f"{entry['path']}  {kind}" + ("  [consolidated metadata]" if entry["consolidated"] else "")]
    else:
        noun = "shards" if entry["shards"] else "chunks"
        lines = [
            f"{entry['path']}  array {_dtype(entry['data_type'])} {tuple(entry['shape'])}",
            f"  dimensions  {', '.join(str(d) for d in entry['dimension_names'] or ['(unnamed)'])}",
            f"  chunks      {tuple(entry['chunks'])}",
            f"  shards      {tuple(entry['shards']) if entry['shards'] else '-'}",
            *codec_lines(entry["codecs"]),
            f"  fill_value  {json.dumps(entry['fill_value'])}",
            f"  stored      {entry['stored_chunks']} {noun}, {human_bytes(entry['stored_bytes'])} "
            f"(uncompressed {human_bytes(entry['nbytes'])})",
        ]
    attributes = entry["attributes"]
    lines.append("  attributes" + ("" if attributes else "  {}"))
    lines += [f"    {name} = {json.dumps(value, default=str)}" for name, value in attributes.items()]
    return lines


def _dtype(data_type: Any) -> str:
    return data_type if isinstance(data_type, str) else json.dumps(data_type)


def codec_lines(codecs: list[dict[str, Any]]) -> list[str]:
    """The codec chain for text output; a top-level sharding codec shows its inner and index chains below it."""
    lines = []
    for i, codec in enumerate(codecs):
        lines.append(("  codecs      " if i == 0 else "              -> ") + codec_text(codec, nested=False))
        if codec["name"] == "sharding_indexed":
            configuration = codec["configuration"]
            lines.append(f"                inner: {chain_text(configuration['codecs'])}")
            lines.append(f"                index: {chain_text(configuration['index_codecs'])}")
    return lines


def chain_text(codecs: Sequence[str | dict[str, Any]]) -> str:
    return " -> ".join(codec_text(c) for c in codecs)


def codec_text(codec: str | dict[str, Any], nested: bool = True) -> str:
    """``name(key=value, ...)``; a nested sharding codec shows its chains inline."""
    if isinstance(codec, str):
        return codec
    configuration = dict(codec.get("configuration", {}))
    if codec["name"] == "sharding_indexed":
        inner, index = configuration.pop("codecs"), configuration.pop("index_codecs")
        if nested:
            configuration["codecs"] = f"[{chain_text(inner)}]"
            configuration["index_codecs"] = f"[{chain_text(index)}]"
    arguments = ", ".join(f"{key}={value}" for key, value in configuration.items())
    return f"{codec['name']}({arguments})" if arguments else codec["name"]


def human_bytes(n: int) -> str:
    """``950 B``, ``250.5 kB``, ``25.0 MB`` (powers of 1000)."""
    if n < 1000:
        return f"{n} B"
    size = float(n)
    for unit in ("kB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            break
    return f"{size:.1f} {unit}"


def run_tree(args: argparse.Namespace) -> int:
    found = survey(open_store(args), args.path)
    paths = sorted(set(found.nodes) | found.implicit)
    print(_tree_label(found, found.path, "/" + found.path))
    _print_children(found, paths, found.path, "")
    return 0


def _print_children(found: Survey, paths: list[str], parent: str, indent: str) -> None:
    prefix = f"{parent}/" if parent else ""
    children = [p for p in paths if p.startswith(prefix) and p != parent and "/" not in p[len(prefix):]]
    for i, child in enumerate(children):
        last = i == len(children) - 1
        print(f"{indent}{'└── ' if last else '├── '}{_tree_label(found, child, child[len(prefix):])}")
        _print_children(found, paths, child, indent + ("    " if last else "│   "))


def _tree_label(found: Survey, path: str, name: str) -> str:
    node = found.nodes.get(path)
    if node is None or path in found.implicit:
        return f"{name}  (implicit group)"
    if isinstance(node, Zarr3Error):
        return f"{name}  (unreadable zarr.json: run 'zarr3 validate')"
    if isinstance(node, Group):
        return name
    names = node.dimension_names or (None,) * node.ndim
    dims = ", ".join(f"{d}={n}" if d else str(n) for d, n in zip(names, node.shape))
    return f"{name}  {_dtype(node.metadata.data_type.to_json())} ({dims})"
