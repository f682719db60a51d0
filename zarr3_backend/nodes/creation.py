"""The metadata a new array gets: shape, data type, chunking and codec arguments resolved into one document.

`build_array_metadata()` validates everything `zarr3_backend.create_array()` accepts and
records the automatic choices (chunk shape, serializer, compressor), without touching a store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict, Unpack

import numpy as np

from ..codecs.base import ChunkSpec, Codec
from ..codecs.chain import CodecChain
from ..codecs.registry import codec_from_json
from ..codecs.sharding import ShardingCodec
from ..core.chunk_grid import ChunkGrid, RegularChunkGrid
from ..core.chunk_keys import parse_chunk_key_encoding
from ..core.dtypes import DataType, DataTypeLike, data_type_from_numpy
from ..core.metadata import ArrayMetadata, metadata_key
from ..core.rectilinear_grid import is_rectilinear_argument, rectilinear_from_argument
from ..errors import ArgumentTypeError, CodecError, MetadataError

CodecLike = Codec | dict[str, Any] | str
DEFAULT_INDEX_CODECS: list[CodecLike] = [
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "crc32c"},
]
#: ``compressors="auto"``: zstd, then a CRC32C of the compressed bytes, so that any changed byte of a chunk
#: raises `ChecksumError` naming its key on read (zstd's own checksum would
#: report a flipped byte as a plain decoding error, or not at all when the flip clears its frame flag).
DEFAULT_COMPRESSORS: list[CodecLike] = [
    {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
    {"name": "crc32c"},
]
TARGET_CHUNK_BYTES = 4 << 20


class ArrayOptions(TypedDict, total=False):
    """The optional keywords of `zarr3_backend.create_array()` (and `Group.create_array()`).

    The one list of them: `build_array_metadata()` reads them, the
    creation functions pass them through (typed with ``Unpack``).

    Attributes
    ----------
    chunks : sequence of int, optional
        Chunk shape (inner chunks when ``shards`` is given); default: ~4 MiB chunks. A sequence of lengths
        for a dimension (``[[31, 28, 31], 45]``) makes a rectilinear grid (unsharded only).
    shards : sequence of int, optional
        Shard shape; default: no sharding. Nested like ``chunks`` for rectilinear shard boundaries, whose
        regular inner ``chunks`` must divide every shard.
    fill_value : optional
        Default: the data type's default, recorded in ``zarr.json``.
    compressors, filters, serializer : codecs, optional
        Default ``"auto"`` (compressors zstd level 0 then ``crc32c``, so every chunk is checksummed;
        no filters; ``bytes`` or ``vlen-utf8``). ``compressors=[{"name": "zstd"}]`` keeps zstd without the
        checksum, ``compressors=None`` stores chunks uncompressed and unchecked.
    codecs : sequence of codecs, optional
        The complete outer chain; overrides filters, serializer, compressors and shards.
    index_codecs, index_location
        The shard index's codecs (default bytes + crc32c) and place (default ``"end"``).
    chunk_key_encoding, dimension_names, attributes : optional
        Default ``"default"`` (``/`` separator), none, ``{}``.
    """

    chunks: Sequence[int | Sequence[int]] | None
    shards: Sequence[int | Sequence[int]] | None
    fill_value: Any
    compressors: Sequence[CodecLike] | CodecLike | Literal["auto"] | None
    filters: Sequence[CodecLike]
    serializer: CodecLike | Literal["auto"]
    codecs: Sequence[CodecLike] | None
    index_codecs: Sequence[CodecLike] | None
    index_location: Literal["start", "end"]
    chunk_key_encoding: dict[str, Any] | str | None
    dimension_names: Sequence[str | None] | None
    attributes: dict[str, Any] | None


class ArrayDefinition(ArrayOptions):
    """`ArrayOptions` with the two required keywords, ``shape`` and ``dtype``."""

    shape: Sequence[int] | int
    dtype: DataTypeLike


def build_array_metadata(path: str, **options: Unpack[ArrayDefinition]) -> ArrayMetadata:
    """The validated metadata `create_array()` would write at ``path``, without writing anything.

    Raises `ArgumentTypeError` for a missing or unknown keyword.

    >>> build_array_metadata("x", shape=(4,), dtype="int8").shape
    (4,)
    """
    _check_keywords(options)
    shards, codecs = options.get("shards"), options.get("codecs")
    shape = normalize_shape(options["shape"])
    data_type = data_type_from_numpy(options["dtype"])
    fill_value = options.get("fill_value")
    fill = data_type.default_fill_value() if fill_value is None else data_type.cast_fill_value(fill_value)
    grid, chunks, outer = _grid(shape, options.get("chunks"), shards if codecs is None else None, data_type)
    _check_chunking(shape, chunks, outer, shards if codecs is None else None)
    chain = _build_chain(
        codecs,
        options.get("filters", ()),
        options.get("serializer", "auto"),
        options.get("compressors", "auto"),
        data_type=data_type,
        sharded=shards is not None,
        chunks=chunks,
        index_codecs=options.get("index_codecs"),
        index_location=options.get("index_location", "end"),
    )
    spec = ChunkSpec(outer, data_type, fill)
    chain = chain.evolve(spec)
    for stored_shape in grid.distinct_shapes():
        try:
            chain.validate(spec.with_shape(stored_shape))
        except CodecError as exc:
            raise MetadataError(f"{'shards' if shards is not None else 'chunks'}: {exc}") from exc
    metadata = ArrayMetadata(
        shape=shape,
        data_type=data_type,
        chunk_grid=grid,
        chunk_key_encoding=parse_chunk_key_encoding(options.get("chunk_key_encoding") or "default"),
        fill_value=fill,
        codecs=tuple(chain.to_json()),
        attributes=dict(options.get("attributes") or {}),
        dimension_names=None if (names := options.get("dimension_names")) is None else tuple(names),
    )
    return ArrayMetadata.from_json(metadata.to_json(), metadata_key(path))


def _grid(
    shape: tuple[int, ...], chunks_arg: Any, shards: Any, data_type: DataType
) -> tuple[ChunkGrid, tuple[int, ...], tuple[int, ...]]:
    """The chunk grid, the (inner) chunk shape and the largest stored chunk's shape the arguments ask for."""
    if is_rectilinear_argument(chunks_arg):
        if shards is not None:
            raise MetadataError(
                "chunks: rectilinear inner chunks inside shards are not specified (the rectilinear grid allows "
                "rectilinear shard boundaries with regular inner chunks); give regular chunks and nested shards"
            )
        grid = rectilinear_from_argument(chunks_arg, "chunks")
        return grid, grid.chunk_shape, grid.chunk_shape
    if is_rectilinear_argument(shards):
        shard_grid = rectilinear_from_argument(shards, "shards")
        if chunks_arg is None:
            common = [d if isinstance(d, int) else math.gcd(*d.distinct_lengths()) for d in shard_grid.dims]
            chunks_arg = default_chunks(common, data_type.item_size or 16, dividing=True)
        return shard_grid, tuple(chunks_arg), shard_grid.chunk_shape
    chunks = tuple(chunks_arg) if chunks_arg is not None else default_chunks(shape, data_type.item_size or 16)
    outer = tuple(shards) if shards is not None else chunks
    return RegularChunkGrid(outer), chunks, outer


def normalize_shape(shape: Sequence[int] | int) -> tuple[int, ...]:
    """A ``shape`` argument (an int or a sequence of ints, numpy ints too) as a tuple of Python ints.

    >>> normalize_shape(np.int64(3)), normalize_shape([2, np.uint8(4)])
    ((3,), (2, 4))
    """
    return (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(n) for n in shape)


def _check_keywords(options: Mapping[str, object]) -> None:
    """Refuse what a signature with these keywords would refuse, naming the keywords."""
    missing = sorted(ArrayDefinition.__required_keys__ - options.keys())
    unknown = sorted(options.keys() - ArrayDefinition.__required_keys__ - ArrayDefinition.__optional_keys__)
    if missing or unknown:
        problem = f"missing required keyword(s) {missing}" if missing else f"unexpected keyword(s) {unknown}"
        raise ArgumentTypeError(
            f"create_array: {problem}; it takes shape, dtype and {', '.join(sorted(ArrayDefinition.__optional_keys__))}"
        )


def default_chunks(shape: Sequence[int], item_size: int, *, dividing: bool = False) -> tuple[int, ...]:
    """The automatic chunk shape: ``shape`` split along its largest dimension until a chunk holds ~4 MiB or less.

    Each step splits the (first) largest dimension: in two, rounding up, or
    with ``dividing=True`` by its smallest divisor, so that the chunks tile
    ``shape`` exactly (inner chunks of a shard). Lengths of 0 count as 1.

    >>> default_chunks((4000, 1000), 8)
    (500, 1000)
    >>> default_chunks((1001, 999), 8), default_chunks((1001, 999), 8, dividing=True)
    ((501, 999), (143, 999))
    """
    chunks = [max(1, int(n)) for n in shape]
    while math.prod(chunks) * item_size > TARGET_CHUNK_BYTES and max(chunks, default=1) > 1:
        dim = chunks.index(max(chunks))
        chunks[dim] = chunks[dim] // _smallest_divisor(chunks[dim]) if dividing else -(-chunks[dim] // 2)
    return tuple(chunks)


def _smallest_divisor(n: int) -> int:
    return next((d for d in range(2, math.isqrt(n) + 1) if n % d == 0), n)


def _check_chunking(
    shape: tuple[int, ...], chunks: tuple[int, ...], outer: tuple[int, ...], shards: Any
) -> None:
    if len(chunks) != len(shape) or len(outer) != len(shape):
        raise MetadataError(
            f"chunks {chunks} / shards {outer} must have {len(shape)} dimensions like shape {shape}"
        )
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
    codecs: Any,
    filters: Any,
    serializer: Any,
    compressors: Any,
    *,
    data_type: DataType,
    sharded: bool,
    chunks: tuple[int, ...],
    index_codecs: Any,
    index_location: str,
) -> CodecChain:
    if codecs is not None:
        return CodecChain(_as_codecs(codecs))
    if serializer == "auto":
        serializer = (
            {"name": "vlen-utf8", "configuration": {}}
            if data_type.item_size is None
            else {"name": "bytes", "configuration": {"endian": "little"}}
        )
    if compressors == "auto":
        compressors = DEFAULT_COMPRESSORS
    inner = [*_as_codecs(filters), *_as_codecs(serializer), *_as_codecs(compressors)]
    if not sharded:
        return CodecChain(inner)
    sharding = ShardingCodec.from_json(
        {
            "chunk_shape": list(chunks),
            "codecs": [c.to_json() for c in inner],
            "index_codecs": [
                c if isinstance(c, dict | str) else c.to_json()
                for c in (index_codecs or DEFAULT_INDEX_CODECS)
            ],
            "index_location": index_location,
        }
    )
    return CodecChain([sharding])
