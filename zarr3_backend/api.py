"""Public entry points: open and create arrays and groups in any store.

``store`` is a local path, an fsspec URL (with ``storage_options``) or a
`Store`. Modes follow zarr/xarray: ``"r"``
read-only, ``"r+"`` read/write an existing node, ``"a"`` read/write (create
if missing), ``"w"`` create (overwrite), ``"w-"`` create (fail if present).
"""

from __future__ import annotations

from typing import Any, Literal, Unpack, get_args

from .coordination.unfinished import check_opened
from .errors import ArgumentError, ArrayNotFoundError, GroupNotFoundError, NodeNotFoundError
from .nodes.array import Array
from .nodes.creation import ArrayDefinition, build_array_metadata
from .nodes.hierarchy import Group, create_group_at, open_node
from .nodes.paths import normalize_path
from .nodes.placement import create_array_at
from .nodes.writes import ArraySource
from .store import StoreLike, make_store
from .store.base import Store

Mode = Literal["r", "r+", "a", "w", "w-"]
"""How `open()` and friends open a node (see the module docstring)."""
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


def open(
    store: StoreLike, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None
) -> Array | Group:
    """Open the array or group at ``path``.

    A path without ``zarr.json`` opens as an implicit group only if arrays sit
    directly inside it.

    Parameters
    ----------
    store : str, os.PathLike, Store or a store you already have
        A local path, an fsspec URL, a zarr3_backend ``Store``, a zarr-python
        store or an fsspec mapper (see `make_store()`).
    path : str, default ""
        The node's path inside the store (``""``: the root).
    mode : {"r", "r+", "a", "w", "w-"}, default "r"
        ``"r"`` read-only; the others open for writing (see `open_group()`
        for the ones that create).
    storage_options : dict, optional
        Options for an fsspec URL's file system (credentials, endpoint).

    Returns
    -------
    Array or Group

    Raises
    ------
    NodeNotFoundError
        Nothing is at ``path`` (the message names any Zarr stores found further down).
    MetadataError
        Its ``zarr.json`` is invalid (the message names the key and field).
    UnfinishedWriteError
        The group was marked by a ``to_zarr3`` first write that did not finish
        (a ``compute=False`` template, or a group opened for writing, only warns).

    Examples
    --------
    >>> import zarr3_backend
    >>> _ = zarr3_backend.create_array("memory://doc/open_any", "x", shape=(2,), dtype="int8")
    >>> zarr3_backend.open("memory://doc/open_any", "x").shape
    (2,)
    """
    node = open_node(
        _store(store, storage_options, mode), normalize_path(path), read_only=mode == "r", strict=True
    )
    check_opened(node)
    return node


def open_array(
    store: StoreLike, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None
) -> Array:
    """Open an existing array.

    Parameters
    ----------
    store : str, os.PathLike, Store or a store you already have
        A local path, an fsspec URL, a zarr3_backend ``Store``, a zarr-python
        store or an fsspec mapper (see `make_store()`).
    path : str, default ""
        The node's path inside the store (``""``: the root).
    mode : {"r", "r+", "a", "w", "w-"}, default "r"
        ``"r"`` read-only, anything else read and write.
    storage_options : dict, optional
        Options for an fsspec URL's file system (credentials, endpoint).

    Returns
    -------
    Array

    Raises
    ------
    ArrayNotFoundError
        ``path`` is a group.
    NodeNotFoundError
        Nothing is at ``path``.

    Examples
    --------
    >>> import zarr3_backend
    >>> _ = zarr3_backend.create_array("memory://doc/open", shape=(3,), dtype="uint8")
    >>> zarr3_backend.open_array("memory://doc/open").shape
    (3,)
    """
    node = open(store, path, mode=mode, storage_options=storage_options)
    if not isinstance(node, Array):
        raise ArrayNotFoundError(f"{node.name!r} in {node.store!r} is a group, not an array")
    return node


def open_group(
    store: StoreLike, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None
) -> Group:
    """Open a group, or create it.

    Parameters
    ----------
    store : str, os.PathLike, Store or a store you already have
        A local path, an fsspec URL, a zarr3_backend ``Store``, a zarr-python
        store or an fsspec mapper (see `make_store()`).
    path : str, default ""
        The node's path inside the store (``""``: the root).
    mode : {"r", "r+", "a", "w", "w-"}, default "r"
        ``"r"`` read-only and ``"r+"`` read/write an existing group; ``"a"``
        also creates it when missing; ``"w"`` creates it, deleting what is
        there; ``"w-"`` creates it and fails if something is there.
    storage_options : dict, optional
        Options for an fsspec URL's file system (credentials, endpoint).

    Returns
    -------
    Group

    Raises
    ------
    GroupNotFoundError
        ``path`` is an array.
    NodeNotFoundError
        Nothing is at ``path`` (modes ``"r"`` and ``"r+"``).
    UnfinishedWriteError
        The group was marked by a ``to_zarr3`` first write that did not finish.

    Examples
    --------
    >>> import zarr3_backend
    >>> g = zarr3_backend.open_group("memory://doc/open_group", mode="a")
    >>> _ = g.create_array("t", shape=(4,), dtype="float32")
    >>> "t" in zarr3_backend.open_group("memory://doc/open_group")
    True
    """
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
    store: StoreLike,
    path: str = "",
    *,
    attributes: dict[str, Any] | None = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Create a group, and any missing ancestor groups.

    Ancestor groups that carry consolidated metadata are refreshed to include it.

    Parameters
    ----------
    store : str, os.PathLike, Store or a store you already have
        A local path, an fsspec URL, a zarr3_backend ``Store``, a zarr-python
        store or an fsspec mapper (see `make_store()`).
    path : str, default ""
        The node's path inside the store (``""``: the root).
    attributes : dict, optional
        The group's attributes (JSON values).
    overwrite : bool, default False
        Replace whatever is at ``path`` (it is deleted, also when its metadata
        is damaged); otherwise a node there raises.
    storage_options : dict, optional
        Options for an fsspec URL's file system (credentials, endpoint).

    Returns
    -------
    Group

    Raises
    ------
    NodeExistsError
        A node is at ``path`` and ``overwrite`` is false.

    Examples
    --------
    >>> import zarr3_backend
    >>> zarr3_backend.create_group("memory://doc/create_group", "a/b", attributes={"k": 1}).attrs["k"]
    1
    """
    return create_group_at(_store(store, storage_options, "w"), normalize_path(path), attributes, overwrite)


def create_array(
    store: StoreLike,
    path: str = "",
    *,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
    **options: Unpack[ArrayDefinition],
) -> Array:
    """Create an array; automatic codec parameters are resolved and recorded in its ``zarr.json``.

    Ancestor groups carrying consolidated metadata are refreshed to include
    the new array. The keywords after ``storage_options`` are those of
    `ArrayOptions`.

    Parameters
    ----------
    store : str, os.PathLike, Store or a store you already have
        A local path, an fsspec URL, a zarr3_backend ``Store``, a zarr-python
        store or an fsspec mapper (see `make_store()`).
    path : str, default ""
        The node's path inside the store (``""``: the root).
    overwrite : bool, default False
        Replace whatever is at ``path``; otherwise a node there raises.
    storage_options : dict, optional
        Options for an fsspec URL's file system (credentials, endpoint).
    **options
        ``shape`` (an int or a sequence of ints) and ``dtype`` (a Zarr v3 data
        type name such as ``"float32"`` or ``"string"``, or anything numpy
        accepts), then, all optional:

        - ``chunks``: the chunk shape; the inner chunk shape when ``shards`` is
          given. Default: the shape halved along its largest dimension until
          a chunk holds about 4 MiB.
        - ``shards``: the shard shape, a whole number of chunks per
          dimension. Default: no sharding.
        - ``fill_value``: default the data type's (zero, ``False`` or empty),
          recorded in ``zarr.json``.
        - ``compressors``, ``filters``, ``serializer``: JSON objects, short
          names, numcodecs or zarr-python codec objects. Default (``"auto"``):
          zstd level 0 then ``crc32c``, so every chunk (every inner chunk of
          a shard) is checksummed and a changed byte raises
          `ChecksumError`; pass ``compressors``
          without ``"crc32c"`` to turn the checksum off.
        - ``codecs``: the complete outer codec chain (for example nested
          sharding); overrides the three above and ``shards``.
        - ``index_codecs`` (default ``bytes`` then ``crc32c``) and
          ``index_location`` (``"end"``, the default, or ``"start"``): the
          shard index.
        - ``chunk_key_encoding``: ``"default"`` (keys ``c/0/0``) or ``"v2"``
          (keys ``0.0``), or their JSON objects.
        - ``dimension_names``: one name (or ``None``) per dimension.
        - ``attributes``: the array's attributes (JSON values).

    Returns
    -------
    Array

    Raises
    ------
    MetadataError
        An argument does not make a valid array (named in the message).
    NodeExistsError
        A node is at ``path`` and ``overwrite`` is false.

    Examples
    --------
    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/create", shape=(100, 100), dtype="float32",
    ...                                chunks=(10, 10), shards=(50, 50))
    >>> a.chunks, a.shards
    ((10, 10), (50, 50))
    """
    target = _store(store, storage_options, "w")
    path = normalize_path(path)
    return create_array_at(target, path, build_array_metadata(path, **options), overwrite)


def copy_array(source: ArraySource, destination: Array, *, write_empty_chunks: bool = False) -> None:
    """Copy every element of ``source`` into ``destination``, one of ``destination``'s stored chunks at a time.

    ``source`` is a zarr3_backend `Array` or anything with ``shape``,
    ``dtype`` and reads of boxes (a zarr-python or dask array; see
    `zarr3_backend.nodes.writes.ArraySource`); the shapes must be equal and
    values are cast to ``destination``'s data type. Each stored chunk (shard)
    of ``destination`` is written once, with one atomic ``set``, from the box
    of ``source`` it covers, so peak memory is about a shard per CPU thread,
    not the array. Chunks that come out all fill value are deleted (not
    stored) unless ``write_empty_chunks``. The same as
    ``destination[...] = source``.

    Raises
    ------
    ArgumentError
        The shapes differ.
    ReadOnlyError
        ``destination`` is open read-only.

    Examples
    --------
    >>> import zarr3_backend
    >>> src = zarr3_backend.create_array("memory://doc/copy_array/src", shape=(6,), dtype="int16", chunks=(2,), shards=(4,))
    >>> src[:] = range(6)
    >>> dst = zarr3_backend.create_array("memory://doc/copy_array/dst", shape=(6,), dtype="int32", chunks=(3,))
    >>> zarr3_backend.copy_array(src, dst)
    >>> dst[:].tolist()
    [0, 1, 2, 3, 4, 5]
    """
    destination.set(Ellipsis, source, write_empty_chunks=write_empty_chunks)
