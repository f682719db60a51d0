"""The ``packbits`` codec against hand-made golden bytes derived from its registry document (zarrs is the
only other implementation and has no Python writer), hostile configurations, and round-trip properties.

The golden bytes follow the spec text: element ``i`` is bits ``[i*k, (i+1)*k)`` of one bit sequence,
least significant bit first within each byte (as zarrs packs it), zero-padded to a whole byte.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from zarr3_backend.codecs import PackBitsCodec, codec_from_json
from zarr3_backend.codecs.packbits import element_bits
from zarr3_backend.core.dtypes import parse_data_type
from zarr3_backend.errors import CodecError, MetadataError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec

NUMERIC = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float32",
    "float64",
]


def packbits(**configuration: object) -> PackBitsCodec:
    codec = codec_from_json({"name": "packbits", "configuration": configuration})
    assert isinstance(codec, PackBitsCodec)
    return codec


class TestPackBitsContract(CodecContract):
    @pytest.fixture(params=[("bool", {"padding_encoding": "first_byte"}), ("int16", {}), ("complex64", {})])
    def case(self, request):
        return request.param

    @pytest.fixture
    def codec(self, case):
        return packbits(**case[1])

    @pytest.fixture
    def spec(self, case):
        return chunk_spec(case[0], (3, 5))


GOLDEN = [
    # bool, 9 elements: bits 1,0,1,1,0,0,0,0 | 1 -> 0x0d, 0x01; 7 padding bits
    (
        "bool",
        [True, False, True, True, False, False, False, False, True],
        {"padding_encoding": "first_byte"},
        "070d01",
    ),
    (
        "bool",
        [True, False, True, True, False, False, False, False, True],
        {"padding_encoding": "last_byte"},
        "0d0107",
    ),
    ("bool", [True, True, True, True, True, True, True, True], {}, "ff"),
    # int8 bits 1..3, 3 bits each, listed LSB first: 2 -> 1,0,0; -4 -> 0,1,1; 6 -> 1,1,0; -8 -> 0,0,1
    # -> byte 0 = 0b11110001, byte 1 = 0b00001000; decoded sign-extended from bit 3
    ("int8", [2, -4, 6, -8], {"first_bit": 1, "last_bit": 3}, "f108"),
    # uint16 full width: the little-endian bytes, as the `bytes` codec writes them
    ("uint16", [1, 0x0302, 0xFFFF], {}, "01000203ffff"),
    # uint8 low nibble: 0x1 | 0xf << 4, then 0xa
    ("uint8", [0x01, 0x0F, 0x0A], {"last_bit": 3}, "f10a"),
    # float64 sign and exponent (bits 52..63, 12 bits): 1.0 -> 0x3ff, -2.0 -> 0xc00
    ("float64", [1.0, -2.0], {"first_bit": 52}, "ff03c0"),
]


@pytest.mark.parametrize(("data_type", "values", "configuration", "hex_bytes"), GOLDEN)
def test_golden_bytes_from_the_spec(
    data_type: str, values: list, configuration: dict, hex_bytes: str
) -> None:
    codec, spec = packbits(**configuration), chunk_spec(data_type, (len(values),))
    chunk = np.array(values, spec.dtype)
    assert bytes(codec.encode(chunk, spec)).hex() == hex_bytes
    decoded = codec.decode(bytes.fromhex(hex_bytes), spec)
    assert decoded.dtype == spec.dtype and decoded.shape == spec.shape
    if data_type == "float64":
        assert decoded.tolist() == [1.0, -2.0]
    else:
        assert decoded.tolist() == chunk.tolist()


def test_sign_extension_and_zero_extension() -> None:
    """The spec: signed integers are sign-extended from ``last_bit``, everything else zero-extended."""
    spec = chunk_spec("int8", (2,))
    codec = packbits(last_bit=3)
    assert codec.decode(codec.encode(np.array([7, 14], "int8"), spec), spec).tolist() == [7, -2]
    unsigned = chunk_spec("uint8", (1,))
    assert codec.decode(codec.encode(np.array([14], "uint8"), unsigned), unsigned).tolist() == [14]


def test_the_schema_spellings_are_read_and_the_readme_ones_written() -> None:
    codec = codec_from_json(
        {"name": "packbits", "configuration": {"padding_encoding": "start_byte", "start_bit": 1}}
    )
    assert codec == PackBitsCodec("first_byte", 1, None)
    assert codec.to_json()["configuration"] == {
        "padding_encoding": "first_byte",
        "first_bit": 1,
        "last_bit": None,
    }


def test_the_element_width_comes_from_one_helper() -> None:
    assert element_bits(parse_data_type("bool")).bits == 1
    assert element_bits(parse_data_type("int16")) == (16, 1, True)
    assert element_bits(parse_data_type("complex128")) == (64, 2, False)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    data_type=st.sampled_from(NUMERIC),
    padding=st.sampled_from(["none", "first_byte", "last_byte"]),
)
def test_round_trip_of_the_kept_bits(data: st.DataObject, data_type: str, padding: str) -> None:
    """decode(encode(x)) keeps exactly bits first..last of each element (sign-extended for signed ints)."""
    spec0 = chunk_spec(data_type, (1,))
    bits = element_bits(spec0.data_type).bits
    first = data.draw(st.integers(0, bits - 1))
    last = data.draw(st.integers(first, bits - 1))
    width = np.dtype(spec0.dtype).itemsize
    raw = data.draw(arrays(np.uint8, st.integers(0, 12).map(lambda n: n * width)))
    chunk = raw.view(spec0.dtype) if data_type != "bool" else raw.astype(bool)
    spec = chunk_spec(data_type, chunk.shape)
    codec = packbits(padding_encoding=padding, first_bit=first, last_bit=last)
    encoded = bytes(codec.encode(chunk, spec))
    assert (
        len(encoded)
        == codec.compute_encoded_size(chunk.nbytes, spec)
        == -(-chunk.size * (last - first + 1) // 8) + (padding != "none")
    )
    decoded = codec.decode(encoded, spec)
    if data_type == "bool":
        assert decoded.tolist() == chunk.tolist()
        return
    unsigned = f"u{width}"
    expected = (chunk.view(unsigned).astype(np.uint64) >> np.uint64(first)) & np.uint64(
        (1 << (last - first + 1)) - 1
    )
    got = decoded.view(unsigned).astype(np.uint64)
    assert (
        (got >> np.uint64(first)) & np.uint64((1 << (last - first + 1)) - 1)
    ).tolist() == expected.tolist()
    assert (got & np.uint64((1 << first) - 1)).tolist() == [0] * chunk.size


@pytest.mark.parametrize(
    ("configuration", "data_type", "error", "match"),
    [
        ({"first_bit": 3, "last_bit": 1}, "uint8", MetadataError, "less than first_bit"),
        ({"last_bit": 8}, "uint8", CodecError, "do not fit data type 'uint8'"),
        ({"first_bit": 1}, "bool", CodecError, "do not fit data type 'bool'"),
        ({"padding_encoding": "middle_byte"}, "uint8", MetadataError, "padding_encoding"),
        ({"first_bit": -1}, "uint8", MetadataError, "first_bit"),
        ({"bits": 3}, "uint8", MetadataError, "unknown configuration keys"),
        ({}, "string", CodecError, "boolean or numeric"),
    ],
)
def test_hostile_configurations(configuration: dict, data_type: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        packbits(**configuration).validate(chunk_spec(data_type, (2,)))


def test_wrong_sizes_and_padding_bytes_are_refused() -> None:
    spec = chunk_spec("bool", (9,))
    codec = packbits(padding_encoding="first_byte")
    with pytest.raises(CodecError, match="expected 3 bytes"):
        codec.decode(bytes.fromhex("070d"), spec)
    with pytest.raises(CodecError, match="padding byte says 2"):
        codec.decode(bytes.fromhex("020d01"), spec)


SUB_BYTE = {
    "int2": 2,
    "uint2": 2,
    "int4": 4,
    "uint4": 4,
    "float4_e2m1fn": 4,
    "float6_e2m3fn": 6,
    "float6_e3m2fn": 6,
}


@pytest.mark.parametrize("name", sorted(SUB_BYTE))
def test_sub_byte_data_types_pack_to_their_registry_width(name: str) -> None:
    """The element width comes from the data type registry: n elements of b bits take ceil(n * b / 8) bytes."""
    pytest.importorskip("ml_dtypes")
    import zarr3_backend

    bits = SUB_BYTE[name]
    array = zarr3_backend.create_array(
        f"memory://packbits/{name}", shape=(11,), chunks=(11,), dtype=name, overwrite=True,
        codecs=[{"name": "packbits", "configuration": {"padding_encoding": "none"}}],
    )  # fmt: skip
    low_bits = np.random.default_rng(bits).integers(0, 1 << bits, 11, dtype=np.uint8)
    values = low_bits.view(array.dtype)  # each element's value sits in its low bits
    array[:] = values
    back = zarr3_backend.open_array(f"memory://packbits/{name}")[:]
    assert (back.view(np.uint8) & ((1 << bits) - 1)).tolist() == low_bits.tolist()
    assert len(array.store.get("c/0")) == -(-11 * bits // 8)
