"""The ``conditional`` codec: bytes -> bytes codecs applied or skipped chunk by chunk, as a bitmask header says.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/conditional

    {"name": "conditional", "configuration": {"codecs": [{"name": "zstd", "configuration": {"level": 5}}]}}

Each chunk starts with ``header_bits / 8`` bytes (default: the fewest whole
bytes for one bit per codec); bit ``i`` (little-endian bit order) says
whether ``codecs[i]`` was applied. Decoding undoes the applied codecs in
reverse order; a reserved bit that is set is a `CodecError`. When we
write, a codec is applied when its output is no larger than its input
(the spec's ``compress_if_smaller`` heuristic, keeping size-neutral
filters such as shuffle). Conditional codecs may nest, but no deeper than
`MAX_DEPTH` levels: deeper nesting is refused with `CodecError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, cast

from ..errors import CodecError, MetadataError
from .base import Buffer, BytesBytesCodec, ChunkSpec, decoded_too_large
from .registry import codec_from_json, parse_config_int, register_codec

#: The most conditional codecs one chunk may pass through, nested in one another.
MAX_DEPTH = 4


@dataclass(frozen=True)
class ConditionalCodec(BytesBytesCodec):
    """Apply each of ``codecs`` where it does not grow the chunk, recording which in a bitmask header."""

    name: ClassVar[str] = "conditional"
    codecs: tuple[BytesBytesCodec, ...]
    header_bits: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.codecs, list | tuple):
            raise MetadataError(
                f"codec 'conditional': configuration.codecs: expected a list, got {self.codecs!r}"
            )
        object.__setattr__(self, "codecs", tuple(_bytes_codec(c) for c in self.codecs))
        if self.header_bits is not None:
            parse_config_int(self.name, "header_bits", self.header_bits, len(self.codecs))
            if self.header_bits % 8:
                raise MetadataError(
                    f"codec 'conditional': configuration.header_bits must be a multiple of 8, got {self.header_bits}"
                )
        if self.depth > MAX_DEPTH:
            raise CodecError(
                f"codec 'conditional': conditional codecs are nested {self.depth} deep, more than the "
                f"{MAX_DEPTH} allowed; flatten the nested codecs into one conditional codec"
            )

    @property
    def depth(self) -> int:
        """How many conditional codecs deep this one goes (1: none inside it)."""
        return 1 + max((c.depth for c in self.codecs if isinstance(c, ConditionalCodec)), default=0)

    @property
    def header_size(self) -> int:
        """Bytes of the bitmask header."""
        bits = self.header_bits if self.header_bits is not None else len(self.codecs)
        return -(-bits // 8)

    def _configuration(self) -> dict[str, Any]:
        configuration: dict[str, Any] = {"codecs": [c.to_json() for c in self.codecs]}
        if self.header_bits is not None:
            configuration["header_bits"] = self.header_bits
        return configuration

    def evolve(self, spec: ChunkSpec) -> ConditionalCodec:
        return ConditionalCodec(
            tuple(cast(BytesBytesCodec, c.evolve(spec)) for c in self.codecs), self.header_bits
        )

    def validate(self, spec: ChunkSpec) -> None:
        for codec in self.codecs:
            codec.validate(spec)

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        """Any writer may have applied any of the codecs, even ones that grew the chunk."""
        size = self._input_limits(input_size, spec)[-1] if self.codecs else input_size
        last = self.codecs[-1].max_encoded_size(size, spec) if self.codecs and size is not None else size
        return None if size is None or last is None else max(size, last) + self.header_size

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        mask = 0
        for i, codec in enumerate(self.codecs):
            encoded = codec.encode(data, spec)
            if memoryview(encoded).nbytes <= memoryview(data).nbytes:
                data, mask = encoded, mask | (1 << i)
        return mask.to_bytes(self.header_size, "little") + bytes(data)

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return self.decode_bounded(data, spec, None)

    def decode_bounded(self, data: Buffer, spec: ChunkSpec, max_size: int | None) -> Buffer:
        view = memoryview(data).cast("B")
        if view.nbytes < self.header_size:
            raise CodecError(
                f"codec 'conditional': the chunk has {view.nbytes} bytes, fewer than its "
                f"{self.header_size}-byte header (truncated or corrupt data)"
            )
        mask = int.from_bytes(view[: self.header_size], "little")
        if mask >> len(self.codecs):
            raise CodecError(
                f"codec 'conditional': the chunk's header {mask:#x} sets reserved bits beyond its "
                f"{len(self.codecs)} codecs (corrupt data, or written with more codecs than configured)"
            )
        payload: Buffer = view[self.header_size :]
        limits = self._input_limits(max_size, spec)
        for i in reversed(range(len(self.codecs))):
            if mask >> i & 1:
                payload = self.codecs[i].decode_bounded(payload, spec, limits[i])
        if max_size is not None and memoryview(payload).nbytes > max_size:
            raise decoded_too_large(self.name, memoryview(payload).nbytes, max_size)
        return payload

    def _input_limits(self, max_size: int | None, spec: ChunkSpec) -> list[int | None]:
        """The most each inner codec's input may be, when the chunk decodes to at most ``max_size`` bytes."""
        limits: list[int | None] = []
        size = max_size
        for codec in self.codecs:
            limits.append(size)
            bound = None if size is None else codec.max_encoded_size(size, spec)
            size = None if bound is None or size is None else max(size, bound)
        return limits


def _bytes_codec(obj: object) -> BytesBytesCodec:
    codec = codec_from_json(obj)
    if not isinstance(codec, BytesBytesCodec):
        kind = "a codec that may be skipped" if codec is None else f"{codec.name!r} ({codec.kind})"
        raise MetadataError(
            f"codec 'conditional': configuration.codecs must all be bytes -> bytes codecs, got {kind}"
        )
    return codec


register_codec(ConditionalCodec)
