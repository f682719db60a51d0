"""The Zarr v2 filter pipeline as one ``array -> bytes`` codec (read only).

Spec: https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html ("Filters", "Chunks"). A v2
chunk is its array in ``order`` ("C" or "F") and stored ``dtype`` (byte order
included), passed through the ``filters`` in turn, then the ``compressor``.
Arrays with filters, object or structured dtypes read through this codec:
the compressor stays a ``bytes -> bytes`` codec after it, and this codec
undoes the filters in reverse order on the stored dtype, exactly as the spec
(and zarr-python) applies them, then reshapes in ``order`` and converts to
native byte order. Arrays without filters of simple dtypes need none of
this: `zarr3_backend.core.metadata.v2` describes them with ``transpose``,
``bytes`` and the compressor.

Registered as ``zarr3_backend.v2_filters``, the name v2 metadata gives it,
the codec is built from codec JSON by the registry like any other. Filters
are numcodecs codecs wrapped by `numcodecs_adapter` (so ``pickle`` is
refused unless allowed). What a filter decodes to is bounded by what its
input may hold: compressors used as filters stop at that size, the object
codecs (``vlen-*``) have their item count checked before decoding, and every
other filter's output is checked after it.

>>> import numcodecs, numpy as np
>>> from zarr3_backend.core.dtypes import data_type_from_numpy
>>> codec = codec_from_json({"name": "zarr3_backend.v2_filters", "configuration": {
...     "dtype": ">i4", "order": "F", "filters": [{"name": "numcodecs.delta", "configuration": {"dtype": ">i4"}}]}})
>>> a = np.arange(6, dtype=">i4").reshape(2, 3)
>>> raw = numcodecs.Delta(">i4").encode(np.asfortranarray(a))
>>> codec.decode(raw, ChunkSpec((2, 3), data_type_from_numpy("int32"), 0)).tolist()
[[0, 1, 2], [3, 4, 5]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from numcodecs.compat import ensure_ndarray_like

from ..core.dtypes import data_type_from_numpy
from ..core.dtypes.kinds import is_object
from ..core.dtypes.v2 import parse_v2_dtype, v2_dtype_json
from ..core.metadata.v2 import V2_FILTERS_CODEC
from ..errors import CodecError, MetadataError, ReadOnlyError
from .base import ArrayBytesCodec, Buffer, BytesBytesCodec, ChunkSpec, Codec, decoded_too_large
from .numcodecs_adapter import (
    PREFIX,
    NumcodecsArrayArrayCodec,
    NumcodecsArrayBytesCodec,
    NumcodecsBytesBytesCodec,
    numcodecs_codec_class,
)
from .registry import codec_from_json, register_codec

#: Object codecs: their encoding starts with a 4-byte little-endian item count.
VLEN_IDS = frozenset({"vlen-utf8", "vlen-bytes", "vlen-array"})
#: Codecs that turn an object array into bytes (the first filter of an object array).
_OBJECT_IDS = VLEN_IDS | {"json2", "msgpack2", "pickle", "json", "msgpack", "categorize"}
#: Filters whose encoded item type is named by a configuration member.
_ENCODED_TYPE = {
    "astype": "encode_dtype",
    "delta": "astype",
    "fixedscaleoffset": "astype",
    "quantize": "astype",
    "categorize": "astype",
}
_SAME_SIZE = frozenset({"shuffle", "bitround"})

Order = Literal["C", "F"]
#: The spec handed to a compressor used as a filter (compressors look at no more than the item size).
_BYTES_SPEC = ChunkSpec((1,), data_type_from_numpy("uint8"), 0)


@dataclass(frozen=True)
class V2FilterCodec(ArrayBytesCodec):
    """Undo v2 ``filters`` (numcodecs codecs, in stored order) on a chunk of stored dtype ``stored`` laid out in ``order``."""

    name: ClassVar[str] = V2_FILTERS_CODEC
    stored: np.dtype
    order: Order = "C"
    filters: tuple[Codec, ...] = field(default=())

    @classmethod
    def from_json(cls, configuration: dict[str, Any]) -> Codec:
        """Rebuild from `to_json()`: ``{"dtype": <v2 dtype>, "order": "C" | "F", "filters": [<codec objects>]}``."""
        where = f"codec {cls.name!r}: configuration"
        if set(configuration) != {"dtype", "order", "filters"} or configuration["order"] not in ("C", "F"):
            raise MetadataError(
                f"{where}: expected members dtype, order ('C' or 'F') and filters, got {configuration!r}"
            )
        filters = configuration["filters"]
        if not isinstance(filters, list):
            raise MetadataError(f"{where}.filters: expected a list of codec objects, got {filters!r}")
        codecs = tuple(_numcodecs_filter(item, f"{where}.filters", filters) for item in filters)
        stored = parse_v2_dtype(configuration["dtype"], None, where).stored
        return cls(stored, configuration["order"], codecs)

    def _configuration(self) -> dict[str, Any]:
        return {
            "dtype": v2_dtype_json(self.stored),
            "order": self.order,
            "filters": [f.to_json() for f in self.filters],
        }

    def _numcodec(self, index: int) -> Any:
        return getattr(self.filters[index], "numcodec")  # noqa: B009 (typed as Codec;) every filter is a numcodecs adapter (see from_json)

    def _id(self, index: int) -> str:
        return self.filters[index].name.removeprefix(PREFIX)

    def _sizes(self, count: int) -> list[int | None]:
        """Bytes entering each filter when encoding a chunk of ``count`` items (``None``: unknown), and leaving the last."""
        size: int | None = count * self.stored.itemsize
        sizes = [size]
        for index, codec in enumerate(self.filters):
            codec_id = self._id(index)
            configuration = getattr(codec, "configuration", {})
            if size is None:
                pass
            elif codec_id in _ENCODED_TYPE and configuration.get(_ENCODED_TYPE[codec_id]) is not None:
                size = count * np.dtype(configuration[_ENCODED_TYPE[codec_id]]).itemsize
            elif codec_id == "packbits":
                size = 1 + math.ceil(count / 8)
            elif codec_id in _SAME_SIZE or codec_id in _ENCODED_TYPE:
                pass
            elif isinstance(codec, BytesBytesCodec):
                size = codec.max_encoded_size(size, _BYTES_SPEC) if codec_id not in VLEN_IDS else None
            else:
                size = None
            sizes.append(size)
        return sizes

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        return self._sizes(spec.size)[-1]

    def validate(self, spec: ChunkSpec) -> None:
        for index in range(len(self.filters)):
            self._numcodec(index)  # numcodecs checks each configuration when it builds the codec
        if is_object(self.stored) and not (self.filters and self._id(0) in _OBJECT_IDS):
            raise CodecError(
                "an object array ('|O') needs an object codec as its first filter "
                f"(one of {sorted(_OBJECT_IDS)}), got {[self._id(i) for i in range(len(self.filters))]}"
            )

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        raise ReadOnlyError(
            "Zarr v2 arrays are read-only here; convert the store to Zarr v3 with 'zarr3 convert'"
        )

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        count = spec.size
        sizes = self._sizes(count)
        value: Any = data
        for index in reversed(range(len(self.filters))):
            value = self._undo(index, value, sizes[index], count)
        if is_object(self.stored):
            chunk = np.asarray(value, dtype=object)
        else:
            chunk = ensure_ndarray_like(value)
            if chunk.dtype != self.stored:  # a compressor's bytes, or a filter's items of another byte order
                chunk = np.ascontiguousarray(chunk).reshape(-1).view(self.stored)
        if chunk.size != count:
            raise CodecError(
                f"a v2 chunk of shape {spec.shape} needs {count} items, the filters gave {chunk.size}"
            )
        chunk = chunk.reshape(spec.shape, order=self.order)
        return chunk if chunk.dtype == spec.dtype else chunk.astype(spec.dtype)

    def _undo(self, index: int, value: Any, limit: int | None, count: int) -> Any:
        codec, codec_id = self.filters[index], self._id(index)
        if codec_id in VLEN_IDS:
            header = bytes(memoryview(value).cast("B")[:4])
            found = int.from_bytes(header, "little") if len(header) == 4 else None
            if found != count:  # checked before numcodecs allocates ``found`` items for a corrupt header
                raise CodecError(f"filter {codec_id!r}: the chunk holds {found} items, expected {count}")
        elif (
            isinstance(codec, BytesBytesCodec) and codec_id not in _OBJECT_IDS and codec_id not in _SAME_SIZE
        ):
            return codec.decode_bounded(value, _BYTES_SPEC, limit)
        try:
            decoded = self._numcodec(index).decode(value)
        except Exception as exc:
            raise CodecError(f"filter {codec_id!r}: decode failed: {exc}") from exc
        nbytes = decoded.nbytes if isinstance(decoded, np.ndarray) and decoded.dtype != object else None
        if limit is not None and nbytes is not None and nbytes > limit:
            raise decoded_too_large(codec_id, nbytes, limit)
        return decoded


_ADAPTERS = (NumcodecsArrayArrayCodec, NumcodecsArrayBytesCodec, NumcodecsBytesBytesCodec)


def _numcodecs_filter(item: object, where: str, filters: object) -> Codec:
    """A v2 filter as numcodecs runs it, also where we register a codec of ours under its name (``numcodecs.bitround``)."""
    codec = codec_from_json(item)  # validates the object and refuses unsafe codecs
    if codec is None or not codec.name.startswith(PREFIX):
        raise MetadataError(f"{where}: expected numcodecs codecs, got {filters!r}")
    adapter = numcodecs_codec_class(codec.name)
    if isinstance(codec, _ADAPTERS) or adapter is None:
        return codec
    return adapter(codec.to_json().get("configuration", {}))


register_codec(V2FilterCodec)
