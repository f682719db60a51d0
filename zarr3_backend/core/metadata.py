"""Array and group ``zarr.json`` documents: the only place JSON becomes objects.

Parsing validates every field and raises `MetadataError` naming the
document key, the field, what was expected and what was found. Unknown
top-level keys and storage transformers follow the spec's ``must_understand``
rule. Codecs stay plain JSON here; `zarr3_backend.codecs.chain` builds them.

Hostile documents give a `MetadataError` too: parsing refuses nesting
deeper than `MAX_DEPTH`, integer literals longer than
`MAX_INT_DIGITS` digits, shapes whose product reaches 2**63, and chunks
whose byte size exceeds `ADDRESS_SPACE`, before anything is allocated.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ..errors import ArgumentTypeError, MetadataError, UnknownExtensionError, Zarr3Error, with_location
from .chunk_keys import ChunkKeyEncoding, parse_chunk_key_encoding
from .dtypes import DataType, Scalar, parse_data_type
from .extension import parse_extension
from .grids import ChunkGrid, parse_chunk_grid
from .integers import is_int
from .keys import segment_problem
from .rectilinear_grid import RectilinearChunkGrid
from .storage_transformers import is_registered

ARRAY_KEYS = frozenset(
    {
        "zarr_format",
        "node_type",
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "storage_transformers",
        "dimension_names",
    }
)
GROUP_KEYS = frozenset({"zarr_format", "node_type", "attributes", "consolidated_metadata"})


#: Deepest nesting of JSON objects and arrays accepted in a ``zarr.json``.
MAX_DEPTH = 64
#: Longest integer literal (in digits) accepted in a ``zarr.json``; no data type needs more than 20.
MAX_INT_DIGITS = 40
#: Bytes a process can address: no chunk may be larger (a 64-bit CPU maps at most 2**48 bytes per process).
ADDRESS_SPACE = min(sys.maxsize, 1 << 48)
_MAX_INDEX = 2**63  # numpy indexes with int64: shapes and their products stay below it


def _fail(where: str, field_name: str, expected: str, got: Any) -> MetadataError:
    shown = repr(got)
    return MetadataError(
        f"{where}: {field_name}: expected {expected}, got {shown[:200]}{'...' if len(shown) > 200 else ''}"
    )


def parse_shape(value: object, where: str, field_name: str = "shape", low: int = 0) -> tuple[int, ...]:
    """A list of integers of at least ``low`` whose product stays below 2**63."""
    if not isinstance(value, list) or not all(
        is_int(v, numpy=False) and low <= v < _MAX_INDEX for v in value
    ):
        kind = "non-negative" if low == 0 else "positive"
        raise _fail(where, field_name, f"a list of {kind} integers below 2**63", value)
    if math.prod(value) >= _MAX_INDEX:
        raise _fail(where, field_name, "a shape with fewer than 2**63 elements", value)
    return tuple(value)


def check_chunk_bytes(chunk_shape: tuple[int, ...], data_type: DataType, where: str) -> None:
    """Refuse chunks no process could hold, before anything tries to allocate one."""
    nbytes = math.prod(chunk_shape) * data_type.numpy.itemsize
    if nbytes > ADDRESS_SPACE:
        raise MetadataError(
            f"{where}: chunk_grid.configuration.chunk_shape: a chunk of shape {list(chunk_shape)} and data type "
            f"{data_type.name!r} needs {nbytes} bytes, more than a process can address ({ADDRESS_SPACE})"
        )


def parse_attributes(value: object, where: str) -> dict[str, Any]:
    """An object of user attributes (missing means empty)."""
    if not isinstance(value, dict):
        raise _fail(where, "attributes", "a JSON object", value)
    return value


def parse_dimension_names(value: object, ndim: int, where: str) -> tuple[str | None, ...] | None:
    """``None`` or a list of strings/nulls with one entry per dimension."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != ndim
        or not all(v is None or isinstance(v, str) for v in value)
    ):
        raise _fail(where, "dimension_names", f"a list of {ndim} strings or nulls", value)
    if any(v is not None and "\0" in v for v in value):
        raise _fail(where, "dimension_names", "names without NUL characters", value)
    return tuple(value)


def parse_extension_list(value: object, field_name: str, where: str) -> tuple[dict[str, Any], ...]:
    """A list of extension objects or short-hand names, each checked and kept as an object (a name ``n`` as ``{"name": n}``)."""
    if not isinstance(value, list):
        raise _fail(where, field_name, "a list of extension objects", value)
    for i, item in enumerate(value):
        parse_extension(item, f"{where}: {field_name}[{i}]")
    return tuple({"name": item} if isinstance(item, str) else item for item in value)


def _check_storage_transformers(items: tuple[dict[str, Any], ...], where: str) -> tuple[dict[str, Any], ...]:
    """Refuse unregistered transformers unless optional; all are kept so rewrites preserve them."""
    for item in items:
        if not is_registered(item["name"]) and item.get("must_understand", True) is not False:
            raise UnknownExtensionError(
                f"{where}: storage transformer {item['name']!r} is not supported; "
                "this array cannot be read correctly without it"
            )
    return items


def _unknown_keys(document: dict[str, Any], known: frozenset[str], where: str) -> dict[str, Any]:
    extra = {}
    for key in document.keys() - known:
        value = document[key]
        if not (isinstance(value, dict) and value.get("must_understand") is False):
            raise UnknownExtensionError(
                f'{where}: unknown metadata field {key!r} (not marked "must_understand": false); '
                "this node needs an extension zarr3_backend does not implement"
            )
        extra[key] = value
    return extra


def _check_header(document: object, node_type: str, where: str) -> dict[str, Any]:
    """``document`` itself, once it is a JSON object with the ``zarr_format`` and ``node_type`` of a v3 ``node_type``."""
    if not isinstance(document, dict):
        raise _fail(where, "document", "a JSON object", type(document).__name__)
    if document.get("zarr_format") != 3:
        raise _fail(where, "zarr_format", "3", document.get("zarr_format"))
    if document.get("node_type") != node_type:
        raise _fail(where, "node_type", repr(node_type), document.get("node_type"))
    return document


def _require(document: dict[str, Any], name: str, where: str) -> Any:
    if name not in document:
        raise MetadataError(f"{where}: missing required field {name!r}")
    return document[name]


@dataclass(frozen=True)
class ArrayMetadata:
    """The contents of an array's ``zarr.json``."""

    shape: tuple[int, ...]
    data_type: DataType
    chunk_grid: ChunkGrid
    chunk_key_encoding: ChunkKeyEncoding
    fill_value: Scalar
    codecs: tuple[dict[str, Any], ...]
    attributes: dict[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    storage_transformers: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    node_type: Literal["array"] = "array"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """The shape of one stored chunk (a shard, for sharded arrays); the largest one on a rectilinear grid."""
        return tuple(self.chunk_grid.chunk_shape)

    @classmethod
    def from_json(cls, document: object, where: str = "zarr.json") -> ArrayMetadata:
        """Parse and validate an array metadata document."""
        document = _check_header(document, "array", where)
        try:
            shape = parse_shape(_require(document, "shape", where), where)
            data_type = parse_data_type(_require(document, "data_type", where))
            grid = parse_chunk_grid(_require(document, "chunk_grid", where))
            if not grid.is_regular:
                grid.validate(shape)
            if len(grid.chunk_shape) != len(shape):
                raise _fail(
                    where,
                    "chunk_grid.configuration.chunk_shape",
                    f"{len(shape)} dimensions",
                    list(grid.chunk_shape),
                )
            parse_shape(list(grid.chunk_shape), where, "chunk_grid.configuration.chunk_shape", low=1)
            check_chunk_bytes(grid.chunk_shape, data_type, where)
            encoding = parse_chunk_key_encoding(_require(document, "chunk_key_encoding", where))
            fill_value = data_type.parse_fill_value(_require(document, "fill_value", where))
            codecs = parse_extension_list(_require(document, "codecs", where), "codecs", where)
            transformers = parse_extension_list(
                document.get("storage_transformers", []), "storage_transformers", where
            )
        except Zarr3Error as exc:
            raise with_location(exc, where) from exc
        if not codecs:
            raise _fail(where, "codecs", "a non-empty list with one array -> bytes codec", [])
        return cls(
            shape=shape,
            data_type=data_type,
            chunk_grid=grid,
            chunk_key_encoding=encoding,
            fill_value=fill_value,
            codecs=codecs,
            attributes=parse_attributes(document.get("attributes", {}), where),
            dimension_names=parse_dimension_names(document.get("dimension_names"), len(shape), where),
            storage_transformers=_check_storage_transformers(transformers, where),
            extra=_unknown_keys(document, ARRAY_KEYS, where),
        )

    def to_json(self) -> dict[str, Any]:
        """The metadata document as a JSON-compatible dict."""
        document: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(self.shape),
            "data_type": self.data_type.to_json(),
            "chunk_grid": self.chunk_grid.to_json(),
            "chunk_key_encoding": self.chunk_key_encoding.to_json(),
            "fill_value": self.data_type.fill_value_to_json(self.fill_value),
            "codecs": list(self.codecs),
            "attributes": self.attributes,
        }
        if self.dimension_names is not None:
            document["dimension_names"] = list(self.dimension_names)
        if self.storage_transformers:
            document["storage_transformers"] = list(self.storage_transformers)
        return {**document, **self.extra}

    def with_shape(
        self, shape: tuple[int, ...], edges: tuple[tuple[int, ...] | None, ...] | None = None
    ) -> ArrayMetadata:
        """This array at ``shape``; a rectilinear grid grown past its declaration gets new chunks (see
        [`extended_to`][zarr3_backend.core.rectilinear_grid.RectilinearChunkGrid.extended_to])."""
        grid = self.chunk_grid
        if isinstance(grid, RectilinearChunkGrid):
            grid = grid.extended_to(shape, edges)
        return replace(self, shape=tuple(shape), chunk_grid=grid)

    def with_attributes(self, attributes: dict[str, Any]) -> ArrayMetadata:
        return replace(self, attributes=dict(attributes))


@dataclass(frozen=True)
class GroupMetadata:
    """The contents of a group's ``zarr.json``.

    ``consolidated`` maps child paths (relative to this group) to their
    metadata documents when the group carries zarr-python's inline
    ``consolidated_metadata``; ``None`` when it does not.
    """

    attributes: dict[str, Any] = field(default_factory=dict)
    consolidated: dict[str, dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    node_type: Literal["group"] = "group"

    @classmethod
    def from_json(cls, document: object, where: str = "zarr.json") -> GroupMetadata:
        """Parse and validate a group metadata document."""
        document = _check_header(document, "group", where)
        return cls(
            attributes=parse_attributes(document.get("attributes", {}), where),
            consolidated=parse_consolidated(document.get("consolidated_metadata"), where),
            extra=_unknown_keys(document, GROUP_KEYS, where),
        )

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"zarr_format": 3, "node_type": "group", "attributes": self.attributes}
        if self.consolidated is not None:
            document["consolidated_metadata"] = {
                "kind": "inline",
                "must_understand": False,
                "metadata": self.consolidated,
            }
        return {**document, **self.extra}

    def with_attributes(self, attributes: dict[str, Any]) -> GroupMetadata:
        return replace(self, attributes=dict(attributes))

    def with_consolidated(self, consolidated: dict[str, dict[str, Any]] | None) -> GroupMetadata:
        return replace(self, consolidated=consolidated)


def parse_consolidated(value: object, where: str) -> dict[str, dict[str, Any]] | None:
    """zarr-python's inline consolidated metadata: ``{"kind": "inline", "metadata": {path: doc}}``."""
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or value.get("kind") != "inline"
        or not isinstance(value.get("metadata"), dict)
    ):
        raise _fail(where, "consolidated_metadata", "{'kind': 'inline', 'metadata': {...}}", value)
    members: dict[str, dict[str, Any]] = value["metadata"]  # each value is checked below
    for name, document in members.items():
        for segment in name.split("/"):
            problem = segment_problem(segment)
            if problem is not None:
                raise MetadataError(
                    f"{where}: consolidated_metadata member {name!r}: segment {segment!r} {problem}; "
                    "it could escape the store root"
                )
        if not isinstance(document, dict):
            raise _fail(
                where, f"consolidated_metadata.metadata[{name!r}]", "a metadata document (object)", document
            )
    return members


NodeMetadata = ArrayMetadata | GroupMetadata


def parse_node_metadata(raw: bytes, where: str) -> NodeMetadata:
    """Decode a ``zarr.json`` value into array or group metadata, within the parse limits."""
    return node_metadata_from_json(decode_document(raw, where), where)


def decode_document(raw: bytes, where: str) -> object:
    """A JSON metadata document decoded within the parse limits (depth, integer length); `MetadataError` if not."""
    encoding = json.detect_encoding(raw)
    try:
        document = _DECODER.decode(raw.decode(encoding, "surrogatepass"))  # as json.loads
    except RecursionError as exc:
        raise MetadataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too long integers
        raise MetadataError(f"{where}: not valid JSON ({exc})") from exc
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:  # fewer brackets cannot nest deeper
        _check_depth(raw, encoding, document, where)
    return document


def _parse_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INT_DIGITS:
        raise MetadataError(
            f"integer literal of {len(literal)} digits; at most {MAX_INT_DIGITS} are accepted"
        )
    return int(literal)


_DECODER = json.JSONDecoder(parse_int=_parse_int)


def _check_depth(raw: bytes, encoding: str, document: object, where: str) -> None:
    """Refuse JSON nested deeper than `MAX_DEPTH` (later recursive code would overflow the stack).

    UTF-8 documents are measured on their bytes (`json_depth()`, which is
    faster than walking the decoded document); others by walking ``document``.
    """
    if encoding.startswith("utf-8"):
        if json_depth(raw) > MAX_DEPTH:
            raise MetadataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
        return
    stack = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise MetadataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")


def json_depth(raw: bytes) -> int:
    """How deep arrays and objects nest in ``raw``, valid JSON in UTF-8 (brackets inside strings do not count).

    Escaped backslashes, then escaped quotes, are dropped, so that the
    remaining quotes delimit strings; what lies outside them keeps its brackets.

    >>> json_depth(b'{"a": [1, {"b": "]]\\\\\\"[["}], "c": []}')
    3
    """
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = np.frombuffer(b"".join(unescaped.split(b'"')[0::2]).translate(None, _NOT_BRACKETS), np.uint8)
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max(initial=0))


def node_metadata_from_json(document: object, where: str) -> NodeMetadata:
    """Array or group metadata from a decoded JSON document."""
    if isinstance(document, dict) and document.get("zarr_format") == 2:
        raise MetadataError(f"{where}: this is Zarr v2 metadata; zarr3_backend reads Zarr v3 only")
    node_type = document.get("node_type") if isinstance(document, dict) else None
    if node_type == "array":
        return ArrayMetadata.from_json(document, where)
    if node_type == "group":
        return GroupMetadata.from_json(document, where)
    if not isinstance(document, dict):
        raise _fail(where, "document", "a JSON object", type(document).__name__)
    if document.get("zarr_format") != 3:
        raise _fail(where, "zarr_format", "3", document.get("zarr_format"))
    raise _fail(where, "node_type", "'array' or 'group'", node_type)


def encode_metadata(metadata: NodeMetadata) -> bytes:
    """Serialise metadata to the bytes stored under ``zarr.json``; a non-JSON attribute is refused by name."""
    document = metadata.to_json()
    try:
        return json.dumps(document, indent=2, default=_json_default).encode()
    except TypeError as exc:
        attributes = document.get("attributes") or {}
        bad = [key for key, value in attributes.items() if not _serialisable(value)]
        raise ArgumentTypeError(
            f"attribute {bad[0] if bad else '?'!r}: {exc}; convert it to a str, number, list or dict, or drop it"
        ) from exc


def _serialisable(value: Any) -> bool:
    try:
        json.dumps(value, default=_json_default)
    except TypeError:
        return False
    return True


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"attribute value {value!r} of type {type(value).__name__} is not JSON serialisable")


def metadata_key(path: str) -> str:
    """The store key of the ``zarr.json`` of the node at ``path``."""
    return f"{path}/zarr.json" if path else "zarr.json"
