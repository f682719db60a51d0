"""The ``n5_default`` codec: N5 "default" mode blocks (a shape header, then a big-endian F-order chain).

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/n5_default

    {"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "zstd", "configuration": {"level": 0, "checksum": false}}]}}

A block is ``mode`` (uint16, 0), ``ndim`` (uint16) and the block's shape in
N5 order (uint32 each, fastest dimension first), all big endian, followed by
the inner chain's bytes for that shape. The inner chain is checked as the
spec says: a full transpose, a ``bytes`` codec (big endian, or no endian for
one-byte types), at most one bytes -> bytes codec; data types are the ones
N5 has (``u?int8..64``, ``float32``, ``float64``). Blocks smaller than the
chunk (truncated edge blocks, as Java N5 writes) are padded with the fill
value; a larger block, another mode or dimensionality is a `CodecError`.
We write whole blocks. N5 containers (``attributes.json``) are not read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import CodecError, MetadataError
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .bytes import BytesCodec
from .chain import CodecChain
from .registry import register_codec
from .transpose import TransposeCodec

#: The data types N5 can store.
N5_DATA_TYPES = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"}
)


@dataclass(frozen=True)
class N5DefaultCodec(ArrayBytesCodec):
    """Encode chunks as N5 default-mode blocks through the inner chain ``codecs``."""

    name: ClassVar[str] = "n5_default"
    codecs: CodecChain

    def __post_init__(self) -> None:
        chain = self.codecs if isinstance(self.codecs, CodecChain) else _inner_chain(self.codecs)
        object.__setattr__(self, "codecs", chain)

    def _configuration(self) -> dict[str, Any]:
        return {"codecs": self.codecs.to_json()}

    def validate(self, spec: ChunkSpec) -> None:
        if spec.data_type.name not in N5_DATA_TYPES:
            raise CodecError(
                f"codec 'n5_default': data type {spec.data_type.name!r} has no N5 equivalent; "
                f"N5 stores {', '.join(sorted(N5_DATA_TYPES))}"
            )
        order = tuple(range(len(spec.shape) - 1, -1, -1))
        if self.codecs.array_array[0].order != order:  # type: ignore[attr-defined]  # checked in _inner_chain
            raise CodecError(
                f"codec 'n5_default': the transpose codec must reverse all {len(spec.shape)} dimensions "
                f"(order {list(order)}), got {list(self.codecs.array_array[0].order)}"  # type: ignore[attr-defined]
            )
        if len(spec.shape) > 0xFFFF or any(n > 0xFFFFFFFF for n in spec.shape):
            raise CodecError(f"codec 'n5_default': chunk shape {spec.shape} does not fit an N5 block header")
        self.codecs.validate(spec)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        return _header(spec.shape) + bytes(self.codecs.encode(chunk, spec))

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        view = memoryview(data).cast("B")
        block_shape = _parse_header(view, spec.shape)
        body = view[4 + 4 * len(spec.shape) :]
        if block_shape == spec.shape:
            return self.codecs.decode(body, spec)
        block = self.codecs.decode(body, spec.with_shape(block_shape))
        out = np.full(spec.shape, spec.fill_value, spec.dtype)
        out[tuple(slice(0, n) for n in block_shape)] = block
        return out


def _header(shape: tuple[int, ...]) -> bytes:
    return struct.pack(f">HH{len(shape)}I", 0, len(shape), *reversed(shape))


def _parse_header(view: memoryview, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The block's shape (C order) from its header; `CodecError` unless it is a default-mode block within ``shape``."""
    size = 4 + 4 * len(shape)
    if view.nbytes < 4:
        raise CodecError(f"codec 'n5_default': the block has {view.nbytes} bytes, too few for an N5 header")
    mode, ndim = struct.unpack(">HH", view[:4])
    if mode != 0:
        raise CodecError(
            f"codec 'n5_default': block mode {mode} is not N5's default mode (0); only it is supported"
        )
    if ndim != len(shape) or view.nbytes < size:
        raise CodecError(
            f"codec 'n5_default': the block header says {ndim} dimensions (in {view.nbytes} bytes), but the "
            f"array's chunks have {len(shape)}"
        )
    block = tuple(reversed(struct.unpack(f">{ndim}I", view[4:size])))
    if any(b > n for b, n in zip(block, shape)):
        raise CodecError(
            f"codec 'n5_default': the block header's shape {block} is larger than the chunk shape {shape} "
            "(corrupt or hostile data)"
        )
    return block


def _inner_chain(items: object) -> CodecChain:
    where = "codec 'n5_default': configuration.codecs"
    chain = CodecChain.from_json(items, where)
    codecs = chain.codecs
    shape_ok = (
        len(codecs) in (2, 3) and isinstance(codecs[0], TransposeCodec) and isinstance(codecs[1], BytesCodec)
    )
    if not shape_ok:
        raise MetadataError(
            f"{where}: expected a transpose codec, a bytes codec and at most one bytes -> bytes codec, got "
            f"{[c.name for c in codecs]}"
        )
    if codecs[1].endian == "little":  # type: ignore[attr-defined]  # a BytesCodec, checked above
        raise MetadataError(f"{where}: the bytes codec must be big endian (N5 blocks are), got 'little'")
    return chain


register_codec(N5DefaultCodec)
