"""Zarr v2 metadata (``.zarray``, ``.zgroup``, ``.zattrs``, consolidated ``.zmetadata``) as node metadata.

Spec: https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html. A v2 array becomes a
`V2ArrayMetadata`: the v3 description that reads the same bytes, so
arrays read v2 chunks through the ordinary read path:

* chunk keys: the ``v2`` chunk key encoding with the ``dimension_separator``;
* codecs, for arrays of simple types without filters: ``transpose`` (when
  ``order`` is ``"F"``), ``bytes`` with the stored byte order, then the
  compressor; otherwise `V2FilterCodec`
  (filters, object and structured types), then the compressor. Compressors
  ``blosc``, ``zstd`` and ``gzip`` become the v3 codecs of those names, any
  other numcodecs id ``numcodecs.<id>`` (so decompression is bounded as for v3);
* data type and fill value: `zarr3_backend.core.dtypes.v2`;
* attributes: the ``.zattrs`` object (``_ARRAY_DIMENSIONS`` included, as zarr-python shows it).

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

from ..codecs.bytes import needs_endian
from ..codecs.chain import CodecChain
from ..codecs.numcodecs_adapter import PREFIX
from ..codecs.registry import codec_from_json
from ..codecs.spec import ChunkSpec
from ..codecs.v2 import V2FilterCodec, v2_filter
from ..core.chunk_grid import RegularChunkGrid
from ..core.chunk_keys import Separator, V2ChunkKeyEncoding
from ..core.dtypes.v2 import V2DataType, parse_v2_dtype, parse_v2_fill_value
from ..core.json_types import JSON
from ..core.keys import segment_problem
from ..core.metadata import (
    ArrayMetadata,
    GroupMetadata,
    NodeMetadata,
    check_chunk_bytes,
    decode_document,
    parse_attributes,
    parse_shape,
)
from ..errors import MetadataError, Zarr3Error, with_location
from ..store.base import Store, plain_values

ZARRAY, ZGROUP, ZATTRS, ZMETADATA = ".zarray", ".zgroup", ".zattrs", ".zmetadata"
#: Required ``.zarray`` members (``filters`` may be left out: zarr-python reads that as ``null``).
ZARRAY_KEYS = frozenset({"zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order"})
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
    if filters or dtype.stored.kind == "O" or dtype.stored.fields is not None:
        head = [V2FilterCodec(dtype.stored, order, tuple(filters)).to_json()]
    else:
        head = _plain_layout(dtype, order, len(shape))
    try:  # checked here so that errors name the .zarray (arrays build the chain again)
        CodecChain.from_json([*head, *compressor]).validate(ChunkSpec(chunks, dtype.data_type, fill_value))
    except Zarr3Error as exc:
        raise with_location(exc, where) from exc
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


def _filters(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MetadataError(
            f"{where}: filters: expected null or a list of codec objects, got {str(value)[:200]!r}"
        )
    return [v2_filter(item, f"{where}: filters[{i}]") for i, item in enumerate(value)]


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
    """The v3 codec object for a v2 ``compressor`` (checked by building it)."""
    codec = v2_filter(config, f"{where}: compressor")  # validates the object and id, refuses unsafe codecs
    codec_id = codec.name.removeprefix(PREFIX)
    if codec_id not in _NATIVE_COMPRESSORS:
        return codec.to_json()
    options = dict(getattr(codec, "configuration"))  # noqa: B009 (typed as Codec;) a numcodecs adapter: the object without its id
    if codec_id == "blosc":
        typesize = dtype.stored.itemsize if dtype.stored.kind != "O" else 1
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
    document = {"name": codec_id, "configuration": options}
    codec_from_json(document)  # the v3 codec checks its configuration here, so errors name the .zarray
    return document


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


def _key(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _documents(raws: list[bytes | None], names: tuple[str, ...], path: str) -> dict[str, Any]:
    return {name: decode_document(raw, _key(path, name)) for name, raw in zip(names, raws) if raw is not None}


def read_v2_node(store: Store, path: str) -> NodeMetadata | None:
    """The v2 node at ``path`` (``None`` if it has neither ``.zarray`` nor ``.zgroup``), in one batched fetch.

    A group with a ``.zmetadata`` carries it as its consolidated metadata.
    """
    names = (ZARRAY, ZGROUP, ZATTRS, ZMETADATA)
    documents = _documents(
        plain_values(store.get_many_versioned([(_key(path, n), None) for n in names])), names, path
    )
    if ZARRAY not in documents and ZGROUP not in documents:
        return None
    node = v2_node_from_documents(documents, path or "/")
    if isinstance(node, V2GroupMetadata) and ZMETADATA in documents:
        consolidated = parse_zmetadata(documents[ZMETADATA], _key(path, ZMETADATA))
        consolidated.pop("", None)
        node = node.with_consolidated(consolidated)
    return node


def read_v2_children(store: Store, path: str, names: list[str]) -> dict[str, NodeMetadata]:
    """The v2 nodes among the children ``names`` of ``path``, fetched in one batched call."""
    keys = (ZARRAY, ZGROUP, ZATTRS)
    child_paths = [_key(path, name) for name in names]
    raws = plain_values(store.get_many_versioned([(_key(p, k), None) for p in child_paths for k in keys]))
    found: dict[str, NodeMetadata] = {}
    for index, (name, child) in enumerate(zip(names, child_paths)):
        documents = _documents(raws[3 * index : 3 * index + 3], keys, child)
        if ZARRAY in documents or ZGROUP in documents:
            found[name] = v2_node_from_documents(documents, child)
    return found


def is_v2(metadata: object) -> bool:
    """Whether ``metadata`` was read from Zarr v2 documents."""
    return isinstance(metadata, V2ArrayMetadata | V2GroupMetadata)
