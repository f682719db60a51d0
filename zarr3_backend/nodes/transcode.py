"""Copies between sharded arrays of one layout: each shard re-encoded inner chunk by inner chunk.

``destination[...] = source`` (`zarr3_backend.copy_array`) between arrays of the same shape, data type,
fill value and regular shard grid, whose codecs are ``sharding_indexed`` alone with the same inner chunk
shape (the inner codecs may differ), needs no shard-sized block: each stored inner chunk of a source
shard is decoded (checked as on any read) and encoded by the destination's inner codecs straight from
the decoded buffer (`transcode_shard()`). Other copies read a block of the source per destination shard
(see `zarr3_backend.nodes.writes`). Both store the same bytes: all-fill inner chunks and shards are left out.

>>> import numpy as np, zarr3_backend
>>> src = zarr3_backend.create_array("memory://doc/transcode/src", shape=(8,), dtype="int16", chunks=(2,), shards=(4,))
>>> src[:] = np.arange(8)
>>> dst = zarr3_backend.create_array("memory://doc/transcode/dst", shape=(8,), dtype="int16", chunks=(2,),
...                                  shards=(4,), compressors=[{"name": "gzip"}])
>>> dst[...] = src
>>> dst[:].tolist()
[0, 1, 2, 3, 4, 5, 6, 7]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..codecs.base import Buffer, ChunkSpec, encoded_copy
from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from ..core.buffers import Value
from ..core.indexing import ChunkSelection
from ..core.metadata import ArrayMetadata
from ..errors import CodecError, with_location


class Stored(Protocol):
    """What a copy needs of each array (an `Array`)."""

    @property
    def metadata(self) -> ArrayMetadata: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype: ...

    @property
    def codecs(self) -> CodecChain: ...

    def chunk_spec_at(self, coords: Sequence[int]) -> ChunkSpec: ...

    def chunk_key(self, coords: tuple[int, ...]) -> str: ...

    def stored_bytes(self, coords: Sequence[tuple[int, ...]]) -> list[bytes | None]: ...


@dataclass(frozen=True)
class Transcoded:
    """A destination's stored chunk re-encoded from the source's: its ``value`` (``None``: all fill) and ``spec``."""

    value: Value | None
    spec: ChunkSpec


def transcode_chunk(destination: Stored, source: object, piece: ChunkSelection) -> Transcoded | None:
    """The stored chunk ``piece`` of ``destination`` gets from ``source``'s at the same grid coordinates;
    ``None`` when ``source`` is no array of ``destination``'s class and layout (`shard_codecs()`) or
    ``piece`` is not that whole chunk, unmoved."""
    if not isinstance(source, type(destination)) or not piece.is_complete:
        return None
    codecs = shard_codecs(destination, source)
    chunk_shape = destination.metadata.chunk_shape
    if codecs is None or not is_chunk_box(piece.out_selection, piece.coords, chunk_shape, destination.shape):
        return None
    spec = destination.chunk_spec_at(piece.coords)
    stored = source.stored_bytes([piece.coords])[0]
    where = source.chunk_key(piece.coords)
    return Transcoded(None if stored is None else transcode_shard(*codecs, stored, spec, where), spec)


def shard_codecs(destination: Stored, source: Stored) -> tuple[ShardingCodec, ShardingCodec] | None:
    """``(source's, destination's)`` sharding codecs when ``source``'s shards re-encode straight into
    ``destination``'s; ``None`` when the layouts differ in anything but the inner codecs."""
    mine, theirs = destination.metadata, source.metadata
    if (
        destination.shape != source.shape
        or destination.dtype != source.dtype
        or destination.dtype.kind in "OT"
    ):
        return None
    if (
        not (mine.chunk_grid.is_regular and theirs.chunk_grid.is_regular)
        or mine.chunk_shape != theirs.chunk_shape
    ):
        return None
    fill, other_fill = (np.asarray(m.fill_value, dtype=destination.dtype).tobytes() for m in (mine, theirs))
    target, origin = _sole_sharding(destination.codecs), _sole_sharding(source.codecs)
    if fill != other_fill or target is None or origin is None:
        return None
    return (origin, target) if tuple(origin.chunk_shape) == tuple(target.chunk_shape) else None


def transcode_shard(
    origin: ShardingCodec, target: ShardingCodec, data: Buffer, spec: ChunkSpec, where: str
) -> Value | None:
    """The shard ``data`` (of ``spec``, stored by ``origin``) as ``target`` stores it, as its pieces.

    Each stored inner chunk is decoded (checksums and size bounds checked, errors naming ``where`` and
    the inner chunk) and encoded by ``target``'s inner codecs from that buffer. Inner chunks that
    decode to the fill value are left out, as a write leaves them out; ``None`` when all are.
    """
    index = origin.decode_index(data, spec, where)
    inner_spec, view = origin.inner_spec(spec), memoryview(data)
    parts: dict[tuple[int, ...], Buffer | None] = {}
    for coords in np.ndindex(*index.chunks_per_shard):
        byte_range = index.chunk_range(coords)
        try:
            inner = None if byte_range is None else origin.codecs.decode(view[slice(*byte_range)], inner_spec)
        except CodecError as exc:
            raise with_location(exc, f"{where} inner chunk {coords}") from exc
        parts[coords] = None if inner is None else encoded_copy(target.codecs, inner, inner_spec)
    return None if all(part is None for part in parts.values()) else target.assemble(parts, spec)


def is_chunk_box(
    box: tuple[object, ...], coords: tuple[int, ...], chunk_shape: Sequence[int], shape: tuple[int, ...]
) -> bool:
    """Whether ``box`` is the stored chunk at ``coords`` of a regular grid (cut at the array's edge), unmoved."""
    return all(
        isinstance(s, slice) and s.step in (None, 1) and (s.start, s.stop) == (c * n, min(c * n + n, size))
        for s, c, n, size in zip(box, coords, chunk_shape, shape, strict=True)
    )


def _sole_sharding(chain: CodecChain) -> ShardingCodec | None:
    """The chain's ``sharding_indexed`` codec when it is the chain's only codec."""
    sole = not chain.array_array and not chain.bytes_bytes
    return chain.array_bytes if sole and isinstance(chain.array_bytes, ShardingCodec) else None
