"""The ``bytes`` codec: fixed-size elements in C order, little or big endian.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/bytes/

    {"name": "bytes", "configuration": {"endian": "little"}}

``endian`` is required for multi-byte numeric types and absent for one-byte
types (``bool``, ``int8``, ``uint8``) and raw bytes (``r<N>``), for which
this codec writes ``{"name": "bytes"}`` like zarr-python.

Types numpy cannot byte-swap (``bfloat16``) are swapped as their `DataType.swap_unit`;
sub-byte types have their unused high bits cleared when read (`DataType.decode_stored`).

``decode`` returns a (read-only) view of the input bytes whenever the stored
byte order is the native one; otherwise one byte-swapping copy is made.
``encode`` returns a view of the chunk when it is already C-contiguous in the
stored byte order, so callers must not modify the chunk while the encoded
bytes are in use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from ..core.dtypes.kinds import needs_endian
from ..errors import CodecError
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .registry import parse_config_choice, register_codec

Endian = Literal["little", "big"]
_ORDER_CHAR: dict[str, Literal["<", ">"]] = {"little": "<", "big": ">"}


@dataclass(frozen=True)
class BytesCodec(ArrayBytesCodec):
    """Serialise fixed-size elements in C order with the given ``endian``."""

    name: ClassVar[str] = "bytes"
    endian: Endian | None = None

    def __post_init__(self) -> None:
        if self.endian is not None:
            parse_config_choice(self.name, "endian", self.endian, _ORDER_CHAR)

    def _configuration(self) -> dict[str, Any]:
        return {} if self.endian is None else {"endian": self.endian}

    def to_json(self) -> dict[str, Any]:
        if self.endian is None:
            return {"name": self.name}
        return super().to_json()

    def evolve(self, spec: ChunkSpec) -> BytesCodec:
        """Default ``endian`` to ``"little"`` where byte order applies; drop it elsewhere."""
        if needs_endian(spec.dtype):
            return self if self.endian is not None else BytesCodec("little")
        return self if self.endian is None else BytesCodec(None)

    def validate(self, spec: ChunkSpec) -> None:
        if spec.data_type.item_size is None or spec.dtype.hasobject:
            raise CodecError(
                f"codec 'bytes' cannot encode variable-length data type {spec.data_type.name!r}; "
                "use 'vlen-utf8' (strings) or 'vlen-bytes' as the array -> bytes codec"
            )
        if self.endian is None and needs_endian(spec.dtype) and spec.data_type.implied_endian is None:
            raise CodecError(
                f"codec 'bytes': configuration.endian is required for data type {spec.data_type.name!r}; "
                "expected 'little' or 'big'"
            )

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        return input_size

    def _stored_dtype(self, spec: ChunkSpec) -> np.dtype:
        """The dtype the bytes hold: the chunk's, in the stored byte order (its swap unit's, for a swapped unit)."""
        dtype = spec.data_type.swap_unit or spec.dtype
        endian = self.endian or spec.data_type.implied_endian
        if endian is None or not needs_endian(dtype):
            return dtype
        return dtype.newbyteorder(_ORDER_CHAR[endian])

    def is_native_layout(self, spec: ChunkSpec) -> bool:
        if spec.dtype.hasobject or spec.data_type.bit_width < 8 * spec.dtype.itemsize:
            return False
        return self._stored_dtype(spec) == (spec.data_type.swap_unit or spec.dtype)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        unit = spec.data_type.swap_unit
        if unit is not None:
            chunk = np.ascontiguousarray(chunk, dtype=spec.dtype).reshape(-1).view(unit)
        stored = np.ascontiguousarray(chunk, dtype=self._stored_dtype(spec))
        return stored.reshape(-1).view(np.uint8).data

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        stored = self._stored_dtype(spec)
        expected = spec.size * spec.dtype.itemsize
        if memoryview(data).nbytes != expected:
            raise CodecError(
                f"codec 'bytes': expected {expected} bytes for a chunk of shape {spec.shape} "
                f"and data type {spec.data_type.name!r}, got {memoryview(data).nbytes}"
            )
        unit = spec.data_type.swap_unit
        if unit is not None:
            units = np.frombuffer(data, dtype=stored).astype(unit, copy=stored != unit)
            return units.view(spec.dtype).reshape(spec.shape)
        chunk = np.frombuffer(data, dtype=stored).reshape(spec.shape)
        if stored != spec.dtype:
            chunk = chunk.astype(spec.dtype)
        return spec.data_type.decode_stored(chunk)


register_codec(BytesCodec)
