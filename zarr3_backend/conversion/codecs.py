"""The codecs ``convert`` gives an array by default: the ones its archive chose, in their v3 form, then crc32c.

A Zarr v2 array keeps its compressor as Zarr v2 reading already names it
(``blosc`` with its ``cname``, ``clevel`` and ``shuffle``; ``zstd``; ``gzip``;
any other numcodecs compressor as ``numcodecs.<id>``) and its array filters
(``delta``, ``fixedscaleoffset``, ... as ``numcodecs.<id>``). A v3 array
keeps its chain (the inner chain of a sharded one). The serializer is
``bytes`` (little-endian) for fixed-size types and ``vlen-utf8`` /
``vlen-bytes`` for variable-length ones; ``crc32c`` comes last, once. A
chain that cannot be carried over (v2 object filters other than the
variable-length ones, codecs around a sharding codec) gives ``None``: the
library's defaults.

>>> import numpy as np, zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/carried", shape=(4,), dtype="float32",
...     compressors=[{"name": "gzip", "configuration": {"level": 2}}])
>>> [c["name"] for c in carried_codecs(a)]
['bytes', 'gzip', 'crc32c']
"""

from __future__ import annotations

from typing import Any

from ..codecs.numcodecs_adapter import ARRAY_ARRAY_IDS, PREFIX
from ..codecs.sharding import ShardingCodec
from ..core.metadata.v2 import V2_FILTERS_CODEC, V2ArrayMetadata
from ..nodes.array import Array

VARIABLE_LENGTH_SERIALIZERS = {"string": "vlen-utf8", "variable_length_bytes": "vlen-bytes"}
V2_VARIABLE_LENGTH_FILTERS = frozenset({"vlen-utf8", "vlen-bytes"})  # their v3 serializer replaces them
LAYOUT_CODECS = frozenset({"bytes", "transpose", "vlen-utf8", "vlen-bytes"})  # replaced by the serializer
CHECKSUM = {"name": "crc32c"}


def carried_codecs(array: Array) -> list[dict[str, Any]] | None:
    """The inner codec chain ``array`` keeps in DST (see the module docstring), or ``None`` for the defaults."""
    chain = _source_chain(array)
    if chain is None:
        return None
    filters, compressors = [], []
    for codec in chain:
        name = codec["name"]
        if name == V2_FILTERS_CODEC:
            carried = _v2_filters(codec.get("configuration", {}).get("filters", []))
            if carried is None:
                return None
            filters.extend(carried)
        elif name in LAYOUT_CODECS:
            continue
        elif _is_array_filter(name):
            filters.append(codec)
        else:
            compressors.append(codec)
    compressors = [c for c in compressors if c["name"] != CHECKSUM["name"]]
    return [*filters, _serializer(array), *compressors, dict(CHECKSUM)]


def _source_chain(array: Array) -> list[dict[str, Any]] | None:
    """The codec objects of ``array``'s chunks: the inner chain of a sharded array, ``None`` if hidden."""
    metadata = array.metadata
    codecs = [dict(c) for c in metadata.codecs]
    if isinstance(metadata, V2ArrayMetadata) or array.shards is None:
        return codecs
    sharding = array.codecs.array_bytes
    if len(array.codecs.codecs) != 1 or not isinstance(sharding, ShardingCodec):
        return None
    return [c.to_json() for c in sharding.codecs.codecs]


def _v2_filters(filters: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """v2 filters as v3 array filters; the variable-length ones give way to the serializer; others: ``None``."""
    carried: list[dict[str, Any]] = []
    for codec in filters:
        codec_id = codec["name"].removeprefix(PREFIX)
        if codec_id in V2_VARIABLE_LENGTH_FILTERS:
            continue
        if codec_id not in ARRAY_ARRAY_IDS:
            return None
        carried.append(codec)
    return carried


def _is_array_filter(name: str) -> bool:
    return name.startswith(PREFIX) and name.removeprefix(PREFIX) in ARRAY_ARRAY_IDS


def _serializer(array: Array) -> dict[str, Any]:
    name = VARIABLE_LENGTH_SERIALIZERS.get(array.metadata.data_type.name)
    return {"name": name} if name else {"name": "bytes", "configuration": {"endian": "little"}}
