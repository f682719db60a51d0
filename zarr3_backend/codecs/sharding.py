"""``sharding_indexed``: many inner chunks and an index in one stored value.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/ ::

    {"name": "sharding_indexed",
     "configuration": {"chunk_shape": [32, 32],
                       "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                       "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                        {"name": "crc32c"}],
                       "index_location": "end"}}

Partial reads fetch the index (cached per shard key with its generation), then the
inner chunks needed as coalesced ranges; every inner chunk is one request for the
whole value. Ranges of another generation than their index mean a rewrite: the
index is read again. A cached index is used as is only under a generation that
proves the shard unchanged (a version id); else (an ETag some servers keep across
rewrites, a file's size and time) it is read again beside the chunks it locates,
and a changed one locates them again. A chunk located by a cached index that fails
to decode raises `StaleIndexError`: the reader reads once more from fresh indexes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Hashable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np

from ..core.buffers import ByteRange, Value, Versioned, join_value, proves_unchanged
from ..core.dtypes import parse_data_type
from ..core.indexing import ChunkSelection, plan_selection
from ..errors import (
    CodecError,
    ConcurrentModificationError,
    CorruptShardError,
    MetadataError,
    UnknownExtensionError,
    with_location,
)
from .base import ArrayBytesCodec, Buffer, ChunkSpec, encoded_copy, update_whole
from .chain import CodecChain
from .read_plan import DecodeJob, ReadContext, ReadPlan, SubRead, coalesce_ranges
from .registry import register_codec
from .shard_index import EMPTY, ShardIndex

IndexLocation = Literal["start", "end"]
CONFIG_KEYS = frozenset({"chunk_shape", "codecs", "index_codecs", "index_location"})
UINT64 = parse_data_type("uint64")


@dataclass(frozen=True)
class ShardingCodec(ArrayBytesCodec):
    """Stores a shard's inner chunks, each encoded by ``codecs``, plus an index."""

    name: ClassVar[str] = "sharding_indexed"
    chunk_shape: tuple[int, ...]
    codecs: CodecChain
    index_codecs: CodecChain
    index_location: IndexLocation = "end"
    #: Per shard spec (by identity: an array asks with the same spec object every time): its inner
    #: chunk spec, inner chunk count and index size (asked once per shard read).
    _geometry: dict[int, tuple[ChunkSpec, _Geometry]] = field(
        default_factory=dict, init=False, compare=False, hash=False, repr=False
    )

    @classmethod
    def from_json(cls, configuration: dict[str, Any]) -> ShardingCodec:
        where = "sharding_indexed.configuration"
        unknown = configuration.keys() - CONFIG_KEYS
        if unknown:
            raise MetadataError(f"{where}: unknown fields {sorted(unknown)}")
        for required in ("chunk_shape", "codecs", "index_codecs"):
            if required not in configuration:
                raise MetadataError(f"{where}: missing required field {required!r}")
        chunk_shape = configuration["chunk_shape"]
        if isinstance(chunk_shape, list) and any(isinstance(n, list) for n in chunk_shape):
            raise UnknownExtensionError(
                f"{where}.chunk_shape: rectilinear inner chunks are not specified (only shard boundaries may be "
                f"rectilinear, with regular inner chunks), got {chunk_shape!r}"
            )
        if not isinstance(chunk_shape, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in chunk_shape
        ):
            raise MetadataError(
                f"{where}.chunk_shape: expected a list of positive integers, got {chunk_shape!r}"
            )
        location = configuration.get("index_location", "end")
        if location not in ("start", "end"):
            raise MetadataError(f"{where}.index_location: expected 'start' or 'end', got {location!r}")
        return cls(
            tuple(chunk_shape),
            CodecChain.from_json(configuration["codecs"], f"{where}.codecs"),
            CodecChain.from_json(configuration["index_codecs"], f"{where}.index_codecs"),
            location,
        )

    def _configuration(self) -> dict[str, Any]:
        return {
            "chunk_shape": list(self.chunk_shape),
            "codecs": self.codecs.to_json(),
            "index_codecs": self.index_codecs.to_json(),
            "index_location": self.index_location,
        }

    def detects_corruption(self) -> bool:
        """Whether both the inner chunks' codecs and the index codecs carry a checksum."""
        return self.codecs.detects_corruption() and self.index_codecs.detects_corruption()

    # -- geometry ------------------------------------------------------------
    def chunks_per_shard(self, spec: ChunkSpec) -> tuple[int, ...]:
        return tuple(s // c for s, c in zip(spec.shape, self.chunk_shape))

    def inner_spec(self, spec: ChunkSpec) -> ChunkSpec:
        """The spec of each inner chunk of a shard of ``spec``."""
        return self._geometry_of(spec).inner_spec

    def _geometry_of(self, spec: ChunkSpec) -> _Geometry:
        found = self._geometry.get(id(spec))
        if found is not None and found[0] is spec:  # the entry holds its spec: its id is not reused
            return found[1]
        cells = math.prod(self.chunks_per_shard(spec))
        index_spec = self._index_spec(spec)  # 16 bytes per inner chunk, before the index codecs
        size = self.index_codecs.compute_encoded_size(16 * cells, index_spec)
        geometry = _Geometry(spec.with_shape(self.chunk_shape), cells, size, index_spec)
        if len(self._geometry) >= _GEOMETRIES_KEPT:
            self._geometry.clear()
        self._geometry[id(spec)] = (spec, geometry)
        return geometry

    def _index_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec((*self.chunks_per_shard(spec), 2), UINT64, EMPTY)

    def index_size(self, spec: ChunkSpec) -> int:
        """Bytes the encoded shard index takes in a shard of ``spec`` (at its start or end, per ``index_location``)."""
        return self._geometry_of(spec).index_size

    def _region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, self.chunk_shape))

    # -- codec contract ------------------------------------------------------
    def evolve(self, spec: ChunkSpec) -> ShardingCodec:
        return replace(
            self,
            codecs=self.codecs.evolve(self.inner_spec(spec)),
            index_codecs=self.index_codecs.evolve(self._index_spec(spec)),
        )

    def validate(self, spec: ChunkSpec) -> None:
        if len(self.chunk_shape) != len(spec.shape):
            raise CodecError(
                f"sharding_indexed: inner chunk shape {self.chunk_shape} has {len(self.chunk_shape)} dimensions, "
                f"the shard shape {spec.shape} has {len(spec.shape)}"
            )
        for dim, (shard, inner) in enumerate(zip(spec.shape, self.chunk_shape)):
            if shard % inner:
                raise CodecError(
                    f"sharding_indexed: shard shape {spec.shape} is not divisible by inner chunk shape "
                    f"{self.chunk_shape} in dimension {dim}; choose an inner chunk that divides {shard}"
                )
        self.index_codecs.validate(self._index_spec(spec))
        try:
            self.index_size(spec)
        except CodecError as exc:
            raise CodecError(
                f"sharding_indexed: index_codecs must produce a fixed-size index ({exc})"
            ) from exc
        self.codecs.validate(self.inner_spec(spec))  # the inner spec is the geometry's: after the index size

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        """The index plus every inner chunk at its own bound (``None`` if the inner chain has none)."""
        inner_spec = self.inner_spec(spec)
        inner = self.codecs.max_encoded_size(inner_spec.size * inner_spec.dtype.itemsize, inner_spec)
        return None if inner is None else self.index_size(spec) + self._geometry_of(spec).cells * inner

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        return join_value(self.encode_pieces(chunk, spec))

    def encode_pieces(self, chunk: np.ndarray, spec: ChunkSpec) -> tuple[Buffer, ...]:
        """`encode` as the shard's pieces in stored order (encoded inner chunks and index), never joined;
        none of them is a view of ``chunk``."""
        inner_spec = self.inner_spec(spec)
        parts: dict[tuple[int, ...], Buffer | None] = {}
        for coords in np.ndindex(*self.chunks_per_shard(spec)):
            parts[coords] = encoded_copy(self.codecs, chunk[self._region(coords)], inner_spec)
        return self.assemble(parts, spec)

    def assemble(self, parts: dict[tuple[int, ...], Buffer | None], spec: ChunkSpec) -> tuple[Buffer, ...]:
        """The pieces of one shard value: the encoded inner chunks (``None`` = empty) in C order plus the index."""
        index = ShardIndex.empty(self.chunks_per_shard(spec))
        offset = self.index_size(spec) if self.index_location == "start" else 0
        body = []
        for coords, data in parts.items():
            if data is not None:
                index.entries[coords] = (offset, len(data))
                body.append(data)
                offset += len(data)
        index_bytes = self.index_codecs.encode(index.entries, self._index_spec(spec))
        return (index_bytes, *body) if self.index_location == "start" else (*body, index_bytes)

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        index = self.decode_index(data, spec)
        out = np.empty(spec.shape, dtype=spec.dtype)
        view = memoryview(data)
        inner_spec = self.inner_spec(spec)
        for coords in np.ndindex(*index.chunks_per_shard):
            region = self._region(coords)
            byte_range = index.chunk_range(coords)
            if byte_range is None:
                out[region] = spec.fill_value
            else:
                out[region] = self.codecs.decode(view[byte_range[0] : byte_range[1]], inner_spec)
        return out

    def decode_index(self, data: Buffer, spec: ChunkSpec, where: str = "shard") -> ShardIndex:
        """Parse and validate the index of a whole shard value."""
        size = self._geometry_of(spec).index_size
        if len(data) < size:
            raise CorruptShardError(
                f"{where}: shard is truncated: {len(data)} bytes, its index alone needs {size}"
            )
        raw = (
            memoryview(data)[:size]
            if self.index_location == "start"
            else memoryview(data)[len(data) - size :]
        )
        return self._parse_index(raw, spec, where).validate(where, len(data))

    def _parse_index(self, raw: Buffer, spec: ChunkSpec, where: str) -> ShardIndex:
        geometry = self._geometry_of(spec)
        if len(raw) != geometry.index_size:
            raise CorruptShardError(
                f"{where}: shard is truncated: index needs {geometry.index_size} bytes, found {len(raw)}"
            )
        encoded = bytes(raw)  # a copy: never pin the shard bytes; the entries are often a view of it
        try:
            entries = self.index_codecs.decode(encoded, geometry.index_spec)
        except CodecError as exc:
            raise with_location(exc, f"{where}: shard index") from exc
        return ShardIndex(np.asarray(entries, dtype=np.uint64), encoded=encoded).validate(where)

    # -- partial writes ------------------------------------------------------
    def update(
        self, existing: Buffer | None, spec: ChunkSpec, piece: ChunkSelection, value: np.ndarray
    ) -> Value | None:
        """Re-encode only the inner chunks the write touches; keep the others' bytes unchanged.

        Returns the shard as its pieces, which the store writes without joining them.
        """
        index = (
            ShardIndex.empty(self.chunks_per_shard(spec))
            if existing is None
            else self.decode_index(existing, spec)
        )
        inner_spec = self.inner_spec(spec)
        view = None if existing is None else memoryview(existing)
        replaced: dict[tuple[int, ...], Buffer | None] = {}
        for inner in plan_selection(
            piece.orthogonal_selection, spec.shape, self.chunk_shape, orthogonal=True
        ).chunks():
            byte_range = index.chunk_range(inner.coords)
            stored = None if byte_range is None or view is None else view[byte_range[0] : byte_range[1]]
            replaced[inner.coords] = update_whole(
                self.codecs, stored, inner_spec, inner, value[(*inner.out_selection, Ellipsis)]
            )
        parts = {
            coords: replaced[coords] if coords in replaced else _stored(view, index, coords)
            for coords in np.ndindex(*index.chunks_per_shard)
        }
        if all(data is None for data in parts.values()):
            return None
        return self.assemble(parts, spec)

    # -- partial reads -------------------------------------------------------
    def read_unit(self, spec: ChunkSpec) -> tuple[int, ...]:
        return self.chunk_shape

    def plan_read(self, spec: ChunkSpec, reads: list[SubRead], ctx: ReadContext) -> ReadPlan:
        """Read the index (or take the cached one), then only the inner chunks ``reads`` need.

        A read of every inner chunk fetches the whole shard with one request
        instead, unless the shard is larger than ``ctx.whole_up_to``. Every
        range is checked against the generation of the index that located
        it: a shard rewritten in between is read again from its new index, at
        most ``ctx.attempts`` times. Indexes of unknown generation are not cached.
        A cached index is trusted only when its generation proves the shard
        unchanged (`proves_unchanged()`); otherwise the index is read again in
        the same round as the chunks it locates and compared (one more request,
        no more rounds), and chunks it no longer locates are read again from the new one.
        """
        geometry = self._geometry_of(spec)
        whole = len({r.coords for r in reads}) == geometry.cells
        whole = whole and (ctx.whole_up_to is None or spec.size * spec.dtype.itemsize <= ctx.whole_up_to)
        index: ShardIndex | None = ctx.cache.get(ctx.key)
        fresh = index is None
        for _ in range(ctx.attempts):
            if whole and (index is None or not fresh and not proves_unchanged(index.generation)):
                return (yield from self._read_whole(spec, reads, ctx))
            if index is None:
                (got,) = yield [self._index_range(geometry)]
                if got.value is None:
                    return self._fill_jobs(spec, reads, ctx)
                index = _remember(ctx, self._parse_index(got.value, spec, ctx.key), got.generation)
                fresh = True
            outcome = yield from self._fetch_inner(spec, reads, index, ctx, fresh)
            if isinstance(outcome, list):
                return outcome
            if outcome is None:  # the shard changed since its index was read: read it again
                ctx.cache.pop(ctx.key, None)
            index, fresh = outcome, outcome is not None  # or its current index, read along
        raise ConcurrentModificationError(
            f"{ctx.key}: the shard changed between reading its index and its inner chunks on {ctx.attempts} "
            "attempts in a row; another writer keeps rewriting it, read again once it is done"
        )

    def _index_range(self, geometry: _Geometry) -> ByteRange:
        size = geometry.index_size
        return ByteRange(0, size) if self.index_location == "start" else ByteRange.suffix(size)

    def _read_whole(self, spec: ChunkSpec, reads: list[SubRead], ctx: ReadContext) -> ReadPlan:
        """One request for everything: the index and the chunks of one version."""
        (got,) = yield [None]
        if got.value is None:
            return self._fill_jobs(spec, reads, ctx)
        data = got.value
        index = _remember(ctx, self.decode_index(data, spec, ctx.key), got.generation)
        whole_shard = memoryview(data)
        return self._jobs(spec, reads, index, lambda rng: whole_shard[rng[0] : rng[1]], ctx)

    def _fetch_inner(
        self, spec: ChunkSpec, reads: list[SubRead], index: ShardIndex, ctx: ReadContext, fresh: bool
    ) -> Generator[list[ByteRange | None], list[Versioned], list[DecodeJob] | ShardIndex | None]:
        """Fetch the coalesced ranges ``reads`` need, with the index again if a cached one needs checking.

        Returns the decode jobs; or, when the ranges are not of the index's
        version, the shard's current index (if it was read along) or ``None``.
        """
        ranges = sorted({rng for r in reads if (rng := index.chunk_range(r.coords)) is not None})
        blocks = coalesce_ranges(ranges, ctx.max_gap, ctx.max_block)
        located: dict[tuple[int, int], memoryview] = {}
        if not blocks and fresh:
            return self._jobs(spec, reads, index, located.__getitem__, ctx)
        check = not fresh and not proves_unchanged(index.generation)
        requests: list[ByteRange | None] = [ByteRange(b.start, b.end) for b in blocks]
        if check or not requests:  # a cached index needs the shard's current version: 0 bytes, or its index
            requests.append(self._index_range(self._geometry_of(spec)) if check else ByteRange(0, 0))
        fetched = yield requests
        if check:
            current = self._current_index(spec, ctx, fetched[-1], index)
            if (
                current is None
                or current.entries is not index.entries
                and not np.array_equal(current.entries, index.entries)
            ):
                return current
            index = current
        if index.generation is not None and any(got.generation != index.generation for got in fetched):
            return None
        for block, got in zip(blocks, fetched):
            value = got.value
            if value is None or len(value) < block.end - block.start:
                if not fresh:  # a cached index of a rewritten shard: read the index again
                    return None
                found = "nothing" if value is None else f"{len(value)} bytes"
                raise CorruptShardError(
                    f"{ctx.key}: shard is truncated: expected bytes {block.start}-{block.end} "
                    f"as its index says, got {found}"
                )
            for member in block.members:
                start, end = ranges[member]
                located[(start, end)] = memoryview(value)[start - block.start : end - block.start]
        return self._jobs(spec, reads, index, located.__getitem__, ctx, cached=not fresh)

    def _current_index(
        self, spec: ChunkSpec, ctx: ReadContext, got: Versioned, cached: ShardIndex
    ) -> ShardIndex | None:
        """The index read along with the ``cached`` one's chunks, remembered in its place; ``None`` if the shard
        is gone. Bytes equal to the cached index's are not parsed again: they hold the same entries."""
        ctx.cache.pop(ctx.key, None)
        if got.value is None:
            return None
        current = cached if cached.same_encoding(got.value) else self._parse_index(got.value, spec, ctx.key)
        return _remember(ctx, current, got.generation)

    def _jobs(
        self,
        spec: ChunkSpec,
        reads: list[SubRead],
        index: ShardIndex,
        get: Callable[[tuple[int, int]], Buffer],
        ctx: ReadContext,
        *,
        cached: bool = False,
    ) -> list[DecodeJob]:
        """A decode job per read; chunks located by a ``cached`` index fail as `StaleIndexError` (see reads)."""
        inner_spec = self.inner_spec(spec)
        index_cache = ctx.cache if cached else None
        jobs = []
        for r in reads:
            rng = index.chunk_range(r.coords)
            data = None if rng is None else get(rng)
            jobs.append(
                DecodeJob(
                    data,
                    self.codecs,
                    inner_spec,
                    r.selection,
                    r.out_selection,
                    f"{ctx.key} inner chunk {r.coords}",
                    index_cache,
                )
            )
        return jobs

    def _fill_jobs(self, spec: ChunkSpec, reads: list[SubRead], ctx: ReadContext) -> list[DecodeJob]:
        inner_spec = self.inner_spec(spec)
        return [
            DecodeJob(None, self.codecs, inner_spec, r.selection, r.out_selection, ctx.key) for r in reads
        ]


#: Shard specs whose geometry a codec keeps (an array has one, or a few at a rectilinear grid's edges).
_GEOMETRIES_KEPT = 64


@dataclass(frozen=True)
class _Geometry:
    """What reading a shard of one spec needs every time: inner chunk spec and count, index size and spec."""

    inner_spec: ChunkSpec
    cells: int
    index_size: int
    index_spec: ChunkSpec


def _remember(ctx: ReadContext, index: ShardIndex, generation: Hashable | None) -> ShardIndex:
    """``index`` marked with its shard's generation; cached for later reads only if that is known."""
    index = index.of_generation(generation)
    if generation is not None:
        ctx.cache[ctx.key] = index
    return index


def _stored(view: memoryview | None, index: ShardIndex, coords: tuple[int, ...]) -> memoryview | None:
    byte_range = index.chunk_range(coords)
    return None if byte_range is None or view is None else view[byte_range[0] : byte_range[1]]


register_codec(ShardingCodec)
