"""The ``crc32c`` codec: append a CRC32C checksum (RFC 3720), verify it on decode.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/crc32c/

    {"name": "crc32c"}

The checksum is a 4-byte little-endian unsigned integer after the data.
``decode`` returns a view of the input without the checksum (no copy).
The ``crc32c`` package releases the GIL for inputs of 32 KiB and more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from crc32c import crc32c

from ..errors import ChecksumError, CodecError
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .registry import register_codec

CHECKSUM_SIZE = 4


@dataclass(frozen=True)
class Crc32cCodec(BytesBytesCodec):
    """Append / verify a CRC32C checksum; fixed size (``n + 4`` bytes)."""

    name: ClassVar[str] = "crc32c"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name}

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        return input_size + CHECKSUM_SIZE

    def detects_corruption(self) -> bool:
        return True

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        view = memoryview(data).cast("B")
        out = bytearray(view.nbytes + CHECKSUM_SIZE)
        out[: view.nbytes] = view
        out[view.nbytes :] = crc32c(view).to_bytes(CHECKSUM_SIZE, "little")
        return out

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        """The data without its checksum; raises `ChecksumError` on mismatch.

        The message states the facts only (callers prefix the key).
        """
        view = memoryview(data).cast("B")
        if view.nbytes < CHECKSUM_SIZE:
            raise CodecError(f"codec 'crc32c': {view.nbytes} bytes is too short to hold the 4-byte checksum")
        payload = view[: view.nbytes - CHECKSUM_SIZE]
        stored = int.from_bytes(view[view.nbytes - CHECKSUM_SIZE :], "little")
        computed = crc32c(payload)
        if stored != computed:
            raise ChecksumError(f"crc32c checksum mismatch: stored 0x{stored:08x}, computed 0x{computed:08x}")
        return payload


register_codec(Crc32cCodec)
