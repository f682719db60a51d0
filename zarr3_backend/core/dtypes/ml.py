"""The machine-learning number formats, held in memory as ml_dtypes' numpy dtypes (the ``ml`` extra).

Registry documents: https://github.com/zarr-developers/zarr-extensions/tree/main/data-types
(``bfloat16``, ``float8_*``, ``float4_e2m1fn``, ``float6_*``, ``int2``, ``int4``, ``uint2``, ``uint4``);
``float8_e4m3fn`` is not in the registry but tensorstore writes it, with the same rules.

    "data_type": "bfloat16", "fill_value": "NaN"

Fill values follow the core float and integer rules, each float format with its own
``"NaN"`` bits (``bfloat16``: ``0x7fc0``; ``fnuz``: ``0x80``); formats without infinities
or NaN refuse those names. The ``bytes`` codec swaps ``bfloat16`` as a ``uint16``, and
stores a sub-byte type one byte per element, value in the low bits: the high bits are
cleared when read and written as zero. ml_dtypes is imported when such a type is first
built; without it, `UnknownExtensionError` names the extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, cast

import numpy as np

from ...errors import UnknownExtensionError
from .base import DataType, _check_keys
from .floats import FloatFormat, FloatType
from .integers import IntType, UIntType
from .registry import register_data_type

#: Each float format: its special values, and the bits of an element that carry its value.
FLOAT_FORMATS: dict[str, tuple[FloatFormat, int]] = {
    "bfloat16": (FloatFormat(0x7FC0), 16),
    "float8_e3m4": (FloatFormat(0x78), 8),
    "float8_e4m3": (FloatFormat(0x7C), 8),
    "float8_e4m3fn": (FloatFormat(0x7F, infinite=False), 8),
    "float8_e4m3fnuz": (FloatFormat(0x80, infinite=False), 8),
    "float8_e4m3b11fnuz": (FloatFormat(0x80, infinite=False), 8),
    "float8_e5m2": (FloatFormat(0x7E), 8),
    "float8_e5m2fnuz": (FloatFormat(0x80, infinite=False), 8),
    "float8_e8m0fnu": (FloatFormat(0xFF, infinite=False), 8),
    "float4_e2m1fn": (FloatFormat(None, infinite=False), 4),
    "float6_e2m3fn": (FloatFormat(None, infinite=False), 6),
    "float6_e3m2fn": (FloatFormat(None, infinite=False), 6),
}
#: Each sub-byte integer type and its bits.
INT_WIDTHS = {"int2": 2, "int4": 4, "uint2": 2, "uint4": 4}


def ml_dtype(name: str) -> np.dtype:
    """ml_dtypes' numpy dtype called ``name``; `UnknownExtensionError` naming the extra when it is not installed."""
    try:
        module = import_module("ml_dtypes")
    except ImportError as exc:
        raise UnknownExtensionError(
            f"data_type {name!r} needs the ml_dtypes package: pip install 'zarr3_backend[ml]'"
        ) from exc
    dtype: np.dtype = np.dtype(getattr(module, name))
    return dtype


def clear_high_bits(chunk: np.ndarray, bits: int) -> np.ndarray:
    """``chunk`` (one byte per element) with all but the low ``bits`` of each byte cleared."""
    return (chunk.view(np.uint8) & np.uint8((1 << bits) - 1)).view(chunk.dtype)


@dataclass(frozen=True)
class MLFloatType(FloatType):
    """A float format of ml_dtypes; ``bits`` below 8 for the sub-byte ones."""

    bits: int = 8

    @property
    def bit_width(self) -> int:
        return self.bits

    @property
    def swap_unit(self) -> np.dtype | None:
        return np.dtype(np.uint16) if self.bits == 16 else None

    def decode_stored(self, chunk: np.ndarray) -> np.ndarray:
        return clear_high_bits(chunk, self.bits) if self.bits < 8 else chunk


@dataclass(frozen=True)
class _SubByteInt(IntType):
    bits: int = 8

    @property
    def bit_width(self) -> int:
        return self.bits

    def decode_stored(self, chunk: np.ndarray) -> np.ndarray:
        return clear_high_bits(chunk, self.bits)  # ml_dtypes sign-extends the low bits of a signed type

    def parse_fill_value(self, value: object) -> np.generic:
        scalar = np.asarray(super().parse_fill_value(value)).reshape(
            1
        )  # ml_dtypes' scalars keep high bits set
        return cast(np.generic, clear_high_bits(scalar, self.bits)[0])  # an element of ndarray[Any] is Any


class SubByteIntType(_SubByteInt):
    """``int2``/``int4``."""


class SubByteUIntType(_SubByteInt, UIntType):
    """``uint2``/``uint4``."""


def _build_float(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    float_format, bits = FLOAT_FORMATS[name]
    return MLFloatType(name, ml_dtype(name), format=float_format, bits=bits)


def _build_int(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    bits = INT_WIDTHS[name]
    low, high = (0, (1 << bits) - 1) if name.startswith("u") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    cls = SubByteUIntType if name.startswith("u") else SubByteIntType
    return cls(name, ml_dtype(name), low=low, high=high, bits=bits)


for _name in FLOAT_FORMATS:
    register_data_type(_name, _build_float, numpy_type=("ml_dtypes", _name))
for _name in INT_WIDTHS:
    register_data_type(_name, _build_int, numpy_type=("ml_dtypes", _name))
