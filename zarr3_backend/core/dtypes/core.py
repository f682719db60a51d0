"""The core data types of the spec: bool, integers, floats, complex and raw ``r<N>``.

Float fill values keep their exact bits, NaN payloads included: a NaN other
than the spec's ``"NaN"`` is written as ``"0x…"`` hex.
"""

from __future__ import annotations

import math
import re
from typing import cast

import numpy as np

from ..integers import is_int
from ..json_types import JSON
from .base import DataType, _is_number

#: Bits of the spec's ``"NaN"``: sign 0, mantissa MSB 1, other mantissa bits 0.
_CANONICAL_NAN = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}
_INFINITIES = {"Infinity": math.inf, "-Infinity": -math.inf}
_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")


class _BoolType(DataType):
    def parse_fill_value(self, value: object) -> np.bool_:
        if not isinstance(value, (bool, np.bool_)):
            raise self._fill_error("true or false", value)
        return np.bool_(value)


class _IntType(DataType):
    def parse_fill_value(self, value: object) -> np.integer:
        info = np.iinfo(self.numpy)
        whole = not isinstance(value, (float, np.floating)) or float(value).is_integer()
        if not (_is_number(value) and whole and info.min <= int(value) <= info.max):
            raise self._fill_error(f"an integer in [{info.min}, {info.max}]", value)
        return cast(np.integer, self.numpy.type(int(value)))  # numpy types dtype[Any].type as type[Any]


def _from_bits(bits: int, dtype: np.dtype[np.floating]) -> np.floating:
    scalar = np.array(bits, dtype=f"u{dtype.itemsize}").view(dtype)[()]
    return cast(np.floating, scalar)  # numpy types a 0-d array's [()] as an array, not a scalar


def _to_bits(value: object, dtype: np.dtype) -> int:
    return int(np.asarray(value, dtype=dtype).view(f"u{dtype.itemsize}"))


def _parse_float(value: object, dtype: np.dtype[np.floating], owner: DataType) -> np.floating:
    """A float (component) fill value: number, "NaN", "±Infinity" or "0x" raw bits."""
    if isinstance(value, str):
        digits = value[2:]
        if value == "NaN":
            return _from_bits(_CANONICAL_NAN[dtype.itemsize], dtype)
        if value in _INFINITIES:
            return dtype.type(_INFINITIES[value])
        if value.startswith("0x") and len(digits) == 2 * dtype.itemsize and _HEX_DIGITS.fullmatch(digits):
            return _from_bits(int(digits, 16), dtype)
    elif _is_number(value):
        with np.errstate(over="ignore"):
            try:
                return dtype.type(value)
            except OverflowError:  # a JSON integer beyond float64's range
                return dtype.type(math.inf if value > 0 else -math.inf)
    expected = f'a number, "NaN", "Infinity", "-Infinity" or "0x" + {2 * dtype.itemsize} hex digits'
    raise owner._fill_error(expected, value)


def _float_to_json(value: np.floating) -> float | str:
    size = value.dtype.itemsize
    if np.isnan(value):
        bits = _to_bits(value, value.dtype)
        return "NaN" if bits == _CANONICAL_NAN[size] else f"0x{bits:0{2 * size}x}"
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


class _FloatType(DataType):
    def parse_fill_value(self, value: object) -> np.floating:
        return _parse_float(value, self.numpy, self)

    def fill_value_to_json(self, value: object) -> float | str:
        return _float_to_json(self.parse_fill_value(value))  # casting a float fill is parsing it


class _ComplexType(DataType):
    @property
    def _part(self) -> np.dtype[np.floating]:
        return np.dtype(f"f{self.numpy.itemsize // 2}")

    def parse_fill_value(self, value: object) -> np.complexfloating:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise self._fill_error("a 2-element list [real, imag]", value)
        parts = [_parse_float(v, self._part, self) for v in value]
        scalar = np.array(parts, dtype=self._part).view(self.numpy)[0]
        return cast(np.complexfloating, scalar)  # numpy types an element of an ndarray[Any] as Any

    def cast_fill_value(self, value: object) -> np.complexfloating:
        if isinstance(value, (list, tuple)):
            return self.parse_fill_value(value)
        if not (_is_number(value) or isinstance(value, (complex, np.complexfloating))):
            raise self._fill_error("a complex number or [real, imag]", value)
        with np.errstate(over="ignore"):
            return cast(np.complexfloating, self.numpy.type(value))  # dtype[Any].type is type[Any]

    def fill_value_to_json(self, value: object) -> list[JSON]:
        parts = np.asarray(self.cast_fill_value(value)).reshape(1).view(self._part)
        return [_float_to_json(part) for part in parts]


class _RawBitsType(DataType):
    """Core ``r<N>``: fill value is a list of N/8 integers in [0, 255]."""

    def parse_fill_value(self, value: object) -> np.void:
        size = self.numpy.itemsize
        if (
            not isinstance(value, (list, tuple))
            or len(value) != size
            or not all(is_int(b, numpy=False) and 0 <= b <= 255 for b in value)
        ):
            raise self._fill_error(f"a list of {size} integers in [0, 255]", value)
        return np.void(bytes(value))

    def cast_fill_value(self, value: object) -> np.void:
        if isinstance(value, np.void):
            value = value.tobytes()
        return self.parse_fill_value(list(value) if isinstance(value, (bytes, bytearray)) else value)

    def fill_value_to_json(self, value: object) -> list[JSON]:
        return list(self.cast_fill_value(value).tobytes())


_CORE = {
    "bool": "?",
    **{f"int{8 * n}": f"i{n}" for n in (1, 2, 4, 8)},
    **{f"uint{8 * n}": f"u{n}" for n in (1, 2, 4, 8)},
    **{f"float{8 * n}": f"f{n}" for n in (2, 4, 8)},
    "complex64": "c8",
    "complex128": "c16",
    "complex_float32": "c8",  # registered aliases, kept as written
    "complex_float64": "c16",
}
_CORE_CLASSES: dict[str, type[DataType]] = {
    "b": _BoolType, "i": _IntType, "u": _IntType, "f": _FloatType, "c": _ComplexType
}  # fmt: skip


def _core_type(name: str) -> DataType:
    dtype = np.dtype(_CORE[name])
    return _CORE_CLASSES[dtype.kind](name, dtype)


def _raw_type(size: int) -> DataType:
    return _RawBitsType(f"r{8 * size}", np.dtype(f"V{size}"))
