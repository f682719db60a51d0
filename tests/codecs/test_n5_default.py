"""The ``n5_default`` codec against hand-made N5 blocks built from the N5 header format its registry
document quotes (zarrs_n5 and zarr-python-n5 implement it, neither in our test environment), truncated
edge blocks as Java N5 writes them, and hostile headers and chains."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from zarr3_backend.codecs import N5DefaultCodec, codec_from_json
from zarr3_backend.errors import CodecError, MetadataError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec

BIG = {"name": "bytes", "configuration": {"endian": "big"}}


def n5(ndim: int, *extra: dict) -> N5DefaultCodec:
    transpose = {"name": "transpose", "configuration": {"order": list(range(ndim - 1, -1, -1))}}
    codec = codec_from_json({"name": "n5_default", "configuration": {"codecs": [transpose, BIG, *extra]}})
    assert isinstance(codec, N5DefaultCodec)
    return codec


def block(values: np.ndarray) -> bytes:
    """An N5 default-mode block by the N5 spec: mode, ndim, N5-order shape, big-endian F-order data."""
    header = struct.pack(f">HH{values.ndim}I", 0, values.ndim, *reversed(values.shape))
    return header + np.asfortranarray(values).astype(values.dtype.newbyteorder(">")).tobytes(order="F")


class TestN5Contract(CodecContract):
    @pytest.fixture(params=[(), ({"name": "gzip", "configuration": {"level": 1}},)])
    def codec(self, request):
        return n5(2, *request.param)

    @pytest.fixture
    def spec(self):
        return chunk_spec("uint16", (3, 4))


def test_golden_blocks_from_the_n5_spec() -> None:
    values = np.arange(12, dtype="int32").reshape(3, 4)
    spec = chunk_spec("int32", (3, 4))
    assert bytes(n5(2).encode(values, spec)) == block(values)
    assert np.array_equal(n5(2).decode(block(values), spec), values)
    gz = {"name": "gzip", "configuration": {"level": 1}}
    raw = block(values)
    compressed = raw[:12] + zlib.compress(raw[12:], wbits=31)  # gzip: the data after the header
    assert np.array_equal(n5(2, gz).decode(compressed, spec), values)


def test_a_truncated_edge_block_is_padded_with_the_fill_value() -> None:
    """Java N5 writes edge blocks at their true size; the chunk is padded to the grid's chunk shape."""
    edge = np.arange(6, dtype="float64").reshape(2, 3)
    decoded = n5(2).decode(block(edge), chunk_spec("float64", (3, 4)))
    assert np.array_equal(decoded[:2, :3], edge) and not decoded[2:].any() and not decoded[:, 3:].any()


@settings(max_examples=100, deadline=None)
@given(
    values=arrays(
        st.sampled_from(["<i2", "<u8", "<f4", "|i1"]),
        st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3)),
    )
)
def test_round_trip_and_the_layout(values: np.ndarray) -> None:
    spec = chunk_spec(values.dtype.name, values.shape)
    codecs = [
        {"name": "transpose", "configuration": {"order": [2, 1, 0]}},
        BIG if values.dtype.itemsize > 1 else {"name": "bytes"},
    ]
    codec = codec_from_json({"name": "n5_default", "configuration": {"codecs": codecs}})
    encoded = bytes(codec.encode(values, spec))
    assert encoded == block(values)
    assert codec.decode(encoded, spec).tobytes() == values.tobytes()


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (struct.pack(">HH2I", 1, 2, 4, 3), "mode 1"),
        (struct.pack(">HH3I", 0, 3, 4, 3, 1), "3 dimensions"),
        (struct.pack(">HH2I", 0, 2, 4, 4000000000), "larger than the chunk shape"),
        (b"\x00", "says 0 dimensions"),
    ],
)
def test_hostile_block_headers(header: bytes, match: str) -> None:
    with pytest.raises(CodecError, match=match):
        n5(2).decode(header + bytes(48), chunk_spec("int32", (3, 4)))
    with pytest.raises(CodecError, match="too few"):
        n5(2).decode(b"\x00", chunk_spec("int32", (3, 4)))


@pytest.mark.parametrize(
    ("codecs", "match"),
    [
        ([BIG], "expected a transpose codec, a bytes codec"),
        (
            [
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "little"}},
            ],
            "big endian",
        ),
        (
            [
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                BIG,
                {"name": "gzip"},
                {"name": "crc32c"},
            ],
            "at most one",
        ),
    ],
)
def test_chains_the_spec_forbids(codecs: list, match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        codec_from_json({"name": "n5_default", "configuration": {"codecs": codecs}})


def test_chunks_the_codec_cannot_describe() -> None:
    not_reversed = codec_from_json({"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [0, 1]}}, BIG]}})  # fmt: skip
    with pytest.raises(CodecError, match="must reverse all 2 dimensions"):
        not_reversed.validate(chunk_spec("int32", (3, 4)))
    with pytest.raises(CodecError, match="no N5 equivalent"):
        n5(1).validate(chunk_spec("float16", (3,)))
