"""Rows reserved by deferred appends (``compute=False``), and not written yet.

Such an append grows the arrays when called, as ``engine="zarr"`` does, and
lists its rows in the group's `APPENDING_KEY` first; the last task of its
computation takes them off. Every commit sets `APPENDING_ATTRIBUTE` while the
list holds rows, so readers fetch it only then: ``engine="zarr3"`` warns and
``validate`` reports them (`describe()`).

>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/reservations")
>>> reserve(store, "", Reservation("a1", "time", 5, 7), stored=5)
>>> print(describe("", read_reservations(store, "")))
group '/': rows 5..6 of 'time', reserved by a to_zarr3(..., append_dim='time', compute=False) call, are not written yet and read as fill values; compute the delayed object it returned (a computation that failed or was never run leaves them so: write them with region={'time': slice(5, 7)}, then delete __zarr3_backend_appending.json)
>>> release(store, "", "a1")
[]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..core.metadata import GroupMetadata, decode_document, encode_metadata, metadata_key, parse_node_metadata
from ..errors import MetadataError
from ..nodes.consolidation import Change, consolidated_entry, refresh_consolidated
from ..store.base import Store
from .records import APPENDING_ATTRIBUTE as HINT
from .records import APPENDING_KEY as APPENDING


@dataclass(frozen=True)
class Reservation:
    """Rows ``start..stop-1`` along ``dim``, reserved by the deferred append ``id``."""

    id: str
    dim: str
    start: int
    stop: int


def appending_key(path: str) -> str:
    """The key of the reservation list of the group at ``path``."""
    return f"{path}/{APPENDING}" if path else APPENDING


def parse_reservations(raw: bytes | None, key: str = APPENDING) -> list[Reservation]:
    """The reservations in a stored list; `MetadataError` naming ``key`` if it is not one we write.

    >>> parse_reservations(b'{"appends": [{"id": "a", "dim": "t", "start": Infinity, "stop": 2}]}')
    Traceback (most recent call last):
    ...
    zarr3_backend.errors.MetadataError: __zarr3_backend_appending.json: entry 0: 'start' and 'stop' must be integers with 0 <= start <= stop, got inf and 2 (this list of rows reserved by deferred appends is not one to_zarr3 wrote; check that the rows it may name are written, then delete it)
    """
    if raw is None:
        return []
    try:
        document = decode_document(raw, key)
    except MetadataError as exc:
        raise _broken(key, str(exc).removeprefix(f"{key}: ")) from exc
    entries = document.get("appends") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:  # to_zarr3 deletes the list with its last entry
        raise _broken(key, f"expected an object with a non-empty list 'appends', got {str(document)[:200]!r}")
    reservations = []
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("id", "dim")):
            raise _broken(
                key,
                f"entry {number}: expected an object with strings 'id' and 'dim', got {str(entry)[:200]!r}",
            )
        start, stop = entry.get("start"), entry.get("stop")
        if type(start) is not int or type(stop) is not int or not 0 <= start <= stop:
            raise _broken(
                key,
                f"entry {number}: 'start' and 'stop' must be integers with 0 <= start <= stop, got {start!r} and {stop!r}",
            )
        reservations.append(Reservation(entry["id"], entry["dim"], start, stop))
    return reservations


def _broken(key: str, problem: str) -> MetadataError:
    return MetadataError(
        f"{key}: {problem} (this list of rows reserved by deferred appends is not one to_zarr3 wrote; "
        "check that the rows it may name are written, then delete it)"
    )


def read_reservations(store: Store, path: str) -> list[Reservation]:
    """The rows reserved and not yet written in the group at ``path``; `MetadataError` for a broken list."""
    key = appending_key(path)
    return parse_reservations(store.get(key), key)


def reserve(store: Store, path: str, reservation: Reservation, *, stored: int) -> None:
    """Add ``reservation``, dropping entries of its dimension at or beyond the ``stored`` length (never published).

    The caller holds the lock that serialises appends to the store.
    """
    kept = [r for r in read_reservations(store, path) if r.dim != reservation.dim or r.start < stored]
    _store(store, path, [*kept, reservation])


def release(store: Store, path: str, reservation_id: str) -> list[Reservation]:
    """Take the reservation ``reservation_id`` off (its rows are written); the list goes when it is empty.

    Returns the reservations left.
    """
    kept = [r for r in read_reservations(store, path) if r.id != reservation_id]
    if kept:
        _store(store, path, kept)
    else:
        store.delete(appending_key(path))
    return kept


def drop_hint(store: Store, path: str) -> None:
    """Remove `HINT` from the group at ``path`` and the consolidated metadata above it.

    The caller holds the lock that serialises metadata writes to the store.
    """
    raw = store.get(metadata_key(path))
    metadata = None if raw is None else parse_node_metadata(raw, metadata_key(path))
    if isinstance(metadata, GroupMetadata) and HINT in metadata.attributes:
        metadata = metadata.with_attributes({k: v for k, v in metadata.attributes.items() if k != HINT})
        store.set(metadata_key(path), encode_metadata(metadata))
        refresh_consolidated(store, [Change(path, consolidated_entry(metadata.to_json()))])


def hint_groups(
    documents: Mapping[str, dict[str, Any]], lists: Mapping[str, bytes | None]
) -> dict[str, dict[str, Any]]:
    """``documents`` with `HINT` set on each group of ``lists`` iff its list exists.

    ``lists`` maps group paths to their stored reservation list (``None``: none).
    """
    hinted = dict(documents)
    for path, raw in lists.items():
        attributes = {k: v for k, v in hinted[path].get("attributes", {}).items() if k != HINT}
        hinted[path] = {
            **hinted[path],
            "attributes": {**attributes, HINT: True} if raw is not None else attributes,
        }
    return hinted


def reserved_rows_warning(store: Store, path: str) -> str | None:
    """What opening the group at ``path`` warns about its reserved rows, or ``None``; a broken list is named, not raised."""
    try:
        reserved = read_reservations(store, path)
    except MetadataError as exc:
        return f"group {path or '/'!r} opened without reading its reserved rows: {exc}"
    return describe(path, reserved) if reserved else None


def describe(path: str, reservations: list[Reservation]) -> str:
    """What a reader is told about the rows of ``reservations``, and how to fill them."""
    rows = ", ".join(f"rows {r.start}..{r.stop - 1} of {r.dim!r}" for r in reservations)
    first = reservations[0]
    return (
        f"group {path or '/'!r}: {rows}, reserved by a to_zarr3(..., append_dim={first.dim!r}, compute=False) call, "
        "are not written yet and read as fill values; compute the delayed object it returned (a computation that "
        f"failed or was never run leaves them so: write them with region={{{first.dim!r}: slice({first.start}, "
        f"{first.stop})}}, then delete {appending_key(path)})"
    )


def _store(store: Store, path: str, reservations: list[Reservation]) -> None:
    store.set(appending_key(path), json.dumps({"appends": [asdict(r) for r in reservations]}).encode())
