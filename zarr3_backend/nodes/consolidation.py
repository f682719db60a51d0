"""Consolidated metadata that never lies: patch every consolidating ancestor when a node changes.

Readers trust a group's inline copy of the metadata below it (zarr-python's
``consolidated_metadata``), so every write that changes a node calls
`refresh_consolidated()`, which rewrites the consolidating ancestors (one
batched fetch) with the changed entries patched in. `stale_hint()` says when
a chunk that fails to decode is described by a stale consolidated entry.

>>> from zarr3_backend.core.metadata import GroupMetadata
>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/consolidation")
>>> store.set("zarr.json", encode_metadata(GroupMetadata(consolidated={})))
>>> refresh_consolidated(store, [Change("g", GroupMetadata().to_json())])
>>> sorted(GroupMetadata.from_json(json.loads(store.get("zarr.json"))).consolidated)
['g']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.metadata import GroupMetadata, encode_metadata, parse_node_metadata
from ..store.base import Store, plain_values


@dataclass(frozen=True)
class Change:
    """The node at ``path`` now has ``document`` (``None``: it was deleted).

    ``replaces_subtree``: everything below ``path`` is gone too (a delete,
    or a create with ``overwrite=True``).
    """

    path: str
    document: dict[str, Any] | None
    replaces_subtree: bool = False


def _key(path: str) -> str:
    return f"{path}/zarr.json" if path else "zarr.json"


def ancestors(path: str) -> list[str]:
    """Every group path above ``path``, root first.

    >>> ancestors("a/b/c")
    ['', 'a', 'a/b']
    """
    parts = path.split("/") if path else []
    return ["/".join(parts[:i]) for i in range(len(parts))]


def consolidated_entry(document: dict[str, Any]) -> dict[str, Any]:
    """A node document as it appears inside a consolidated group (nested groups drop their own copy)."""
    document = dict(document)
    if document.get("node_type") == "group":
        document.pop("consolidated_metadata", None)
    return document


def apply_changes(consolidated: dict[str, Any], base: str, changes: Sequence[Change]) -> dict[str, Any]:
    """``consolidated`` (relative to the group at ``base``) with ``changes`` applied."""
    result = dict(consolidated)
    for change in changes:
        relative = change.path[len(base) + 1 :] if base else change.path
        if change.document is None or change.replaces_subtree:
            result = {k: v for k, v in result.items() if k != relative and not k.startswith(relative + "/")}
        if change.document is not None:
            result[relative] = consolidated_entry(change.document)
    return result


def refresh_consolidated(store: Store, changes: Sequence[Change], *, skip_root: bool = False) -> None:
    """Patch ``changes`` into every ancestor group that carries consolidated metadata.

    One batched fetch of the ancestors' ``zarr.json``, one write per ancestor
    that consolidates; nothing is written when none does. ``skip_root``
    leaves the store root alone (its caller rebuilt it already).
    """
    groups = sorted({a for change in changes for a in ancestors(change.path) if a or not skip_root})
    if not groups:
        return
    raws = plain_values(store.get_many_versioned([(_key(g), None) for g in groups]))
    for group, raw in zip(groups, raws):
        if raw is None:
            continue
        metadata = parse_node_metadata(raw, _key(group))
        if not isinstance(metadata, GroupMetadata) or metadata.consolidated is None:
            continue
        below = [c for c in changes if c.path.startswith(group + "/") or (not group and c.path)]
        patched = apply_changes(metadata.consolidated, group, below)
        store.set(_key(group), encode_metadata(metadata.with_consolidated(patched)))


def stale_hint(store: Store, path: str, used: dict[str, Any]) -> str | None:
    """A sentence explaining that the consolidated entry used for ``path`` differs from its ``zarr.json``.

    ``None`` when they agree (or the node's own document cannot be read).
    """
    try:
        raw = store.get(_key(path))
        own = None if raw is None else json.loads(raw)
    except Exception:  # the hint must never hide the original error
        return None
    if own is not None and consolidated_entry(own) == consolidated_entry(used):
        return None
    state = "is missing" if own is None else "differs from it"
    return (
        f"stale consolidated metadata: the consolidated entry for {path!r} was used, but {_key(path)} {state}; "
        "the node was changed without refreshing the consolidated root. Open with consolidated=False "
        "or run zarr3_backend.consolidate_metadata(store) to refresh it"
    )
