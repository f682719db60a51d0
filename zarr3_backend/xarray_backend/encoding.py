"""What a variable records about its Zarr array: ``encoding`` and the decoded ``_FillValue``.

``_FillValue`` attributes are decoded by xarray's own ``FillValueCoder``, as
its zarr backend does for Zarr v3 (where the array ``fill_value`` goes to
``encoding`` and a CF ``_FillValue`` attribute, if any, is JSON-encoded by
xarray: base64 of a little-endian float64 for floats, a pair of those for
complex numbers).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from xarray.backends.zarr import FillValueCoder

from ..array import Array
from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from .backend_array import variable_dtype

CODER_DTYPES = {"string": "string", "variable_length_bytes": "bytes"}  # v3 data types FillValueCoder knows by name


def decode_fill_value(value: object, array: Array) -> object:
    """The ``_FillValue`` attribute of ``array``, decoded by xarray's ``FillValueCoder`` as ``engine="zarr"`` does.

    A value the coder does not read (a data type it does not handle, or a
    value of another type, e.g. a plain number written by another tool) is
    returned as stored.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/fill", shape=(1,), dtype="float32")
    >>> decode_fill_value("AAAAAAAA+H8=", a), decode_fill_value(-9999.0, a)
    (nan, -9999.0)
    """
    dtype = CODER_DTYPES.get(array.metadata.data_type.name, array.dtype)
    if isinstance(dtype, np.dtype) and dtype.kind not in "fcbiu":
        return value
    try:
        # Handed to xarray's coder unchecked, as engine="zarr" hands it; the coder checks what it needs.
        decoded: object = FillValueCoder.decode(cast("int | float | str | bytes | list[object]", value), dtype)
        return decoded
    except TypeError:  # the coder's "expected ..." refusals
        return value


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
