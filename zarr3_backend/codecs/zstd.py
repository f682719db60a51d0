"""The ``zstd`` codec: Zstandard compression (zarr-python's default compressor).

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/zstd

    {"name": "zstd", "configuration": {"level": 0, "checksum": false}}

``level`` 0 means zstd's default (3); negative levels are faster.
``checksum`` adds zstd's own content checksum to each frame. Compression
uses ``numcodecs.zstd``, which releases the GIL. :meth:`ZstdCodec.decode_into`
decompresses straight into the caller's buffer when the frame header records
a content size equal to the buffer size (zarr-python and numcodecs always
record it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numcodecs.zstd

from ..errors import CodecError, MetadataError
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .registry import parse_config_int, register_codec

_MAGIC = b"\x28\xb5\x2f\xfd"
_FCS_SIZES = (0, 2, 4, 8)  # by Frame_Content_Size_flag; flag 0 means 1 byte if single-segment
_DICT_ID_SIZES = (0, 1, 2, 4)


def frame_content_size(data: Buffer) -> int | None:
    """Decompressed size recorded in a zstd frame header, or ``None`` if absent.

    >>> frame_content_size(numcodecs.zstd.compress(b"abc" * 100))
    300
    """
    header = bytes(memoryview(data).cast("B")[:18])
    if len(header) < 6 or header[:4] != _MAGIC:
        return None
    descriptor = header[4]
    single_segment = bool(descriptor & 0x20)
    fcs_flag = descriptor >> 6
    size = _FCS_SIZES[fcs_flag] or (1 if single_segment else 0)
    start = 5 + (0 if single_segment else 1) + _DICT_ID_SIZES[descriptor & 0x03]
    if size == 0 or len(header) < start + size:
        return None
    value = int.from_bytes(header[start : start + size], "little")
    return value + 256 if size == 2 else value


@dataclass(frozen=True)
class ZstdCodec(BytesBytesCodec):
    """Zstandard at ``level`` (-131072..22, 0 = default), optional frame ``checksum``."""

    name: ClassVar[str] = "zstd"
    level: int = 0
    checksum: bool = False

    def __post_init__(self) -> None:
        parse_config_int(self.name, "level", self.level, -131072, 22)
        if not isinstance(self.checksum, bool):
            raise MetadataError(f"codec 'zstd': configuration.checksum: expected true or false, got {self.checksum!r}")

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return numcodecs.zstd.compress(data, self.level, self.checksum)

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        try:
            return numcodecs.zstd.decompress(data)
        except (RuntimeError, ValueError) as exc:
            raise CodecError(_corrupt(data, exc)) from exc

    def decode_into(self, data: Buffer, spec: ChunkSpec, out: memoryview) -> bool:
        """Decompress into ``out`` if the frame header says it has ``out``'s size."""
        if frame_content_size(data) != out.nbytes:
            return False
        try:
            numcodecs.zstd.decompress(data, out)
        except (RuntimeError, ValueError) as exc:
            raise CodecError(_corrupt(data, exc)) from exc
        return True


def _corrupt(data: Buffer, exc: Exception) -> str:
    return f"codec 'zstd': corrupt or truncated zstd data ({memoryview(data).nbytes} bytes): {exc}"


register_codec(ZstdCodec)
