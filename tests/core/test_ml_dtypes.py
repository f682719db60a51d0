"""The data-type registry and the ML formats (ml_dtypes): names, fill values, bytes, against the registry documents.

The expected values are the zarr-extensions registry's (data-types/<name>/README.md): each
type's ``"NaN"`` bits, which special names it refuses, and its ``bytes`` codec layout.
tensorstore cross-checks are in tests/interop/test_interop_ml_dtypes.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr3_backend
from zarr3_backend.core.dtypes import data_type_from_numpy, is_fill, parse_data_type
from zarr3_backend.core.dtypes.kinds import category_of, is_float, is_integer, needs_endian
from zarr3_backend.core.dtypes.registry import get_builder, register_data_type, registered_names
from zarr3_backend.errors import MetadataError, UnknownExtensionError

ml_dtypes = pytest.importorskip("ml_dtypes")

#: The registry's "NaN" bits; None where it says "NaN" is not supported.
NAN_BITS = {
    "bfloat16": 0x7FC0, "float8_e3m4": 0x78, "float8_e4m3": 0x7C, "float8_e4m3fn": 0x7F,
    "float8_e4m3fnuz": 0x80, "float8_e4m3b11fnuz": 0x80, "float8_e5m2": 0x7E, "float8_e5m2fnuz": 0x80,
    "float8_e8m0fnu": 0xFF, "float4_e2m1fn": None, "float6_e2m3fn": None, "float6_e3m2fn": None,
}  # fmt: skip
INFINITE = {"bfloat16", "float8_e3m4", "float8_e4m3", "float8_e5m2"}
BITS = {"float4_e2m1fn": 4, "float6_e2m3fn": 6, "float6_e3m2fn": 6, "bfloat16": 16}
INTS = {"int2": (-2, 1), "int4": (-8, 7), "uint2": (0, 3), "uint4": (0, 15)}
ML_TYPES = [*NAN_BITS, *INTS]
COMPLEX_TYPES = ["complex_float16", *(f"complex_{p}" for p in NAN_BITS if p != "float8_e4m3fn")]


def _bits(values: np.ndarray) -> np.ndarray:
    if values.dtype.names:
        return np.ascontiguousarray(values).view(np.uint8)
    if category_of(values.dtype) in ("int", "uint"):
        return values.astype(np.int8)  # ml_dtypes may or may not keep an int4's high bits set: compare values
    return np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")


def _chunk_key(array: zarr3_backend.Array) -> str:
    return f"{array.path}/c/0".lstrip("/")


@pytest.mark.parametrize("name", ML_TYPES)
def test_each_type_is_its_ml_dtypes_dtype_both_ways(name: str) -> None:
    data_type = parse_data_type(name)
    assert data_type.numpy == np.dtype(getattr(ml_dtypes, name))
    assert data_type.to_json() == name and parse_data_type({"name": name}) == data_type
    assert data_type_from_numpy(getattr(ml_dtypes, name)) == data_type
    assert data_type_from_numpy(name) == data_type
    assert data_type.bit_width == BITS.get(name, INTS.get(name) and int(name[-1]) or 8)
    assert is_float(data_type.numpy) == (name in NAN_BITS) and is_integer(data_type.numpy) == (name in INTS)
    assert needs_endian(data_type.numpy) == (name == "bfloat16")
    with pytest.raises(MetadataError, match="unexpected configuration keys"):
        parse_data_type({"name": name, "configuration": {"x": 1}})


@pytest.mark.parametrize("name", NAN_BITS)
def test_float_fill_values_follow_the_registry(name: str) -> None:
    data_type = parse_data_type(name)
    size = data_type.numpy.itemsize
    if NAN_BITS[name] is None:
        with pytest.raises(MetadataError, match="fill_value"):
            data_type.parse_fill_value("NaN")
    else:
        nan = data_type.parse_fill_value("NaN")
        assert int(np.asarray(nan).view(f"u{size}")) == NAN_BITS[name]
        assert data_type.fill_value_to_json(nan) == "NaN"
    for name_of_infinity in ("Infinity", "-Infinity"):
        if name in INFINITE:
            assert (
                data_type.fill_value_to_json(data_type.parse_fill_value(name_of_infinity)) == name_of_infinity
            )
        else:
            with pytest.raises(MetadataError, match="fill_value"):
                data_type.parse_fill_value(name_of_infinity)
    assert data_type.fill_value_to_json(data_type.parse_fill_value(1.0)) == 1.0
    assert data_type.fill_value_to_json(data_type.parse_fill_value(1)) == 1.0
    with pytest.raises(MetadataError, match="hex digits"):
        data_type.parse_fill_value("0x" + "0" * (2 * size + 1))


@given(data=st.data())
@settings(max_examples=60, deadline=None)
def test_every_float_bit_pattern_round_trips_through_json(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(list(NAN_BITS)))
    data_type = parse_data_type(name)
    size, bits = data_type.numpy.itemsize, data_type.bit_width
    pattern = data.draw(st.integers(0, 2**bits - 1))
    value = np.array(pattern, f"u{size}").view(data_type.numpy)[()]
    text = data_type.fill_value_to_json(value)
    back = data_type.parse_fill_value(text)
    assert int(np.asarray(back).view(f"u{size}")) == pattern, (name, hex(pattern), text)


@pytest.mark.parametrize("name", INTS)
def test_integer_fill_values_follow_the_registry(name: str) -> None:
    data_type = parse_data_type(name)
    low, high = INTS[name]
    for value in (low, high, 0):
        assert data_type.fill_value_to_json(data_type.parse_fill_value(value)) == value
    for bad in (low - 1, high + 1, 1.5, "0x01", True):
        with pytest.raises(MetadataError, match=rf"an integer in \[{low}, {high}\]"):
            data_type.parse_fill_value(bad)
    assert (
        int(np.asarray(data_type.parse_fill_value(low)).view(np.uint8)) < 16
    )  # the high bits written as zero


@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_arrays_of_every_type_round_trip(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from([*ML_TYPES, *COMPLEX_TYPES]))
    data_type = parse_data_type(name)
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    endian = data.draw(st.sampled_from(["little", "big"]))
    parts = 2 if data_type.numpy.names else 1  # a complex_* record: real, then imaginary part
    part = data_type.numpy.fields["real"][0] if parts == 2 else data_type.numpy  # type: ignore[index]
    width = getattr(data_type, "part_bits", data_type.bit_width)
    size = int(np.prod(shape)) * parts
    bits = data.draw(
        st.lists(st.integers(0, 2 ** min(width, 8 * part.itemsize) - 1), min_size=size, max_size=size)
    )
    values = np.array(bits, f"u{part.itemsize}").view(data_type.numpy).reshape(shape)
    array = zarr3_backend.create_array(
        "memory://ml/round-trip", shape=shape, chunks=chunks, dtype=name, overwrite=True,
        serializer={"name": "bytes", "configuration": {"endian": endian}},
    )  # fmt: skip
    array[...] = values
    back = zarr3_backend.open_array("memory://ml/round-trip")[...]
    assert back.dtype == data_type.numpy and np.array_equal(_bits(back), _bits(values))


def test_bfloat16_bytes_are_the_registry_layout_in_either_order() -> None:
    for endian, expected in (("little", b"\xc0\x3f\x80\xbf"), ("big", b"\x3f\xc0\xbf\x80")):
        array = zarr3_backend.create_array(
            f"memory://ml/bf16-{endian}", shape=(2,), chunks=(2,), dtype="bfloat16", compressors=None, overwrite=True,
            serializer={"name": "bytes", "configuration": {"endian": endian}},
        )  # fmt: skip
        array[...] = np.array([1.5, -1.0], ml_dtypes.bfloat16)
        assert bytes(array.store.get(_chunk_key(array))) == expected  # 0bSEEEEEEEEMMMMMMM
        assert array[...].tolist() == [1.5, -1.0]


@pytest.mark.parametrize(
    ("name", "stored", "expected"),
    [
        ("int4", 0xF7, 7),
        ("int4", 0x0F, -1),
        ("uint2", 0xFE, 2),
        ("float4_e2m1fn", 0xF3, 1.5),
        ("float6_e2m3fn", 0xC1, 0.125),
    ],
)
def test_high_bits_of_a_sub_byte_type_are_ignored_when_read(name: str, stored: int, expected: float) -> None:
    array = zarr3_backend.create_array(
        f"memory://ml/sub-{name}", shape=(1,), chunks=(1,), dtype=name, compressors=None, overwrite=True
    )
    array.store.set(
        _chunk_key(array), bytes([stored])
    )  # hand-made per the registry: "upper bits are ignored"
    got = array[...]
    assert float(got[0]) == expected and int(got.view(np.uint8)[0]) == stored & (
        2**array.metadata.data_type.bit_width - 1
    )


def test_is_fill_compares_bfloat16_bits() -> None:
    bf16 = ml_dtypes.bfloat16
    assert is_fill(np.zeros(3, bf16), bf16(0.0)) and not is_fill(np.array([0.0, -0.0], bf16), bf16(0.0))
    assert is_fill(np.full(2, np.nan, bf16), parse_data_type("bfloat16").parse_fill_value("NaN"))


@pytest.mark.parametrize(
    ("name", "fill", "stored_big"),
    [
        ("complex_float16", [1.0, "NaN"], b"\x3c\x00\x7e\x00"),
        ("complex_bfloat16", ["-Infinity", 2.0], b"\xff\x80\x40\x00"),
        ("complex_float8_e4m3fnuz", ["NaN", -0.5], b"\x80\xb8"),
        ("complex_float4_e2m1fn", [6.0, -6.0], b"\x07\x0f"),
    ],
)
def test_complex_types_are_real_then_imaginary_parts(
    name: str, fill: list[object], stored_big: bytes
) -> None:
    data_type = parse_data_type(name)
    assert data_type.fill_value_to_json(data_type.parse_fill_value(fill)) == fill
    array = zarr3_backend.create_array(
        f"memory://ml/{name}", shape=(1,), chunks=(1,), dtype=name, compressors=None, overwrite=True,
        serializer={"name": "bytes", "configuration": {"endian": "big"}},
    )  # fmt: skip
    array[...] = np.asarray(data_type.parse_fill_value(fill)).reshape(1)
    assert bytes(array.store.get(_chunk_key(array))) == stored_big
    assert array[...].tobytes() == np.asarray(data_type.parse_fill_value(fill)).tobytes()
    with pytest.raises(MetadataError, match=r"\[real, imag\]"):
        data_type.parse_fill_value(1.0)


def test_every_registry_complex_type_is_registered() -> None:
    parts = [*NAN_BITS, "float16", "float32", "float64"]
    assert {f"complex_{p}" for p in parts if p != "float8_e4m3fn"} <= set(registered_names())


def test_without_ml_dtypes_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from zarr3_backend.core.dtypes import ml

    def refuse(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr(ml, "import_module", refuse)
    with pytest.raises(UnknownExtensionError, match=r"zarr3_backend\[ml\]"):
        parse_data_type("bfloat16")


def test_a_registered_builder_is_found_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from zarr3_backend.core.dtypes import registry

    monkeypatch.setattr(registry, "_builders", dict(registry._builders))
    register_data_type("my_float32", lambda name, configuration: parse_data_type("float32"))
    assert get_builder("my_float32") is not None and parse_data_type("my_float32").numpy == np.dtype("f4")
    with pytest.raises(UnknownExtensionError, match="unknown data type 'no_such_type'"):
        parse_data_type("no_such_type")
