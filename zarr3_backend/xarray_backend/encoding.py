"""What a variable records about its Zarr array: ``encoding`` and the decoded ``_FillValue``.

``_FillValue`` attributes are decoded exactly as xarray's own zarr backend
does for Zarr v3 (where the array ``fill_value`` goes to ``encoding`` and a
CF ``_FillValue`` attribute, if any, is JSON-encoded by xarray: base64 of a
little-endian float64 for floats, a pair of those for complex numbers).
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from ..array import Array
from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from .backend_array import variable_dtype


def decode_fill_value(value: Any, array: Array) -> Any:
    """The ``_FillValue`` attribute as xarray wrote it for ``array``, decoded.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/fill", shape=(1,), dtype="float32")
    >>> decode_fill_value("AAAAAAAA+H8=", a)
    nan
    """
    name, kind = array.metadata.data_type.name, array.dtype.kind
    if name == "string":
        return str(value)
    if name == "variable_length_bytes":
        return base64.standard_b64decode(value)
    if kind == "f" and isinstance(value, str | bytes):
        return _unpack_float(value)
    if kind == "c" and isinstance(value, list | tuple) and len(value) == 2:
        return complex(_unpack_float(value[0]), _unpack_float(value[1]))
    if kind == "b":
        return bool(value)
    if kind in "iu" and isinstance(value, int | float):
        return int(value)
    return value


def _unpack_float(value: str | bytes) -> float:
    return float(struct.unpack("<d", base64.standard_b64decode(value))[0])


def variable_encoding(array: Array, dims: tuple[str, ...]) -> dict[str, Any]:
    """Everything needed to write ``array`` again the same way, plus xarray's ``preferred_chunks``.

    ``filters``, ``serializer`` and ``compressors`` are the (inner, when
    sharded) chain split by codec kind, as ``engine="zarr"`` reports them, in
    JSON form; ``codecs`` is the full outer chain.
    """
    metadata = array.metadata
    return {
        "chunks": array.chunks,
        "shards": array.shards,
        "preferred_chunks": dict(zip(dims, array.shards or array.chunks)),
        **codec_parts(array.codecs, array.shards is not None),
        "codecs": [dict(codec) for codec in metadata.codecs],
        "fill_value": array.fill_value,
        "dimension_names": metadata.dimension_names,
        "chunk_key_encoding": metadata.chunk_key_encoding.to_json(),
        "dtype": variable_dtype(array),
    }


def codec_parts(chain: CodecChain, sharded: bool) -> dict[str, Any]:
    """``filters``, ``serializer``, ``compressors`` (and ``index_location``) of a chain, as zarr-python splits it.

    For a sharded array they describe the inner chunks; a chain with codecs
    around the sharding codec has no such split (empty result).

    >>> from zarr3_backend.codecs.chain import CodecChain
    >>> chain = CodecChain.from_json([{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}])
    >>> codec_parts(chain, sharded=False)
    {'filters': (), 'serializer': {'name': 'bytes'}, 'compressors': ({'name': 'gzip', 'configuration': {'level': 1}},)}
    """
    parts: dict[str, Any] = {}
    if sharded:
        sharding = chain.array_bytes
        if len(chain.codecs) != 1 or not isinstance(sharding, ShardingCodec):
            return {}
        parts["index_location"] = sharding.index_location
        chain = sharding.codecs
    return {
        "filters": tuple(c.to_json() for c in chain.array_array),
        "serializer": chain.array_bytes.to_json(),
        "compressors": tuple(c.to_json() for c in chain.bytes_bytes),
        **parts,
    }
