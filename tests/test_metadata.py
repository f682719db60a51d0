"""zarr.json parsing: every field validated, must_understand, storage transformers, errors that name the field."""

import copy
import json

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import MetadataError, UnknownExtensionError
from zarr3_backend.metadata import ArrayMetadata, GroupMetadata, parse_node_metadata
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
    document = changed(codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "fancy-compressor"}])
    store.set("zarr.json", json.dumps(document).encode())
    with pytest.raises(UnknownExtensionError, match="fancy-compressor"):
        zarr3_backend.open_array(store)
    document["codecs"][1]["must_understand"] = False
    store.set("zarr.json", json.dumps(document).encode())
    assert zarr3_backend.open_array(store).shape == (10, 20)


def test_codec_order_is_validated(tmp_path):
    store = make_store(str(tmp_path))
    document = changed(codecs=[{"name": "gzip", "configuration": {"level": 1}}, {"name": "bytes", "configuration": {"endian": "little"}}])
    store.set("zarr.json", json.dumps(document).encode())
    with pytest.raises(MetadataError, match=r"exactly one array->bytes codec.*gzip \(bytes->bytes\), bytes \(array->bytes\)"):
        zarr3_backend.open_array(store)


def test_malformed_json_and_v2_are_explained():
    with pytest.raises(MetadataError, match="x/zarr.json: not valid JSON"):
        parse_node_metadata(b"{nope", "x/zarr.json")
    with pytest.raises(MetadataError, match="Zarr v2"):
        parse_node_metadata(b'{"zarr_format": 2}', "zarr.json")


def test_group_metadata_with_consolidated():
    document = {
        "zarr_format": 3, "node_type": "group", "attributes": {"title": "t"},
        "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {"a": ARRAY}},
    }
    group = GroupMetadata.from_json(document)
    assert group.consolidated == {"a": ARRAY}
    assert group.to_json() == document


def test_short_hand_extension_names():
    metadata = ArrayMetadata.from_json(changed(codecs=[{"name": "bytes", "configuration": {"endian": "big"}}, "crc32c"]))
    assert metadata.codecs[1] == {"name": "crc32c"}


def test_default_fill_value_is_recorded(tmp_path):
    store = make_store(str(tmp_path))
    zarr3_backend.create_array(store, shape=(2,), dtype="int16")
    assert json.loads(store.get("zarr.json"))["fill_value"] == 0
