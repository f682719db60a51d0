"""Array and group ``zarr.json`` documents (Zarr v3) as `ArrayMetadata` and `GroupMetadata`.

Parsing validates every field and raises `MetadataError` naming the
document key, the field, what was expected and what was found, within the
parse limits of `zarr3_backend.core.metadata.common`. Unknown top-level keys
and storage transformers follow the spec's ``must_understand`` rule. Codecs
stay plain JSON here; `zarr3_backend.codecs.chain` builds them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ...errors import ArgumentTypeError, MetadataError, UnknownExtensionError, Zarr3Error, with_location
from ..chunk_grid import ChunkGrid, parse_chunk_grid
from ..chunk_keys import ChunkKeyEncoding, parse_chunk_key_encoding
from ..dtypes import DataType, Scalar, parse_data_type
from ..extension import STORAGE_TRANSFORMERS, parse_extension
from ..key_checks import segment_problem
from ..rectilinear_grid import RectilinearChunkGrid
from .common import check_chunk_bytes, decode_document, field_error, parse_attributes, parse_shape

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


def parse_dimension_names(value: object, ndim: int, where: str) -> tuple[str | None, ...] | None:
    """``None`` or a list of strings/nulls with one entry per dimension."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != ndim
        or not all(v is None or isinstance(v, str) for v in value)
    ):
        raise field_error(where, "dimension_names", f"a list of {ndim} strings or nulls", value)
    if any(v is not None and "\0" in v for v in value):
        raise field_error(where, "dimension_names", "names without NUL characters", value)
    return tuple(value)


def parse_extension_list(value: object, field_name: str, where: str) -> tuple[dict[str, Any], ...]:
    """A list of extension objects or short-hand names, each checked and kept as an object (a name ``n`` as ``{"name": n}``)."""
    if not isinstance(value, list):
        raise field_error(where, field_name, "a list of extension objects", value)
    for i, item in enumerate(value):
        parse_extension(item, f"{where}: {field_name}[{i}]")
    return tuple({"name": item} if isinstance(item, str) else item for item in value)


def _check_storage_transformers(items: tuple[dict[str, Any], ...], where: str) -> tuple[dict[str, Any], ...]:
    """Refuse unregistered transformers unless optional; all are kept so rewrites preserve them."""
    for item in items:
        if item["name"] not in STORAGE_TRANSFORMERS and item.get("must_understand", True) is not False:
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
        raise field_error(where, "document", "a JSON object", type(document).__name__)
    if document.get("zarr_format") != 3:
        raise field_error(where, "zarr_format", "3", document.get("zarr_format"))
    if document.get("node_type") != node_type:
        raise field_error(where, "node_type", repr(node_type), document.get("node_type"))
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
                raise field_error(
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
            raise field_error(where, "codecs", "a non-empty list with one array -> bytes codec", [])
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
        raise field_error(where, "consolidated_metadata", "{'kind': 'inline', 'metadata': {...}}", value)
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
            raise field_error(
                where, f"consolidated_metadata.metadata[{name!r}]", "a metadata document (object)", document
            )
    return members


NodeMetadata = ArrayMetadata | GroupMetadata


def parse_node_metadata(raw: bytes, where: str) -> NodeMetadata:
    """Decode a ``zarr.json`` value into array or group metadata, within the parse limits."""
    return node_metadata_from_json(decode_document(raw, where), where)


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
        raise field_error(where, "document", "a JSON object", type(document).__name__)
    if document.get("zarr_format") != 3:
        raise field_error(where, "zarr_format", "3", document.get("zarr_format"))
    raise field_error(where, "node_type", "'array' or 'group'", node_type)


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
