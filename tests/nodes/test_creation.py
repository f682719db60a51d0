"""create_array's keywords: one list (creation.ArrayOptions) shared by api.create_array, Group.create_array and
Group.require_array, checked by build_array_metadata."""

import inspect

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import ArgumentTypeError, api
from zarr3_backend.nodes import creation
from zarr3_backend.nodes.creation import ArrayDefinition, ArrayOptions, build_array_metadata, normalize_shape
from zarr3_backend.nodes.hierarchy import Group


def test_one_list_of_keywords():
    assert ArrayDefinition.__required_keys__ == {"shape", "dtype"}
    assert ArrayOptions.__required_keys__ == frozenset()
    assert (
        ArrayDefinition.__optional_keys__
        == ArrayOptions.__optional_keys__
        == {
            "chunks",
            "shards",
            "fill_value",
            "compressors",
            "filters",
            "serializer",
            "codecs",
            "index_codecs",
            "index_location",
            "chunk_key_encoding",
            "dimension_names",
            "attributes",
        }
    )
    for function in (api.create_array, Group.create_array, creation.build_array_metadata):
        parameters = inspect.signature(function).parameters
        assert not set(parameters) & ArrayDefinition.__optional_keys__, (
            function
        )  # passed through, not re-declared
        assert parameters[list(parameters)[-1]].kind is inspect.Parameter.VAR_KEYWORD


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: zarr3_backend.create_array("memory://creation/a", overwrite=True, **kw),
        lambda **kw: zarr3_backend.create_group("memory://creation/g", overwrite=True).create_array(
            "a", **kw
        ),
        lambda **kw: build_array_metadata("a", **kw),
    ],
)
def test_unknown_and_missing_keywords_are_named(make):
    with pytest.raises(
        ArgumentTypeError,
        match=r"create_array: unexpected keyword\(s\) \['chunk'\]; it takes shape, dtype and attributes, chunk_key_encoding",
    ):
        make(shape=(4,), dtype="int8", chunk=(2,))
    with pytest.raises(TypeError, match=r"missing required keyword\(s\) \['dtype'\]"):
        make(shape=(4,))


def test_defaults_are_those_recorded_before():
    metadata = build_array_metadata("a", shape=(4,), dtype="int16")
    assert metadata.to_json() == {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
            {"name": "crc32c"},
        ],
        "attributes": {},
    }
    sharded = build_array_metadata(
        "a",
        shape=(8,),
        dtype="int8",
        chunks=(2,),
        shards=(4,),
        index_location="start",
        dimension_names=["x"],
        attributes={"u": 1},
        chunk_key_encoding="v2",
    )
    assert sharded.codecs[0]["configuration"]["index_location"] == "start"
    assert sharded.codecs[0]["configuration"]["codecs"] == [  # inner chunks: checksummed (int8: no endian)
        {"name": "bytes"},
        {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
        {"name": "crc32c"},
    ]
    assert sharded.codecs[0]["configuration"]["index_codecs"] == [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "crc32c"},
    ]
    text = build_array_metadata("a", shape=(4,), dtype=str)
    assert text.codecs == ({"name": "vlen-utf8", "configuration": {}}, *metadata.to_json()["codecs"][1:])
    assert (sharded.dimension_names, sharded.attributes, sharded.chunk_key_encoding.to_json()["name"]) == (
        ("x",),
        {"u": 1},
        "v2",
    )


def test_numpy_integer_shapes_are_accepted():
    assert normalize_shape(np.int64(3)) == (3,) and normalize_shape((np.uint8(2), 5)) == (2, 5)
    assert zarr3_backend.create_array(
        "memory://creation/np", shape=np.int64(4), dtype="int8", overwrite=True
    ).shape == (4,)
