"""``zarr3 info`` (every node in detail, like ``ncdump -h``) and ``zarr3 tree`` (the hierarchy at a glance)."""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import Zarr3Error
from ..nodes.hierarchy import Group
from ..nodes.paths import normalize_path
from ..store.base import Store
from .options import open_store
from .survey import ArrayEntry, Entry, Survey, describe, dimension_names, survey


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], store_options: argparse.ArgumentParser
) -> None:
    info = commands.add_parser(
        "info",
        parents=[store_options],
        help="describe every array and group, like ncdump -h",
        description="Describe every array and group below PATH from its metadata alone: shape, data type, "
        "dimension names, chunks and shards, codecs, fill value and attributes. No array's chunks are "
        "listed, so this takes the same time for any number of chunks; --stored also counts each array's "
        "stored chunks and their size (a listing of every chunk key, with progress on stderr).",
    )
    info.add_argument("store", metavar="STORE")
    info.add_argument(
        "path", metavar="PATH", nargs="?", default="", help="a node inside the store (default: the root)"
    )
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.add_argument(
        "--stored",
        action="store_true",
        help="also count each array's stored chunks and their size (lists every chunk key)",
    )
    info.set_defaults(run=run_info)
    tree = commands.add_parser(
        "tree",
        parents=[store_options],
        help="show the hierarchy at a glance",
        description="Show the hierarchy below PATH; implicit groups (no zarr.json) are marked.",
    )
    tree.add_argument("store", metavar="STORE")
    tree.add_argument("path", metavar="PATH", nargs="?", default="")
    tree.set_defaults(run=run_tree)


def run_info(args: argparse.Namespace) -> int:
    print_info(open_store(args), args.path, args.json, title=args.store, stored=args.stored)
    return 0


def print_info(store: Store, path: str, as_json: bool = False, title: str = "", stored: bool = False) -> None:
    """Print every node below ``path``: as text like ``ncdump -h``, or as JSON; ``stored`` also counts
    each array's stored chunks (progress on stderr)."""
    progress = StoredCounter() if stored else None
    entries = describe(survey(store, path, stored=stored, progress=progress))
    if progress is not None:
        progress.close()
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
            f"  stored      {_stored(entry, noun)} (uncompressed {human_bytes(entry['nbytes'])})",
        ]
    attributes = entry["attributes"]
    lines.append("  attributes" + ("" if attributes else "  {}"))
    lines += [f"    {name} = {_shown(name, value)}" for name, value in attributes.items()]
    return lines


def _stored(entry: ArrayEntry, noun: str) -> str:
    if entry["stored_chunks"] is None or entry["stored_bytes"] is None:
        return f"{noun} not counted (use --stored)"
    return f"{entry['stored_chunks']} {noun}, {human_bytes(entry['stored_bytes'])}"


class StoredCounter:
    """``counting stored chunks: /path n`` on stderr, rewritten as each batch of a listing arrives."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, path: str, counted: int) -> None:
        self.shown = True
        print(f"\rcounting stored chunks: /{path} {counted}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown:
            print(file=sys.stderr)


def _shown(name: str, value: Any) -> str:
    """An attribute's value as xarray decodes it: a CF ``_FillValue`` of floats is stored base64-encoded.

    xarray's zarr engine stores a float ``_FillValue`` as the base64 text of
    its little-endian float64 bytes (a complex one as a pair of them);
    shown here as the number it is (``nan``, ``-9999.0``). Everything else is JSON.

    >>> _shown("_FillValue", "AAAAAAAA+H8="), _shown("_FillValue", ["AAAAAAAA8D8=", "AAAAAAAAAAA="]), _shown("units", "K")
    ('nan', '(1+0j)', '"K"')
    """
    if name == "_FillValue":
        parts = value if isinstance(value, list) and len(value) == 2 else [value]
        try:
            numbers = [struct.unpack("<d", base64.b64decode(part, validate=True))[0] for part in parts]
        except (TypeError, ValueError, struct.error):  # not xarray's encoding: shown as stored
            return json.dumps(value, default=str)
        return str(numbers[0] if len(numbers) == 1 else complex(*numbers))
    return json.dumps(value, default=str)


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
    children = [p for p in paths if p.startswith(prefix) and p != parent and "/" not in p[len(prefix) :]]
    for i, child in enumerate(children):
        last = i == len(children) - 1
        print(f"{indent}{'└── ' if last else '├── '}{_tree_label(found, child, child[len(prefix) :])}")
        _print_children(found, paths, child, indent + ("    " if last else "│   "))


def _tree_label(found: Survey, path: str, name: str) -> str:
    node = found.nodes.get(path)
    if node is None or path in found.implicit:
        return f"{name}  (implicit group)"
    if isinstance(node, Zarr3Error):
        return f"{name}  (unreadable zarr.json: run 'zarr3 validate')"
    if isinstance(node, Group):
        return name
    names = dimension_names(node) or (None,) * node.ndim
    dims = ", ".join(f"{d}={n}" if d else str(n) for d, n in zip(names, node.shape))
    return f"{name}  {_dtype(node.metadata.data_type.to_json())} ({dims})"
