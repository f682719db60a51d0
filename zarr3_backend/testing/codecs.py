"""``CodecContract``: the laws every codec obeys, written once, run for each codec.

Subclass it in a test module and provide two pytest fixtures, ``codec`` (as a
user or ``zarr.json`` would give it, possibly not yet evolved) and ``spec``
(the `ChunkSpec` the codec receives)::

    class TestGzip(CodecContract):
        @pytest.fixture
        def codec(self):
            return GzipCodec(level=1)

        @pytest.fixture
        def spec(self):
            return chunk_spec("float32", (4, 5))

Set ``lossless = False`` on codecs such as ``numcodecs.quantize`` whose
round trip only keeps shape and data type. Random chunks come from
hypothesis: raw bit patterns for fixed-size types (NaN payloads included),
text / bytes for variable-length types.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ..codecs.base import ArrayArrayCodec, ArrayBytesCodec, Buffer, BytesBytesCodec, ChunkSpec, Codec
from ..codecs.registry import codec_from_json, get_codec_class
from ..core.dtypes import parse_data_type
from ..errors import CodecError

__all__ = ["CodecContract", "chunk_spec", "chunks"]

_KIND_BASES = {
    "array_to_array": ArrayArrayCodec,
    "array_to_bytes": ArrayBytesCodec,
    "bytes_to_bytes": BytesBytesCodec,
}
_examples = settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def chunk_spec(data_type: Any, shape: tuple[int, ...]) -> ChunkSpec:
    """A chunk spec for a data type given as JSON, with its default fill value.

    >>> chunk_spec("int16", (2, 3)).size
    6
    """
    parsed = parse_data_type(data_type)
    return ChunkSpec(tuple(shape), parsed, parsed.default_fill_value())


def chunks(spec: ChunkSpec) -> st.SearchStrategy[np.ndarray]:
    """Random arrays of ``spec.shape`` and ``spec.dtype``."""
    dtype = spec.dtype
    if spec.data_type.name == "string":
        return arrays(object, spec.shape, elements=st.text(max_size=8))
    if dtype.hasobject:
        return arrays(object, spec.shape, elements=st.binary(max_size=8))
    if dtype == np.bool_:
        return arrays(dtype, spec.shape)
    raw = arrays(np.uint8, (spec.size * dtype.itemsize,))
    return raw.map(lambda b: b.view(dtype).reshape(spec.shape))


def assert_same_chunk(actual: np.ndarray, expected: np.ndarray, spec: ChunkSpec) -> None:
    """Equal shape, data type and (bit-exact, or item-wise for objects) values."""
    assert actual.shape == spec.shape, (actual.shape, spec.shape)
    assert actual.dtype == spec.dtype, (actual.dtype, spec.dtype)
    if spec.dtype.hasobject:
        assert actual.tolist() == expected.tolist()
    else:
        assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()


def encode(codec: Codec, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray | Buffer:
    """``codec.encode`` of ``chunk``: the array itself, or its C-order bytes for a bytes -> bytes codec."""
    if isinstance(codec, BytesBytesCodec):
        return codec.encode(chunk.tobytes(), spec)
    if isinstance(codec, ArrayArrayCodec | ArrayBytesCodec):
        return codec.encode(chunk, spec)
    raise TypeError(f"{codec.name}: not an array or bytes codec")


def decode(codec: Codec, encoded: np.ndarray | Buffer, spec: ChunkSpec) -> np.ndarray | Buffer:
    """``codec.decode`` of what `encode()` returned."""
    if isinstance(codec, ArrayArrayCodec):
        return codec.decode(np.asarray(encoded), spec)
    if isinstance(codec, ArrayBytesCodec | BytesBytesCodec):
        return codec.decode(encoded.tobytes() if isinstance(encoded, np.ndarray) else encoded, spec)
    raise TypeError(f"{codec.name}: not an array or bytes codec")


class CodecContract:
    """Laws for one codec and chunk spec; subclasses supply ``codec`` and ``spec`` fixtures."""

    lossless = True

    # -- helpers -----------------------------------------------------------
    def check_decoded(self, codec: Codec, decoded: Any, chunk: np.ndarray, spec: ChunkSpec) -> None:
        if codec.kind == "bytes_to_bytes":
            assert bytes(decoded) == chunk.tobytes()
        elif self.lossless:
            assert_same_chunk(decoded, chunk, spec)
        else:
            assert decoded.shape == spec.shape and decoded.dtype == spec.dtype

    # -- laws --------------------------------------------------------------
    def test_kind_matches_base_class(self, codec: Codec) -> None:
        assert isinstance(codec, _KIND_BASES[codec.kind])

    def test_name_is_registered(self, codec: Codec) -> None:
        assert get_codec_class(codec.name) is type(codec)

    def test_json_round_trip(self, codec: Codec, spec: ChunkSpec) -> None:
        for candidate in (codec, codec.evolve(spec)):
            document = candidate.to_json()
            assert document["name"] == candidate.name
            assert json.loads(json.dumps(document)) == document
            assert codec_from_json(document) == candidate

    def test_evolve_is_idempotent_and_valid(self, codec: Codec, spec: ChunkSpec) -> None:
        evolved = codec.evolve(spec)
        assert evolved.evolve(spec) == evolved
        evolved.validate(spec)

    def test_codec_is_hashable(self, codec: Codec, spec: ChunkSpec) -> None:
        evolved = codec.evolve(spec)
        assert hash(evolved) == hash(codec_from_json(evolved.to_json()))

    def test_pickle_round_trip(self, codec: Codec, spec: ChunkSpec) -> None:
        evolved = codec.evolve(spec)
        assert pickle.loads(pickle.dumps(evolved)) == evolved

    @_examples
    @given(data=st.data())
    def test_round_trip(self, codec: Codec, spec: ChunkSpec, data: st.DataObject) -> None:
        codec = codec.evolve(spec)
        chunk = data.draw(chunks(spec))
        encoded = encode(codec, chunk, spec)
        if isinstance(encoded, np.ndarray) and codec.kind == "array_to_array":
            resolved = codec.resolve_spec(spec)
            assert (encoded.shape, encoded.dtype) == (resolved.shape, resolved.dtype)
            encoded = _read_only(encoded)
        else:
            encoded = bytes(encoded)
        self.check_decoded(codec, decode(codec, encoded, spec), chunk, spec)

    @_examples
    @given(data=st.data())
    def test_encode_accepts_non_contiguous_input(
        self, codec: Codec, spec: ChunkSpec, data: st.DataObject
    ) -> None:
        if codec.kind == "bytes_to_bytes" or len(spec.shape) < 2:
            pytest.skip("needs an array codec and a chunk of two or more dimensions")
        codec = codec.evolve(spec)
        chunk = data.draw(chunks(spec))
        encoded = encode(codec, np.asfortranarray(chunk), spec)
        self.check_decoded(codec, decode(codec, encoded, spec), chunk, spec)

    @_examples
    @given(data=st.data())
    def test_decode_into_matches_decode(self, codec: Codec, spec: ChunkSpec, data: st.DataObject) -> None:
        codec = codec.evolve(spec)
        if not isinstance(codec, BytesBytesCodec):
            pytest.skip("decode_into applies to bytes -> bytes codecs")
        raw = data.draw(chunks(spec)).tobytes()
        encoded = bytes(codec.encode(raw, spec))
        out = bytearray(len(raw))
        if codec.decode_into(encoded, spec, memoryview(out)):
            assert bytes(out) == raw

    def test_compute_encoded_size(self, codec: Codec, spec: ChunkSpec) -> None:
        codec = codec.evolve(spec)
        if spec.dtype.hasobject:
            return
        chunk = np.zeros(spec.shape, spec.dtype)
        try:
            expected = codec.compute_encoded_size(chunk.nbytes, spec)
        except CodecError:
            return  # variable-sized output
        encoded = encode(codec, chunk, spec)
        size = encoded.nbytes if isinstance(encoded, np.ndarray) else memoryview(encoded).nbytes
        assert size == expected


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
