"""The three codec kinds and the chunk spec threaded through a codec chain.

A codec is a frozen value object built from its JSON ``configuration`` by
``from_json`` and turned back into JSON by ``to_json``. Codecs are
synchronous and pure: they never touch a store, an event loop or global
state. Every codec obeys ``decode(encode(x, spec), spec) == x``.

Codec kinds (spec: core, "Codecs"):

* `ArrayArrayCodec` - ndarray -> ndarray (e.g. ``transpose``)
* `ArrayBytesCodec` - ndarray -> bytes (e.g. ``bytes``, ``sharding_indexed``)
* `BytesBytesCodec` - bytes -> bytes (e.g. ``gzip``, ``blosc``, ``crc32c``)

An array -> bytes codec and a whole `CodecChain`
present the same surface to arrays and to the sharding codec's inner
chunks: the `ChunkCodec` protocol.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from ..core.buffers import Buffer as Buffer
from ..core.buffers import Value
from ..core.dtypes import is_fill
from ..core.indexing import ChunkSelection
from ..errors import CodecError, MetadataError
from ..runtime.scratch import borrow
from .read_plan import ChunkDecoder, ReadContext, ReadPlan, SubRead, whole_chunk_plan
from .spec import ChunkSpec as ChunkSpec

CodecKind = Literal["array_to_array", "array_to_bytes", "bytes_to_bytes"]


class Codec(ABC):
    """Behaviour shared by every codec kind.

    Subclasses are frozen dataclasses whose fields are the codec's JSON
    ``configuration`` members, with a class-level ``name`` equal to the
    spec's codec name.
    """

    name: ClassVar[str]
    kind: ClassVar[CodecKind]

    @classmethod
    def from_json(cls, configuration: dict[str, Any]) -> Codec:
        """Build the codec from its JSON ``configuration`` object, validating it."""
        try:
            return cls(**configuration)
        except TypeError as exc:
            raise MetadataError(
                f"codec {cls.name!r}: invalid configuration {configuration!r}: {exc}"
            ) from exc

    def to_json(self) -> dict[str, Any]:
        """The codec as a JSON extension object ``{"name", "configuration"}``."""
        return {"name": self.name, "configuration": self._configuration()}

    def _configuration(self) -> dict[str, Any]:
        return dict(vars(self))

    def evolve(self, spec: ChunkSpec) -> Codec:
        """Return a codec with automatic parameters filled in for ``spec``.

        Called once when an array is created so that choices the spec says
        must be recorded (e.g. blosc ``typesize``) end up in the metadata.
        """
        return self

    def validate(self, spec: ChunkSpec) -> None:  # noqa: B027 (optional hook; the default accepts every spec)
        """Raise `CodecError` if this codec cannot handle ``spec``."""

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        """The spec of the encoded representation (array codecs change it)."""
        return spec

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        """Encoded byte size for a decoded byte size, for fixed-size codecs."""
        raise CodecError(f"codec {self.name!r} produces variable-sized output")

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        """An upper bound on the encoded size of ``input_size`` decoded bytes; ``None`` if there is none.

        Decoders of later codecs use it as the most they may produce. The
        default is `compute_encoded_size()` for fixed-size codecs, else ``None``;
        compressors override it with their worst-case expansion.
        """
        try:
            return self.compute_encoded_size(input_size, spec)
        except CodecError:
            return None

    def detects_corruption(self) -> bool:
        """Whether decoding this codec's output raises when any of its bytes changed (it carries a checksum).

        A checksum covers everything stored after it too: later codecs' bytes
        decode either to an error or to changed input for it. Default ``False``.
        """
        return False


class ArrayArrayCodec(Codec):
    """ndarray -> ndarray. ``decode(encode(a, spec), spec) == a``."""

    kind: ClassVar[CodecKind] = "array_to_array"

    @abstractmethod
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        """Encode ``chunk`` (shape ``spec.shape``)."""

    @abstractmethod
    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        """Decode an encoded chunk back to shape ``spec.shape``."""

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        return input_size

    def decodes_as_identity(self) -> bool:
        """Whether ``decode(a, spec)`` is ``a`` and ``resolve_spec(spec)`` is ``spec`` (e.g. ``bitround``).

        A chain then plans partial reads past this codec, straight to its
        array -> bytes codec (a shard's inner chunks). Default ``False``.
        """
        return False


class ArrayBytesCodec(Codec):
    """ndarray -> bytes. ``decode(encode(a, spec), spec) == a``."""

    kind: ClassVar[CodecKind] = "array_to_bytes"

    @abstractmethod
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        """Serialise ``chunk`` (shape ``spec.shape``, dtype ``spec.dtype``)."""

    def encode_pieces(self, chunk: np.ndarray, spec: ChunkSpec) -> Value:
        """`encode`, as consecutive pieces where the codec makes them (a shard: its inner chunks and
        index), for a store to write without joining them. Default: the one buffer of `encode`."""
        return self.encode(chunk, spec)

    @abstractmethod
    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        """Deserialise to an array of ``spec.shape`` and ``spec.dtype``.

        The result may be a read-only view of ``data``.
        """

    def decode_into(self, data: Buffer, spec: ChunkSpec, out: np.ndarray) -> None:
        """Decode into ``out`` (C-contiguous, ``spec.shape`` and ``spec.dtype``)."""
        out[...] = self.decode(data, spec)

    def is_native_layout(self, spec: ChunkSpec) -> bool:
        """Whether the encoded bytes are exactly the C-order memory of the decoded array."""
        return False

    def read_unit(self, spec: ChunkSpec) -> tuple[int, ...] | None:
        """Shape of independently readable pieces of a chunk; ``None``: only the whole chunk."""
        return None

    def plan_read(self, spec: ChunkSpec, reads: list[SubRead], ctx: ReadContext) -> ReadPlan:
        """Sans-I/O partial read (see `zarr3_backend.codecs.read_plan`); default: whole value."""
        return (yield from whole_chunk_plan(self, spec, reads, ctx))

    def update(
        self, existing: Buffer | None, spec: ChunkSpec, piece: ChunkSelection, value: np.ndarray
    ) -> Value | None:
        """Write ``value`` into part of a stored chunk; return the new value (``None``: all fill).

        ``existing`` is the stored value (``None`` if absent); ``piece`` is an
        `ChunkSelection` within the chunk and
        ``value`` has the shape of ``chunk[piece.chunk_selection]``. The
        default decodes, assigns and re-encodes the whole chunk.
        """
        return update_whole(self, existing, spec, piece, value)


class BytesBytesCodec(Codec):
    """bytes -> bytes. ``decode(encode(b, spec), spec) == b``."""

    kind: ClassVar[CodecKind] = "bytes_to_bytes"

    @abstractmethod
    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        """Encode a byte string."""

    @abstractmethod
    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        """Decode a byte string."""

    def decode_bounded(self, data: Buffer, spec: ChunkSpec, max_size: int | None) -> Buffer:
        """`decode()`, refusing output of more than ``max_size`` bytes with `CodecError`.

        ``max_size`` is the most the chunk spec allows at this point of the
        chain (``None``: no bound is known). The default decodes and then
        checks; compressors override it to stop before allocating more
        than ``max_size`` (a small hostile chunk must not inflate to gigabytes).
        """
        decoded = self.decode(data, spec)
        if max_size is not None and memoryview(decoded).nbytes > max_size:
            raise decoded_too_large(self.name, memoryview(decoded).nbytes, max_size)
        return decoded

    def decode_into(self, data: Buffer, spec: ChunkSpec, out: memoryview) -> bool:
        """Decode straight into ``out`` (exactly the decoded size) if supported.

        Returns ``True`` when ``out`` now holds the decoded bytes, ``False``
        when this codec cannot decode in place (the caller then uses
        `decode()`). Overridden by codecs that can avoid a temporary.
        """
        return False


def decoded_too_large(codec: str, size: int | str, max_size: int) -> CodecError:
    """The error for a chunk that decodes (or claims to decode) to more bytes than its spec allows."""
    return CodecError(
        f"codec {codec!r}: the chunk decodes to {size} bytes, but its chunk spec allows at most {max_size}; "
        "refusing to decode it (corrupt or hostile data)"
    )


@runtime_checkable
class ChunkCodec(ChunkDecoder, Protocol):
    """Encodes, decodes, partially reads and partially writes one stored chunk.

    Every `ArrayBytesCodec` and every
    `CodecChain` is one: an array holds
    its chain as a ``ChunkCodec``, and the sharding codec encodes its inner
    chunks through one. Laws: ``decode(encode(a, spec), spec) == a``;
    `update()` of a whole chunk equals `encode()`; the jobs of
    `plan_read()` reproduce ``decode(...)[selection]``.
    """

    def validate(self, spec: ChunkSpec) -> None:
        """Raise `CodecError` if the chunks of ``spec`` cannot be handled."""
        ...

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        """Encoded byte size for a decoded byte size; `CodecError` if it varies."""
        ...

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        """An upper bound on the encoded size of ``input_size`` decoded bytes; ``None`` if there is none."""
        ...

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        """Serialise ``chunk`` (shape ``spec.shape``, dtype ``spec.dtype``)."""
        ...

    def read_unit(self, spec: ChunkSpec) -> tuple[int, ...] | None:
        """Shape of independently readable pieces of a chunk; ``None``: only the whole chunk."""
        ...

    def plan_read(self, spec: ChunkSpec, reads: list[SubRead], ctx: ReadContext) -> ReadPlan:
        """Sans-I/O read of ``reads`` from the chunk stored under ``ctx.key``."""
        ...

    def update(
        self, existing: Buffer | None, spec: ChunkSpec, piece: ChunkSelection, value: np.ndarray
    ) -> Value | None:
        """Write ``value`` into ``piece`` of a stored chunk; the new value, ``None`` if it is all fill."""
        ...


def update_whole(
    codec: ChunkCodec, existing: Buffer | None, spec: ChunkSpec, piece: ChunkSelection, value: np.ndarray
) -> Buffer | None:
    """Decode ``existing`` (or start from the fill value), assign ``value`` and re-encode.

    A write covering the whole chunk encodes ``value`` as it is. The result
    never shares memory with ``value`` or with a scratch buffer.
    """
    if piece.is_complete and value.shape == spec.shape:
        return encoded_copy(codec, value, spec)
    if existing is None:  # e.g. an edge chunk: fill the thread's scratch array, no fresh allocation
        with borrow(spec.shape, spec.dtype) as chunk:
            chunk[...] = spec.fill_value
            chunk[piece.chunk_selection] = value
            return encoded_copy(codec, chunk, spec)
    chunk = np.array(codec.decode(existing, spec))
    chunk[piece.chunk_selection] = value
    return encoded_copy(codec, chunk, spec)


def encoded_copy(codec: ChunkCodec, chunk: np.ndarray, spec: ChunkSpec) -> Buffer | None:
    """``chunk`` encoded (``None`` if it is all fill), as bytes that are no view of ``chunk``."""
    if is_fill(chunk, spec.fill_value):
        return None
    encoded = codec.encode(chunk, spec)
    return bytes(encoded) if isinstance(encoded, memoryview) else encoded
