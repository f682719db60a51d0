"""One typed seam: every array -> bytes codec and every codec chain is a ``ChunkCodec``."""

from __future__ import annotations

import inspect

import pytest

from zarr3_backend.codecs import registry
from zarr3_backend.codecs.base import ArrayBytesCodec, BytesBytesCodec, ChunkCodec
from zarr3_backend.codecs.bytes import BytesCodec
from zarr3_backend.codecs.chain import CodecChain
from zarr3_backend.codecs.read_plan import ChunkDecoder
from zarr3_backend.codecs.sharding import ShardingCodec

ARRAY_TO_BYTES = sorted(
    (name, cls)
    for name in registry.BUILT_IN
    if issubclass(cls := registry.get_codec_class(name), ArrayBytesCodec)
)


def test_there_are_registered_array_to_bytes_codecs() -> None:
    assert {"bytes", "sharding_indexed", "vlen-utf8"} <= {name for name, _ in ARRAY_TO_BYTES}


@pytest.mark.parametrize("name, cls", ARRAY_TO_BYTES, ids=[name for name, _ in ARRAY_TO_BYTES])
def test_every_registered_array_to_bytes_codec_is_a_chunk_codec(name, cls) -> None:
    assert issubclass(cls, ChunkCodec), name
    assert issubclass(cls, ChunkDecoder), name


def test_chains_and_codec_instances_are_chunk_codecs() -> None:
    chain = CodecChain.from_json(["bytes", "crc32c"])
    sharding = ShardingCodec.from_json({"chunk_shape": [2], "codecs": ["bytes"], "index_codecs": ["bytes"]})
    for codec in (chain, BytesCodec("little"), sharding, sharding.codecs):
        assert isinstance(codec, ChunkCodec), codec


def test_a_bytes_to_bytes_codec_is_not_a_chunk_codec() -> None:
    assert not issubclass(registry.get_codec_class("gzip"), ChunkCodec)
    assert issubclass(registry.get_codec_class("gzip"), BytesBytesCodec)


def test_the_protocol_methods_match_the_chain_signatures() -> None:
    """The chain and the array -> bytes base class take the same parameters for every protocol method."""
    members = [name for name in dir(ChunkCodec) if not name.startswith("_")]
    assert {"encode", "decode", "decode_into", "plan_read", "update", "read_unit"} <= set(members)
    for name in members:
        protocol = list(inspect.signature(getattr(ChunkCodec, name)).parameters)
        assert list(inspect.signature(getattr(CodecChain, name)).parameters) == protocol, name
        assert list(inspect.signature(getattr(ArrayBytesCodec, name)).parameters) == protocol, name
