"""zarr.json parsing: every field validated, must_understand, storage transformers, errors that name the field."""

import copy
import json

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import zarr3_backend
from zarr3_backend import MetadataError, UnknownExtensionError
from zarr3_backend.core.metadata import (
    MAX_DEPTH,
    ArrayMetadata,
    GroupMetadata,
    json_depth,
    parse_node_metadata,
)
from zarr3_backend.store import make_store

ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [10, 20],
    "data_type": "float64",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "fill_value": "NaN",
    "attributes": {"foo": 42},
    "dimension_names": ["rows", None],
}


def changed(**fields):
    document = copy.deepcopy(ARRAY)
    for key, value in fields.items():
        if value is None:
            document.pop(key)
        else:
            document[key] = value
    return document


def test_spec_example_round_trips():
    metadata = ArrayMetadata.from_json(ARRAY)
    assert metadata.shape == (10, 20) and np.isnan(metadata.fill_value)
    assert metadata.to_json() == ARRAY | {"attributes": {"foo": 42}}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"shape": [10, -1]}, "shape: expected a list of non-negative integers"),
        ({"shape": None}, "missing required field 'shape'"),
        ({"zarr_format": 2}, "zarr_format: expected 3"),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}}}, "chunk_shape"),
        ({"dimension_names": ["a"]}, "dimension_names: expected a list of 2"),
        ({"attributes": []}, "attributes: expected a JSON object"),
        ({"codecs": []}, "codecs"),
        ({"fill_value": "nope"}, "fill_value"),
        ({"chunk_key_encoding": {"name": "default", "configuration": {"separator": "-"}}}, "separator"),
    ],
)
def test_invalid_fields_are_named(fields, message):
    with pytest.raises(MetadataError, match=message):
        ArrayMetadata.from_json(changed(**fields), "arr/zarr.json")


def test_unknown_top_level_key_needs_must_understand_false():
    with pytest.raises(UnknownExtensionError, match="'my_extension'"):
        ArrayMetadata.from_json(changed(my_extension={"x": 1}))
    relaxed = ArrayMetadata.from_json(changed(my_extension={"must_understand": False, "x": 1}))
    assert relaxed.to_json()["my_extension"] == {"must_understand": False, "x": 1}


def test_storage_transformers():
    unknown = [{"name": "chunk-manifest", "configuration": {}}]
    with pytest.raises(UnknownExtensionError, match="storage transformer 'chunk-manifest'"):
        ArrayMetadata.from_json(changed(storage_transformers=unknown))
    ignorable = [{"name": "caching", "must_understand": False}]
    kept = ArrayMetadata.from_json(changed(storage_transformers=ignorable))
    assert kept.to_json()["storage_transformers"] == ignorable  # preserved when the document is rewritten
    assert ArrayMetadata.from_json(changed(storage_transformers=[])).storage_transformers == ()


def test_unknown_data_type_cannot_be_ignored():
    document = changed(data_type={"name": "urn:example:datetime", "must_understand": False})
    with pytest.raises(UnknownExtensionError, match="urn:example:datetime"):
        ArrayMetadata.from_json(document)


def test_unknown_codec_must_understand(tmp_path):
    store = make_store(str(tmp_path))
    document = changed(
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "fancy-compressor"}]
    )
    store.set("zarr.json", json.dumps(document).encode())
    with pytest.raises(UnknownExtensionError, match="fancy-compressor"):
        zarr3_backend.open_array(store)
    document["codecs"][1]["must_understand"] = False
    store.set("zarr.json", json.dumps(document).encode())
    assert zarr3_backend.open_array(store).shape == (10, 20)


def test_codec_order_is_validated(tmp_path):
    store = make_store(str(tmp_path))
    document = changed(
        codecs=[
            {"name": "gzip", "configuration": {"level": 1}},
            {"name": "bytes", "configuration": {"endian": "little"}},
        ]
    )
    store.set("zarr.json", json.dumps(document).encode())
    with pytest.raises(
        MetadataError, match=r"exactly one array->bytes codec.*gzip \(bytes->bytes\), bytes \(array->bytes\)"
    ):
        zarr3_backend.open_array(store)


def test_malformed_json_and_v2_are_explained():
    with pytest.raises(MetadataError, match="x/zarr.json: not valid JSON"):
        parse_node_metadata(b"{nope", "x/zarr.json")
    with pytest.raises(MetadataError, match="Zarr v2"):
        parse_node_metadata(b'{"zarr_format": 2}', "zarr.json")


def test_group_metadata_with_consolidated():
    document = {
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {"title": "t"},
        "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {"a": ARRAY}},
    }
    group = GroupMetadata.from_json(document)
    assert group.consolidated == {"a": ARRAY}
    assert group.to_json() == document


def test_short_hand_extension_names():
    metadata = ArrayMetadata.from_json(
        changed(codecs=[{"name": "bytes", "configuration": {"endian": "big"}}, "crc32c"])
    )
    assert metadata.codecs[1] == {"name": "crc32c"}


def test_default_fill_value_is_recorded(tmp_path):
    store = make_store(str(tmp_path))
    zarr3_backend.create_array(store, shape=(2,), dtype="int16")
    assert json.loads(store.get("zarr.json"))["fill_value"] == 0


_TRICKY_TEXT = st.text(
    st.sampled_from(list('[]{}"\\/ab\n\u00b0\u20ac\U0001f600')) | st.characters(), max_size=12
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY_TEXT, inner, max_size=4),
    max_leaves=40,
)


def _walked_depth(value: object) -> int:
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
    return 0 if children is None else 1 + max(map(_walked_depth, children), default=0)


@given(_JSON, st.booleans())
@example(["a\\", [1]], True)  # a string ending in a backslash: its closing quote follows an escaped backslash
@example({'\\"': [{"]": "\\"}]}, False)
def test_json_depth_on_the_bytes_matches_the_decoded_documents(value, ensure_ascii):
    # strings full of brackets, quotes and backslashes must not count, however they are escaped
    raw = json.dumps(value, ensure_ascii=ensure_ascii).encode(
        "utf-8", "surrogatepass"
    )  # as zarr.json may hold them
    assert json_depth(raw) == _walked_depth(value)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_nesting_limit_holds_with_brackets_in_strings(encoding):
    attributes = {"a": "]" * 200, "b": "[" * 200}  # many brackets, all in strings: nothing nests
    shallow = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": attributes}).encode(encoding)
    assert parse_node_metadata(shallow, "g/zarr.json").attributes == attributes
    deep = {"x": 1}
    for _ in range(MAX_DEPTH):
        deep = {"x": deep, "s": "]}"}
    text = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": deep}).encode(encoding)
    with pytest.raises(MetadataError, match="nested too deeply"):
        parse_node_metadata(text, "g/zarr.json")
