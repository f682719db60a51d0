"""The one extension-object parser and the one integer test, and that every extension point uses them."""

import numpy as np
import pytest

from zarr3_backend import MetadataError, UnknownExtensionError
from zarr3_backend.codecs.registry import codec_from_json
from zarr3_backend.core.chunk_grid import RegularChunkGrid
from zarr3_backend.core.chunk_keys import parse_chunk_key_encoding
from zarr3_backend.core.dtypes import parse_data_type
from zarr3_backend.core.extension import ExtensionObject, parse_extension
from zarr3_backend.core.integers import is_int
from zarr3_backend.core.metadata import ArrayMetadata


@pytest.mark.parametrize(
    "obj, expected",
    [
        ("crc32c", ExtensionObject("crc32c", {}, True)),
        ({"name": "crc32c"}, ExtensionObject("crc32c", {}, True)),
        ({"name": "gzip", "configuration": {"level": 1}}, ExtensionObject("gzip", {"level": 1}, True)),
        ({"name": "x", "configuration": {}, "must_understand": False}, ExtensionObject("x", {}, False)),
        ({"name": "x", "must_understand": True}, ExtensionObject("x", {}, True)),
    ],
)
def test_names_and_objects_parse_to_one_form(obj, expected):
    assert parse_extension(obj, "codecs[0]") == expected


@pytest.mark.parametrize(
    "obj, message",
    [
        (3, r"^here: expected an object with a string 'name' \(or a short-hand name\), got 3$"),
        ([1, 2], r"^here: expected an object with a string 'name'.*got \[1, 2\]$"),
        (
            {"configuration": {}},
            r"^here: expected an object with a string 'name', got \{'configuration': \{\}\} \(it has no 'name' member\)$",
        ),
        ({"name": 3}, r"^here\.name: expected a string, got 3$"),
        (
            {"name": "x", "extra": 1, "other": 2},
            r"^here: unexpected members \['extra', 'other'\] in .*'x'.*holds only 'name', 'configuration' and 'must_understand'$",
        ),
        (
            {"name": "x", "configuration": [1]},
            r"^here\.configuration: expected an object, got \[1\] in \{'name': 'x'",
        ),
        (
            {"name": "x", "must_understand": "no"},
            r"^here\.must_understand: expected true or false, got 'no'$",
        ),
        ({"name": "x", "must_understand": 0}, r"^here\.must_understand: expected true or false, got 0$"),
    ],
)
def test_malformed_objects_name_where_and_what(obj, message):
    with pytest.raises(MetadataError, match=message):
        parse_extension(obj, "here")


@pytest.mark.parametrize("must_understand", [False, "no", None])
def test_points_that_cannot_be_optional_refuse_anything_but_true(must_understand):
    obj = {"name": "regular", "must_understand": must_understand}
    with pytest.raises(
        MetadataError,
        match=r"^grid\.must_understand: expected true or absent \(the spec does not allow false here\)",
    ):
        parse_extension(obj, "grid", may_be_optional=False)
    assert parse_extension(
        {"name": "regular", "must_understand": True}, "grid", may_be_optional=False
    ).must_understand


def test_long_values_are_shortened_in_messages():
    with pytest.raises(MetadataError) as info:
        parse_extension({"name": "x", "configuration": ["y" * 1000]}, "here")
    assert len(str(info.value)) < 600 and "..." in str(info.value)


# Every extension point reports the same envelope errors through the one parser.
POINTS = [
    (lambda obj: RegularChunkGrid.from_json(obj), "chunk_grid"),
    (parse_chunk_key_encoding, "chunk_key_encoding"),
    (parse_data_type, "data_type"),
    (codec_from_json, "codec"),
]


@pytest.mark.parametrize("parse, where", POINTS)
@pytest.mark.parametrize(
    "obj, suffix, message",
    [
        ({"name": 7}, ".name", "expected a string"),
        ({"name": "x", "configuration": "y"}, ".configuration", "expected an object"),
        ({"name": "x", "junk": 1}, "", r"unexpected members \['junk'\]"),
    ],
)
def test_every_extension_point_uses_the_shared_parser(parse, where, obj, suffix, message):
    with pytest.raises(MetadataError, match=rf"^{where}{suffix}: {message}"):
        parse(obj)


ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [4],
    "data_type": "int8",
    "fill_value": 0,
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default"},
    "codecs": ["bytes"],
}


def test_metadata_lists_use_the_shared_parser_and_name_the_document():
    document = {**ARRAY, "codecs": ["bytes", {"name": "crc32c", "must_understand": "yes"}]}
    with pytest.raises(
        MetadataError, match=r"^a/zarr.json: codecs\[1\]\.must_understand: expected true or false, got 'yes'$"
    ):
        ArrayMetadata.from_json(document, "a/zarr.json")
    document["codecs"] = ["bytes"]
    document["storage_transformers"] = [{"name": "t", "must_understand": False, "extra": 1}]
    with pytest.raises(
        MetadataError, match=r"^a/zarr.json: storage_transformers\[0\]: unexpected members \['extra'\]"
    ):
        ArrayMetadata.from_json(document, "a/zarr.json")
    document["storage_transformers"] = ["t"]
    with pytest.raises(UnknownExtensionError, match="storage transformer 't' is not supported"):
        ArrayMetadata.from_json(document, "a/zarr.json")


def test_errors_from_parsers_get_the_document_key_once():
    document = {**ARRAY, "chunk_key_encoding": {"name": "nope"}}
    with pytest.raises(UnknownExtensionError) as info:
        ArrayMetadata.from_json(document, "a/zarr.json")
    assert str(info.value).startswith("a/zarr.json: chunk_key_encoding: unknown chunk key encoding 'nope'")
    document["chunk_key_encoding"] = "default"
    document["shape"] = [True]
    with pytest.raises(MetadataError) as info:
        ArrayMetadata.from_json(document, "a/zarr.json")
    assert str(info.value).count("a/zarr.json") == 1


@pytest.mark.parametrize(
    "value, numpy_ok, json_ok",
    [
        (3, True, True),
        (-1, True, True),
        (2**80, True, True),
        (np.int64(3), True, False),
        (np.uint8(3), True, False),
        (True, False, False),
        (np.bool_(True), False, False),
        (3.0, False, False),
        ("3", False, False),
        (None, False, False),
    ],
)
def test_is_int(value, numpy_ok, json_ok):
    assert is_int(value) is numpy_ok
    assert is_int(value, numpy=False) is json_ok
