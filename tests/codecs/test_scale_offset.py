"""The ``scale_offset`` codec: configuration, and its laws on integers (exact or refused) and floats."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from zarr3_backend.codecs import ScaleOffsetCodec, codec_from_json
from zarr3_backend.codecs.base import ChunkSpec
from zarr3_backend.core.dtypes import parse_data_type
from zarr3_backend.errors import CodecError, MetadataError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def scale_offset(**configuration: object) -> ScaleOffsetCodec:
    codec = codec_from_json({"name": "scale_offset", "configuration": configuration})
    assert isinstance(codec, ScaleOffsetCodec)
    return codec


def spec_of(data_type: str, shape: tuple[int, ...] = (4,), fill: object = 0) -> ChunkSpec:
    parsed = parse_data_type(data_type)
    return ChunkSpec(shape, parsed, parsed.cast_fill_value(fill))


@st.composite
def integer_case(draw: st.DrawFn) -> tuple[str, int, int, np.ndarray]:
    dtype = draw(st.sampled_from(INTS))
    info = np.iinfo(dtype)
    offset = draw(
        st.one_of(st.integers(int(info.min), int(info.max)), st.sampled_from([0, int(info.min), 1]))
    )
    scale = draw(st.integers(int(info.min), int(info.max)).filter(bool) | st.sampled_from([1, 2, -1]))
    if info.min == 0 and scale < 0:
        scale = 1
    values = draw(arrays(dtype, st.integers(1, 5), elements=st.integers(int(info.min), int(info.max))))
    return dtype, offset, scale, values


@settings(max_examples=300, deadline=None)
@given(case=integer_case())
def test_integers_encode_exactly_or_refuse(case: tuple[str, int, int, np.ndarray]) -> None:
    """The spec's law for integers: the exact result, or an error when any value leaves the type."""
    dtype, offset, scale, values = case
    codec, spec, info = (
        scale_offset(offset=offset, scale=scale),
        spec_of(dtype, values.shape),
        np.iinfo(dtype),
    )
    exact = [(v - offset) * scale for v in values.tolist()]
    inside = all(
        info.min <= v - offset <= info.max and info.min <= e <= info.max
        for v, e in zip(values.tolist(), exact)
    )
    if not inside:
        with pytest.raises(CodecError, match="outside the range of"):
            codec.encode(values, spec)
        return
    encoded = codec.encode(values, spec)
    assert encoded.dtype == values.dtype and encoded.tolist() == exact
    assert (
        codec.decode(encoded, spec).tolist() == values.tolist()
    )  # exact division: the round trip is lossless


@settings(max_examples=300, deadline=None)
@given(case=integer_case())
def test_integers_decode_exactly_or_refuse(case: tuple[str, int, int, np.ndarray]) -> None:
    dtype, offset, scale, stored = case
    codec, spec, info = (
        scale_offset(offset=offset, scale=scale),
        spec_of(dtype, stored.shape),
        np.iinfo(dtype),
    )
    values = stored.tolist()
    fits = all(
        v % scale == 0 and info.min <= v // scale <= info.max and info.min <= v // scale + offset <= info.max
        for v in values
    )
    if not fits:
        with pytest.raises(CodecError, match="scale_offset"):
            codec.decode(stored, spec)
        return
    assert codec.decode(stored, spec).tolist() == [v // scale + offset for v in values]


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from(["float16", "float32", "float64"]),
    offset=st.floats(-1024.0, 1024.0, width=16),
    scale=st.floats(0.0625, 1024.0, width=16) | st.floats(-1024.0, -0.0625, width=16),
    data=st.data(),
)
def test_floats_use_the_arithmetic_of_their_type(
    dtype: str, offset: float, scale: float, data: st.DataObject
) -> None:
    """``(x - offset) * scale`` and ``x / scale + offset`` in the chunk's float type: no widening, NaN/inf kept."""
    values = data.draw(
        arrays(dtype, st.integers(1, 6), elements=st.floats(width=8 * np.dtype(dtype).itemsize))
    )
    codec, spec, t = (
        scale_offset(offset=offset, scale=scale),
        spec_of(dtype, values.shape),
        np.dtype(dtype).type,
    )
    with np.errstate(all="ignore"):
        want_encoded = [(t(v) - t(offset)) * t(scale) for v in values.tolist()]
        encoded = codec.encode(values, spec)
        decoded = codec.decode(encoded, spec)
        want_decoded = [t(e) / t(scale) + t(offset) for e in encoded.tolist()]
    assert encoded.dtype == decoded.dtype == np.dtype(dtype)
    assert encoded.tobytes() == np.array(want_encoded, dtype).tobytes()
    assert decoded.tobytes() == np.array(want_decoded, dtype).tobytes()


@pytest.mark.parametrize(
    ("dtype", "values", "offset", "scale", "match"),
    [
        ("int8", [-100], 100, 1, "encode reaches -200"),
        ("uint8", [5], 10, 1, "encode reaches -5"),
        ("int64", [2**62], 0, 2, "encode reaches 9223372036854775808"),
        ("uint64", [2**63], 0, 2, "encode reaches 18446744073709551616"),
    ],
)
def test_integer_overflow_is_refused(dtype: str, values: list, offset: int, scale: int, match: str) -> None:
    with pytest.raises(CodecError, match=match):
        scale_offset(offset=offset, scale=scale).encode(
            np.array(values, dtype), spec_of(dtype, (len(values),))
        )


def test_integer_decode_refuses_inexact_division_and_intermediate_overflow() -> None:
    with pytest.raises(CodecError, match="not a multiple of scale 3"):
        scale_offset(scale=3).decode(np.array([3, 4], "int16"), spec_of("int16", (2,)))
    # -128 / -1 is 128, not an int8, even though adding offset -1 would bring it back
    with pytest.raises(CodecError, match="decode reaches 128"):
        scale_offset(offset=-1, scale=-1).decode(np.array([-128], "int8"), spec_of("int8", (1,)))


def test_fill_value_is_encoded_like_the_elements() -> None:
    codec = scale_offset(offset=10, scale=0.5)
    assert codec.resolve_spec(spec_of("float32", fill=30.0)).fill_value == np.float32(10.0)
    assert np.isnan(codec.resolve_spec(spec_of("float64", fill="NaN")).fill_value)
    with pytest.raises(CodecError, match="encode reaches"):
        scale_offset(offset=-100).resolve_spec(spec_of("int8", fill=100))


@pytest.mark.parametrize(
    ("configuration", "match"),
    [
        ({"offset": 1, "factor": 2}, r"unknown configuration keys \['factor'\]"),
        ({"offset": True}, "configuration.offset: expected a number"),
        ({"scale": [1, 0]}, "configuration.scale: expected a number"),
        ({"scale": None}, "configuration.scale: expected a number"),
    ],
)
def test_bad_configuration_names_the_field(configuration: dict, match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        codec_from_json({"name": "scale_offset", "configuration": configuration})


@pytest.mark.parametrize(
    ("dtype", "configuration", "match"),
    [
        ("int16", {"offset": 0.5}, "configuration.offset"),
        ("uint8", {"scale": -1}, "configuration.scale"),
        ("int8", {"scale": 0}, "configuration.scale must not be zero"),
        ("float32", {"scale": "0x00000000"}, "configuration.scale must not be zero"),
        ("float32", {"offset": "pi"}, "configuration.offset"),
        ("complex64", {}, "needs an integer or floating-point data type"),
        ("bool", {}, "needs an integer or floating-point data type"),
    ],
)
def test_configuration_the_data_type_cannot_hold_raises(dtype: str, configuration: dict, match: str) -> None:
    data_type = parse_data_type(dtype)
    with pytest.raises(CodecError, match=match):
        scale_offset(**configuration).validate(ChunkSpec((2,), data_type, data_type.default_fill_value()))


def test_json_keeps_values_as_written_and_leaves_defaults_out() -> None:
    assert codec_from_json({"name": "scale_offset"}).to_json() == {"name": "scale_offset"}
    assert scale_offset(offset=0, scale=1).to_json() == {"name": "scale_offset"}
    assert scale_offset(offset="NaN", scale=0.1).to_json() == {
        "name": "scale_offset",
        "configuration": {"offset": "NaN", "scale": 0.1},
    }
    assert scale_offset(offset=1000).to_json() == {"name": "scale_offset", "configuration": {"offset": 1000}}


class TestScaleOffsetContract(CodecContract):
    lossless = False  # float arithmetic rounds; the integer laws are above

    @pytest.fixture
    def codec(self) -> ScaleOffsetCodec:
        return scale_offset(offset=-10, scale=0.1)

    @pytest.fixture(params=["float16", "float32", "float64"])
    def spec(self, request: pytest.FixtureRequest) -> ChunkSpec:
        return chunk_spec(request.param, (3, 4))
