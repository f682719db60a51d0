"""Sans-I/O partial reads: plans yield byte ranges to fetch and return decode jobs.

A read plan is a generator. Each ``yield`` hands the caller a list of
`ByteRange` requests (``None`` = the whole value) for one stored key
and receives the fetched values as `Versioned`
(value ``None`` where the key is missing; the generation says which version
of the object each came from, so a plan can check that ranges read in
different rounds belong together). When the
plan returns, its value is a list of `DecodeJob`. The caller batches
the requests of many plans into one store call per round and runs the jobs
on its thread pool, so codecs never touch a store or a thread.

Jobs decode with any `ChunkDecoder`; every array -> bytes codec and
every codec chain is one (see `ChunkCodec`).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from ..core.buffers import Buffer, ByteRange, Versioned
from ..core.dim_chunk import DimIndex
from ..errors import CodecError, MemoryLimitError, Zarr3Error, with_location
from ..runtime.scratch import borrow
from .spec import ChunkSpec

#: A numpy index tuple (ints, slices, index arrays) into a chunk or into an output array.
NdIndex = tuple[DimIndex, ...]


@runtime_checkable
class ChunkDecoder(Protocol):
    """What a `DecodeJob` needs of a codec: decode a stored chunk whole, or into an array."""

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        """Deserialise to an array of ``spec.shape`` and ``spec.dtype`` (possibly a read-only view of ``data``)."""
        ...

    def decode_into(self, data: Buffer, spec: ChunkSpec, out: np.ndarray) -> None:
        """Decode into ``out`` (C-contiguous, ``spec.shape`` and ``spec.dtype``)."""
        ...


@dataclass(frozen=True)
class SubRead:
    """A piece of one stored chunk to read.

    ``coords`` locate the read unit inside the chunk (all zeros unless the
    chunk is a shard of inner chunks), ``selection`` indexes that unit and
    ``out_selection`` says where the result goes in the output array.
    """

    coords: tuple[int, ...]
    selection: NdIndex
    out_selection: NdIndex


#: How many times a plan re-reads a value that changed between its rounds before giving up.
READ_ATTEMPTS = 8


@dataclass
class ReadContext:
    """Facts a read plan may use: the key, a cache shared by an array's reads, coalescing and retry limits.

    ``whole_up_to``: the largest decoded size of a shard read whole with one
    request; a larger one reads its index, then its chunks as ranges of at
    most ``max_block`` bytes, which a remote store fetches side by side
    (``None``: always one request).
    """

    key: str
    cache: MutableMapping[str, Any] = field(default_factory=dict)
    max_gap: int = 1 << 20
    max_block: int = 64 << 20
    attempts: int = READ_ATTEMPTS
    whole_up_to: int | None = None


class StaleIndexError(CodecError):
    """A chunk located by a cached shard index failed to decode (its checksum, most often): the index may be stale.

    ``cache`` is the index cache it came from. The reader drops it and reads
    again once, from fresh indexes; only a failure then is corruption.
    """

    def __init__(self, message: str, cache: MutableMapping[str, object]) -> None:
        super().__init__(message)
        self.cache = cache


@dataclass
class DecodeJob:
    """Decode ``data`` with ``codec`` (``None`` = missing: fill value) and copy ``selection`` to ``out``.

    ``index_cache``: the cache of the shard index that located ``data``,
    when it came from one; a decoding failure then raises `StaleIndexError`.
    """

    data: Buffer | None
    codec: ChunkDecoder
    spec: ChunkSpec
    selection: NdIndex
    out_selection: NdIndex
    where: str
    index_cache: MutableMapping[str, object] | None = None

    def run(self, out: np.ndarray) -> None:
        """Write this job's piece of ``out``: decoded straight into it when the whole chunk lands there."""
        if self.index_cache is None:
            return self._run(out)
        try:
            return self._run(out)
        except CodecError as exc:
            raise StaleIndexError(f"{exc} (located by a cached shard index)", self.index_cache) from exc

    def _run(self, out: np.ndarray) -> None:
        if self.data is None:
            out[self.out_selection] = self.spec.fill_value
            return
        target = _direct_target(out, self.out_selection, self.selection, self.spec)
        if target is not None:
            decode_chunk_into(self.codec, self.data, self.spec, self.where, target)
            return
        # a chunk too large to allocate is a CodecError, not a MemoryError
        with _decoding(self.where), borrow(self.spec.shape, self.spec.dtype) as chunk:
            self.codec.decode_into(self.data, self.spec, chunk)
            out[self.out_selection] = chunk[self.selection]


def _direct_target(
    out: np.ndarray, out_selection: NdIndex, selection: NdIndex, spec: ChunkSpec
) -> np.ndarray | None:
    """The view of ``out`` to decode into directly, when the whole chunk lands contiguously there."""
    for s in out_selection:  # plain loops: this runs once per chunk decoded
        if not isinstance(s, slice):
            return None
    for s in selection:
        if not isinstance(s, slice):
            return None
    for whole, n in zip(selection, spec.shape):  # each a slice: checked above
        if cast(slice, whole).indices(n) != (0, n, 1):
            return None
    target = out[(*out_selection, Ellipsis)]
    if target.shape != spec.shape or not target.flags.c_contiguous:
        return None
    return target


ReadPlan = Generator[list[ByteRange | None], list[Versioned], list[DecodeJob]]


def whole_chunk_plan(
    codec: ChunkDecoder, spec: ChunkSpec, reads: list[SubRead], ctx: ReadContext
) -> ReadPlan:
    """The default plan: fetch the whole value, decode it once, copy every piece."""
    (got,) = yield [None]
    return [DecodeJob(got.value, codec, spec, r.selection, r.out_selection, ctx.key) for r in reads]


def decode_chunk(codec: ChunkDecoder, data: Buffer, spec: ChunkSpec, where: str) -> np.ndarray:
    """Decode one chunk, turning any failure into a `CodecError` naming ``where``.

    A failed allocation becomes a `MemoryLimitError` instead: the chunk is not corrupt.
    """
    with _decoding(where):
        return codec.decode(data, spec)


def decode_chunk_into(
    codec: ChunkDecoder, data: Buffer, spec: ChunkSpec, where: str, out: np.ndarray
) -> None:
    """Decode one chunk into ``out``; failures as in `decode_chunk()`."""
    try:  # not `_decoding()`: a context manager per inner chunk is measurable when a task decodes hundreds
        codec.decode_into(data, spec, out)
    except Exception as exc:
        raise _decode_failure(exc, where) from exc


@contextmanager
def _decoding(where: str) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        raise _decode_failure(exc, where) from exc


def _decode_failure(exc: Exception, where: str) -> Zarr3Error:
    """``exc``, raised decoding the chunk at ``where``, as the error to raise in its place."""
    if isinstance(exc, Zarr3Error):
        return with_location(exc, where)
    if isinstance(exc, MemoryError):
        return MemoryLimitError(f"{where}: out of memory decoding the chunk ({type(exc).__name__}: {exc})")
    # numcodecs/numpy raise RuntimeError, ValueError, ...
    return CodecError(f"{where}: cannot decode chunk ({type(exc).__name__}: {exc})")


@dataclass(frozen=True)
class Block:
    """A coalesced byte range ``[start, end)`` covering the ranges at ``members`` (input positions)."""

    start: int
    end: int
    members: tuple[int, ...]


def coalesce_ranges(ranges: list[tuple[int, int]], max_gap: int, max_block: int) -> list[Block]:
    """Merge ``[start, end)`` ranges whose gap is at most ``max_gap`` into blocks of at most ``max_block`` bytes.

    >>> [(b.start, b.end, b.members) for b in coalesce_ranges([(0, 4), (10, 12), (100, 110)], 8, 1 << 20)]
    [(0, 12, (0, 1)), (100, 110, (2,))]
    """
    blocks: list[Block] = []
    for position in sorted(range(len(ranges)), key=lambda i: ranges[i]):
        start, end = ranges[position]
        last = blocks[-1] if blocks else None
        if last is not None and start - last.end <= max_gap and max(end, last.end) - last.start <= max_block:
            blocks[-1] = Block(last.start, max(end, last.end), (*last.members, position))
        else:
            blocks.append(Block(start, end, (position,)))
    return blocks
