"""Check a store against the Zarr v3 spec (or v2: `validate.v2`) and report every problem with the key it concerns.

Validation is parsing: every document goes through the code that opens
nodes, and whatever that refuses is a problem. On top come the structural
checks no single document shows (names, implicit groups, consolidated
metadata, stray keys, unfinished or pending writes, arrays no checksum
covers) and, with ``deep=True``, every stored chunk and what ``convert``
recorded. The list of checks is on the CLI guide's `zarr3 validate` section.

>>> import zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/validate", shape=(4,), dtype="int8", chunks=(2,))
>>> a[:] = 1
>>> validate_store("memory://doc/validate", deep=True)
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from ..codecs.sharding import ShardingCodec
from ..coordination.records import PENDING_KEY
from ..coordination.reservations import appending_key, describe, parse_reservations
from ..coordination.unfinished import unfinished_group
from ..core.metadata import (
    ArrayMetadata,
    GroupMetadata,
    NodeMetadata,
    metadata_key,
    node_metadata_from_json,
    parse_node_metadata,
)
from ..errors import MetadataError, NodeNameError, Zarr3Error
from ..nodes.array import Array
from ..nodes.paths import validate_node_name
from ..store import StoreLike, make_store
from ..store.base import Store, plain_values
from .base import (
    CHECKS,
    Check,
    Problem,
    Progress,
    Severity,
    assign_keys,
    check_chunk,
    check_chunk_keys,
    check_chunks,
    describe_error,
    is_reserved,
)
from .manifest_checks import check_converted
from .scoped import BATCH, Listed, batches, validate_arrays
from .v2 import is_v2_metadata_key, validate_v2

__all__ = [
    "CHECKS",
    "Check",
    "Problem",
    "Progress",
    "Severity",
    "assign_keys",
    "check_chunk",
    "describe_error",
    "Listed",
    "is_metadata_key",
    "node_path",
    "validate_store",
]

STALE = "stale: re-run consolidate_metadata"

#: Keys other than ``zarr.json`` the first listing keeps; past this many they are listed again, in batches.
KEPT = 1_000_000


def validate_store(
    store: StoreLike,
    *,
    deep: bool = False,
    storage_options: dict[str, Any] | None = None,
    progress: Callable[[int], Progress] | None = None,
    arrays: Sequence[str] | None = None,
    listed: Listed | None = None,
) -> list[Problem]:
    """Every problem found in a store, errors and warnings, in key order.

    Checks every ``zarr.json`` by parsing it as opening does, node names,
    the hierarchy, consolidated metadata against the nodes it describes,
    unfinished and pending writes, arrays without an integrity check
    (warnings), and that every other key is a chunk key inside its array's
    grid. ``deep=True`` also reads every chunk: shard indexes, checksums,
    and that every chunk and inner chunk decodes to its expected shape.
    A Zarr v2 store (no ``zarr.json``, but ``.zgroup``/``.zarray`` documents)
    gets the same checks, as the v2 spec states them
    (`zarr3_backend.validate.v2`).

    Parameters
    ----------
    store : str, os.PathLike or Store
        A local path, an fsspec URL or a store; opened read-only.
    deep : bool, default False
        Also read and decode every stored chunk.
    storage_options : dict, optional
        Options for an fsspec URL's file system (credentials, endpoint).
    progress : callable, optional
        ``progress(total)`` is called once before the deep chunk checks with
        the number of keys that may be chunks (the listing's keys other than
        ``zarr.json``, an upper bound of the stored chunks) and returns an object with ``update(n)``
        and ``close()`` (for example ``tqdm.tqdm``).
    arrays : sequence of str, optional
        Check only these arrays (paths in the store): their ``zarr.json``,
        their keys and, with ``deep``, their chunks, listing only their own
        keys, in batches (`zarr3_backend.validate.scoped`).
    listed : callable, optional
        ``listed(n)`` is called as the listing streams in, with the number of
        keys listed so far (every 10,000 keys, and at the end). Past `KEPT`
        other keys, the listing keeps only the ``zarr.json`` keys and the
        store is listed a second time, its keys checked in batches as they
        stream in, so memory stays bounded whatever the number of chunks;
        ``listed`` counts the first listing.

    Returns
    -------
    list of Problem
        Empty when the store is valid. A problem's ``severity`` is
        ``"error"`` or ``"warning"``; ``key`` names the store key and
        ``message`` what is wrong and how to fix it.

    Examples
    --------
    >>> import zarr3_backend
    >>> _ = zarr3_backend.create_array("memory://doc/validate_store", "v", shape=(4,), dtype="int8", chunks=(2,))
    >>> validate_store("memory://doc/validate_store", deep=True)
    []
    """
    store = make_store(store, storage_options=storage_options, read_only=True)
    if arrays is not None:
        return validate_arrays(store, arrays, deep=deep, progress=progress, listed=listed)
    metadata_keys, others, kept = _metadata_keys(store, listed)
    documents = dict(
        zip(
            (node_path(k) for k in metadata_keys),
            plain_values(store.get_many_versioned([(k, None) for k in metadata_keys])),
        )
    )
    if not documents:
        keys = sorted(k for k in store.list() if not is_reserved(k))
        if any(map(is_v2_metadata_key, keys)):
            return validate_v2(store, keys, deep=deep, progress=progress)
        return [_no_metadata(len(keys))]
    problems: list[Problem] = []
    nodes = _parse_nodes(store, documents, problems)
    problems += _check_unfinished(nodes)
    problems += _check_tree(documents, nodes)
    problems += _check_consolidated(documents, nodes)
    bar = progress(others) if progress is not None and deep else None
    _check_listing(store, nodes, documents, problems, kept, bar=bar, deep=deep)
    problems += [
        _unchecked(path, node)
        for path, node in nodes.items()
        if isinstance(node, Array) and not node.codecs.detects_corruption()
    ]
    if deep:
        problems += check_converted(store, {p: n for p, n in nodes.items() if isinstance(n, Array)})
    problems += _reserved_rows(
        store, [path for path, node in nodes.items() if isinstance(node, GroupMetadata)]
    )
    if store.exists(PENDING_KEY):
        problems = _while_pending(problems)
    return sorted(problems, key=lambda p: p.key)


def _metadata_keys(store: Store, listed: Listed | None) -> tuple[list[str], int, list[str] | None]:
    """The sorted ``zarr.json`` keys of a streamed listing, how many other (not reserved) keys it held, and
    those keys while they number at most `KEPT` (None past that: they are listed again, in batches)."""
    found: list[str] = []
    kept: list[str] | None = []
    others = 0
    for key in _counted(store.list(), listed):
        if is_metadata_key(key):
            found.append(key)
        elif not is_reserved(key):
            others += 1
            if kept is not None:
                kept.append(key)
                kept = kept if len(kept) <= KEPT else None
    return sorted(k for k in found if not is_reserved(k)), others, kept


def _check_listing(
    store: Store,
    nodes: dict[str, Array | NodeMetadata],
    documents: dict[str, Any],
    problems: list[Problem],
    kept: list[str] | None,
    *,
    bar: Progress | None,
    deep: bool,
) -> None:
    """Check every key that is neither a ``zarr.json`` nor reserved (and, with ``deep``, every chunk) in
    batches: ``kept``, or when the first listing held too many to keep, the store listed again, streamed."""
    keys = iter(kept) if kept is not None else _other_keys(store)
    for batch in batches(keys, BATCH):
        chunk_keys = _check_keys(batch, nodes, documents, problems)
        if deep:
            problems += check_chunks(store, nodes, chunk_keys, None)
            if bar is not None:
                bar.update(sum(map(len, chunk_keys.values())))
    if bar is not None:
        bar.close()


def _other_keys(store: Store) -> Iterator[str]:
    return (k for k in store.list() if not is_metadata_key(k) and not is_reserved(k))


def _counted(keys: Iterator[str], listed: Listed | None) -> Iterator[str]:
    """``keys``, reporting to ``listed`` how many went by, every 10,000 keys and at the end."""
    if listed is None:
        yield from keys
        return
    n = 0
    for batch in batches(keys, BATCH):
        yield from batch
        n += len(batch)
        listed(n)


def _reserved_rows(store: Store, groups: list[str]) -> list[Problem]:
    """A warning for each group holding rows a deferred append reserved and has not written yet."""
    raws = plain_values(store.get_many_versioned([(appending_key(path), None) for path in groups]))
    return [
        Problem(appending_key(path), "metadata", _reserved(path, raw), "warning")
        for path, raw in zip(groups, raws)
        if raw is not None
    ]


def _reserved(path: str, raw: bytes) -> str:
    try:
        return describe(path, parse_reservations(raw, appending_key(path)))
    except MetadataError as exc:
        return str(exc)


def _check_unfinished(nodes: dict[str, Array | NodeMetadata]) -> list[Problem]:
    """An error for each group an unfinished ``to_zarr3`` first write marked (a warning for a ``compute=False`` template)."""
    found = [
        unfinished_group(None, path, node) for path, node in nodes.items() if not isinstance(node, Array)
    ]
    return [
        Problem(u.key, "hierarchy", u.message(), "warning" if u.template else "error")
        for u in found
        if u is not None
    ]


def _while_pending(problems: list[Problem]) -> list[Problem]:
    """The pending-write record as an error; advice to consolidate (which would copy half-published documents) replaced."""
    finish = "finish the pending to_zarr3 write first: zarr3_backend.finish_pending_write(store)"
    found = [replace(p, message=p.message.replace(STALE, finish)) for p in problems]
    message = (
        f"a to_zarr3 call was interrupted while publishing its metadata, so the nodes' own zarr.json may "
        f"disagree (readers not using consolidated metadata refuse the store); {finish}, or run any "
        "to_zarr3 call on the store. Do not run consolidate_metadata before that"
    )
    return [*found, Problem(PENDING_KEY, "metadata", message)]


def is_metadata_key(key: str) -> bool:
    return key == "zarr.json" or key.endswith("/zarr.json")


def node_path(key: str) -> str:
    """The node path of a ``zarr.json`` key (``""`` for the root)."""
    return key.removesuffix("zarr.json").rstrip("/")


def _no_metadata(count: int) -> Problem:
    message = f"no zarr.json, .zgroup or .zarray anywhere in the store ({count} other keys): not a Zarr store"
    return Problem("zarr.json", "metadata", message)


def _parse_nodes(
    store: Store,
    documents: dict[str, bytes | None],
    problems: list[Problem],
) -> dict[str, Array | NodeMetadata]:
    """Parsed nodes by path: arrays as `Array` (so their codec chain is built and checked)."""
    nodes: dict[str, Array | NodeMetadata] = {}
    for path, raw in documents.items():
        key = metadata_key(path)
        for name in path.split("/") if path else []:
            try:
                validate_node_name(name)
            except NodeNameError as exc:
                problems.append(Problem(key, "hierarchy", str(exc)))
        try:
            metadata = parse_node_metadata(raw or b"", key)
            if isinstance(metadata, ArrayMetadata):
                array = Array(store, path, metadata, read_only=True)
                array.check_codecs()
                nodes[path] = array
            else:
                nodes[path] = metadata
        except Exception as exc:  # as above: report, then go on with the other nodes
            problems.append(Problem(key, "metadata", describe_error(exc)))
    return nodes


def _unchecked(path: str, array: Array) -> Problem:
    """The warning for an array whose stored bytes no checksum covers, naming the parts without one."""
    sharding = array.codecs.array_bytes
    if isinstance(sharding, ShardingCodec):
        parts = [
            part
            for part, chain in (("inner chunks", sharding.codecs), ("shard index", sharding.index_codecs))
            if not chain.detects_corruption()
        ]
        what = f"its {' and '.join(parts)} {'carries' if parts == ['shard index'] else 'carry'}"
    else:
        what = "its chunks carry"
    message = (
        f"array {array.name!r}: {what} no checksum, so a changed byte may read as wrong values without an "
        "error; add 'crc32c' after the compressors (as the default codecs do)"
    )
    return Problem(metadata_key(path), "integrity", message, "warning")


def _check_tree(documents: dict[str, Any], nodes: dict[str, Array | NodeMetadata]) -> list[Problem]:
    problems = []
    implicit = set()
    for path in documents:
        parts = path.split("/") if path else []
        for i in range(len(parts)):
            ancestor = "/".join(parts[:i])
            if isinstance(nodes.get(ancestor), Array):
                message = f"node {path!r} lies inside array {ancestor or '/'!r}; arrays have no children"
                problems.append(Problem(metadata_key(path), "hierarchy", message))
            elif ancestor not in documents:
                implicit.add(ancestor)
    if "" in implicit and not any(
        isinstance(node, Array) and "/" not in path for path, node in nodes.items()
    ):
        tops = sorted(p for p in documents if not any(a in documents for a in _ancestors(p)))
        implicit = {p for p in implicit if any(p.startswith(top + "/") for top in tops)}  # only inside stores
        message = (
            "no zarr.json at the store root and no array directly inside: this is not the root of a Zarr "
            f"store (opening it fails); Zarr stores found further down: {', '.join(tops[:5])}"
        )
        problems.append(Problem("zarr.json", "hierarchy", message))
    for path in sorted(implicit):
        message = (
            f"implicit group {path or '/'!r}: no zarr.json (implicit groups were removed in Zarr v3.0; "
            "some readers will not find the nodes below it)"
        )
        problems.append(Problem(metadata_key(path), "hierarchy", message, "warning"))
    return problems


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _check_consolidated(documents: dict[str, Any], nodes: dict[str, Array | NodeMetadata]) -> list[Problem]:
    problems = []
    for path, node in nodes.items():
        if not isinstance(node, GroupMetadata) or node.consolidated is None:
            continue
        key, prefix = metadata_key(path), f"{path}/" if path else ""
        below = {p[len(prefix) :] for p in documents if p.startswith(prefix) and p != path}
        for relative, document in sorted(node.consolidated.items()):
            if is_reserved(relative):
                continue  # skipped like their keys (e.g. xarray's __xarray_dataarray_variable__)
            if relative not in below:
                message = f"consolidated_metadata describes {relative!r}, which has no zarr.json ({STALE})"
                problems.append(Problem(key, "consolidated", message))
            elif (actual := nodes.get(prefix + relative)) is not None:
                problems += _compare_entry(key, relative, document, actual)
        for relative in sorted(below - set(node.consolidated)):
            message = f"consolidated_metadata lacks {relative!r}, which exists ({STALE})"
            problems.append(Problem(key, "consolidated", message))
    return problems


def _compare_entry(key: str, relative: str, document: Any, actual: Array | NodeMetadata) -> list[Problem]:
    try:
        described = _comparable(
            node_metadata_from_json(document, f"{key}: consolidated_metadata[{relative!r}]")
        )
    except Zarr3Error as exc:
        return [Problem(key, "consolidated", str(exc))]
    stored = _comparable(actual.metadata if isinstance(actual, Array) else actual)
    differing = sorted(k for k in described.keys() | stored.keys() if described.get(k) != stored.get(k))
    if not differing:
        return []
    fields = ", ".join(differing)
    message = f"consolidated_metadata[{relative!r}] differs from {relative}/zarr.json in {fields} ({STALE})"
    return [Problem(key, "consolidated", message)]


def _comparable(metadata: NodeMetadata) -> dict[str, Any]:
    document = metadata.to_json()
    document.pop("consolidated_metadata", None)
    return document


def _check_keys(
    keys: list[str],
    nodes: dict[str, Array | NodeMetadata],
    documents: dict[str, Any],
    problems: list[Problem],
) -> dict[str, list[str]]:
    """The chunk keys of every array, by array path; every other key becomes a problem."""
    owned, stray = assign_keys(keys, documents)
    problems += [
        Problem(k, "keys", "stray key: not a zarr.json and not inside any node", "warning") for k in stray
    ]
    chunk_keys = {}
    for path, found in owned.items():
        node = nodes.get(path)
        if isinstance(node, Array):
            chunk_keys[path] = check_chunk_keys(node, found, problems)
        elif isinstance(node, GroupMetadata):
            message = f"stray key in group {path or '/'!r}: not a zarr.json of a child node"
            problems += [Problem(k, "keys", message, "warning") for k in found]
    return chunk_keys
