"""Check a Zarr v2 hierarchy (``.zgroup``, ``.zarray``, ``.zattrs``, ``.zmetadata``) and report every problem with its key.

Spec: https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html. Every document is parsed as
opening parses it (`zarr3_backend.core.metadata.v2`, then each array's codec
chain is built), and whatever that refuses is a problem. On top:

- one node per directory (not both ``.zarray`` and ``.zgroup``), no node
  inside an array, and a ``.zgroup`` at every ancestor of a node (the spec
  requires one; readers do not list the nodes below a directory without it);
- each consolidated ``.zmetadata`` describing exactly the nodes below its
  group, with the very documents they store;
- every other key is a chunk key inside its array's chunk grid (else: stray),
  and a ``.zattrs`` or ``.zmetadata`` belongs to a node that reads it;
- with ``deep=True``, that every stored chunk decodes to its chunk shape.

v2 arrays get no integrity warning: their codecs cannot change, and
``zarr3 convert`` writes chunks with a checksum.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..codecs.chain import array_chain
from ..core.metadata import decode_document, parse_attributes
from ..core.metadata.v2 import ZARRAY, ZATTRS, ZGROUP, ZMETADATA, parse_zarray, parse_zmetadata
from ..errors import Zarr3Error
from ..nodes.array import Array
from ..nodes.array_kinds import V2Array
from ..store.base import Store, plain_values
from .base import (
    Problem,
    Progress,
    assign_keys,
    check_chunk_keys,
    check_chunks,
    describe_error,
    is_reserved,
)

V2_NAMES = (ZARRAY, ZGROUP, ZATTRS, ZMETADATA)
STALE = "stale: re-run zarr.consolidate_metadata with zarr-python"


def is_v2_metadata_key(key: str) -> bool:
    """Whether ``key`` names a v2 metadata document (``.zarray``, ``.zgroup``, ``.zattrs`` or ``.zmetadata``)."""
    return key.rpartition("/")[2] in V2_NAMES


def validate_v2(
    store: Store,
    keys: list[str],
    *,
    deep: bool,
    progress: Callable[[int], Progress] | None,
) -> list[Problem]:
    """Every problem of the Zarr v2 hierarchy in ``store``, whose keys (reserved ones left out) are ``keys``."""
    problems: list[Problem] = []
    documents = _read_documents(store, [k for k in keys if is_v2_metadata_key(k)], problems)
    paths = {
        path: _key(path, ZARRAY if ZARRAY in docs else ZGROUP)
        for path, docs in documents.items()
        if ZARRAY in docs or ZGROUP in docs
    }
    arrays = _parse_nodes(store, documents, problems)
    problems += _check_tree(paths)
    problems += _check_consolidated(documents, paths)
    owned, stray = assign_keys([k for k in keys if not is_v2_metadata_key(k)], paths)
    problems += [
        Problem(k, "keys", "stray key: not a v2 metadata document and not inside any node", "warning")
        for k in stray
    ]
    chunk_keys = {}
    for path, found in owned.items():
        if path in arrays:
            chunk_keys[path] = check_chunk_keys(arrays[path], found, problems)
        elif ZARRAY not in documents[path]:
            message = (
                f"stray key in group {path or '/'!r}: not a v2 metadata document of the group or a child node"
            )
            problems += [Problem(k, "keys", message, "warning") for k in found]
    if deep:
        problems += check_chunks(store, arrays, chunk_keys, progress)
    return sorted(problems, key=lambda p: p.key)


def _key(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _read_documents(store: Store, keys: list[str], problems: list[Problem]) -> dict[str, dict[str, Any]]:
    """The decoded documents by node path and name; a key that does not decode becomes a problem."""
    documents: dict[str, dict[str, Any]] = defaultdict(dict)
    for key, raw in zip(keys, plain_values(store.get_many_versioned([(k, None) for k in keys]))):
        path, _, name = key.rpartition("/")
        try:
            documents[path][name] = decode_document(raw or b"", key)
        except Zarr3Error as exc:
            problems.append(Problem(key, "metadata", str(exc)))
            documents[path][name] = None  # still marks the node (so that its chunks are not called stray)
    return documents


def _parse_nodes(
    store: Store, documents: dict[str, dict[str, Any]], problems: list[Problem]
) -> dict[str, Array]:
    """The arrays, by path, parsed as opening parses them (as `V2Array`, so that their codec chain is built)."""
    arrays: dict[str, Array] = {}
    for path, docs in documents.items():
        if ZARRAY not in docs and ZGROUP not in docs:
            problems += [
                Problem(
                    _key(path, name), "keys", f"{name} next to no {ZARRAY} or {ZGROUP}: never read", "warning"
                )
                for name in docs
            ]
            continue
        if ZARRAY in docs and ZGROUP in docs:
            message = f"node {path or '/'!r} has both {ZARRAY} and {ZGROUP}: it is read as an array"
            problems.append(Problem(_key(path, ZGROUP), "hierarchy", message))
        elif ZGROUP in docs and docs[ZGROUP] is not None and not _is_zgroup(docs[ZGROUP]):
            key = _key(path, ZGROUP)
            problems.append(
                Problem(
                    key, "metadata", f"{key}: expected {{'zarr_format': 2}}, got {str(docs[ZGROUP])[:200]!r}"
                )
            )
        if ZMETADATA in docs and ZARRAY in docs:
            message = f"{ZMETADATA} of an array: never read (consolidated metadata belongs to a group)"
            problems.append(Problem(_key(path, ZMETADATA), "keys", message, "warning"))
        try:
            attributes = parse_attributes(docs.get(ZATTRS) or {}, _key(path, ZATTRS))
        except Zarr3Error as exc:
            problems.append(Problem(_key(path, ZATTRS), "metadata", str(exc)))
            attributes = {}
        if docs.get(ZARRAY) is not None:
            key = _key(path, ZARRAY)
            try:
                metadata = parse_zarray(docs[ZARRAY], attributes, key)
                array_chain(metadata, key)  # as opening checks it: errors name the .zarray
                arrays[path] = V2Array(store, path, metadata, read_only=True)
            except Exception as exc:  # report, then go on with the other nodes
                problems.append(Problem(key, "metadata", describe_error(exc)))
    return arrays


def _is_zgroup(document: object) -> bool:
    return isinstance(document, dict) and document.get("zarr_format") == 2


def _ancestors(path: str) -> list[str]:
    """``""`` and every path above ``path`` (none for the root)."""
    parts = path.split("/") if path else []
    return ["/".join(parts[:i]) for i in range(len(parts))]


def _check_tree(paths: dict[str, str]) -> list[Problem]:
    """Nodes inside arrays, and ancestors of nodes without a ``.zgroup`` (``paths``: node path -> its document key)."""
    problems = []
    missing = set()
    arrays = {path for path, key in paths.items() if key.endswith(ZARRAY)}
    for path, key in sorted(paths.items()):
        for ancestor in _ancestors(path):
            if ancestor in arrays:
                message = f"node {path!r} lies inside array {ancestor or '/'!r}; arrays have no children"
                problems.append(Problem(key, "hierarchy", message))
            elif ancestor not in paths:
                missing.add(ancestor)
    missing = {
        m for m in missing if not any(a == "" or m.startswith(a + "/") for a in arrays)
    }  # reported above
    if "" in missing:
        tops = sorted(p for p in paths if not any(a in paths for a in _ancestors(p)))
        missing = {
            m for m in missing if any(m.startswith(top + "/") for top in tops)
        }  # only inside hierarchies
        message = (
            f"no {ZGROUP} or {ZARRAY} at the store root: this is not the root of a Zarr v2 hierarchy (opening "
            f"it fails); hierarchies found further down: {', '.join(tops[:5])}"
        )
        problems.append(Problem(ZGROUP, "hierarchy", message))
    for path in sorted(missing):
        below = sorted(p for p in paths if p.startswith(path + "/"))
        message = (
            f"no {ZGROUP} at {path!r}, which holds {', '.join(map(repr, below[:5]))}: the v2 spec requires a "
            "group at every ancestor of a node, and readers do not list the nodes below it (they open them "
            "only by their full path)"
        )
        problems.append(Problem(_key(path, ZGROUP), "hierarchy", message))
    return problems


def _check_consolidated(documents: dict[str, dict[str, Any]], paths: dict[str, str]) -> list[Problem]:
    """Each group's ``.zmetadata`` against the documents stored for the nodes below it (and the group itself)."""
    problems = []
    for path, docs in sorted(documents.items()):
        if docs.get(ZMETADATA) is None or ZARRAY in docs or ZGROUP not in docs:
            continue
        key, prefix = _key(path, ZMETADATA), f"{path}/" if path else ""
        try:
            described = parse_zmetadata(docs[ZMETADATA], key)
        except Zarr3Error as exc:
            problems.append(Problem(key, "consolidated", str(exc)))
            continue
        below = {p[len(prefix) :] for p in paths if p == path or p.startswith(prefix)}
        for relative, entry in sorted(described.items()):
            if is_reserved(relative):
                continue
            if relative not in below:
                message = (
                    f"{ZMETADATA} describes {relative or '/'!r}, which has no {ZARRAY} or {ZGROUP} ({STALE})"
                )
                problems.append(Problem(key, "consolidated", message))
            else:
                problems += _compare_entry(
                    key, relative, entry, documents[prefix + relative if relative else path]
                )
        for relative in sorted(below - set(described)):
            problems.append(
                Problem(key, "consolidated", f"{ZMETADATA} lacks {relative or '/'!r}, which exists ({STALE})")
            )
    return problems


def _compare_entry(key: str, relative: str, entry: dict[str, Any], stored: dict[str, Any]) -> list[Problem]:
    """A problem for each document of a node that ``.zmetadata`` gives otherwise than the store holds it."""
    problems = []
    for name in (ZARRAY, ZGROUP, ZATTRS):
        if name in stored and stored[name] is None:
            continue  # does not decode: reported as such
        empty: dict[str, Any] | None = {} if name == ZATTRS else None  # a missing .zattrs means no attributes
        described, actual = entry.get(name, empty), stored.get(name, empty)
        if name == ZGROUP and isinstance(described, dict) and isinstance(actual, dict):
            described, actual = _group_fields(described), _group_fields(actual)
        if _canonical(described) == _canonical(actual):
            continue
        where = f"{ZMETADATA}[{_key(relative, name)!r}]"
        if isinstance(described, dict) and isinstance(actual, dict):
            fields = sorted(
                k
                for k in described.keys() | actual.keys()
                if _canonical(described.get(k)) != _canonical(actual.get(k))
            )
            message = f"{where} differs from the stored {_key(relative, name)} in {', '.join(map(str, fields))} ({STALE})"
        else:
            message = (
                f"{where} is {'absent' if described is None else 'given'}, but the store "
                f"{'has no' if actual is None else 'holds a'} {_key(relative, name)} ({STALE})"
            )
        problems.append(Problem(key, "consolidated", message))
    return problems


def _group_fields(document: dict[str, Any]) -> dict[str, Any]:
    """What a ``.zgroup`` says to readers: its ``zarr_format`` (zarr-python adds its own members to those in ``.zmetadata``)."""
    return {"zarr_format": document.get("zarr_format")}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
