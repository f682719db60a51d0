"""The ``conditional`` codec: hand-made golden chunks derived from its registry document (no other
implementation writes it from Python), the writer's choice, hostile headers and nesting, and round trips."""

from __future__ import annotations

import gzip as gzip_module
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr3_backend.codecs import ConditionalCodec, codec_from_json
from zarr3_backend.codecs.conditional import MAX_DEPTH
from zarr3_backend.errors import CodecError, MetadataError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec

GZIP = {"name": "gzip", "configuration": {"level": 5}}
CRC = {"name": "crc32c"}


def conditional(codecs: list, **configuration: object) -> ConditionalCodec:
    codec = codec_from_json({"name": "conditional", "configuration": {"codecs": codecs, **configuration}})
    assert isinstance(codec, ConditionalCodec)
    return codec


class TestConditionalContract(CodecContract):
    @pytest.fixture(
        params=[[GZIP], [GZIP, CRC], [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}]]
    )
    def codec(self, request):
        return conditional(request.param)

    @pytest.fixture
    def spec(self):
        return chunk_spec("uint8", (64,))


def test_golden_chunks_from_the_spec() -> None:
    """Header byte, bit i = codec i applied (little-endian bit order); decode undoes the set ones in reverse."""
    codec, spec = conditional([GZIP, CRC]), chunk_spec("uint8", (5,))
    raw = b"hello"
    assert codec.decode(b"\x00" + raw, spec) == raw  # nothing applied
    assert bytes(codec.decode(b"\x01" + gzip_module.compress(raw), spec)) == raw  # gzip only
    crc = bytes(codec_from_json(CRC).encode(raw, spec))
    assert bytes(codec.decode(b"\x02" + crc, spec)) == raw  # crc32c only
    wide = conditional([GZIP], header_bits=16)
    assert bytes(wide.decode(b"\x01\x00" + gzip_module.compress(raw), spec)) == raw


def test_the_writer_skips_a_codec_that_would_grow_the_chunk() -> None:
    codec, spec = conditional([GZIP]), chunk_spec("uint8", (256,))
    noise = os.urandom(256)
    assert bytes(codec.encode(noise, spec)) == b"\x00" + noise
    zeros = bytes(256)
    encoded = bytes(codec.encode(zeros, spec))
    assert encoded[0] == 1 and len(encoded) < 64 and bytes(codec.decode(encoded, spec)) == zeros


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(max_size=300), nested=st.booleans())
def test_round_trip(payload: bytes, nested: bool) -> None:
    inner = [{"name": "conditional", "configuration": {"codecs": [GZIP]}}] if nested else [GZIP]
    codec, spec = conditional([*inner, CRC]), chunk_spec("uint8", (len(payload),))
    assert bytes(codec.decode(codec.encode(payload, spec), spec)) == payload


def test_hostile_chunks_are_refused() -> None:
    codec, spec = conditional([GZIP]), chunk_spec("uint8", (5,))
    with pytest.raises(CodecError, match="reserved bits"):
        codec.decode(b"\x02hello", spec)
    with pytest.raises(CodecError, match="fewer than its 2-byte header"):
        conditional([GZIP], header_bits=16).decode(b"\x01", spec)
    bomb = b"\x01" + gzip_module.compress(bytes(10_000))
    with pytest.raises(CodecError, match="at most 5"):
        codec.decode_bounded(bomb, spec, 5)


def test_nesting_deeper_than_the_limit_is_a_codec_error() -> None:
    document: dict = GZIP
    for _ in range(MAX_DEPTH):
        document = {"name": "conditional", "configuration": {"codecs": [document]}}
    codec_from_json(document)  # MAX_DEPTH levels are fine
    with pytest.raises(CodecError, match="nested 5 deep"):
        codec_from_json({"name": "conditional", "configuration": {"codecs": [document]}})


@pytest.mark.parametrize(
    ("configuration", "match"),
    [
        ({"codecs": [{"name": "bytes"}]}, "must all be bytes -> bytes codecs"),
        ({"codecs": [GZIP], "header_bits": 4}, "multiple of 8"),
        ({"codecs": [GZIP] * 9, "header_bits": 8}, "header_bits"),
        ({"codecs": "gzip"}, "expected a list"),
    ],
)
def test_malformed_configurations(configuration: dict, match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        codec_from_json({"name": "conditional", "configuration": configuration})


def test_json_keeps_header_bits_only_when_given() -> None:
    assert conditional([GZIP]).to_json() == {"name": "conditional", "configuration": {"codecs": [GZIP]}}
    assert conditional([GZIP], header_bits=16).to_json()["configuration"]["header_bits"] == 16
    assert (
        np.frombuffer(
            bytes(conditional([GZIP], header_bits=16).encode(bytes(100), chunk_spec("uint8", (100,))))[:2],
            "<u2",
        )[0]
        == 1
    )


def test_a_codec_another_writer_applied_though_it_grew_the_chunk_still_decodes() -> None:
    """The spec leaves the choice to the writer: gzip applied to noise (growing it), then crc32c."""
    codec, spec = conditional([GZIP, CRC]), chunk_spec("uint8", (64,))
    noise = os.urandom(64)
    grown = gzip_module.compress(noise)
    assert len(grown) > 64
    stored = b"\x03" + bytes(codec_from_json(CRC).encode(grown, spec))
    limit = codec.max_encoded_size(64, spec)
    assert limit is not None and len(stored) <= limit
    assert bytes(codec.decode_bounded(stored, spec, 64)) == noise
