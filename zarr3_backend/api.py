"""Public entry points: open and create arrays and groups in any store.

``store`` is a local path, an fsspec URL (with ``storage_options``) or a
:class:`~zarr3_backend.store.base.Store`. Modes follow zarr/xarray: ``"r"``
read-only, ``"r+"`` read/write an existing node, ``"a"`` read/write (create
if missing), ``"w"`` create (overwrite), ``"w-"`` create (fail if present).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .array import Array, metadata_key
from .chunk_grid import RegularChunkGrid
from .chunk_keys import parse_chunk_key_encoding
from .codecs.base import ChunkSpec, Codec
from .codecs.registry import codec_from_json
from .codecs.sharding import ShardingCodec
from .consolidation import Change, refresh_consolidated
from .dtypes import DataType, data_type_from_numpy
from .errors import ArgumentError, ArrayNotFoundError, GroupNotFoundError, MetadataError, NodeExistsError, NodeNotFoundError
from .hierarchy import Group, ensure_parents, normalize_path, open_node, read_node_metadata
from .metadata import ArrayMetadata, GroupMetadata, encode_metadata
from .pipeline import CodecChain
from .store import make_store
from .store.base import Store

Mode = Literal["r", "r+", "a", "w", "w-"]
CodecLike = Codec | dict[str, Any] | str
DEFAULT_INDEX_CODECS: list[CodecLike] = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
TARGET_CHUNK_BYTES = 4 << 20


MODES = ("r", "r+", "a", "w", "w-")


def _store(store: Any, storage_options: dict[str, Any] | None, mode: str) -> Store:
    return make_store(store, storage_options=storage_options, read_only=_parse_mode(mode) == "r")


def _parse_mode(mode: Any) -> Mode:
    if mode not in MODES:
        raise ArgumentError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    return mode  # type: ignore[no-any-return]


def open(store: Any, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None) -> Array | Group:
    """Open the array or group at ``path``.

    A path without ``zarr.json`` opens as an implicit group only if arrays sit
    directly inside; otherwise :class:`NodeNotFoundError` (naming any Zarr
    stores found further down).
    """
    return open_node(_store(store, storage_options, mode), normalize_path(path), read_only=mode == "r", strict=True)


def open_array(store: Any, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None) -> Array:
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


def open_group(store: Any, path: str = "", *, mode: Mode = "r", storage_options: dict[str, Any] | None = None) -> Group:
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
    return node


def create_group(
    store: Any, path: str = "", *, attributes: dict[str, Any] | None = None, overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Create a group (and any missing ancestor groups); consolidated ancestors are refreshed."""
    target = _store(store, storage_options, "w")
    path = normalize_path(path)
    created = _prepare_path(target, path, overwrite)
    metadata = GroupMetadata(attributes=dict(attributes or {}))
    target.set(metadata_key(path), encode_metadata(metadata))
    refresh_consolidated(target, [*created, Change(path, metadata.to_json(), replaces_subtree=overwrite)])
    return Group(target, path, metadata)


def create_array(
    store: Any,
    path: str = "",
    *,
    shape: Sequence[int] | int,
    dtype: Any,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    fill_value: Any = None,
    compressors: Sequence[CodecLike] | CodecLike | Literal["auto"] | None = "auto",
    filters: Sequence[CodecLike] = (),
    serializer: CodecLike | Literal["auto"] = "auto",
    codecs: Sequence[CodecLike] | None = None,
    index_codecs: Sequence[CodecLike] | None = None,
    index_location: Literal["start", "end"] = "end",
    chunk_key_encoding: dict[str, Any] | str | None = None,
    dimension_names: Sequence[str | None] | None = None,
    attributes: dict[str, Any] | None = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Array:
    """Create an array; automatic codec parameters are resolved and recorded.

    ``chunks`` is the inner chunk shape when ``shards`` is given. ``codecs``,
    when given, is the complete outer codec list and overrides ``filters``,
    ``serializer``, ``compressors`` and ``shards``. Ancestor groups carrying
    consolidated metadata are refreshed to include the new array.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/create", shape=(100, 100), dtype="float32",
    ...                                chunks=(10, 10), shards=(50, 50))
    >>> a.chunks, a.shards
    ((10, 10), (50, 50))
    """
    target = _store(store, storage_options, "w")
    path = normalize_path(path)
    metadata = build_array_metadata(
        path, shape=shape, dtype=dtype, chunks=chunks, shards=shards, fill_value=fill_value, compressors=compressors,
        filters=filters, serializer=serializer, codecs=codecs, index_codecs=index_codecs, index_location=index_location,
        chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names, attributes=attributes,
    )
    created = _prepare_path(target, path, overwrite)
    target.set(metadata_key(path), encode_metadata(metadata))
    refresh_consolidated(target, [*created, Change(path, metadata.to_json(), replaces_subtree=overwrite)])
    return Array(target, path, metadata)


def build_array_metadata(
    path: str,
    *,
    shape: Sequence[int] | int,
    dtype: Any,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    fill_value: Any = None,
    compressors: Sequence[CodecLike] | CodecLike | Literal["auto"] | None = "auto",
    filters: Sequence[CodecLike] = (),
    serializer: CodecLike | Literal["auto"] = "auto",
    codecs: Sequence[CodecLike] | None = None,
    index_codecs: Sequence[CodecLike] | None = None,
    index_location: Literal["start", "end"] = "end",
    chunk_key_encoding: dict[str, Any] | str | None = None,
    dimension_names: Sequence[str | None] | None = None,
    attributes: dict[str, Any] | None = None,
) -> ArrayMetadata:
    """The validated metadata :func:`create_array` would write at ``path``, without writing anything.

    >>> build_array_metadata("x", shape=(4,), dtype="int8").shape
    (4,)
    """
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(int(n) for n in shape)
    data_type = data_type_from_numpy(dtype)
    fill = data_type.default_fill_value() if fill_value is None else data_type.cast_fill_value(fill_value)
    chunks = tuple(chunks) if chunks is not None else _guess_chunks(shape, data_type)
    outer = tuple(shards) if shards is not None and codecs is None else chunks
    _check_chunking(shape, chunks, outer, shards if codecs is None else None)
    chain = _build_chain(codecs, filters, serializer, compressors, data_type, shards is not None, chunks, index_codecs, index_location)
    spec = ChunkSpec(outer, data_type, fill)
    chain = chain.evolve(spec)
    chain.validate(spec)
    metadata = ArrayMetadata(
        shape=shape, data_type=data_type, chunk_grid=RegularChunkGrid(outer),
        chunk_key_encoding=parse_chunk_key_encoding(chunk_key_encoding or "default"),
        fill_value=fill, codecs=tuple(chain.to_json()), attributes=dict(attributes or {}),
        dimension_names=None if dimension_names is None else tuple(dimension_names),
    )
    return ArrayMetadata.from_json(metadata.to_json(), metadata_key(path))


def _guess_chunks(shape: tuple[int, ...], data_type: DataType) -> tuple[int, ...]:
    """Halve the largest dimension until a chunk holds at most ~4 MiB."""
    item_size = data_type.item_size or 16
    chunks = [max(1, n) for n in shape]
    while math.prod(chunks) * item_size > TARGET_CHUNK_BYTES and max(chunks) > 1:
        largest = chunks.index(max(chunks))
        chunks[largest] = -(-chunks[largest] // 2)
    return tuple(chunks)


def _check_chunking(shape: tuple[int, ...], chunks: tuple[int, ...], outer: tuple[int, ...], shards: Any) -> None:
    if len(chunks) != len(shape) or len(outer) != len(shape):
        raise MetadataError(f"chunks {chunks} / shards {outer} must have {len(shape)} dimensions like shape {shape}")
    if any(c < 1 for c in (*chunks, *outer)):
        raise MetadataError(f"chunk and shard lengths must be positive, got chunks={chunks}, shards={outer}")
    if shards is not None:
        for dim, (s, c) in enumerate(zip(outer, chunks)):
            if s % c:
                raise MetadataError(
                    f"shard shape {outer} is not divisible by inner chunk shape {chunks} in dimension {dim}; "
                    f"choose an inner chunk that divides {s}"
                )


def _as_codecs(items: Any) -> list[Codec]:
    if items is None:
        return []
    if not isinstance(items, list | tuple):
        items = [items]
    codecs = [item if isinstance(item, Codec) else codec_from_json(item) for item in items]
    return [c for c in codecs if c is not None]


def _build_chain(
    codecs: Any, filters: Any, serializer: Any, compressors: Any, data_type: DataType,
    sharded: bool, chunks: tuple[int, ...], index_codecs: Any, index_location: str,
) -> CodecChain:
    if codecs is not None:
        return CodecChain(_as_codecs(codecs))
    if serializer == "auto":
        serializer = {"name": "vlen-utf8", "configuration": {}} if data_type.item_size is None else {
            "name": "bytes", "configuration": {"endian": "little"}}
    if compressors == "auto":
        compressors = [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}]
    inner = [*_as_codecs(filters), *_as_codecs(serializer), *_as_codecs(compressors)]
    if not sharded:
        return CodecChain(inner)
    sharding = ShardingCodec.from_json({
        "chunk_shape": list(chunks),
        "codecs": [c.to_json() for c in inner],
        "index_codecs": [c if isinstance(c, dict | str) else c.to_json() for c in (index_codecs or DEFAULT_INDEX_CODECS)],
        "index_location": index_location,
    })
    return CodecChain([sharding])


def _prepare_path(store: Store, path: str, overwrite: bool) -> list[Change]:
    """Make room for a new node at ``path``: erase (``overwrite``) or refuse an existing one.

    Returns the ancestor groups it had to create.
    """
    existing = read_node_metadata(store, path)
    if existing is not None and not overwrite:
        raise NodeExistsError(
            f"a {existing.node_type} already exists at {path or '/'!r} in {store!r}; pass overwrite=True (mode='w') to replace it"
        )
    if overwrite:
        if path:
            store.delete_prefix(path + "/")
        else:
            store.delete_prefix("")
    return ensure_parents(store, path) if path else []
