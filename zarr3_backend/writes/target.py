"""Where a write lands: refuse what would hide data, keep first writes marked until they finish, list what is stored.

`check_target` (one batched fetch) refuses ``mode="w-"`` into a non-empty
location (`NodeExistsError`), v3 metadata into or above a v2 group, and any
write but the same one (its ``fingerprint``) or ``mode="w"`` into a group
marked unfinished (`UnfinishedWriteError`). Its `CheckedTarget` publishes a
first write (`publish_first_write()`, after a dry run, marked unfinished
until its `ClearUnfinishedMarks` step) or takes over a template
(`take_over_templates()`). `existing_arrays` lists the arrays a later write
finds in its group.

>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/target")
>>> store.set("notes.txt", b"mine")
>>> check_target(store, "", "w-", "f0", compute=True)
Traceback (most recent call last):
...
zarr3_backend.errors.NodeExistsError: to_zarr3: FsspecStore('memory:///doc/target') is not empty (it holds 'notes.txt', but no zarr.json); mode='w-' (the default) writes only into an empty location, as engine='zarr' does. Write somewhere else (or into a new group: group='name'), or pass mode='w' to delete everything there and write in its place
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..api import WriteMode
from ..coordination.records import UNFINISHED_ATTRIBUTE
from ..coordination.unfinished import groups_covering, unfinished_group, unfinished_mark, unmark
from ..core.metadata import NodeMetadata, parse_node_metadata
from ..errors import (
    GroupNotFoundError,
    NodeExistsError,
    ReadOnlyError,
    UnfinishedWriteError,
    WriteError,
    Zarr3Error,
)
from ..nodes.array import Array
from ..nodes.hierarchy import Group, open_node
from ..store.base import Store, plain_values
from .dry_run import DryRunStore
from .publish import Documents, publish
from .tasks import WriteStep

V2_KEYS = (".zgroup", ".zarray", ".zmetadata")
PROBES = ("zarr.json", *V2_KEYS)


@dataclass(frozen=True)
class ClearUnfinishedMarks(WriteStep):
    """The `WriteStep` ending a first write: all its data is stored, so its groups are no longer unfinished."""

    store: Store
    groups: tuple[str, ...]

    def run(self) -> None:
        """Remove the unfinished marks of ``groups``."""
        unmark(self.store, self.groups)


@dataclass(frozen=True)
class CheckedTarget:
    """What `check_target()` decided: a first write publishes its documents, a later one takes templates over."""

    store: Store
    path: str
    mode: WriteMode  # "w" for a "w-" that completes its own unfinished run
    fingerprint: str = ""
    template: bool = False
    taken_over: tuple[str, ...] = ()  # the template groups whose mark this region write or append removes
    replaces: bool = False  # mode="w" over a group holding something, which it deletes before writing

    @property
    def first_write(self) -> bool:
        """Whether this is a first write (``mode="w"``, ``"w-"``): its metadata goes before its data."""
        return self.mode in ("w", "w-")

    def publish_first_write(self, documents: Documents, consolidate: bool) -> ClearUnfinishedMarks:
        """Publish a `first_write`'s ``documents``, every group marked unfinished; the returned step ends it."""
        prefix = f"{self.path}/" if self.path else ""
        marked = {
            p: _marked(d, unfinished_mark(self.fingerprint, template=self.template))
            for p, d in documents.items()
            if (p == self.path or p.startswith(prefix))
            and d.get("node_type") == "group"
            and not self.store.transactional  # a transaction is never seen unfinished
        }
        staged = DryRunStore(self.store, prefix if self.mode == "w" else None)
        publish(staged, {**documents, **marked}, consolidate)  # every read and check; nothing is written yet
        inside = [key for key in staged.writes if key.startswith(prefix)]
        staged.replay([key for key in staged.writes if not key.startswith(prefix)])
        if self.mode == "w":
            self.store.delete_prefix(prefix)
        staged.replay(inside)
        return ClearUnfinishedMarks(self.store, tuple(sorted(marked)))

    def take_over_templates(self) -> None:
        """A region write or append: unmark the templates it fills (first writes with ``compute=False``)."""
        if self.taken_over:
            unmark(self.store, self.taken_over)


def _marked(document: dict[str, object], mark: dict[str, object]) -> dict[str, object]:
    attributes = document.get("attributes")
    return {
        **document,
        "attributes": {**(attributes if isinstance(attributes, dict) else {}), UNFINISHED_ATTRIBUTE: mark},
    }


def check_target(
    store: Store, path: str, mode: WriteMode, fingerprint: str, *, compute: bool
) -> CheckedTarget:
    """Refuse a write that would hide what the store holds, or build on an unfinished first write (see above).

    ``fingerprint`` identifies the request (its groups, variables, shapes and
    types): a ``mode="w-"`` with the fingerprint of an unfinished write
    completes that write.
    """
    if store.read_only:
        raise ReadOnlyError(f"to_zarr3: {store!r} is read-only")
    groups = groups_covering(path)
    raws = iter(
        plain_values(store.get_many_versioned([(_key(g, name), None) for g in groups for name in PROBES]))
    )
    found = {g: {name: raw for name in PROBES if (raw := next(raws)) is not None} for g in groups}
    for group in groups:
        if found[group] and "zarr.json" not in found[group] and not (group == path and mode in ("w", "w-")):
            raise WriteError(_v2_message(store, group, path, next(iter(found[group]))))
    marks = [m for g in groups if (m := unfinished_group(store, g, _parsed(g, found[g].get("zarr.json"))))]
    unfinished = next((m for m in marks if not m.template), marks[0] if marks else None)
    if mode not in ("w", "w-"):
        if unfinished is not None and not unfinished.template:
            raise UnfinishedWriteError(f"to_zarr3 (mode={mode!r}): {unfinished.message()}")
        return CheckedTarget(store, path, mode, taken_over=tuple(m.path for m in marks))
    if mode == "w-" and unfinished is not None:
        if unfinished.path != path or unfinished.fingerprint != fingerprint:
            raise UnfinishedWriteError(
                f"to_zarr3 (mode='w-'), a different write than the unfinished one: {unfinished.message()}"
            )
        mode = "w"  # the same write again: it replaces what its unfinished run left
    elif mode == "w-":
        _refuse_occupied(store, path, found[path])
    replaces = mode == "w" and (bool(found[path]) or _first_key(store, path) is not None)
    return CheckedTarget(store, path, mode, fingerprint, template=not compute, replaces=replaces)


def _parsed(path: str, raw: bytes | None) -> NodeMetadata | None:
    """The document at ``path``, or ``None`` if missing or invalid (a ``mode="w"`` replaces an invalid one)."""
    try:
        return None if raw is None else parse_node_metadata(raw, _key(path, "zarr.json"))
    except Zarr3Error:
        return None


def existing_arrays(store: Store, path: str, mode: WriteMode) -> dict[str, Array]:
    """The arrays of the group at ``path`` (none for ``mode="w"``/``"w-"``), read from their own ``zarr.json``.

    A missing group has none, except for ``mode="r+"``, which raises
    ``FileNotFoundError``.

    >>> import zarr3_backend
    >>> _ = zarr3_backend.create_group("memory://doc/existing_arrays")
    >>> existing_arrays(zarr3_backend.store.make_store("memory://doc/existing_arrays"), "", "a")
    {}
    """
    if mode in ("w", "w-"):
        return {}
    try:
        group = open_node(store, path, read_only=False, strict=True)  # unfinished writes: check_target's
    except FileNotFoundError:
        if mode == "r+":
            raise
        return {}
    if not isinstance(group, Group):
        if mode == "r+":
            raise GroupNotFoundError(f"{path or '/'!r} in {store!r} is an array, not a group")
        return {}
    fresh = Group(
        store, path, group.metadata.with_consolidated(None)
    )  # never trust stale consolidated shapes
    return fresh.arrays()


def _refuse_occupied(store: Store, path: str, found: dict[str, bytes]) -> None:
    where = f"group {path!r} of {store!r}" if path else repr(store)
    if "zarr.json" in found:
        raise NodeExistsError(
            f"to_zarr3: a Zarr v3 {_node_type(found['zarr.json'])} already exists at {where}; mode='w-' (the default) writes "
            "only into an empty location. Pass mode='w' to replace it (this deletes it and everything below it), "
            "or mode='a' to add variables or append"
        )
    if found:
        raise NodeExistsError(
            f"to_zarr3: {where} is a Zarr v2 store ({_key(path, next(iter(found)))} found, no zarr.json); mode='w-' (the default) "
            "writes only into an empty location. Write somewhere else, or pass mode='w' to delete the Zarr v2 store "
            "and write a Zarr v3 one in its place"
        )
    example = _first_key(store, path)
    if example is not None:
        raise NodeExistsError(
            f"to_zarr3: {where} is not empty (it holds {example!r}, but no zarr.json); mode='w-' (the default) writes "
            "only into an empty location, as engine='zarr' does. Write somewhere else (or into a new group: "
            "group='name'), or pass mode='w' to delete everything there and write in its place"
        )


def _first_key(store: Store, path: str) -> str | None:
    """A key below the group at ``path``, or ``None`` if it holds none."""
    prefix = f"{path}/" if path else ""
    keys, prefixes = store.list_dir(prefix)
    return keys[0] if keys else next(iter(store.list_prefix(prefix)), None) if prefixes else None


def _v2_message(store: Store, group: str, path: str, key: str) -> str:
    where = f"group {group!r} of {store!r}" if group else repr(store)
    above = "" if group == path else f" (above the group {path!r} written)"
    return (
        f"to_zarr3: {where}{above} is a Zarr v2 store ({_key(group, key)} found, no zarr.json); Zarr v3 metadata "
        "there would hide its data from readers. Write to another location, write this store with engine='zarr' "
        "(ds.to_zarr(...)), or convert it to Zarr v3 first ('zarr3 convert SRC DST')"
        + (" (mode='w' replaces it, deleting the Zarr v2 data)" if group == path else "")
    )


def _node_type(raw: bytes) -> str:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return "node"
    kind = document.get("node_type") if isinstance(document, dict) else None
    return kind if kind in ("array", "group") else "node"


def _key(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name
