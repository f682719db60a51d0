"""The ``gzip`` codec: DEFLATE in the gzip file format (RFC 1952).

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/

    {"name": "gzip", "configuration": {"level": 5}}

Compression goes through ``numcodecs.GZip`` so the bytes match what
zarr-python writes; Python's ``zlib`` releases the GIL while it works.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import ClassVar

import numcodecs

from ..errors import CodecError
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .registry import parse_config_int, register_codec


@dataclass(frozen=True)
class GzipCodec(BytesBytesCodec):
    """gzip with compression ``level`` 0 (stored) to 9 (smallest)."""

    name: ClassVar[str] = "gzip"
    level: int = 5

    def __post_init__(self) -> None:
        parse_config_int(self.name, "level", self.level, 0, 9)

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return numcodecs.GZip(self.level).encode(data)

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        try:
            return numcodecs.GZip(self.level).decode(data)
        except (OSError, EOFError, zlib.error) as exc:
            size = memoryview(data).nbytes
            raise CodecError(f"codec 'gzip': corrupt or truncated gzip data ({size} bytes): {exc}") from exc


register_codec(GzipCodec)
