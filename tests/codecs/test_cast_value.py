"""The ``cast_value`` codec: configuration, fill values, and every rounding and out-of-range mode
checked element by element against an exact reference in Python fractions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from zarr3_backend.codecs import CastValueCodec, codec_from_json
from zarr3_backend.codecs.base import ChunkSpec
from zarr3_backend.codecs.casting import OUT_OF_RANGE, ROUNDINGS, cast_array
from zarr3_backend.core.dtypes import parse_data_type
from zarr3_backend.errors import CodecError, MetadataError, UnknownExtensionError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}


def cast_value(data_type: str, **configuration: object) -> CastValueCodec:
    codec = codec_from_json(
        {"name": "cast_value", "configuration": {"data_type": data_type, **configuration}}
    )
    assert isinstance(codec, CastValueCodec)
    return codec


# -- an exact reference: each value as a fraction, rounded as the spec words it --------------------


def _round_fraction(q: Fraction, low: Fraction, high: Fraction, low_is_even: bool, rounding: str) -> Fraction:
    """``q`` rounded to ``low`` or ``high``, its neighbours (``low <= q <= high``)."""
    if q in (low, high):
        return q
    if rounding == "towards-positive":
        return high
    if rounding == "towards-negative":
        return low
    if rounding == "towards-zero":
        return low if q > 0 else high
    if q - low != high - q:
        return low if q - low < high - q else high
    if rounding == "nearest-away":
        return high if q > 0 else low
    return low if low_is_even else high


def _float_neighbours(q: Fraction, dtype: np.dtype) -> tuple[Fraction, Fraction, bool]:
    """The values of ``dtype`` around ``q`` as if its exponent range were unbounded above, and whether the
    lower one's last significand bit is 0."""
    info = np.finfo(dtype)
    top, beyond = Fraction(float(info.max)), Fraction(2) ** int(info.maxexp)
    if abs(q) >= top:
        step = beyond - top  # the spacing just below 2**maxexp, continued upward (max is an odd multiple)
        n = math.floor(abs(q) / step)
        if q > 0:
            return Fraction(n) * step, Fraction(n + 1) * step, n % 2 == 0
        return -Fraction(n + 1) * step, -Fraction(n) * step, n % 2 == 1
    with np.errstate(over="ignore"):
        low = dtype.type(float(q))
    up, down = dtype.type(np.inf), dtype.type(-np.inf)
    while Fraction(float(low)) > q:
        low = np.nextafter(low, down)
    while Fraction(float(np.nextafter(low, up))) <= q:
        low = np.nextafter(low, up)
    high = np.nextafter(low, up)
    upper = Fraction(float(high)) if np.isfinite(high) else beyond
    return Fraction(float(low)), upper, int(np.asarray(low).view(f"u{dtype.itemsize}")) % 2 == 0


def reference(x: object, target: np.dtype, rounding: str, out_of_range: str | None) -> object:
    """One value cast by the spec's words; ``CodecError`` where the spec says the cast fails."""
    if isinstance(x, float) and not math.isfinite(x):
        if target.kind == "f":
            return x
        return CodecError
    q = Fraction(x)
    if target.kind in "iu":
        info = np.iinfo(target)
        r = _round_fraction(
            q, Fraction(math.floor(q)), Fraction(math.ceil(q)), math.floor(q) % 2 == 0, rounding
        )
        if info.min <= r <= info.max:
            return int(r)
        if out_of_range == "clamp":
            return int(info.max if r > info.max else info.min)
        if out_of_range == "wrap":
            return (int(r) - int(info.min)) % 2 ** (8 * target.itemsize) + int(info.min)
        return CodecError
    r = _round_fraction(q, *_float_neighbours(q, target), rounding)
    if abs(r) > Fraction(float(np.finfo(target).max)):
        return math.copysign(math.inf, r) if out_of_range == "clamp" else CodecError
    return math.copysign(float(r), x) if r == 0 else float(r)  # a zero keeps the sign of its input


def check_against_reference(values: np.ndarray, target: str, rounding: str, out_of_range: str | None) -> None:
    dtype = np.dtype(target)
    expected = [reference(v, dtype, rounding, out_of_range) for v in values.tolist()]
    if CodecError in expected:
        with pytest.raises(CodecError, match="cast_value"):
            cast_array(values, dtype, rounding, out_of_range)  # type: ignore[arg-type]
        return
    got = cast_array(values, dtype, rounding, out_of_range)  # type: ignore[arg-type]
    assert got.dtype == dtype
    want = np.array(expected, dtype=dtype)
    bits = f"u{dtype.itemsize}"
    assert got.view(bits).tolist() == want.view(bits).tolist() or (
        dtype.kind == "f"
        and np.array_equal(np.isnan(got), np.isnan(want))
        and np.all((got.view(bits) == want.view(bits)) | np.isnan(got))
    ), (values, got, want)


def edge_floats(dtype: str) -> st.SearchStrategy[float]:
    info = np.finfo(dtype)
    specials = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        127.5,
        128.0,
        255.5,
        32767.5,
        65504.0,
        65519.99,
        65520.0,
    ]
    limits = [
        float(info.max),
        -float(info.max),
        float(info.tiny),
        float(info.smallest_subnormal),
        2.0**63,
        2.0**64,
    ]
    finite = st.floats(width=8 * np.dtype(dtype).itemsize, allow_nan=False, allow_infinity=False)
    with np.errstate(over="ignore"):
        pool = [v for v in specials + limits if np.isfinite(np.asarray(v, dtype))]
    return st.one_of(finite, st.sampled_from(pool), st.sampled_from([math.inf, -math.inf, math.nan]))


def edge_ints(dtype: str) -> st.SearchStrategy[int]:
    info = np.iinfo(dtype)
    pool = [int(info.min), int(info.max), 0, -1 if info.min else 1, 2**24 + 1, 2**53 + 1, 2**63 - 1, 65520]
    return st.one_of(
        st.integers(int(info.min), int(info.max)),
        st.sampled_from([v for v in pool if info.min <= v <= info.max]),
    )


MODES = st.tuples(st.sampled_from(ROUNDINGS), st.sampled_from((None, *OUT_OF_RANGE)))


@settings(max_examples=300, deadline=None)
@given(source=st.sampled_from(FLOATS), target=st.sampled_from(INTS + FLOATS), modes=MODES, data=st.data())
def test_floats_cast_as_the_spec_says(source: str, target: str, modes: tuple, data: st.DataObject) -> None:
    rounding, out_of_range = modes
    if out_of_range == "wrap" and target in FLOATS:
        out_of_range = "clamp"  # wrap is refused for float targets (tested below)
    values = data.draw(arrays(source, st.integers(1, 6), elements=edge_floats(source)))
    check_against_reference(values, target, rounding, out_of_range)


@settings(max_examples=300, deadline=None)
@given(source=st.sampled_from(INTS), target=st.sampled_from(INTS + FLOATS), modes=MODES, data=st.data())
def test_integers_cast_as_the_spec_says(source: str, target: str, modes: tuple, data: st.DataObject) -> None:
    rounding, out_of_range = modes
    if out_of_range == "wrap" and target in FLOATS:
        out_of_range = None
    values = data.draw(arrays(source, st.integers(1, 6), elements=edge_ints(source)))
    check_against_reference(values, target, rounding, out_of_range)


@pytest.mark.parametrize(
    ("values", "target", "rounding", "out_of_range", "expected"),
    [
        ([128.0], "int8", "nearest-even", "clamp", [127]),
        ([128.0], "int8", "nearest-even", "wrap", [-128]),
        ([32768, 32769, -32769], "int16", "nearest-even", "wrap", [-32768, -32767, 32767]),
        ([2.5, -2.5, 0.5], "int8", "nearest-away", None, [3, -3, 1]),
        ([2.5, -2.5, 0.5], "int8", "nearest-even", None, [2, -2, 0]),
        ([2.7, -2.7], "int8", "towards-zero", None, [2, -2]),
        ([2.2, -2.7], "int8", "towards-positive", None, [3, -2]),
        ([2.7, -2.2], "int8", "towards-negative", None, [2, -3]),
        ([1e300, -1e300], "float32", "nearest-even", "clamp", [np.inf, -np.inf]),
        ([3.4028235677973366e38], "float32", "towards-zero", None, [3.4028234663852886e38]),
        ([2**63 - 1], "float32", "towards-zero", None, [9.223371487098962e18]),
        ([2**64 - 1], "float16", "nearest-even", "clamp", [np.inf]),
    ],
)
def test_examples(values: list, target: str, rounding: str, out_of_range: str | None, expected: list) -> None:
    source = "uint64" if values == [2**64 - 1] else ("int64" if isinstance(values[0], int) else "float64")
    got = cast_array(np.array(values, source), np.dtype(target), rounding, out_of_range)  # type: ignore[arg-type]
    assert got.tolist() == expected


@pytest.mark.parametrize(
    ("values", "target", "out_of_range", "match"),
    [
        ([128.0], "int8", None, "out of the range of int8"),
        ([np.nan], "uint8", "clamp", "cannot become an integer"),
        ([np.inf], "int32", "wrap", "cannot become an integer"),
        ([1e300], "float32", None, "out of the range of float32"),
        ([65520], "float16", None, "out of the range of float16"),
        ([-1], "uint8", None, "out of the range of uint8"),
    ],
)
def test_values_with_no_rule_raise(values: list, target: str, out_of_range: str | None, match: str) -> None:
    source = "int64" if isinstance(values[0], int) else "float64"
    with pytest.raises(CodecError, match=match):
        cast_array(np.array(values, source), np.dtype(target), "nearest-even", out_of_range)  # type: ignore[arg-type]


def test_signed_zero_and_nan_survive_float_casts() -> None:
    got = cast_array(np.array([-0.0, np.nan, -np.inf, 5e-46]), np.dtype("float32"), "towards-negative")
    assert np.signbit(got[0]) and np.isnan(got[1]) and got[2] == -np.inf and got[3] == 0.0


# -- the scalar map ---------------------------------------------------------------------------------


@given(
    values=arrays("float64", st.integers(0, 20), elements=st.sampled_from([np.nan, 1.0, 2.0, -0.0, 300.0]))
)
def test_scalar_map_applies_first_and_first_pair_wins(values: np.ndarray) -> None:
    pairs = [
        (np.float64(np.nan), np.uint8(7)),
        (np.float64(300.0), np.uint8(9)),
        (np.float64(300.0), np.uint8(1)),
    ]
    got = cast_array(values, np.dtype("uint8"), scalar_map=pairs)
    expected = [7 if math.isnan(v) else 9 if v == 300.0 else int(v) for v in values.tolist()]
    assert got.tolist() == expected


def test_codec_maps_nan_both_ways() -> None:
    spec = ChunkSpec((4,), parse_data_type("float64"), np.float64(np.nan))
    codec = cast_value("uint8", scalar_map=NAN_MAP)
    encoded = codec.encode(np.array([np.nan, 1.0, 2.0, 255.0]), spec)
    assert encoded.tolist() == [0, 1, 2, 255]
    assert codec.resolve_spec(spec).fill_value == 0
    decoded = codec.decode(encoded, spec)
    assert np.isnan(decoded[0]) and decoded[1:].tolist() == [1.0, 2.0, 255.0]


# -- configuration and validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("configuration", "error", "match"),
    [
        ({}, MetadataError, "configuration.data_type is required"),
        ({"data_type": "uint8", "mode": 1}, MetadataError, "unknown configuration keys \\['mode'\\]"),
        ({"data_type": "uint8", "rounding": "up"}, MetadataError, "configuration.rounding"),
        ({"data_type": "uint8", "out_of_range": "saturate"}, MetadataError, "configuration.out_of_range"),
        (
            {"data_type": "float32", "out_of_range": "wrap"},
            MetadataError,
            "'wrap' needs an integer data_type",
        ),
        (
            {"data_type": "bool"},
            MetadataError,
            "configuration.data_type must be an integer or floating-point",
        ),
        (
            {"data_type": "complex64"},
            MetadataError,
            "configuration.data_type must be an integer or floating-point",
        ),
        ({"data_type": "int3"}, UnknownExtensionError, "configuration.data_type"),
        ({"data_type": "uint8", "scalar_map": []}, MetadataError, "configuration.scalar_map"),
        ({"data_type": "uint8", "scalar_map": {"both": []}}, MetadataError, "configuration.scalar_map"),
        ({"data_type": "uint8", "scalar_map": {"encode": [[1]]}}, MetadataError, "scalar_map.encode"),
        ({"data_type": "uint8", "scalar_map": {"decode": [[1, [2]]]}}, MetadataError, "scalar_map.decode"),
    ],
)
def test_bad_configuration_names_the_field(configuration: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        codec_from_json({"name": "cast_value", "configuration": configuration})


@pytest.mark.parametrize(
    ("source", "fill", "codec", "match"),
    [
        ("float64", 0.5, cast_value("uint8"), "fill value 0.5 becomes 0"),
        ("float64", np.nan, cast_value("uint8"), "cannot become an integer"),
        ("int16", 300, cast_value("int8", out_of_range="clamp"), "fill value 300 becomes 127"),
        ("bool", False, cast_value("uint8"), "the chunk's data type must be an integer or floating-point"),
        ("float64", 0.0, cast_value("uint8", scalar_map={"encode": [[1.5, 300]]}), r"scalar_map.encode\[0\]"),
        ("uint8", 0, cast_value("int8", scalar_map={"decode": [["NaN", 1]]}), r"scalar_map.decode\[0\]"),
    ],
)
def test_bad_fill_or_map_for_the_chunk_raises(
    source: str, fill: object, codec: CastValueCodec, match: str
) -> None:
    data_type = parse_data_type(source)
    with pytest.raises(CodecError, match=match):
        codec.validate(ChunkSpec((2,), data_type, data_type.cast_fill_value(fill)))


def test_to_json_leaves_defaults_out() -> None:
    full = {"data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap", "scalar_map": NAN_MAP}
    assert cast_value(**full).to_json() == {"name": "cast_value", "configuration": full}
    assert cast_value("int16", rounding="nearest-even").to_json()["configuration"] == {"data_type": "int16"}


def test_encoded_size_follows_the_target_type() -> None:
    assert cast_value("uint8").compute_encoded_size(80, chunk_spec("float64", (10,))) == 10


CONTRACT_CASES = [
    (cast_value("int32"), "int8", True),  # widening: lossless
    (cast_value("uint8", out_of_range="wrap"), "int32", False),
    (cast_value("float16", rounding="nearest-away", out_of_range="clamp"), "float64", False),
]


class TestCastValueContract(CodecContract):
    @pytest.fixture(params=CONTRACT_CASES, ids=lambda case: f"{case[1]}->{case[0].data_type.name}")
    def case(self, request: pytest.FixtureRequest) -> tuple[CastValueCodec, str, bool]:
        self.lossless = request.param[2]
        return request.param

    @pytest.fixture
    def codec(self, case: tuple[CastValueCodec, str, bool]) -> CastValueCodec:
        return case[0]

    @pytest.fixture
    def spec(self, case: tuple[CastValueCodec, str, bool]) -> ChunkSpec:
        return chunk_spec(case[1], (3, 4))


def test_a_repeated_scalar_map_input_reads_its_first_pair_and_is_not_written_back() -> None:
    """Spec: "readers MUST use the first occurrence", "writers SHOULD NOT repeat the same input scalar"."""
    codec = cast_value("uint8", scalar_map={"decode": [[1, 5], [2, 6], [1, 7]], "encode": [[5, 1], [5.0, 2]]})
    spec = ChunkSpec((3,), parse_data_type("float64"), np.float64(0.0))
    assert codec.decode(np.array([1, 2, 3], np.uint8), spec).tolist() == [5.0, 6.0, 3.0]
    assert codec.encode(np.array([5.0, 6.0]), spec).tolist() == [1, 6]
    assert codec.to_json()["configuration"]["scalar_map"] == {"encode": [[5, 1]], "decode": [[1, 5], [2, 6]]}


def test_a_fill_value_the_map_changes_is_refused_citing_the_spec_and_zarr_python() -> None:
    spec = ChunkSpec((2,), parse_data_type("float64"), np.float64(0.0))
    with pytest.raises(CodecError, match="becomes 0 in 'uint8' and decodes to nan") as raised:
        cast_value("uint8", scalar_map=NAN_MAP).validate(spec)
    assert "specification says" in str(raised.value) and "MUST be treated as an error" in str(raised.value)
    assert "zarr-python 3.4 writes such arrays" in str(raised.value)
