"""Zarr v2 documents -> the array description, codecs as JSON: layouts, pure checks, .zmetadata, documents kept."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from zarr3_backend import MetadataError
from zarr3_backend.core.metadata import ArrayMetadata
from zarr3_backend.core.metadata.v2 import (
    V2_FILTERS_CODEC,
    V2ArrayMetadata,
    V2GroupMetadata,
    is_v2,
    parse_zarray,
    parse_zmetadata,
    v2_node_from_documents,
)

GOOD: dict[str, Any] = {
    "zarr_format": 2,
    "shape": [4, 6],
    "chunks": [2, 3],
    "dtype": "<f8",
    "compressor": None,
    "fill_value": 0,
    "order": "C",
    "filters": None,
}
LITTLE = {"name": "bytes", "configuration": {"endian": "little"}}


def zarray(**change: Any) -> V2ArrayMetadata:
    return parse_zarray({**GOOD, **change}, {}, "a/.zarray")


@pytest.mark.parametrize(
    ("change", "codecs"),
    [
        ({}, [LITTLE]),
        (
            {"dtype": ">i4", "order": "F"},
            [
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "big"}},
            ],
        ),
        ({"dtype": "|u1"}, [{"name": "bytes"}]),
        ({"dtype": "|S3", "fill_value": None}, [{"name": "bytes"}]),
        (
            {"filters": [{"id": "delta", "dtype": "<f8"}], "order": "F"},
            [
                {
                    "name": V2_FILTERS_CODEC,
                    "configuration": {
                        "dtype": "<f8",
                        "order": "F",
                        "filters": [{"name": "numcodecs.delta", "configuration": {"dtype": "<f8"}}],
                    },
                }
            ],
        ),
        (
            {"dtype": [["x", ">i2"], ["y", "<f4", [2]]], "fill_value": None},
            [
                {
                    "name": V2_FILTERS_CODEC,
                    "configuration": {
                        "dtype": [["x", ">i2"], ["y", "<f4", [2]]],
                        "order": "C",
                        "filters": [],
                    },
                }
            ],
        ),
        (
            {"dtype": "|O", "filters": [{"id": "vlen-utf8"}], "fill_value": ""},
            [
                {
                    "name": V2_FILTERS_CODEC,
                    "configuration": {
                        "dtype": "|O",
                        "order": "C",
                        "filters": [{"name": "numcodecs.vlen-utf8", "configuration": {}}],
                    },
                }
            ],
        ),
        (
            {"dtype": "|u1", "compressor": {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": -1}},
            [
                {"name": "bytes"},
                {
                    "name": "blosc",
                    "configuration": {
                        "typesize": 1,
                        "cname": "zstd",
                        "clevel": 3,
                        "shuffle": "bitshuffle",
                        "blocksize": 0,
                    },
                },
            ],
        ),
        (
            {"compressor": {"id": "zstd"}},
            [LITTLE, {"name": "zstd", "configuration": {"level": 0, "checksum": False}}],
        ),
        (
            {"compressor": {"id": "gzip", "level": 1}},
            [LITTLE, {"name": "gzip", "configuration": {"level": 1}}],
        ),
        (
            {"compressor": {"id": "no-such-codec", "x": 1}},
            [LITTLE, {"name": "numcodecs.no-such-codec", "configuration": {"x": 1}}],
        ),
    ],
)
def test_layouts_are_codec_json(change: dict[str, Any], codecs: list[dict[str, Any]]) -> None:
    """Codecs stay JSON: whether a codec exists or accepts its configuration is the chain's to check."""
    metadata = zarray(**change)
    assert list(metadata.codecs) == codecs
    assert isinstance(metadata, ArrayMetadata) and is_v2(metadata)


def test_description_reads_like_zarr_json() -> None:
    metadata = zarray(dtype=">u2", fill_value=7, dimension_separator="/")
    assert metadata.shape == (4, 6) and metadata.chunk_shape == (2, 3)
    assert metadata.data_type.numpy == np.dtype("uint16") and metadata.fill_value == np.uint16(7)
    assert metadata.chunk_key_encoding.encode_chunk_key((1, 2)) == "1/2"
    assert zarray(fill_value=None).v2_fill_value is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"order": "K"}, "a/.zarray: order: expected 'C' or 'F', got 'K'"),
        ({"dimension_separator": "-"}, "a/.zarray: dimension_separator: expected '.' or '/', got '-'"),
        (
            {"compressor": "zlib"},
            "a/.zarray: compressor: expected a codec object with a string 'id', got 'zlib'",
        ),
        ({"filters": [{"id": 3}]}, "a/.zarray: filters[0]: expected a codec object with a string 'id'"),
        ({"filters": {"id": "delta"}}, "a/.zarray: filters: expected null or a list of codec objects"),
        (
            {"compressor": {"id": "blosc", "shuffle": 7}},
            "a/.zarray: compressor blosc: 'shuffle' must be -1 (automatic), 0, 1 or 2, got 7",
        ),
        ({"zarr_format": 3}, "a/.zarray: zarr_format: expected 2, got 3"),
        ({"chunks": [2]}, "a/.zarray: chunks: expected 2 dimensions like shape, got [2]"),
    ],
)
def test_errors_name_the_document_and_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataError) as raised:
        zarray(**change)
    assert str(raised.value).startswith(message)


def test_nodes_from_documents_keep_them() -> None:
    array = v2_node_from_documents({".zarray": GOOD, ".zattrs": {"_ARRAY_DIMENSIONS": ["y", "x"]}}, "a")
    assert array.attributes == {"_ARRAY_DIMENSIONS": ["y", "x"]}
    assert array.to_json() == {".zarray": GOOD, ".zattrs": {"_ARRAY_DIMENSIONS": ["y", "x"]}}
    group = v2_node_from_documents({".zgroup": {"zarr_format": 2}}, "g")
    assert isinstance(group, V2GroupMetadata) and group.to_json() == {
        ".zgroup": {"zarr_format": 2},
        ".zattrs": {},
    }
    with pytest.raises(MetadataError, match=r"^g/\.zgroup: expected \{'zarr_format': 2\}"):
        v2_node_from_documents({".zgroup": {"zarr_format": 3}}, "g")
    with pytest.raises(MetadataError, match=r"^g: neither \.zarray nor \.zgroup found"):
        v2_node_from_documents({".zattrs": {}}, "g")
    with pytest.raises(MetadataError, match=r"^a/\.zattrs: attributes"):
        v2_node_from_documents({".zarray": GOOD, ".zattrs": [1]}, "a")


def test_zmetadata_per_node() -> None:
    document = {
        "zarr_consolidated_format": 1,
        "metadata": {
            ".zgroup": {"zarr_format": 2},
            "a/.zarray": GOOD,
            "a/.zattrs": {"k": 1},
            "b/.zattrs": {"orphan": True},  # no node: left out
            "a/other": {},
        },
    }
    assert parse_zmetadata(document, ".zmetadata") == {
        "": {".zgroup": {"zarr_format": 2}},
        "a": {".zarray": GOOD, ".zattrs": {"k": 1}},
    }
    with pytest.raises(MetadataError, match=r"metadata member '\.\./x/\.zarray'.*escape the store root"):
        parse_zmetadata({"metadata": {"../x/.zarray": GOOD}}, ".zmetadata")
    with pytest.raises(MetadataError, match="zarr_consolidated_format: expected 1, got 2"):
        parse_zmetadata({"zarr_consolidated_format": 2, "metadata": {}}, ".zmetadata")
