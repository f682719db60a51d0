"""Zarr v2 metadata (``.zarray``, ``.zgroup``, ``.zattrs``, consolidated ``.zmetadata``) as node metadata.

Spec: https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html. A v2 array becomes a
`V2ArrayMetadata`: the array description a ``zarr.json`` would give for the
same bytes, codecs as JSON, so arrays read v2 chunks through the ordinary read path:

* chunk keys: the ``v2`` chunk key encoding with the ``dimension_separator``;
* codecs, for arrays of simple types without filters: ``transpose`` (when
  ``order`` is ``"F"``), ``bytes`` with the stored byte order, then the
  compressor; otherwise the v2 filter pipeline, one codec named
  `V2_FILTERS_CODEC` (filters, object and structured types), then the
  compressor. Compressors ``blosc``, ``zstd`` and ``gzip`` become the v3
  codecs of those names, any other numcodecs id ``numcodecs.<id>`` (so
  decompression is bounded as for v3);
* data type and fill value: `zarr3_backend.core.dtypes.v2`;
* attributes: the ``.zattrs`` object (``_ARRAY_DIMENSIONS`` included, as zarr-python shows it).

Parsing checks the documents; whether the codecs they name exist, are safe
and accept their configuration is checked where the chain is built
(`zarr3_backend.codecs.chain.array_chain`), as for v3.

Both keep the documents they came from (`V2ArrayMetadata.zarray`, and
``to_json`` gives ``{".zarray" | ".zgroup": ..., ".zattrs": ...}``, the form
consolidated metadata stores per node). v2 nodes are read-only.

>>> m = v2_node_from_documents({".zarray": {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": ">u2",
...     "compressor": {"id": "zlib", "level": 1}, "fill_value": 7, "order": "C", "filters": None}}, "a")
>>> [c["name"] for c in m.codecs], m.chunk_key_encoding.encode_chunk_key((1,)), m.fill_value
(['bytes', 'numcodecs.zlib'], '1', np.uint16(7))
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from ...errors import MetadataError, Zarr3Error, with_location
from ..chunk_grid import RegularChunkGrid
from ..chunk_keys import Separator, V2ChunkKeyEncoding
from ..dtypes.kinds import is_object, needs_endian
from ..dtypes.v2 import V2DataType, parse_v2_dtype, parse_v2_fill_value, v2_dtype_json
from ..json_types import JSON
from ..key_checks import segment_problem
from .common import check_chunk_bytes, parse_attributes, parse_shape
from .v3 import ArrayMetadata, GroupMetadata, NodeMetadata

ZARRAY, ZGROUP, ZATTRS, ZMETADATA = ".zarray", ".zgroup", ".zattrs", ".zmetadata"
#: Required ``.zarray`` members (``filters`` may be left out: zarr-python reads that as ``null``).
ZARRAY_KEYS = frozenset({"zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order"})
#: The codec that undoes v2 ``filters``; its configuration is ``{"dtype", "order", "filters"}``.
V2_FILTERS_CODEC = "zarr3_backend.v2_filters"
#: A numcodecs codec ``{"id": i, ...}`` is the codec named this plus ``i`` (zarr-extensions).
NUMCODECS_PREFIX = "numcodecs."
#: The message every attempt to write a v2 node ends with.
READ_ONLY_HINT = (
    "Zarr v2 stores are read-only in zarr3_backend; convert the store to Zarr v3 with "
    "'zarr3 convert SRC DST' (or zarr3_backend.convert) and write to the result"
)
_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
_NATIVE_COMPRESSORS = {"blosc", "zstd", "gzip"}


@dataclass(frozen=True)
class V2ArrayMetadata(ArrayMetadata):
    """An array's ``.zarray`` (and ``.zattrs``) as the v3 description that reads it; ``zarray`` is the document itself."""

    zarray: dict[str, Any] = field(default_factory=dict)

    @property
    def v2_fill_value(self) -> JSON:
        """The ``fill_value`` as stored (``None`` for ``null``: no fill value, missing chunks read as zeros)."""
        value: JSON = self.zarray.get("fill_value")
        return value

    def to_json(self) -> dict[str, Any]:
        return {ZARRAY: dict(self.zarray), ZATTRS: dict(self.attributes)}


@dataclass(frozen=True)
class V2GroupMetadata(GroupMetadata):
    """A group's ``.zgroup`` and ``.zattrs``; ``consolidated`` holds ``.zmetadata`` per node (see `v2_node_from_documents()`)."""

    def to_json(self) -> dict[str, Any]:
        return {ZGROUP: {"zarr_format": 2}, ZATTRS: dict(self.attributes)}


def is_v2(metadata: object) -> bool:
    """Whether ``metadata`` was read from Zarr v2 documents."""
    return isinstance(metadata, V2ArrayMetadata | V2GroupMetadata)


def v2_node_from_documents(documents: dict[str, Any], where: str) -> NodeMetadata:
    """The node described by ``{".zarray" | ".zgroup": document, ".zattrs": attributes}`` (``.zattrs`` optional).

    Raises `MetadataError` naming ``where`` and the field for a document the spec does not allow.
    """
    attributes = parse_attributes(documents.get(ZATTRS, {}), f"{where}/{ZATTRS}")
    if ZARRAY in documents:
        return parse_zarray(documents[ZARRAY], attributes, f"{where}/{ZARRAY}")
    if ZGROUP in documents:
        document = documents[ZGROUP]
        if not isinstance(document, dict) or document.get("zarr_format") != 2:
            raise MetadataError(
                f"{where}/{ZGROUP}: expected {{'zarr_format': 2}}, got {str(document)[:200]!r}"
            )
        return V2GroupMetadata(attributes=attributes)
    raise MetadataError(f"{where}: neither {ZARRAY} nor {ZGROUP} found")


def parse_zarray(document: object, attributes: dict[str, Any], where: str) -> V2ArrayMetadata:
    """Parse and validate a ``.zarray`` document."""
    if not isinstance(document, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {type(document).__name__}")
    missing = sorted(ZARRAY_KEYS - document.keys())
    if missing:
        raise MetadataError(
            f"{where}: missing required field{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}"
        )
    if document["zarr_format"] != 2:
        raise MetadataError(f"{where}: zarr_format: expected 2, got {document['zarr_format']!r}")
    try:
        shape = parse_shape(document["shape"], where)
        chunks = parse_shape(document["chunks"], where, "chunks", low=1)
        if len(chunks) != len(shape):
            raise MetadataError(
                f"{where}: chunks: expected {len(shape)} dimensions like shape, got {list(chunks)}"
            )
        filters = _filters(document.get("filters"), where)
        dtype = parse_v2_dtype(document["dtype"], _first_id(document.get("filters")), where)
        check_chunk_bytes(chunks, dtype.data_type, where)
        order = document["order"]
        if order not in ("C", "F"):
            raise MetadataError(f"{where}: order: expected 'C' or 'F', got {order!r}")
        given = document.get("dimension_separator")  # absent (older writers) or null: "."
        if given not in (None, ".", "/"):
            raise MetadataError(f"{where}: dimension_separator: expected '.' or '/', got {given!r}")
        separator: Separator = "/" if given == "/" else "."
        compressor = (
            [] if document["compressor"] is None else [_compressor(document["compressor"], dtype, where)]
        )
        fill_value = parse_v2_fill_value(document["fill_value"], dtype, where)
    except Zarr3Error as exc:
        raise with_location(exc, where) from exc
    if filters or is_object(dtype.stored) or dtype.stored.fields is not None:
        configuration = {"dtype": v2_dtype_json(dtype.stored), "order": order, "filters": filters}
        head = [{"name": V2_FILTERS_CODEC, "configuration": configuration}]
    else:
        head = _plain_layout(dtype, order, len(shape))
    return V2ArrayMetadata(
        shape=shape,
        data_type=dtype.data_type,
        chunk_grid=RegularChunkGrid(chunks),
        chunk_key_encoding=V2ChunkKeyEncoding(separator),
        fill_value=fill_value,
        codecs=(*head, *compressor),
        attributes=attributes,
        zarray=dict(document),
    )


def _first_id(filters: object) -> str | None:
    first = filters[0] if isinstance(filters, list) and filters else None
    codec_id = first.get("id") if isinstance(first, dict) else None
    return codec_id if isinstance(codec_id, str) else None


def _filters(value: object, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MetadataError(
            f"{where}: filters: expected null or a list of codec objects, got {str(value)[:200]!r}"
        )
    return [numcodecs_codec(item, f"{where}: filters[{i}]") for i, item in enumerate(value)]


def numcodecs_codec(config: object, where: str) -> dict[str, Any]:
    """The codec object ``{"name": "numcodecs.<id>", "configuration": ...}`` of a v2 filter or compressor ``{"id": ...}``.

    >>> numcodecs_codec({"id": "delta", "dtype": "<i4"}, "a/.zarray: filters[0]")
    {'name': 'numcodecs.delta', 'configuration': {'dtype': '<i4'}}
    """
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise MetadataError(f"{where}: expected a codec object with a string 'id', got {str(config)[:200]!r}")
    configuration = {k: v for k, v in config.items() if k != "id"}
    return {"name": NUMCODECS_PREFIX + config["id"], "configuration": configuration}


def _plain_layout(dtype: V2DataType, order: str, ndim: int) -> list[dict[str, Any]]:
    """``transpose`` for ``"F"`` order, then ``bytes`` with the stored byte order."""
    codecs: list[dict[str, Any]] = []
    if order == "F" and ndim > 1:
        codecs.append({"name": "transpose", "configuration": {"order": list(reversed(range(ndim)))}})
    if needs_endian(dtype.data_type.numpy):
        big = dtype.stored.byteorder == ">" or (dtype.stored.byteorder == "=" and sys.byteorder == "big")
        codecs.append({"name": "bytes", "configuration": {"endian": "big" if big else "little"}})
    else:
        codecs.append({"name": "bytes"})
    return codecs


def _compressor(config: object, dtype: V2DataType, where: str) -> dict[str, Any]:
    """The codec object for a v2 ``compressor``: the v3 codec of its name if there is one, else ``numcodecs.<id>``."""
    codec = numcodecs_codec(config, f"{where}: compressor")
    codec_id = codec["name"].removeprefix(NUMCODECS_PREFIX)
    if codec_id not in _NATIVE_COMPRESSORS:
        return codec
    options = codec["configuration"]
    if codec_id == "blosc":
        typesize = dtype.stored.itemsize if not is_object(dtype.stored) else 1
        stored_shuffle = options.get("shuffle", 1)
        if type(stored_shuffle) is not int or stored_shuffle not in (-1, *_BLOSC_SHUFFLE):
            raise MetadataError(
                f"{where}: compressor blosc: 'shuffle' must be -1 (automatic), 0, 1 or 2, got {stored_shuffle!r}"
            )
        shuffle = _BLOSC_SHUFFLE.get(stored_shuffle, "shuffle" if typesize > 1 else "bitshuffle")
        options = {
            "typesize": max(typesize, 1),
            "cname": options.get("cname", "lz4"),
            "clevel": options.get("clevel", 5),
            "shuffle": shuffle,
            "blocksize": options.get("blocksize", 0),
        }
    elif codec_id == "zstd":
        options = {"level": options.get("level", 0), "checksum": options.get("checksum", False)}
    return {"name": codec_id, "configuration": options}


def parse_zmetadata(document: object, where: str) -> dict[str, dict[str, Any]]:
    """``.zmetadata`` as ``{relative path: {".zarray" | ".zgroup": ..., ".zattrs": ...}}`` (the root is ``""``).

    Keys that could escape the store root are refused, as for v3 consolidated metadata.
    """
    if not isinstance(document, dict) or not isinstance(document.get("metadata"), dict):
        raise MetadataError(
            f"{where}: expected {{'zarr_consolidated_format': 1, 'metadata': {{...}}}}, got {str(document)[:200]!r}"
        )
    if document.get("zarr_consolidated_format", 1) != 1:
        raise MetadataError(
            f"{where}: zarr_consolidated_format: expected 1, got {document.get('zarr_consolidated_format')!r}"
        )
    nodes: dict[str, dict[str, Any]] = {}
    for key, value in document["metadata"].items():
        path, _, name = key.rpartition("/")
        if name not in (ZARRAY, ZGROUP, ZATTRS):
            continue
        for segment in path.split("/") if path else ():
            problem = segment_problem(segment)
            if problem is not None:
                raise MetadataError(
                    f"{where}: metadata member {key!r}: segment {segment!r} {problem}; it could escape the store root"
                )
        nodes.setdefault(path, {})[name] = value
    return {path: docs for path, docs in nodes.items() if ZARRAY in docs or ZGROUP in docs}
