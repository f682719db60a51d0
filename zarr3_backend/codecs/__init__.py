"""Zarr v3 codecs: one module per codec, registered by name on import.

Build codecs from metadata with `codec_from_json()`; register your own
with `register_codec()` or the entry-point group ``zarr3_backend.codecs``.

>>> from zarr3_backend.codecs import codec_from_json
>>> codec_from_json("crc32c").to_json()
{'name': 'crc32c'}
"""

from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkCodec, ChunkSpec, Codec
from .bitround import BitroundCodec, NumcodecsBitroundCodec
from .blosc import BloscCodec
from .bytes import BytesCodec
from .cast_value import CastValueCodec
from .conditional import ConditionalCodec
from .crc32c import Crc32cCodec
from .gzip import GzipCodec
from .n5_default import N5DefaultCodec
from .numcodecs_adapter import (
    NumcodecsArrayArrayCodec,
    NumcodecsArrayBytesCodec,
    NumcodecsBytesBytesCodec,
    numcodecs_codec_class,
)
from .packbits import PackBitsCodec
from .registry import (
    allow_unsafe_codecs,
    codec_from_json,
    get_codec_class,
    mark_unsafe,
    register_codec,
    register_codec_family,
)
from .reshape import ReshapeCodec
from .scale_offset import ScaleOffsetCodec
from .sharding import ShardingCodec
from .transpose import TransposeCodec
from .v2 import V2FilterCodec
from .vlen_utf8 import VLenBytesCodec, VLenUTF8Codec
from .zfp import ZfpCodec
from .zstd import ZstdCodec

__all__ = [
    "BitroundCodec",
    "ConditionalCodec",
    "N5DefaultCodec",
    "NumcodecsBitroundCodec",
    "PackBitsCodec",
    "ReshapeCodec",
    "ZfpCodec",
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BloscCodec",
    "BytesBytesCodec",
    "BytesCodec",
    "CastValueCodec",
    "ChunkCodec",
    "ChunkSpec",
    "Codec",
    "Crc32cCodec",
    "GzipCodec",
    "NumcodecsArrayArrayCodec",
    "NumcodecsArrayBytesCodec",
    "NumcodecsBytesBytesCodec",
    "ScaleOffsetCodec",
    "ShardingCodec",
    "TransposeCodec",
    "V2FilterCodec",
    "VLenBytesCodec",
    "VLenUTF8Codec",
    "ZstdCodec",
    "codec_from_json",
    "allow_unsafe_codecs",
    "get_codec_class",
    "mark_unsafe",
    "numcodecs_codec_class",
    "register_codec",
    "register_codec_family",
]
