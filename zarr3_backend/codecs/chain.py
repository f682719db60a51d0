"""CodecChain: an ordered, validated list of codecs, usable as an array -> bytes codec.

The chain folds each codec's effect on the chunk spec once per chunk shape,
encodes and decodes whole chunks, and plans partial reads. A partial read is
"sans-I/O": `CodecChain.plan_read()` is a generator that yields lists of
byte ranges to fetch and finally returns `DecodeJob` objects; the
caller performs all I/O (batched across chunks) and runs the jobs on its
thread pool. Codecs with a smarter partial read (sharding) override
``plan_read``; array code never asks which codec it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ..core.buffers import Value
from ..core.indexing import ChunkSelection
from ..core.metadata import ArrayMetadata
from ..errors import MetadataError, Zarr3Error, with_location
from ..runtime.scratch import borrow, in_use
from .base import ArrayArrayCodec, ArrayBytesCodec, Buffer, BytesBytesCodec, ChunkSpec, Codec, update_whole
from .read_plan import ReadContext, ReadPlan, SubRead, whole_chunk_plan
from .registry import codec_from_json

#: What `CodecChain.decode_into` runs for one chunk spec: the array -> bytes codec's input spec, the
#: outer bytes -> bytes decoders with their size limits, and the innermost one (which may decode in place).
_StepsInto = tuple[
    ChunkSpec, tuple[tuple[BytesBytesCodec, int | None], ...], tuple[BytesBytesCodec, int | None] | None
]


def array_chain(metadata: ArrayMetadata, where: str) -> CodecChain:
    """The codec chain of the array ``metadata`` describes (Zarr v3 or v2), checked against each chunk shape.

    Unknown, unsafe or misconfigured codecs, and chains that do not fit the
    data type, raise a `Zarr3Error` whose message starts with ``where``.
    """
    spec = ChunkSpec(metadata.chunk_shape, metadata.data_type, metadata.fill_value)
    try:
        chain = CodecChain.from_json(list(metadata.codecs), f"{where}: codecs")
        for shape in metadata.chunk_grid.distinct_shapes():  # every shard shape of a rectilinear grid
            chain.validate(spec.with_shape(shape))
    except Zarr3Error as exc:
        raise with_location(exc, where) from exc
    return chain


class CodecChain:
    """``array -> array``* then one ``array -> bytes`` then ``bytes -> bytes``* codecs.

    >>> from zarr3_backend.codecs.chain import CodecChain
    >>> chain = CodecChain.from_json([{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"])
    >>> [c["name"] for c in chain.to_json()]
    ['bytes', 'crc32c']
    """

    def __init__(self, codecs: Sequence[Codec], where: str = "codecs") -> None:
        self.codecs = tuple(codecs)
        self.array_array, self.array_bytes, self.bytes_bytes = _split_by_kind(self.codecs, where)
        self._spec_cache: dict[tuple[Any, ...], tuple[list[ChunkSpec], ChunkSpec]] = {}
        self._limit_cache: dict[tuple[Any, ...], list[int | None]] = {}
        self._into_cache: dict[tuple[Any, ...], _StepsInto | None] = {}

    @classmethod
    def from_json(cls, items: object, where: str = "codecs") -> CodecChain:
        """Build from a JSON codec list; codecs marked ``must_understand: false`` that we lack are skipped."""
        if not isinstance(items, list | tuple):
            raise MetadataError(f"{where}: expected a list of codecs, got {items!r}")
        codecs = [codec_from_json(item) for item in items]
        return cls([c for c in codecs if c is not None], where)

    def to_json(self) -> list[dict[str, Any]]:
        return [codec.to_json() for codec in self.codecs]

    def __repr__(self) -> str:
        return f"CodecChain({[c.name for c in self.codecs]})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CodecChain) and self.codecs == other.codecs

    def __hash__(self) -> int:
        return hash(self.codecs)

    def __getstate__(self) -> dict[str, Any]:
        return {"codecs": self.codecs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(vars(CodecChain(state["codecs"])))

    # -- specs -----------------------------------------------------------
    def _specs(self, spec: ChunkSpec) -> tuple[list[ChunkSpec], ChunkSpec]:
        """Input specs of the array->array codecs, and of the array->bytes codec.

        Cached per chunk shape and data type (a chain serves one array, so
        the fill value does not vary).
        """
        key = (spec.shape, spec.data_type.name)
        cached = self._spec_cache.get(key)
        if cached is None:
            inputs = []
            for codec in self.array_array:
                inputs.append(spec)
                spec = codec.resolve_spec(spec)
            cached = self._spec_cache[key] = (inputs, spec)
        return cached

    def _limits(self, spec: ChunkSpec) -> list[int | None]:
        """The most each bytes -> bytes codec may decode to (``None``: unbounded), in chain order."""
        key = (spec.shape, spec.data_type.name)
        cached = self._limit_cache.get(key)
        if cached is None:
            _, bytes_spec = self._specs(spec)
            size = self.array_bytes.max_encoded_size(bytes_spec.size * bytes_spec.dtype.itemsize, bytes_spec)
            cached = []
            for bytes_codec in self.bytes_bytes:
                cached.append(size)
                size = None if size is None else bytes_codec.max_encoded_size(size, bytes_spec)
            self._limit_cache[key] = cached
        return cached

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        """Upper bound on a chunk's encoded size (``None`` if some codec has none)."""
        inputs, bytes_spec = self._specs(spec)
        size = input_size
        for array_codec, codec_spec in zip(self.array_array, inputs):
            bound = array_codec.max_encoded_size(size, codec_spec)
            if bound is None:
                return None
            size = bound
        encoded = self.array_bytes.max_encoded_size(size, bytes_spec)
        for bytes_codec in self.bytes_bytes:
            if encoded is None:
                return None
            encoded = bytes_codec.max_encoded_size(encoded, bytes_spec)
        return encoded

    def detects_corruption(self) -> bool:
        """Whether a changed byte of an encoded chunk makes decoding raise (see `Codec.detects_corruption()`).

        >>> CodecChain.from_json([{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"]).detects_corruption()
        True
        """
        return self.array_bytes.detects_corruption() or any(c.detects_corruption() for c in self.bytes_bytes)

    def evolve(self, spec: ChunkSpec) -> CodecChain:
        """Fill automatic parameters for ``spec`` (recorded in metadata)."""
        evolved: list[Codec] = []
        for array_codec in self.array_array:
            evolved_codec = array_codec.evolve(spec)
            evolved.append(evolved_codec)
            spec = evolved_codec.resolve_spec(spec)
        evolved.append(self.array_bytes.evolve(spec))
        evolved.extend(bytes_codec.evolve(spec) for bytes_codec in self.bytes_bytes)
        return CodecChain(evolved)

    def validate(self, spec: ChunkSpec) -> None:
        """Raise if any codec cannot handle the chunk representation it receives."""
        inputs, bytes_spec = self._specs(spec)
        for array_codec, codec_spec in zip(self.array_array, inputs):
            array_codec.validate(codec_spec)
        self.array_bytes.validate(bytes_spec)
        for bytes_codec in self.bytes_bytes:
            bytes_codec.validate(bytes_spec)

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        """Encoded size of a chunk for fixed-size chains (raises otherwise)."""
        inputs, bytes_spec = self._specs(spec)
        for array_codec, codec_spec in zip(self.array_array, inputs):
            input_size = array_codec.compute_encoded_size(input_size, codec_spec)
        input_size = self.array_bytes.compute_encoded_size(input_size, bytes_spec)
        for bytes_codec in self.bytes_bytes:
            input_size = bytes_codec.compute_encoded_size(input_size, bytes_spec)
        return input_size

    # -- whole chunks ----------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        """Encode an array of ``spec.shape`` to bytes."""
        inputs, bytes_spec = self._specs(spec)
        for array_codec, codec_spec in zip(self.array_array, inputs):
            chunk = array_codec.encode(chunk, codec_spec)
        if (
            self.bytes_bytes
            and not chunk.flags.c_contiguous
            and self.array_bytes.is_native_layout(bytes_spec)
            and not in_use()  # inside another borrow (a partial write's chunk): the bytes codec copies instead
        ):
            with borrow(chunk.shape, chunk.dtype) as contiguous:
                np.copyto(contiguous, chunk)
                return _owned(self._encode_bytes(contiguous, bytes_spec), contiguous)
        return self._encode_bytes(chunk, bytes_spec)

    def encode_pieces(self, chunk: np.ndarray, spec: ChunkSpec) -> Value:
        """`encode`, as the array -> bytes codec's pieces when no bytes -> bytes codec follows it."""
        if self.bytes_bytes:
            return self.encode(chunk, spec)
        inputs, bytes_spec = self._specs(spec)
        for array_codec, codec_spec in zip(self.array_array, inputs):
            chunk = array_codec.encode(chunk, codec_spec)
        return self.array_bytes.encode_pieces(chunk, bytes_spec)

    def _encode_bytes(self, chunk: np.ndarray, bytes_spec: ChunkSpec) -> Buffer:
        data = self.array_bytes.encode(chunk, bytes_spec)
        for bytes_codec in self.bytes_bytes:
            data = bytes_codec.encode(data, bytes_spec)
        return data

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        """Decode bytes to an array of ``spec.shape`` (possibly a read-only view)."""
        inputs, bytes_spec = self._specs(spec)
        for bytes_codec, limit in zip(reversed(self.bytes_bytes), reversed(self._limits(spec))):
            data = bytes_codec.decode_bounded(data, bytes_spec, limit)
        chunk = self.array_bytes.decode(data, bytes_spec)
        for array_codec, codec_spec in zip(reversed(self.array_array), reversed(inputs)):
            chunk = array_codec.decode(chunk, codec_spec)
        return chunk

    def decode_into(self, data: Buffer, spec: ChunkSpec, out: np.ndarray) -> None:
        """Decode into ``out`` (C-contiguous, ``spec.shape``, ``spec.dtype``), without temporaries where possible.

        When the array -> bytes step is a plain memory layout, the last
        bytes -> bytes decoder (e.g. blosc, zstd) writes straight into ``out``.
        """
        steps = self._steps_into(spec)
        if steps is None:
            out[...] = self.decode(data, spec)
            return
        bytes_spec, outer, innermost = steps
        for bytes_codec, limit in outer:
            data = bytes_codec.decode_bounded(data, bytes_spec, limit)
        if innermost is not None:
            codec, limit = innermost
            if codec.decode_into(data, bytes_spec, out.reshape(-1).view(np.uint8).data):
                return
            data = codec.decode_bounded(data, bytes_spec, limit)
        self.array_bytes.decode_into(data, bytes_spec, out)

    def _steps_into(self, spec: ChunkSpec) -> _StepsInto | None:
        """`decode_into`'s steps for chunks of ``spec``: the array -> bytes input spec, the bytes -> bytes
        decoders but the first (in decode order, with their limits) and the first one; ``None`` unless the
        decoded bytes are the chunk's C-order memory (no array -> array codec, a plain layout).

        Cached per chunk shape and data type, like `_specs` (asked once per chunk decoded).
        """
        key = (spec.shape, spec.data_type.name)
        if key not in self._into_cache:
            _, bytes_spec = self._specs(spec)
            steps = None
            if self._decodes_past_array_codecs() and self.array_bytes.is_native_layout(bytes_spec):
                pairs = list(zip(self.bytes_bytes, self._limits(spec)))
                steps = (bytes_spec, tuple(reversed(pairs[1:])), pairs[0] if pairs else None)
            self._into_cache[key] = steps
        return self._into_cache[key]

    # -- partial reads ---------------------------------------------------
    def _decodes_past_array_codecs(self) -> bool:
        """Whether decoding may skip the array -> array codecs: there are none, or each decodes as the identity."""
        return not self.array_array or all(codec.decodes_as_identity() for codec in self.array_array)

    def read_unit(self, spec: ChunkSpec) -> tuple[int, ...] | None:
        """Shape of independently readable pieces of a chunk; ``None``: only the whole chunk."""
        if self.bytes_bytes or not self._decodes_past_array_codecs():
            return None
        return self.array_bytes.read_unit(spec)

    def plan_read(self, spec: ChunkSpec, reads: list[SubRead], ctx: ReadContext) -> ReadPlan:
        """Sans-I/O read of ``reads`` from the chunk stored under ``ctx.key`` (the codec's own plan, not a wrapper
        of it, also behind array -> array codecs that decode as the identity)."""
        if not self.bytes_bytes and self._decodes_past_array_codecs():
            return self.array_bytes.plan_read(spec, reads, ctx)
        return whole_chunk_plan(self, spec, reads, ctx)

    def update(
        self, existing: Buffer | None, spec: ChunkSpec, piece: ChunkSelection, value: np.ndarray
    ) -> Value | None:
        """Write ``value`` into part of a stored chunk (see `ArrayBytesCodec.update()`)."""
        if not (self.array_array or self.bytes_bytes):
            return self.array_bytes.update(existing, spec, piece, value)
        return update_whole(self, existing, spec, piece, value)


def _owned(data: Buffer, scratch: np.ndarray) -> Buffer:
    """``data``, copied if it may be a view of ``scratch`` (compressors return new buffers: no copy)."""
    return bytes(data) if np.may_share_memory(np.frombuffer(data, np.uint8), scratch) else data


def _split_by_kind(
    codecs: tuple[Codec, ...], where: str
) -> tuple[tuple[ArrayArrayCodec, ...], ArrayBytesCodec, tuple[BytesBytesCodec, ...]]:
    kinds = [codec.kind for codec in codecs]
    n_aa = next((i for i, k in enumerate(kinds) if k != "array_to_array"), len(kinds))
    rest = kinds[n_aa:]
    if not rest or rest[0] != "array_to_bytes" or any(k != "bytes_to_bytes" for k in rest[1:]):
        described = ", ".join(f"{c.name} ({c.kind.replace('_to_', '->')})" for c in codecs)
        raise MetadataError(
            f"{where}: expected array->array codecs, then exactly one array->bytes codec, "
            f"then bytes->bytes codecs; got [{described}]"
        )
    return (  # the kinds checked above are the classes'
        cast(tuple[ArrayArrayCodec, ...], codecs[:n_aa]),
        cast(ArrayBytesCodec, codecs[n_aa]),
        cast(tuple[BytesBytesCodec, ...], codecs[n_aa + 1 :]),
    )
