"""The ``zstd`` codec: Zstandard compression (zarr-python's default compressor).

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/zstd

    {"name": "zstd", "configuration": {"level": 0, "checksum": false}}

``level`` 0 means zstd's default (3); negative levels are faster.
``checksum`` adds zstd's own content checksum to each frame. Compression
uses ``numcodecs.zstd``, which releases the GIL. `ZstdCodec.decode_into()`
decompresses straight into the caller's buffer when the frame header records
a content size equal to the buffer size (zarr-python and numcodecs always
record it). Decoding never allocates more than the chunk spec allows
(`decompress_bounded()`): a frame whose header records a larger size is
refused before decompressing, and frames without a recorded size are
decompressed into a buffer of at most that size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, cast

import numcodecs.zstd

from ..errors import CodecError, MetadataError
from .base import Buffer, BytesBytesCodec, ChunkSpec, decoded_too_large
from .registry import parse_config_int, register_codec

_MAGIC = b"\x28\xb5\x2f\xfd"
_FCS_SIZES = (0, 2, 4, 8)  # by Frame_Content_Size_flag; flag 0 means 1 byte if single-segment
_DICT_ID_SIZES = (0, 1, 2, 4)
_FRAME_OVERHEAD = 32  # frame header and checksum, generously


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
            raise MetadataError(
                f"codec 'zstd': configuration.checksum: expected true or false, got {self.checksum!r}"
            )

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return cast(Buffer, numcodecs.zstd.compress(data, self.level, self.checksum))

    def detects_corruption(self) -> bool:
        return self.checksum

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        try:
            return cast(Buffer, numcodecs.zstd.decompress(data))
        except (RuntimeError, ValueError) as exc:
            raise CodecError(_corrupt(data, exc)) from exc

    def decode_bounded(self, data: Buffer, spec: ChunkSpec, max_size: int | None) -> Buffer:
        if max_size is None:
            return self.decode(data, spec)
        return decompress_bounded(data, max_size, self.name)

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        return compress_bound(input_size)

    def decode_into(self, data: Buffer, spec: ChunkSpec, out: memoryview) -> bool:
        """Decompress into ``out`` if the frame header says it has ``out``'s size."""
        if frame_content_size(data) != out.nbytes:
            return False
        try:
            numcodecs.zstd.decompress(data, out)
        except (RuntimeError, ValueError) as exc:
            raise CodecError(_corrupt(data, exc)) from exc
        return True


def compress_bound(size: int) -> int:
    """zstd's ``ZSTD_COMPRESSBOUND``: the most one frame can expand ``size`` bytes."""
    small = ((128 << 10) - size) >> 11 if size < (128 << 10) else 0
    return size + (size >> 8) + small + _FRAME_OVERHEAD


def decompress_bounded(data: Buffer, max_size: int, codec: str = "zstd") -> Buffer:
    """Decompress zstd ``data`` that may decode to at most ``max_size`` bytes.

    A recorded content size above ``max_size`` is refused before anything
    is allocated. Without a recorded size the frames go into a buffer of
    ``max_size`` bytes, which zstd refuses to overrun.

    >>> bytes(decompress_bounded(numcodecs.zstd.compress(b"abc" * 100), 300))[:6]
    b'abcabc'
    """
    recorded = frame_content_size(data)
    if recorded is None:
        out = bytearray(max_size)
        try:
            numcodecs.zstd.decompress(data, out)
            return out
        except (RuntimeError, ValueError) as exc:
            if "expected to decompress" not in str(exc):  # e.g. "Destination buffer is too small"
                raise CodecError(
                    f"{_corrupt(data, exc)}; it may decode to more than the {max_size} bytes allowed"
                ) from exc
        del out  # the frames hold fewer bytes than max_size: safe to decompress without a bound
    elif recorded > max_size:
        raise decoded_too_large(codec, recorded, max_size)
    try:
        return cast(
            Buffer, numcodecs.zstd.decompress(data)
        )  # allocates a recorded size; later frames may not overrun it
    except (RuntimeError, ValueError) as exc:
        raise CodecError(_corrupt(data, exc)) from exc


def _corrupt(data: Buffer, exc: Exception) -> str:
    return f"codec 'zstd': corrupt or truncated zstd data ({memoryview(data).nbytes} bytes): {exc}"


register_codec(ZstdCodec)
