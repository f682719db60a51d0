"""What ``zarr3 convert`` leaves in a store it wrote: the checksum of every shard's values, to check later.

A finished convert writes `MANIFEST_KEY` at the store root:
``{"arrays": {<array path>: {<shard key>: <checksum>}}}``, one entry per
shard of the grid (all-fill shards included), each the `checksum()` of
the source values that shard was verified against. ``validate --deep``
compares every shard with it, so a shard deleted or replaced since is
reported. Names starting with ``__`` are reserved for extensions: other
readers skip it.
"""

from __future__ import annotations

import json

import numpy as np
from crc32c import crc32c

from ..core.dtypes.kinds import is_numpy_string
from ..core.metadata import decode_document
from ..errors import MetadataError
from .records import MANIFEST_KEY

Manifest = dict[str, dict[str, str]]


def checksum(values: np.ndarray) -> str:
    """The checksum of decoded values: CRC32C of their shape, data type and elements in C order.

    Variable-length elements (strings, bytes) enter as their UTF-8 or raw
    bytes, each after its length.

    >>> checksum(np.arange(4, dtype="int16")) == checksum(np.arange(4, dtype="int16").copy())
    True
    >>> checksum(np.array(["a", "bc"], dtype=object)) == checksum(np.array(["ab", "c"], dtype=object))
    False
    """
    state = crc32c(repr((values.shape, values.dtype.str)).encode())
    if values.dtype.hasobject or is_numpy_string(values.dtype):
        for item in values.ravel():
            data = item if isinstance(item, bytes) else str(item).encode("utf-8", "surrogatepass")
            state = crc32c(data, crc32c(len(data).to_bytes(8, "little"), state))
    elif values.size:
        state = crc32c(np.ascontiguousarray(values).reshape(-1).view(np.uint8).data, state)
    return f"crc32c:{state:08x}"


def encode_manifest(arrays: Manifest) -> bytes:
    """The stored form of a manifest (`parse_manifest()` reads it back)."""
    return json.dumps({"arrays": arrays}, sort_keys=True).encode()


def parse_manifest(raw: bytes) -> Manifest:
    """The checksums by array path and shard key; `MetadataError` naming the key if it is not ours.

    >>> parse_manifest(b'{"arrays": {"t": {"t/c/0": "crc32c:0000000a"}}}')
    {'t': {'t/c/0': 'crc32c:0000000a'}}
    >>> parse_manifest(b'{"arrays": {"t": [1]}}')
    Traceback (most recent call last):
    ...
    zarr3_backend.errors.MetadataError: __zarr3_backend_converted.json: expected {"arrays": {<array path>: {<shard key>: "crc32c:..."}}}, got {'arrays': {'t': [1]}} (it is not what zarr3 convert writes; delete it to stop checking the store against it)
    """
    document = decode_document(raw, MANIFEST_KEY)
    arrays = document.get("arrays") if isinstance(document, dict) else None
    if isinstance(arrays, dict) and all(
        isinstance(shards, dict)
        and all(isinstance(v, str) and v.startswith("crc32c:") for v in shards.values())
        for shards in arrays.values()
    ):
        return arrays
    raise MetadataError(
        f'{MANIFEST_KEY}: expected {{"arrays": {{<array path>: {{<shard key>: "crc32c:..."}}}}}}, got '
        f"{str(document)[:200]} (it is not what zarr3 convert writes; delete it to stop checking the store "
        "against it)"
    )
