"""Open the group xarray asked for, with errors that say what is there instead.

Covers the ways opening goes wrong before any variable is built: no
``zarr.json``, a Zarr v2 store, or an array where a group was expected.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from xarray.backends.common import T_PathFileOrDataStore

from ..coordination.pending import parse_pending
from ..coordination.records import APPENDING_ATTRIBUTE, PENDING_KEY
from ..coordination.reservations import reserved_rows_warning
from ..coordination.unfinished import UnfinishedWriteWarning, check_opened
from ..core.metadata.v2 import is_v2
from ..errors import GroupNotFoundError, MetadataError, NodeNotFoundError, UnknownExtensionError
from ..nodes.array import Array
from ..nodes.hierarchy import Group
from ..nodes.opening import open_node_consolidated, open_node_listed
from ..nodes.paths import normalize_path
from ..nodes.reads import is_remote
from ..runtime import submit_io
from ..runtime.stacklevel import caller_stacklevel
from ..store import StoreLike, make_store
from ..store.base import Store, plain_values

T = TypeVar("T")
V2_KEYS = (".zgroup", ".zarray", ".zmetadata")
ROOT_DOCUMENTS = {
    "zarr.json": 3,
    ".zgroup": 2,
    ".zarray": 2,
}  # a node's metadata key, and the zarr_format it holds
URL = re.compile(
    r"[a-zA-Z][a-zA-Z0-9]*(://|::)"
)  # "s3://...", "memory://...", fsspec chains "simplecache::s3://..."

#: What ``engine="zarr3"`` is given: anything xarray passes a backend (file objects and buffers are
#: refused when opened) or a `StoreLike`.
Location: TypeAlias = T_PathFileOrDataStore | StoreLike


@dataclass(frozen=True)
class ReadOptions:
    """The ``engine="zarr"`` keywords that mean something for us, parsed."""

    consolidated: bool | None = None
    fill_value_as_mask: bool | None = None
    zarr_format: int | None = None

    @classmethod
    def parse(
        cls, consolidated: bool | None, zarr_format: int | None, use_zarr_fill_value_as_mask: bool | None
    ) -> ReadOptions:
        """Check ``zarr_format`` (``None``, ``2`` or ``3``) and keep the rest."""
        if zarr_format not in (None, 2, 3):
            raise MetadataError(f"zarr_format={zarr_format!r}: expected 2, 3 or None (either format)")
        mask = None if use_zarr_fill_value_as_mask is None else bool(use_zarr_fill_value_as_mask)
        return cls(consolidated, mask, zarr_format)

    def mask_for(self, root: Group) -> bool:
        """Whether fill values mask for the store of ``root``: as asked, else (as ``engine="zarr"``) for Zarr v2 only.

        Raises `MetadataError` if the store is not of the ``zarr_format`` asked for.
        """
        found = 2 if is_v2(root.metadata) else 3
        if self.zarr_format not in (None, found):
            raise MetadataError(
                f"zarr_format={self.zarr_format}: {root.store!r} holds a Zarr v{found} hierarchy"
            )
        return found == 2 if self.fill_value_as_mask is None else self.fill_value_as_mask


def normalize_location(location: str | os.PathLike[str] | T) -> str | T:
    """A store location as xarray's backends normalise it: local paths absolute, everything else as given.

    ``os.PathLike`` becomes ``str``; a string that is not a URL (``protocol://``)
    or fsspec chain (``protocol::``) is expanded (``~``) and made absolute;
    URLs and non-path objects (stores, mappings) are returned unchanged.

    >>> normalize_location("s3://bucket/data.zarr")
    's3://bucket/data.zarr'
    >>> normalize_location("~/data.zarr") == os.path.expanduser("~/data.zarr")
    True
    """
    if isinstance(location, os.PathLike):
        location = os.fspath(location)
    if isinstance(location, str) and not URL.match(location):
        return os.path.abspath(os.path.expanduser(location))
    return location


def open_root_group(
    filename_or_obj: Location,
    group: str | None = None,
    storage_options: dict[str, Any] | None = None,
    consolidated: bool | None = None,
) -> Group:
    """The group at ``group`` (default: the root) of a path, URL or `Store`, opened read-only.

    ``consolidated=False`` ignores consolidated metadata (members are read
    from their own ``zarr.json``). The group is listed while its document is
    fetched when ``consolidated=False``, and with ``None`` on object storage,
    where a round costs more than a listing that consolidated metadata makes
    unneeded. Otherwise (``True``, or ``None`` on local stores) only the
    document is fetched: with consolidated metadata that is the whole open;
    without, the group is listed when its members are asked for.
    A sub-group is described by the root's consolidated metadata when the
    root has it (as for the root itself), so it reads the same snapshot.
    A group an unfinished ``to_zarr3`` first write marked raises
    `UnfinishedWriteError` (a template warns).
    A store whose metadata publication was interrupted (a pending-write
    record) raises unless the group is read from consolidated metadata, and
    rows reserved by a deferred append not computed yet warn
    (`zarr3_backend.coordination.reservations`).

    >>> import zarr3_backend
    >>> _ = zarr3_backend.create_group("memory://doc/root_group")
    >>> open_root_group("memory://doc/root_group").path
    ''
    """
    store = make_store(filename_or_obj, storage_options=storage_options, read_only=True)
    path = normalize_path(group)
    where = f"{_describe(filename_or_obj)}" + (f" (group {path!r})" if path else "")
    listed = consolidated is False or (consolidated is None and is_remote(store))
    pending = (
        submit_io(store.get, PENDING_KEY) if listed else None
    )  # in the same round as the document and listing
    try:
        if listed:
            node = open_node_listed(
                store, path, read_only=True, strict=True, consolidated=consolidated is not False
            )
        else:
            node = open_node_consolidated(store, path, read_only=True, strict=True)
    except NodeNotFoundError as exc:
        raise _not_found(store, path, where, getattr(exc, "stores_below", [])) from exc
    except UnknownExtensionError as exc:
        raise UnknownExtensionError(f"cannot open {where} with engine='zarr3': {exc}") from exc
    if isinstance(node, Array):
        raise GroupNotFoundError(
            f"{where} is a Zarr array, not a group; engine='zarr3' opens groups as Datasets. "
            "Open the group that contains it (group=...), or read the array with zarr3_backend.open_array()"
        )
    check_opened(node)
    if node.metadata.consolidated is None:  # its members' own documents may be half published
        record = pending.result() if pending is not None else store.get(PENDING_KEY)
        if record is not None:
            _check_pending(record, where)
    elif pending is not None:
        pending.exception()  # unneeded: waited for (no request outlives the open), its outcome ignored
    if APPENDING_ATTRIBUTE in node.metadata.attributes and (reserved := reserved_rows_warning(store, path)):
        warnings.warn(
            reserved,
            UnfinishedWriteWarning,
            stacklevel=caller_stacklevel("zarr3_backend", "xarray"),
        )
    return node


def _check_pending(record: bytes, where: str) -> None:
    """Refuse a store with a pending-write record to finish; a broken record (never finishable) only warns."""
    try:
        parse_pending(record)
    except MetadataError as exc:
        warnings.warn(
            f"{where} opened although it holds a broken pending-write record (its arrays' zarr.json may be "
            f"half published): {exc}",
            UnfinishedWriteWarning,
            stacklevel=caller_stacklevel("zarr3_backend", "xarray"),
        )
        return
    raise pending_error(f"cannot open {where} with engine='zarr3'")


def pending_error(where: str) -> MetadataError:
    """The error of a reader that found the pending-write record (see `finish_pending_write()`)."""
    return MetadataError(
        f"{where}: a to_zarr3 call was interrupted while publishing its metadata ({PENDING_KEY} is in the store), "
        "so the arrays' own zarr.json may disagree; finish it with zarr3_backend.finish_pending_write(store) "
        "(or any to_zarr3 call on the store), then open it again"
    )


def _not_found(store: Store, path: str, where: str, below: list[str]) -> Exception:
    prefix = f"{path}/" if path else ""
    found = [
        key
        for key, raw in zip(
            V2_KEYS, plain_values(store.get_many_versioned([(prefix + k, None) for k in V2_KEYS]))
        )
        if raw is not None
    ]
    if found:
        return MetadataError(
            f"{where}: {found[0]} found, but neither zarr.json nor a readable Zarr v2 .zgroup"
        )
    hint = f" Zarr stores found further down: {', '.join(below)}." if below else ""
    return NodeNotFoundError(
        f"no Zarr group at {where}: {prefix}zarr.json not found (nor a Zarr v2 {prefix}.zgroup).{hint} "
        "Check the path (or URL and storage_options), or pass group='...' to open a group further down"
    )


def _describe(obj: object) -> str:
    return repr(os.fspath(obj)) if isinstance(obj, str | os.PathLike) else repr(obj)


def holds_zarr_metadata(filename_or_obj: object) -> bool:
    """Whether the root of a path, URL or store holds a node's metadata; never raises.

    That is a ``zarr.json`` of ``zarr_format`` 3, or a Zarr v2 ``.zgroup`` or
    ``.zarray`` of ``zarr_format`` 2 (all three fetched in one batch). xarray
    asks its own ``engine="zarr"`` first, which claims any path ending in
    ``.zarr``; the other stores of either format are ``engine="zarr3"``'s.
    """
    try:
        raws = plain_values(
            make_store(filename_or_obj, read_only=True).get_many_versioned(
                [(key, None) for key in ROOT_DOCUMENTS]
            )
        )
        return any(
            raw is not None and _zarr_format(raw) == fmt for raw, fmt in zip(raws, ROOT_DOCUMENTS.values())
        )
    except Exception:
        return False


def _zarr_format(raw: bytes) -> object:
    document = json.loads(raw)
    return document.get("zarr_format") if isinstance(document, dict) else None
