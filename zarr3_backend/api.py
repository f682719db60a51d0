"""Public entry points: open and create arrays and groups in any store.

``store`` is a local path, an fsspec URL (with ``storage_options``) or a
:class:`~zarr3_backend.store.base.Store`. Modes follow zarr/xarray: ``"r"``
read-only, ``"r+"`` read/write an existing node, ``"a"`` read/write (create
if missing), ``"w"`` create (overwrite), ``"w-"`` create (fail if present).
"""

from __future__ import annotations

from typing import Any, Literal, Unpack, get_args

from .array import Array
from .creation import ArrayDefinition, build_array_metadata
from .errors import ArgumentError, ArrayNotFoundError, GroupNotFoundError, NodeNotFoundError
from .hierarchy import Group, create_array_at, create_group_at, normalize_path, open_node
from .store import StoreLike, make_store
from .unfinished import check_opened
from .store.base import Store

Mode = Literal["r", "r+", "a", "w", "w-"]
"""How :func:`open` and friends open a node (see the module docstring)."""
WriteMode = Literal["w-", "w", "a", "a-", "r+"]
"""How ``to_zarr3`` writes a group: ``"w-"`` create, ``"w"`` overwrite, ``"a"`` add or append, ``"a-"`` append
without rewriting variables that lack the append dimension, ``"r+"`` write into existing arrays only."""

MODES: tuple[Mode, ...] = get_args(Mode)
WRITE_MODES: tuple[WriteMode, ...] = get_args(WriteMode)


def _store(store: StoreLike, storage_options: dict[str, Any] | None, mode: str) -> Store:
    return make_store(store, storage_options=storage_options, read_only=_parse_mode(mode) == "r")


def _parse_mode(mode: object) -> Mode:
    for known in MODES:
        if mode == known:
            return known
    raise ArgumentError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")


def open(store: StoreLike, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None) -> Array | Group:
    """Open the array or group at ``path``.

    A path without ``zarr.json`` opens as an implicit group only if arrays sit
    directly inside; otherwise :class:`NodeNotFoundError` (naming any Zarr
    stores found further down). A group that an unfinished ``to_zarr3`` first
    write marked raises :class:`~zarr3_backend.errors.UnfinishedWriteError`
    (a ``compute=False`` template, or a group opened for writing, warns; see
    :mod:`zarr3_backend.unfinished`).
    """
    node = open_node(_store(store, storage_options, mode), normalize_path(path), read_only=mode == "r", strict=True)
    check_opened(node)
    return node


def open_array(store: StoreLike, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None) -> Array:
    """Open an existing array.

    >>> import zarr3_backend
    >>> _ = zarr3_backend.create_array("memory://doc/open", shape=(3,), dtype="uint8")
    >>> zarr3_backend.open_array("memory://doc/open").shape
    (3,)
    """
    node = open(store, path, mode=mode, storage_options=storage_options)
    if not isinstance(node, Array):
        raise ArrayNotFoundError(f"{node.name!r} in {node.store!r} is a group, not an array")
    return node


def open_group(store: StoreLike, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None) -> Group:
    """Open a group (``mode="a"``/``"w"``/``"w-"`` create it when missing)."""
    if _parse_mode(mode) in ("w", "w-"):
        return create_group(store, path, overwrite=mode == "w", storage_options=storage_options)
    target = _store(store, storage_options, mode)
    path = normalize_path(path)
    try:
        node = open_node(target, path, read_only=mode == "r", strict=True)
    except NodeNotFoundError:
        if mode != "a":
            raise
        return create_group(target, path)
    if not isinstance(node, Group):
        raise GroupNotFoundError(f"{node.name!r} in {target!r} is an array, not a group")
    check_opened(node)
    return node


def create_group(
    store: StoreLike, path: str = "", *, attributes: dict[str, Any] | None = None, overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Create a group (and any missing ancestor groups); consolidated ancestors are refreshed."""
    return create_group_at(_store(store, storage_options, "w"), normalize_path(path), attributes, overwrite)


def create_array(
    store: StoreLike, path: str = "", *, overwrite: bool = False, storage_options: dict[str, Any] | None = None,
    **options: Unpack[ArrayDefinition],
) -> Array:
    """Create an array; automatic codec parameters are resolved and recorded.

    Takes ``shape`` and ``dtype`` and the keywords of
    :class:`~zarr3_backend.creation.ArrayOptions` (defaults listed there).
    ``chunks`` is the inner chunk shape when ``shards`` is given. ``codecs``,
    when given, is the complete outer codec list and overrides ``filters``,
    ``serializer``, ``compressors`` and ``shards``. Ancestor groups carrying
    consolidated metadata are refreshed to include the new array. By default
    every chunk (every inner chunk of a shard) is zstd-compressed and then
    CRC32C-checksummed, so a changed byte raises
    :class:`~zarr3_backend.errors.ChecksumError` on read; pass ``compressors``
    without ``crc32c`` to turn the checksum off.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/create", shape=(100, 100), dtype="float32",
    ...                                chunks=(10, 10), shards=(50, 50))
    >>> a.chunks, a.shards
    ((10, 10), (50, 50))
    """
    target = _store(store, storage_options, "w")
    path = normalize_path(path)
    return create_array_at(target, path, build_array_metadata(path, **options), overwrite)
