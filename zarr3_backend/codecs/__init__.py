"""Zarr v3 codecs: one module per codec, imported the first time its name is looked up.

Build codecs from metadata with `codec_from_json()`; register your own
with `register_codec()` or the entry-point group ``zarr3_backend.codecs``.

Each codec class is also an attribute of this package (``ZstdCodec`` ...),
which imports its module on first access.

>>> from zarr3_backend.codecs import codec_from_json
>>> codec_from_json("crc32c").to_json()
{'name': 'crc32c'}
"""

import importlib
from typing import TYPE_CHECKING

from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkCodec, ChunkSpec, Codec
from .registry import (
    allow_unsafe_codecs,
    codec_from_json,
    get_codec_class,
    mark_unsafe,
    register_codec,
    register_codec_family,
)

if TYPE_CHECKING:
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
    from .reshape import ReshapeCodec
    from .scale_offset import ScaleOffsetCodec
    from .sharding import ShardingCodec
    from .transpose import TransposeCodec
    from .v2 import V2FilterCodec
    from .vlen_utf8 import VLenBytesCodec, VLenUTF8Codec
    from .zfp import ZfpCodec
    from .zstd import ZstdCodec

#: attribute -> the module of this package that defines it, imported on first access
_DEFINED_IN = {
    "BitroundCodec": "bitround",
    "NumcodecsBitroundCodec": "bitround",
    "BloscCodec": "blosc",
    "BytesCodec": "bytes",
    "CastValueCodec": "cast_value",
    "ConditionalCodec": "conditional",
    "Crc32cCodec": "crc32c",
    "GzipCodec": "gzip",
    "N5DefaultCodec": "n5_default",
    "NumcodecsArrayArrayCodec": "numcodecs_adapter",
    "NumcodecsArrayBytesCodec": "numcodecs_adapter",
    "NumcodecsBytesBytesCodec": "numcodecs_adapter",
    "numcodecs_codec_class": "numcodecs_adapter",
    "PackBitsCodec": "packbits",
    "ReshapeCodec": "reshape",
    "ScaleOffsetCodec": "scale_offset",
    "ShardingCodec": "sharding",
    "TransposeCodec": "transpose",
    "V2FilterCodec": "v2",
    "VLenBytesCodec": "vlen_utf8",
    "VLenUTF8Codec": "vlen_utf8",
    "ZfpCodec": "zfp",
    "ZstdCodec": "zstd",
}


def __getattr__(name: str) -> object:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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
