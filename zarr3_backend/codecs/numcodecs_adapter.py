"""Any numcodecs codec as a Zarr v3 codec named ``numcodecs.<codec_id>``.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs
(one entry per ``numcodecs.*`` name)

    {"name": "numcodecs.delta", "configuration": {"dtype": "<f8"}}

The configuration is the numcodecs config without ``id``; the codec is
``numcodecs.get_codec({"id": codec_id, **configuration})``, created on first
use. Kinds mirror zarr-python 3.1: the filters ``delta``, ``bitround``,
``fixedscaleoffset``, ``quantize``, ``packbits`` and ``astype`` are
``array -> array``; ``pcodec`` and ``zfpy`` are ``array -> bytes``; every other
id (compressors, checksums, ``shuffle`` and unknown third-party ids) is
``bytes -> bytes``. ``evolve`` records the same automatic parameters as
zarr-python (``shuffle.elementsize``, ``fixedscaleoffset.dtype``,
``quantize.dtype``, ``astype.decode_dtype``). ``numcodecs.pickle`` can run
code when it decodes and is flagged unsafe (see
`allow_unsafe_codecs()`).
"""

from __future__ import annotations

import bz2
import json
import lzma
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, ClassVar, cast

import numcodecs
import numcodecs.blosc
import numcodecs.lz4
import numcodecs.registry
import numpy as np
from numcodecs.abc import Codec as Numcodec

from ..core.dtypes import data_type_from_numpy
from ..core.metadata.v2 import NUMCODECS_PREFIX
from ..errors import CodecError, MetadataError
from . import blosc, gzip, zstd
from .base import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    Buffer,
    BytesBytesCodec,
    ChunkSpec,
    Codec,
    decoded_too_large,
)
from .bounded import decompress_stream_bounded
from .registry import mark_unsafe, register_codec_family

PREFIX = NUMCODECS_PREFIX
ARRAY_ARRAY_IDS = frozenset({"delta", "bitround", "fixedscaleoffset", "quantize", "packbits", "astype"})
ARRAY_BYTES_IDS = frozenset({"pcodec", "zfpy"})
CHECKSUM_IDS = frozenset({"crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"})
#: ids whose decode can execute arbitrary code (unpickling): refused unless the user opts in
UNSAFE_IDS = frozenset({"pickle"})
#: configuration member filled by ``evolve`` with the chunk dtype (or its item size), per codec id
_LZMA_MEMLIMIT = 128 << 20  # the 64 MiB dictionary of preset 9 fits; streams declaring more are refused
_EVOLVE_DTYPE = {"fixedscaleoffset": "dtype", "quantize": "dtype", "astype": "decode_dtype"}


@cache
def _numcodec(codec_id: str, configuration_json: str) -> Numcodec:
    return numcodecs.get_codec({"id": codec_id, **json.loads(configuration_json)})


@dataclass(frozen=True)
class _NumcodecsCodec(Codec):
    """Shared state: the numcodecs ``configuration`` (without ``id``)."""

    codec_id: ClassVar[str]
    configuration: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.configuration, dict) or "id" in self.configuration:
            raise MetadataError(
                f"codec {self.name!r}: configuration must be an object without 'id', got {self.configuration!r}"
            )

    def __reduce__(self) -> tuple[Any, ...]:
        # the per-id classes are made at run time, so pickle by name (dask ships codecs to workers)
        return _rebuild, (self.name, self.configuration)

    @classmethod
    def from_json(cls, configuration: dict[str, Any]) -> Codec:
        return cls(dict(configuration))

    def _configuration(self) -> dict[str, Any]:
        return dict(self.configuration)

    @property
    def numcodec(self) -> Numcodec:
        """The numcodecs codec (cached per configuration)."""
        try:
            return _numcodec(self.codec_id, json.dumps(self.configuration, sort_keys=True))
        except Exception as exc:
            raise MetadataError(
                f"codec {self.name!r}: numcodecs rejects configuration {self.configuration!r}: {exc}"
            ) from exc

    def evolve(self, spec: ChunkSpec) -> Codec:
        member = _EVOLVE_DTYPE.get(self.codec_id)
        if member is not None and self.configuration.get(member) is None:
            return replace(self, configuration={**self.configuration, member: str(spec.dtype)})
        if self.codec_id == "shuffle" and self.configuration.get("elementsize") is None:
            return replace(self, configuration={**self.configuration, "elementsize": spec.dtype.itemsize})
        return self

    def validate(self, spec: ChunkSpec) -> None:
        _ = self.numcodec  # instantiating the numcodecs codec validates the configuration
        if self.codec_id == "packbits" and spec.dtype != np.bool_:
            raise CodecError(f"codec {self.name!r} requires data type 'bool', got {spec.data_type.name!r}")

    def _failed(self, action: str, exc: Exception) -> CodecError:
        return CodecError(f"codec {self.name!r}: {action} failed: {exc}")


class NumcodecsBytesBytesCodec(_NumcodecsCodec, BytesBytesCodec):
    """A numcodecs compressor / checksum used as a ``bytes -> bytes`` codec."""

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        if self.codec_id in CHECKSUM_IDS:
            return input_size + 4
        return super().compute_encoded_size(input_size, spec)

    def detects_corruption(self) -> bool:
        if self.codec_id == "zstd":
            return self.configuration.get("checksum") is True
        return self.codec_id in CHECKSUM_IDS or self.codec_id in (
            "gzip",
            "zlib",
        )  # gzip: CRC-32, zlib: Adler-32

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int | None:
        bound = _ENCODED_BOUNDS.get(self.codec_id)
        return bound(input_size) if bound is not None else super().max_encoded_size(input_size, spec)

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        try:
            return _as_buffer(self.numcodec.encode(data))
        except Exception as exc:
            raise self._failed("encode", exc) from exc

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        try:
            return _as_buffer(self.numcodec.decode(data))
        except Exception as exc:
            raise self._failed("decode", exc) from exc

    def decode_bounded(self, data: Buffer, spec: ChunkSpec, max_size: int | None) -> Buffer:
        """Compressors whose output size can be bounded before allocating are; others decode, then check."""
        if max_size is not None and self.codec_id == "lzma":
            return _lzma_bounded(self.configuration)(data, max_size, self.name)
        if max_size is not None and self.codec_id in _BOUNDED_DECODERS:
            return _BOUNDED_DECODERS[self.codec_id](data, max_size, self.name)
        return super().decode_bounded(data, spec, max_size)


def _lz4_bounded(data: Buffer, max_size: int, codec: str) -> Buffer:
    """numcodecs' lz4 records the decoded size in a 4-byte little-endian prefix: check it first."""
    recorded = int.from_bytes(bytes(memoryview(data).cast("B")[:4]), "little")
    if recorded > max_size:
        raise decoded_too_large(codec, recorded, max_size)
    try:
        return cast(Buffer, numcodecs.lz4.decompress(data))
    except Exception as exc:
        raise CodecError(f"codec {codec!r}: decode failed: {exc}") from exc


def _lzma_bounded(configuration: dict[str, Any]) -> Callable[[Buffer, int, str], Buffer]:
    """lzma output stops at the bound; its dictionary (declared by the stream) is capped by ``memlimit``."""
    format_ = configuration.get("format", lzma.FORMAT_XZ)
    filters = configuration.get("filters") if format_ == lzma.FORMAT_RAW else None
    memlimit = None if format_ == lzma.FORMAT_RAW else _LZMA_MEMLIMIT
    return lambda data, max_size, codec: decompress_stream_bounded(
        lambda: lzma.LZMADecompressor(format_, memlimit, filters), data, max_size, codec, (lzma.LZMAError,)
    )


_BOUNDED_DECODERS: dict[str, Callable[[Buffer, int, str], Buffer]] = {
    "zstd": zstd.decompress_bounded,
    "blosc": blosc.decompress_bounded,
    "gzip": lambda data, max_size, codec: gzip.inflate_bounded(data, max_size, gzip.GZIP_WBITS, codec),
    "zlib": lambda data, max_size, codec: gzip.inflate_bounded(data, max_size, zlib.MAX_WBITS, codec),
    "lz4": _lz4_bounded,
    "bz2": lambda data, max_size, codec: decompress_stream_bounded(
        bz2.BZ2Decompressor, data, max_size, codec, (OSError,)
    ),
}


_ENCODED_BOUNDS: dict[str, Callable[[int], int]] = {
    "zstd": zstd.compress_bound,
    "blosc": lambda size: size + numcodecs.blosc.MAX_OVERHEAD,
    "gzip": lambda size: gzip.deflate_bound(size) + gzip.GZIP_FRAMING,
    "zlib": gzip.deflate_bound,
    "lz4": lambda size: size + size // 255 + 20,  # LZ4_compressBound plus the 4-byte size prefix
}


class NumcodecsArrayArrayCodec(_NumcodecsCodec, ArrayArrayCodec):
    """A numcodecs filter used as an ``array -> array`` codec."""

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        if self.codec_id == "packbits":
            return replace(
                spec,
                shape=(1 + math.ceil(spec.size / 8),),
                data_type=data_type_from_numpy("uint8"),
                fill_value=np.uint8(0),
            )
        encoded = self.configuration.get("encode_dtype" if self.codec_id == "astype" else "astype")
        if encoded is None or self.codec_id not in {"astype", "delta", "fixedscaleoffset"}:
            return spec
        data_type = data_type_from_numpy(encoded)
        return replace(spec, data_type=data_type, fill_value=data_type.default_fill_value())

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        resolved = self.resolve_spec(spec)
        return resolved.size * resolved.dtype.itemsize

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        target = self.resolve_spec(spec)
        try:
            encoded = np.asarray(self.numcodec.encode(np.ascontiguousarray(chunk)))
        except Exception as exc:
            raise self._failed("encode", exc) from exc
        if encoded.dtype != target.dtype and encoded.dtype.itemsize == target.dtype.itemsize:
            encoded = encoded.view(target.dtype)  # bitround returns the integer bit pattern
        return encoded.reshape(target.shape)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        try:
            decoded = np.asarray(self.numcodec.decode(np.ascontiguousarray(chunk)))
        except Exception as exc:
            raise self._failed("decode", exc) from exc
        return decoded.reshape(spec.shape)


class NumcodecsArrayBytesCodec(_NumcodecsCodec, ArrayBytesCodec):
    """A numcodecs array serialiser (``pcodec``, ``zfpy``) used as ``array -> bytes``."""

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        try:
            return _as_buffer(self.numcodec.encode(np.ascontiguousarray(chunk)))
        except Exception as exc:
            raise self._failed("encode", exc) from exc

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        try:
            decoded = np.asarray(self.numcodec.decode(data))
        except Exception as exc:
            raise self._failed("decode", exc) from exc
        return decoded.view(spec.dtype).reshape(spec.shape)


def _as_buffer(encoded: Any) -> Buffer:
    if isinstance(encoded, bytes | bytearray | memoryview):
        return encoded
    return np.ascontiguousarray(encoded).reshape(-1).view(np.uint8).data


def _kind_base(codec_id: str) -> type[_NumcodecsCodec]:
    if codec_id in ARRAY_ARRAY_IDS:
        return NumcodecsArrayArrayCodec
    if codec_id in ARRAY_BYTES_IDS:
        return NumcodecsArrayBytesCodec
    return NumcodecsBytesBytesCodec


@cache
def numcodecs_codec_class(name: str) -> type[_NumcodecsCodec] | None:
    """The codec class for ``numcodecs.<codec_id>``, or ``None`` if numcodecs lacks the id.

    >>> numcodecs_codec_class("numcodecs.delta").kind
    'array_to_array'
    """
    codec_id = name.removeprefix(PREFIX)
    if codec_id not in numcodecs.registry.codec_registry and codec_id not in numcodecs.registry.entries:
        return None
    base = _kind_base(codec_id)
    class_name = "Numcodecs" + "".join(part.capitalize() for part in codec_id.replace("-", "_").split("_"))
    return type(class_name, (base,), {"name": name, "codec_id": codec_id, "__module__": __name__})


def _rebuild(name: str, configuration: dict[str, Any]) -> Codec:
    cls = numcodecs_codec_class(name)
    if cls is None:
        raise MetadataError(f"codec {name!r}: numcodecs no longer provides {name.removeprefix(PREFIX)!r}")
    return cls(configuration)


register_codec_family(PREFIX, numcodecs_codec_class)
for _codec_id in UNSAFE_IDS:
    mark_unsafe(PREFIX + _codec_id)
