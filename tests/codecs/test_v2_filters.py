"""Zarr v2 codec JSON through the one chain builder: the registry builds the v2 filter pipeline by name."""

from __future__ import annotations

from typing import Any

import numcodecs
import numpy as np
import pytest

from tests.core.test_metadata_v2 import GOOD
from zarr3_backend import UnknownExtensionError, UnsafeCodecError, allow_unsafe_codecs
from zarr3_backend.codecs.base import ChunkSpec
from zarr3_backend.codecs.chain import array_chain
from zarr3_backend.codecs.v2 import V2FilterCodec
from zarr3_backend.core.metadata.v2 import parse_zarray

LAYOUTS = [
    {},
    {"dtype": ">i4", "order": "F", "compressor": {"id": "zlib", "level": 1}},
    {"filters": [{"id": "delta", "dtype": "<f8"}, {"id": "zlib", "level": 1}], "order": "F"},
    {"dtype": [["x", ">i2"], ["y", "<f4", [2]]], "fill_value": None, "compressor": {"id": "zstd"}},
    {"dtype": "|O", "filters": [{"id": "vlen-utf8"}], "fill_value": "", "compressor": {"id": "blosc"}},
    {"dtype": "|u1", "compressor": {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": -1}},
    {"compressor": {"id": "gzip", "level": 1}},
]


@pytest.mark.parametrize("change", LAYOUTS)
def test_chain_writes_back_the_json_it_was_built_from(change: dict[str, Any]) -> None:
    """The codec JSON core writes for a .zarray is the form the codecs write: one form for both versions."""
    metadata = parse_zarray({**GOOD, **change}, {}, "a/.zarray")
    assert array_chain(metadata, "a/.zarray").to_json() == list(metadata.codecs)


def test_filter_pipeline_is_built_by_name_and_decodes() -> None:
    metadata = parse_zarray(
        {**GOOD, "dtype": ">i4", "order": "F", "filters": [{"id": "delta", "dtype": ">i4"}]}, {}, "a/.zarray"
    )
    chain = array_chain(metadata, "a/.zarray")
    assert isinstance(chain.array_bytes, V2FilterCodec) and chain.bytes_bytes == ()
    values = np.arange(6, dtype=">i4").reshape(2, 3)
    raw = numcodecs.Delta(">i4").encode(np.asfortranarray(values))
    decoded = chain.decode(raw, ChunkSpec(metadata.chunk_shape, metadata.data_type, metadata.fill_value))
    assert decoded.tolist() == values.tolist() and decoded.dtype == np.dtype("int32")


def test_codec_errors_name_the_zarray() -> None:
    unknown = parse_zarray({**GOOD, "compressor": {"id": "no-such-codec"}}, {}, "a/.zarray")
    with pytest.raises(UnknownExtensionError, match=r"^a/\.zarray: unknown codec 'numcodecs\.no-such-codec'"):
        array_chain(unknown, "a/.zarray")
    unsafe = parse_zarray({**GOOD, "dtype": "|O", "filters": [{"id": "pickle"}]}, {}, "a/.zarray")
    with pytest.raises(UnsafeCodecError, match=r"^a/\.zarray: codec 'numcodecs\.pickle' can execute"):
        array_chain(unsafe, "a/.zarray")
    with allow_unsafe_codecs():
        assert array_chain(unsafe, "a/.zarray").to_json() == list(unsafe.codecs)
