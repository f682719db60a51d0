"""The ``vlen-utf8`` and ``vlen-bytes`` codecs: variable-length strings / bytes.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/vlen-utf8
(and ``.../codecs/vlen-bytes``)

    {"name": "vlen-utf8", "configuration": {}}
    {"name": "vlen-bytes", "configuration": {}}

``array -> bytes`` codecs for the ``string`` and ``variable_length_bytes``
data types (numpy object arrays of ``str`` / ``bytes``). The encoding is
numcodecs' ``VLenUTF8`` / ``VLenBytes`` layout, as written by zarr-python: a
4-byte little-endian item count, then for each item in C order a 4-byte
little-endian byte length followed by the bytes (UTF-8 for strings). ``None``
items are written as empty values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numcodecs
import numpy as np

from ..errors import CodecError
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .registry import register_codec


class _VLenCodec(ArrayBytesCodec):
    """Shared behaviour: numcodecs does the (GIL-holding, C-speed) work."""

    data_types: ClassVar[frozenset[str]]
    _numcodec: ClassVar[Any]

    def _configuration(self) -> dict[str, Any]:
        return {}

    def validate(self, spec: ChunkSpec) -> None:
        if spec.data_type.name not in self.data_types:
            expected = " or ".join(sorted(self.data_types))
            raise CodecError(
                f"codec {self.name!r} encodes data type {expected}, not {spec.data_type.name!r}; "
                "use the 'bytes' codec for fixed-size types"
            )

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        try:
            return cast(Buffer, self._numcodec.encode(np.require(chunk, object, ["C", "W"])))
        except (TypeError, ValueError, UnicodeError) as exc:
            raise CodecError(
                f"codec {self.name!r}: cannot encode chunk of shape {spec.shape}: {exc}"
            ) from exc

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        header = bytes(memoryview(data).cast("B")[:4])
        count = int.from_bytes(header, "little") if len(header) == 4 else None
        if count is not None and count != spec.size:
            # checked before numcodecs allocates ``count`` items for a corrupt header
            raise CodecError(
                f"codec {self.name!r}: data holds {count} items, expected {spec.size} for chunk shape {spec.shape}"
            )
        try:
            items: np.ndarray = self._numcodec.decode(data)
        except (TypeError, ValueError, UnicodeError) as exc:
            raise CodecError(
                f"codec {self.name!r}: corrupt data ({memoryview(data).nbytes} bytes): {exc}"
            ) from exc
        return items.reshape(spec.shape)


@dataclass(frozen=True)
class VLenUTF8Codec(_VLenCodec):
    """UTF-8 strings with 4-byte length prefixes."""

    name: ClassVar[str] = "vlen-utf8"
    data_types: ClassVar[frozenset[str]] = frozenset({"string"})
    _numcodec: ClassVar[Any] = numcodecs.VLenUTF8()


@dataclass(frozen=True)
class VLenBytesCodec(_VLenCodec):
    """Byte strings with 4-byte length prefixes."""

    name: ClassVar[str] = "vlen-bytes"
    data_types: ClassVar[frozenset[str]] = frozenset({"variable_length_bytes", "bytes"})
    _numcodec: ClassVar[Any] = numcodecs.VLenBytes()


register_codec(VLenUTF8Codec)
register_codec(VLenBytesCodec)
