"""The ``bitround`` codec (and its alias ``numcodecs.bitround``): numcodecs' bits for floats, the registry's
sample data for floats and integers, hostile ``keepbits``, and round-trip properties."""

from __future__ import annotations

from pathlib import Path

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import zarr3_backend
from zarr3_backend.codecs import BitroundCodec, NumcodecsBitroundCodec, codec_from_json
from zarr3_backend.errors import CodecError, MetadataError
from zarr3_backend.store import LocalStore
from zarr3_backend.testing.codecs import CodecContract, chunk_spec
from zarr3_backend.testing.stores import CountingStore


class TestBitroundContract(CodecContract):
    lossless = False

    @pytest.fixture(
        params=[("bitround", "float32"), ("bitround", "uint16"), ("numcodecs.bitround", "float64")]
    )
    def codec(self, request):
        return codec_from_json({"name": request.param[0], "configuration": {"keepbits": 5}})

    @pytest.fixture
    def spec(self, codec):
        return chunk_spec("float64" if codec.name == "numcodecs.bitround" else "float32", (3, 4))


def test_the_registry_sample_data_float32() -> None:
    """The table of codecs/bitround/sample_data/README.md (keepbits 3), value by value."""
    original = np.array([0.0, 0.1, 1.2, 12.3, 123.4, 1234.5, np.nan, np.inf, -np.inf], "float32")
    rounded = np.array([0.0, 0.1015625, 1.25, 12.0, 120.0, 1280.0, np.nan, np.inf, -np.inf], "float32")
    encoded = BitroundCodec(3).encode(original, chunk_spec("float32", (9,)))
    assert encoded.tobytes() == rounded.tobytes()


def test_the_registry_sample_data_uint8() -> None:
    """The uint8 table of the registry's sample data: rounding from the most significant set bit."""
    original = np.array([0, 1, 10, 11, 100, 123, 200, 208, 209, 255], "uint8")
    rounded = [0, 1, 10, 12, 96, 128, 192, 192, 224, 224]
    assert BitroundCodec(3).encode(original, chunk_spec("uint8", (10,))).tolist() == rounded


@settings(max_examples=200, deadline=None)
@given(
    values=arrays(st.sampled_from(["<f2", "<f4", "<f8"]), st.integers(0, 40), elements=st.floats(width=16)),
    keepbits=st.integers(0, 10),
)
def test_floats_are_numcodecs_bits(values: np.ndarray, keepbits: int) -> None:
    """Bit for bit numcodecs' BitRound, NaN and infinities included (the codec the registry is compatible with)."""
    ours = BitroundCodec(keepbits).encode(values, chunk_spec(values.dtype.name, values.shape))
    theirs = numcodecs.BitRound(keepbits).encode(values.copy())
    assert ours.tobytes() == np.asarray(theirs).tobytes()


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from(["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]),
    data=st.data(),
)
def test_integers_keep_at_most_keepbits_significant_bits(dtype: str, data: st.DataObject) -> None:
    info = np.iinfo(dtype)
    values = data.draw(arrays(dtype, st.integers(1, 30), elements=st.integers(int(info.min), int(info.max))))
    keepbits = data.draw(st.integers(1, info.bits - (info.min < 0)))
    rounded = BitroundCodec(keepbits).encode(values, chunk_spec(dtype, values.shape))
    assert rounded.dtype == values.dtype
    for before, after in zip(values.tolist(), rounded.tolist()):
        magnitude = abs(after)
        assert (
            magnitude == 0
            or (magnitude >> max(0, magnitude.bit_length() - keepbits)).bit_length() <= keepbits
        )
        assert (after < 0) == (before < 0) or after == 0
        assert abs(after - before) <= max(1, 2 ** max(0, abs(before).bit_length() - keepbits))
    again = BitroundCodec(keepbits).encode(rounded, chunk_spec(dtype, values.shape))
    assert again.tolist() == rounded.tolist()  # rounding is idempotent


def test_decode_is_the_identity_and_full_precision_changes_nothing() -> None:
    values = np.random.default_rng(1).normal(size=20).astype("float32")
    spec = chunk_spec("float32", (20,))
    assert BitroundCodec(23).encode(values, spec).tobytes() == values.tobytes()
    assert BitroundCodec(4).decode(values, spec) is values


def test_the_alias_keeps_its_name() -> None:
    codec = codec_from_json({"name": "numcodecs.bitround", "configuration": {"keepbits": 7}})
    assert isinstance(codec, NumcodecsBitroundCodec)
    assert codec.to_json() == {"name": "numcodecs.bitround", "configuration": {"keepbits": 7}}


@pytest.mark.parametrize(
    ("data_type", "keepbits", "match"),
    [
        ("float16", 11, "keepbits 11 is out of range for float16"),
        ("float32", 24, "out of range for float32"),
        ("float64", 53, "0..52"),
        ("uint8", 9, "out of range for uint8"),
        ("int8", 8, "0..7"),
        ("bool", 1, "needs an integer or floating-point data type"),
    ],
)
def test_keepbits_out_of_range_is_a_codec_error(data_type: str, keepbits: int, match: str) -> None:
    with pytest.raises(CodecError, match=match):
        BitroundCodec(keepbits).validate(chunk_spec(data_type, (2,)))


@pytest.mark.parametrize("configuration", [{"keepbits": -1}, {"keepbits": 2.5}, {}, {"keepbits": 3, "x": 1}])
def test_malformed_configuration_is_refused(configuration: dict[str, object]) -> None:
    with pytest.raises(MetadataError, match="bitround"):
        codec_from_json({"name": "bitround", "configuration": configuration})


def test_nat_stays_nat() -> None:
    values = np.array(["NaT", "2020-01-01T00:00:00"], "M8[s]")
    spec = chunk_spec({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}, (2,))
    rounded = BitroundCodec(8).encode(values, spec)
    assert np.isnat(rounded[0]) and abs(int(rounded[1].astype("i8")) - int(values[1].astype("i8"))) < 2**24


def test_partial_reads_pass_through_to_the_shards_inner_chunks(tmp_path: Path) -> None:
    """bitround decodes as the identity, so a read behind it fetches the shard index and one inner chunk."""
    codecs = [
        {"name": "bitround", "configuration": {"keepbits": 10}},
        {"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4], "codecs": [{"name": "bytes"}],
                                                       "index_codecs": [{"name": "bytes"}]}},
    ]  # fmt: skip
    data = np.random.default_rng(2).normal(size=(16, 16)).astype("float32")
    zarr3_backend.create_array(
        str(tmp_path), shape=data.shape, chunks=(16, 16), dtype="float32", codecs=codecs
    )[...] = data
    counting = CountingStore(LocalStore(tmp_path))
    array = zarr3_backend.open_array(counting)
    counting.reset()
    value = array[5, 9]
    assert value == BitroundCodec(10).encode(data, chunk_spec("float32", data.shape))[5, 9]
    ranges = [r for _, r in counting.requests]
    assert len(ranges) == 2 and ranges[0].is_suffix  # the index, then one inner chunk of 64 bytes
    assert ranges[1].end - ranges[1].start == 4 * 4 * 4


def test_complex_parts_are_rounded_like_floats_also_from_a_strided_view() -> None:
    values = (
        (np.arange(12.0) + 0.1j * np.arange(12.0)).astype("complex64").reshape(3, 4).T
    )  # not C-contiguous
    rounded = BitroundCodec(4).encode(values, chunk_spec("complex64", values.shape))
    expected = BitroundCodec(4).encode(
        np.ascontiguousarray(values).view("float32"), chunk_spec("float32", (4, 6))
    )
    assert rounded.view("float32").tobytes() == expected.tobytes()
