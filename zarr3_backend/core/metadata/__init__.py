"""Metadata documents, Zarr v3 and v2 side by side: the only place JSON becomes objects.

`v3` parses ``zarr.json``; `v2` parses ``.zarray``, ``.zgroup``, ``.zattrs``
and ``.zmetadata``. Both give the one array description, `ArrayMetadata`
(for v2, its subclass `V2ArrayMetadata`, which also keeps the ``.zarray``),
with codecs as JSON: `zarr3_backend.codecs.chain` builds them for both.
`common` decodes JSON within the parse limits and holds the field parsers
both versions use. This package names the v3 and shared parts; the v2 ones
are imported from `zarr3_backend.core.metadata.v2`.
"""

from .common import (
    ADDRESS_SPACE,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    check_chunk_bytes,
    decode_document,
    json_depth,
    parse_attributes,
    parse_shape,
)
from .v3 import (
    ArrayMetadata,
    GroupMetadata,
    NodeMetadata,
    encode_metadata,
    metadata_key,
    node_metadata_from_json,
    parse_consolidated,
    parse_dimension_names,
    parse_extension_list,
    parse_node_metadata,
)

__all__ = [
    "ADDRESS_SPACE",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "ArrayMetadata",
    "GroupMetadata",
    "NodeMetadata",
    "check_chunk_bytes",
    "decode_document",
    "encode_metadata",
    "json_depth",
    "metadata_key",
    "node_metadata_from_json",
    "parse_attributes",
    "parse_consolidated",
    "parse_dimension_names",
    "parse_extension_list",
    "parse_node_metadata",
    "parse_shape",
]
