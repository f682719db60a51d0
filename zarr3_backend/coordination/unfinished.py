"""Unfinished first writes: the mark ``to_zarr3`` keeps on the groups it writes until all their data is stored.

Every group document a first write (``mode="w"``/``"w-"``) publishes carries
`UNFINISHED_ATTRIBUTE` until its last data task removes it (`unmark()`).
While it does, opening the group raises `UnfinishedWriteError` (a template or
a group opened for writing only warns, `UnfinishedWriteWarning`) and
``validate`` reports it. Why, and what it costs: the architecture page,
"What a write keeps in the store".

>>> from zarr3_backend.core.metadata import GroupMetadata
>>> group = GroupMetadata(attributes={MARK_ATTRIBUTE: {"template": True, "fingerprint": "f0"}})
>>> unfinished_group(None, "child", group).template
True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.metadata import GroupMetadata, NodeMetadata, encode_metadata, metadata_key, parse_node_metadata
from ..errors import UnfinishedWriteError
from ..nodes.array import Array
from ..nodes.consolidation import Change, consolidated_entry, refresh_consolidated
from ..nodes.hierarchy import Group
from ..runtime.stacklevel import caller_stacklevel
from ..store.base import Store, plain_values
from .records import UNFINISHED_ATTRIBUTE as MARK_ATTRIBUTE


class UnfinishedWriteWarning(UserWarning):
    """The group opened is a ``to_zarr3(..., compute=False)`` template: parts of its data may not be written yet."""


@dataclass(frozen=True)
class Unfinished:
    """A marked group: its ``path``, whether it is a template, the fingerprint of the write that marked it."""

    store: Store | None
    path: str
    template: bool
    fingerprint: str

    @property
    def key(self) -> str:
        return metadata_key(self.path)

    def message(self) -> str:
        where = f"group {self.path or '/'!r}" + ("" if self.store is None else f" of {self.store!r}")
        if self.template:
            return (
                f"{where} is a template written by to_zarr3(..., compute=False) (attribute {MARK_ATTRIBUTE!r} in {self.key}): "
                "its data is written when the delayed object that call returned is computed, or by region writes "
                "(the first one removes the mark); until then, parts not written read as fill values"
            )
        return (
            f"{where} holds a to_zarr3 write that did not finish (attribute {MARK_ATTRIBUTE!r} in {self.key}): its metadata was "
            "published, but some of its data may be missing and would read as fill values. Re-run the same write "
            "(the same dataset, mode='w-') to complete it, or write with mode='w' to replace it (which deletes what "
            f"is there); to keep the data as it is, remove the mark: del zarr3_backend.open_group(store, {self.path!r}, "
            f"mode='r+').attrs[{MARK_ATTRIBUTE!r}]"
        )


def groups_covering(path: str) -> list[str]:
    """``path`` and every group above it, root first: the groups whose mark covers ``path``.

    >>> groups_covering("a/b")
    ['', 'a', 'a/b']
    """
    parts = path.split("/") if path else []
    return ["/".join(parts[:i]) for i in range(len(parts) + 1)]


def unfinished_mark(fingerprint: str, *, template: bool) -> dict[str, Any]:
    """The attribute value a first write marks its groups with (``template``: a ``compute=False`` write)."""
    return {"written_by": "zarr3_backend to_zarr3", "fingerprint": fingerprint, "template": template}


def unfinished_group(store: Store | None, path: str, metadata: NodeMetadata | None) -> Unfinished | None:
    """The mark of the group at ``path`` (``metadata``: its document), or ``None``; a malformed mark counts as unfinished."""
    if not isinstance(metadata, GroupMetadata) or MARK_ATTRIBUTE not in metadata.attributes:
        return None
    value = metadata.attributes[MARK_ATTRIBUTE]
    value = value if isinstance(value, dict) else {}
    fingerprint = value.get("fingerprint")
    return Unfinished(
        store, path, value.get("template") is True, fingerprint if isinstance(fingerprint, str) else ""
    )


def refuse_or_warn(unfinished: Unfinished | None, *, writable: bool = False) -> None:
    """Raise `UnfinishedWriteError` for an unfinished write; warn for a template.

    A group opened ``writable`` (to repair or remove the mark) only warns.
    """
    if unfinished is None:
        return
    if not unfinished.template and not writable:
        raise UnfinishedWriteError(unfinished.message())
    warnings.warn(
        unfinished.message(), UnfinishedWriteWarning, stacklevel=caller_stacklevel("zarr3_backend", "xarray")
    )  # above xr.open_dataset's frames


def check_opened(node: Array | Group) -> None:
    """`refuse_or_warn()` the mark of ``node`` if it is a marked group (arrays carry none)."""
    if isinstance(node, Group):
        refuse_or_warn(unfinished_group(node.store, node.path, node.metadata), writable=not node.read_only)


def unmark(store: Store, paths: Sequence[str]) -> None:
    """Remove the mark of the groups at ``paths``, and from the consolidated metadata of every group above them."""
    raws = plain_values(store.get_many_versioned([(metadata_key(path), None) for path in paths]))
    changes = []
    for path, raw in zip(paths, raws):
        metadata = None if raw is None else parse_node_metadata(raw, metadata_key(path))
        if isinstance(metadata, GroupMetadata) and MARK_ATTRIBUTE in metadata.attributes:
            metadata = metadata.with_attributes(
                {k: v for k, v in metadata.attributes.items() if k != MARK_ATTRIBUTE}
            )
            store.set(metadata_key(path), encode_metadata(metadata))
            changes.append(Change(path, consolidated_entry(metadata.to_json())))
    refresh_consolidated(store, changes)
