"""The three codec kinds and the chunk spec threaded through a codec chain.

A codec is a frozen value object built from its JSON ``configuration`` by
``from_json`` and turned back into JSON by ``to_json``. Codecs are
synchronous and pure: they never touch a store, an event loop or global
state. Every codec obeys ``decode(encode(x, spec), spec) == x``.

Codec kinds (spec: core, "Codecs"):

* :class:`ArrayArrayCodec` - ndarray -> ndarray (e.g. ``transpose``)
* :class:`ArrayBytesCodec` - ndarray -> bytes (e.g. ``bytes``, ``sharding_indexed``)
* :class:`BytesBytesCodec` - bytes -> bytes (e.g. ``gzip``, ``blosc``, ``crc32c``)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from ..dtypes import is_fill
from ..errors import CodecError, MetadataError
from ..executor import thread_buffer
from ..read_plan import ReadContext, ReadPlan, SubRead, whole_chunk_plan
from ..store.base import Value

if TYPE_CHECKING:
    from ..dtypes import DataType

CodecKind = Literal["array_to_array", "array_to_bytes", "bytes_to_bytes"]
Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True)
class ChunkSpec:
    """What a codec sees: the shape, data type and fill value of one chunk.

    ``fill_value`` is a numpy scalar of ``data_type.numpy``.
    """

    shape: tuple[int, ...]
    data_type: DataType
    fill_value: Any

    @property
    def dtype(self) -> np.dtype:
        """The in-memory (native byte order) numpy dtype of the chunk."""
        return self.data_type.numpy

    @property
    def size(self) -> int:
        """Number of elements in the chunk."""
        return int(np.prod(self.shape, dtype=np.int64))

    def with_shape(self, shape: tuple[int, ...]) -> ChunkSpec:
        """A copy of this spec with another chunk shape."""
        return replace(self, shape=tuple(shape))


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
            raise MetadataError(f"codec {cls.name!r}: invalid configuration {configuration!r}: {exc}") from exc

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

    def validate(self, spec: ChunkSpec) -> None:
        """Raise :class:`CodecError` if this codec cannot handle ``spec``."""

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        """The spec of the encoded representation (array codecs change it)."""
        return spec

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        """Encoded byte size for a decoded byte size, for fixed-size codecs."""
        raise CodecError(f"codec {self.name!r} produces variable-sized output")

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        """An upper bound on the encoded size of ``input_size`` decoded bytes; ``None`` if there is none.

        Decoders of later codecs use it as the most they may produce. The
        default is :meth:`compute_encoded_size` for fixed-size codecs, else ``None``;
        compressors override it with their worst-case expansion.
        """
        try:
            return self.compute_encoded_size(input_size, spec)
        except CodecError:
            return None


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


class ArrayBytesCodec(Codec):
    """ndarray -> bytes. ``decode(encode(a, spec), spec) == a``."""

    kind: ClassVar[CodecKind] = "array_to_bytes"

    @abstractmethod
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        """Serialise ``chunk`` (shape ``spec.shape``, dtype ``spec.dtype``)."""

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
        """Sans-I/O partial read (see :mod:`zarr3_backend.read_plan`); default: whole value."""
        return (yield from whole_chunk_plan(self, spec, reads, ctx))

    def update(self, existing: Buffer | None, spec: ChunkSpec, piece: Any, value: np.ndarray) -> Value | None:
        """Write ``value`` into part of a stored chunk; return the new value (``None``: all fill).

        ``existing`` is the stored value (``None`` if absent); ``piece`` is an
        :class:`~zarr3_backend.indexing.ChunkSelection` within the chunk and
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
        """:meth:`decode`, refusing output of more than ``max_size`` bytes with :class:`CodecError`.

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
        :meth:`decode`). Overridden by codecs that can avoid a temporary.
        """
        return False


def decoded_too_large(codec: str, size: int | str, max_size: int) -> CodecError:
    """The error for a chunk that decodes (or claims to decode) to more bytes than its spec allows."""
    return CodecError(
        f"codec {codec!r}: the chunk decodes to {size} bytes, but its chunk spec allows at most {max_size}; "
        "refusing to decode it (corrupt or hostile data)"
    )


def update_whole(codec: Any, existing: Buffer | None, spec: ChunkSpec, piece: Any, value: np.ndarray) -> Buffer | None:
    """Decode ``existing`` (or start from the fill value), assign ``value`` and re-encode.

    A write covering the whole chunk encodes ``value`` as it is.
    """
    if piece.is_complete and value.shape == spec.shape:
        chunk = value
    elif existing is None:  # e.g. an edge chunk: fill a reused per-thread buffer, no fresh allocation
        chunk = thread_buffer(spec.shape, spec.dtype)
        chunk[...] = spec.fill_value
        chunk[piece.chunk_selection] = value
    else:
        chunk = np.array(codec.decode(existing, spec))
        chunk[piece.chunk_selection] = value
    if is_fill(chunk, spec.fill_value):
        return None
    encoded = codec.encode(chunk, spec)
    return bytes(encoded) if isinstance(encoded, memoryview) else encoded  # never a view of the buffer
