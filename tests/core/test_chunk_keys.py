"""The default and v2 chunk key encodings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr3_backend.core.chunk_keys import (
    DefaultChunkKeyEncoding,
    V2ChunkKeyEncoding,
    parse_chunk_key_encoding,
    parse_separator,
)
from zarr3_backend.errors import InvalidKeyError, MetadataError, UnknownExtensionError


@pytest.mark.parametrize(
    ("encoding", "coords", "key"),
    [
        (DefaultChunkKeyEncoding(), (1, 23, 45), "c/1/23/45"),
        (DefaultChunkKeyEncoding("."), (1, 23, 45), "c.1.23.45"),
        (DefaultChunkKeyEncoding(), (), "c"),
        (DefaultChunkKeyEncoding(), (0,), "c/0"),
        (V2ChunkKeyEncoding(), (1, 23, 45), "1.23.45"),
        (V2ChunkKeyEncoding("/"), (1, 23, 45), "1/23/45"),
        (V2ChunkKeyEncoding(), (), "0"),
        (V2ChunkKeyEncoding(), (7,), "7"),
    ],
)
def test_spec_examples(encoding, coords, key):
    assert encoding.encode_chunk_key(coords) == key
    assert encoding.decode_chunk_key(key, len(coords)) == coords


@given(
    st.sampled_from(
        [
            DefaultChunkKeyEncoding("/"),
            DefaultChunkKeyEncoding("."),
            V2ChunkKeyEncoding("."),
            V2ChunkKeyEncoding("/"),
        ]
    ),
    st.lists(st.integers(0, 10**12), max_size=5).map(tuple),
)
def test_round_trip(encoding, coords):
    assert encoding.decode_chunk_key(encoding.encode_chunk_key(coords), len(coords)) == coords


def test_numpy_integers_encode_as_decimal():
    np = pytest.importorskip("numpy")
    assert DefaultChunkKeyEncoding().encode_chunk_key((np.int64(3), np.uint8(4))) == "c/3/4"


@pytest.mark.parametrize(
    ("encoding", "key", "ndim"),
    [
        (DefaultChunkKeyEncoding(), "zarr.json", None),
        (DefaultChunkKeyEncoding(), "c/1/x", None),
        (DefaultChunkKeyEncoding(), "c/1/2", 3),
        (DefaultChunkKeyEncoding(), "c.1", None),
        (DefaultChunkKeyEncoding(), "c/01", None),
        (DefaultChunkKeyEncoding(), "c/-1", None),
        (DefaultChunkKeyEncoding(), "c//1", None),
        (DefaultChunkKeyEncoding(), "c/", None),
        (V2ChunkKeyEncoding(), "1/2", None),
        (V2ChunkKeyEncoding(), "1", 0),
        (V2ChunkKeyEncoding(), "", None),
        (V2ChunkKeyEncoding(), "c.1", None),
    ],
)
def test_decode_rejects_non_chunk_keys(encoding, key, ndim):
    with pytest.raises(InvalidKeyError, match="is not a"):
        encoding.decode_chunk_key(key, ndim)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ("default", DefaultChunkKeyEncoding("/")),
        ("v2", V2ChunkKeyEncoding(".")),
        ({"name": "default"}, DefaultChunkKeyEncoding("/")),
        ({"name": "v2", "configuration": {}}, V2ChunkKeyEncoding(".")),
        ({"name": "default", "configuration": {"separator": "."}}, DefaultChunkKeyEncoding(".")),
        (
            {"name": "v2", "configuration": {"separator": "/"}, "must_understand": True},
            V2ChunkKeyEncoding("/"),
        ),
        (V2ChunkKeyEncoding("/"), V2ChunkKeyEncoding("/")),
    ],
)
def test_parse(obj, expected):
    assert parse_chunk_key_encoding(obj) == expected


def test_to_json_always_writes_the_separator():
    assert DefaultChunkKeyEncoding().to_json() == {"name": "default", "configuration": {"separator": "/"}}
    assert V2ChunkKeyEncoding().to_json() == {"name": "v2", "configuration": {"separator": "."}}


def test_parse_separator_message():
    assert parse_separator("/") == "/"
    with pytest.raises(MetadataError) as info:
        parse_separator("-")
    assert str(info.value) == "chunk_key_encoding.configuration.separator: expected '/' or '.', got '-'"
    with pytest.raises(MetadataError, match="separator"):
        parse_chunk_key_encoding({"name": "default", "configuration": {"separator": "-"}})
    with pytest.raises(MetadataError, match="separator"):
        DefaultChunkKeyEncoding("-")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("obj", "error", "match"),
    [
        (
            {"name": "v3"},
            UnknownExtensionError,
            r"unknown chunk key encoding 'v3'; supported: \['default', 'v2'\]",
        ),
        ("other", UnknownExtensionError, "unknown chunk key encoding 'other'"),
        ({"name": "default", "must_understand": False}, MetadataError, "must_understand"),
        (
            {"name": "default", "configuration": {"separator": "/", "x": 1}},
            MetadataError,
            r"unexpected members \['x'\]",
        ),
        ({"name": "default", "configuration": "/"}, MetadataError, "configuration: expected an object"),
        ({"separator": "/"}, MetadataError, "expected an object with a string 'name'"),
        (None, MetadataError, "expected an object with a string 'name'"),
    ],
)
def test_parse_errors(obj, error, match):
    with pytest.raises(error, match=match):
        parse_chunk_key_encoding(obj)


@pytest.mark.parametrize(
    ("config", "chunk_keys"),
    [
        ({"name": "default", "separator": "/"}, {"c/0/0", "c/0/1", "c/1/0", "c/1/1"}),
        ({"name": "default", "separator": "."}, {"c.0.0", "c.0.1", "c.1.0", "c.1.1"}),
        ({"name": "v2", "separator": "."}, {"0.0", "0.1", "1.0", "1.1"}),
        ({"name": "v2", "separator": "/"}, {"0/0", "0/1", "1/0", "1/1"}),
    ],
)
def test_matches_zarr_python(tmp_path, config, chunk_keys):
    zarr = pytest.importorskip("zarr")
    array = zarr.create_array(
        str(tmp_path), shape=(4, 4), chunks=(2, 2), dtype="i1", chunk_key_encoding=config
    )
    array[...] = 1
    written = json.loads((tmp_path / "zarr.json").read_text())["chunk_key_encoding"]
    encoding = parse_chunk_key_encoding(written)
    assert encoding.to_json() == written
    stored = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()} - {"zarr.json"}
    assert stored == chunk_keys
    assert {encoding.encode_chunk_key(c) for c in [(0, 0), (0, 1), (1, 0), (1, 1)]} == chunk_keys
    assert {encoding.decode_chunk_key(k, 2) for k in stored} == {(0, 0), (0, 1), (1, 0), (1, 1)}
