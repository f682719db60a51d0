"""The ``zfp`` codec (through zfpy): every mode, bytes equal to zfpy's header-less stream (the registry's
format, also zarrs'), decoding equal to zfpy's, the promotions, expert mode read, and hostile input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from zarr3_backend.codecs import codec_from_json
from zarr3_backend.errors import CodecError, MetadataError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec

zfpy = pytest.importorskip("zfpy")

MODES = [
    {"mode": "reversible"},
    {"mode": "fixed_rate", "rate": 12},
    {"mode": "fixed_precision", "precision": 18},
    {"mode": "fixed_accuracy", "tolerance": 0.01},
]
ZFPY_ARGUMENTS = [{}, {"rate": 12}, {"precision": 18}, {"tolerance": 0.01}]


def zfp(configuration: dict):
    return codec_from_json({"name": "zfp", "configuration": configuration})


class TestZfpContract(CodecContract):
    lossless = False

    @pytest.fixture(params=MODES, ids=lambda m: m["mode"])
    def codec(self, request):
        return zfp(request.param)

    @pytest.fixture
    def spec(self):
        return chunk_spec("float64", (6, 5))


@pytest.mark.parametrize(
    ("configuration", "arguments"), list(zip(MODES, ZFPY_ARGUMENTS)), ids=[m["mode"] for m in MODES]
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_bytes_and_values_are_zfpys(configuration: dict, arguments: dict, dtype: str) -> None:
    values = (np.random.default_rng(3).normal(size=(5, 7, 3)) * 1000).astype(dtype)
    spec, codec = chunk_spec(dtype, values.shape), zfp(configuration)
    encoded = bytes(codec.encode(values, spec))
    assert encoded == bytes(zfpy.compress_numpy(values, write_header=False, **arguments))
    expected = zfpy.decompress_numpy(zfpy.compress_numpy(values, **arguments))
    assert np.array_equal(codec.decode(encoded, spec), expected)
    if configuration["mode"] == "reversible":
        assert np.array_equal(expected, values)


def test_expert_mode_reads_what_the_equivalent_mode_wrote() -> None:
    """Expert parameters equal to fixed_precision 18 (zfp's own definition of that mode) decode its stream."""
    values = np.random.default_rng(4).normal(size=(8, 8))
    spec = chunk_spec("float64", values.shape)
    stream = bytes(zfpy.compress_numpy(values, precision=18, write_header=False))
    expert = zfp({"mode": "expert", "minbits": 1, "maxbits": 16658, "maxprec": 18, "minexp": -1074})
    assert np.array_equal(expert.decode(stream, spec), zfp(MODES[2]).decode(stream, spec))
    with pytest.raises(CodecError, match="cannot write expert mode"):
        expert.encode(values, spec)


@settings(max_examples=60, deadline=None)
@given(
    values=arrays(
        st.sampled_from(["int8", "uint8", "int16", "uint16", "float16"]),
        st.tuples(st.integers(1, 9), st.integers(1, 9)),
    )
)
def test_promoted_types_are_lossless_in_reversible_mode(values: np.ndarray) -> None:
    spec, codec = chunk_spec(values.dtype.name, values.shape), zfp(MODES[0])
    assert codec.decode(codec.encode(values, spec), spec).tobytes() == values.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    values=arrays("float64", st.integers(1, 40), elements=st.floats(-1e6, 1e6)),
    tolerance=st.sampled_from([1e-3, 0.5, 10.0]),
)
def test_fixed_accuracy_keeps_the_tolerance(values: np.ndarray, tolerance: float) -> None:
    spec, codec = chunk_spec("float64", values.shape), zfp({"mode": "fixed_accuracy", "tolerance": tolerance})
    assert np.abs(codec.decode(codec.encode(values, spec), spec) - values).max() <= tolerance


def test_a_zero_dimensional_chunk_is_one_value() -> None:
    spec, codec = chunk_spec("float32", ()), zfp(MODES[0])
    assert codec.decode(codec.encode(np.array(2.5, "float32"), spec), spec).shape == ()


@pytest.mark.parametrize(
    "configuration",
    [{"mode": "fixed_rate"}, {"mode": "reversible", "rate": 3}, {"mode": "lossy"}, {"mode": "fixed_rate", "rate": -1},
     {"mode": "fixed_precision", "precision": 1.5}, {"mode": "expert", "minbits": 1}],
)  # fmt: skip
def test_malformed_configurations(configuration: dict) -> None:
    with pytest.raises(MetadataError, match="zfp"):
        zfp(configuration)


def test_unsupported_chunks_and_corrupt_data() -> None:
    with pytest.raises(CodecError, match="5 dimensions"):
        zfp(MODES[0]).validate(chunk_spec("float32", (1, 1, 1, 1, 2)))
    with pytest.raises(CodecError, match="cannot encode data type 'uint32'"):
        zfp(MODES[0]).validate(chunk_spec("uint32", (2,)))


@pytest.mark.parametrize("configuration", MODES, ids=[m["mode"] for m in MODES])
def test_a_truncated_chunk_decodes_within_its_buffer(configuration: dict) -> None:
    """zfp reads without bounds checks: a cut-off stream must decode from our zero padding, not past it."""
    values = np.random.default_rng(5).normal(size=(16, 16))
    spec, codec = chunk_spec("float64", values.shape), zfp(configuration)
    encoded = bytes(codec.encode(values, spec))
    for cut in (0, 3, len(encoded) // 2):
        assert codec.decode(encoded[:cut], spec).shape == values.shape


@pytest.mark.parametrize(
    ("configuration", "numcodecs_arguments"),
    [(MODES[1], {"mode": 2, "rate": 12}), (MODES[2], {"mode": 3, "precision": 18}), (MODES[3], {"mode": 4, "tolerance": 0.01})],
    ids=["fixed_rate", "fixed_precision", "fixed_accuracy"],
)  # fmt: skip
def test_numcodecs_zfpy_chunks_are_ours_behind_a_header(
    configuration: dict, numcodecs_arguments: dict
) -> None:
    """numcodecs' ZFPY writes zfp's 96-bit header then the same bit stream: ours is its bits after the header
    (the two differ only in the zero padding that ends each at a 64-bit word)."""
    numcodecs = pytest.importorskip("numcodecs")
    values = np.random.default_rng(6).normal(size=(9, 6))
    spec, codec = chunk_spec("float64", values.shape), zfp(configuration)
    theirs = bytes(numcodecs.ZFPY(**numcodecs_arguments).encode(values))
    ours = bytes(codec.encode(values, spec))
    assert int.from_bytes(theirs, "little") >> 96 == int.from_bytes(ours, "little")
    assert np.array_equal(
        codec.decode(ours, spec), numcodecs.ZFPY(**numcodecs_arguments).decode(theirs).reshape(values.shape)
    )
