"""The ``gzip`` codec: DEFLATE in the gzip file format (RFC 1952).

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/

    {"name": "gzip", "configuration": {"level": 5}}

Compression goes through ``numcodecs.GZip`` so the bytes match what
zarr-python writes; Python's ``zlib`` releases the GIL while it works.
Decoding streams with a maximum output size (`inflate_bounded()`), so a
small hostile chunk cannot inflate to more than its chunk spec allows.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import ClassVar, cast

import numcodecs

from ..errors import CodecError
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .bounded import decompress_stream_bounded
from .registry import parse_config_int, register_codec


@dataclass(frozen=True)
class GzipCodec(BytesBytesCodec):
    """gzip with compression ``level`` 0 (stored) to 9 (smallest)."""

    name: ClassVar[str] = "gzip"
    level: int = 5

    def __post_init__(self) -> None:
        parse_config_int(self.name, "level", self.level, 0, 9)

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return cast(Buffer, numcodecs.GZip(self.level).encode(data))

    def detects_corruption(self) -> bool:
        """True: gzip's trailer holds a CRC-32 of the decompressed data, checked on decode."""
        return True

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        try:
            return cast(Buffer, numcodecs.GZip(self.level).decode(data))
        except (OSError, EOFError, zlib.error) as exc:
            size = memoryview(data).nbytes
            raise CodecError(f"codec 'gzip': corrupt or truncated gzip data ({size} bytes): {exc}") from exc

    def decode_bounded(self, data: Buffer, spec: ChunkSpec, max_size: int | None) -> Buffer:
        if max_size is None:
            return self.decode(data, spec)
        return inflate_bounded(data, max_size, GZIP_WBITS, self.name)

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        return deflate_bound(input_size) + GZIP_FRAMING


#: ``wbits`` for gzip framing (zlib framing is ``zlib.MAX_WBITS``)
GZIP_WBITS = 16 + zlib.MAX_WBITS
GZIP_FRAMING = 18  # header and trailer around the deflate stream


def deflate_bound(size: int) -> int:
    """zlib's ``compressBound``: the most deflate can expand ``size`` bytes (plus zlib framing)."""
    return size + (size >> 12) + (size >> 14) + (size >> 25) + 13


def inflate_bounded(data: Buffer, max_size: int, wbits: int, codec: str) -> bytes:
    """Inflate gzip (concatenated members allowed) or zlib data into at most ``max_size`` bytes.

    >>> inflate_bounded(zlib.compress(b"abc"), 3, zlib.MAX_WBITS, "zlib")
    b'abc'
    """
    return decompress_stream_bounded(lambda: zlib.decompressobj(wbits), data, max_size, codec, (zlib.error,))


register_codec(GzipCodec)
