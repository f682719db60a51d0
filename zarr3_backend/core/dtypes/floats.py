"""Real floating-point data types: the core ``float16``/``float32``/``float64``, and the shared fill-value rules.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/core/v3.0.html#fill-value

A fill value is a JSON number, ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` or
``"0x"`` and the element's bits in hex (two digits per byte). Fill values
keep their exact bits, NaN payloads included: a NaN other than the type's
``"NaN"`` is written as hex. The ML formats (`zarr3_backend.core.dtypes.ml`)
use the same rules, with their own ``"NaN"`` bits and, for the finite
formats, no ``"NaN"`` or infinities.

    "fill_value": "NaN"          "fill_value": "0x7fc00001"
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np

from .base import Category, DataType, _check_keys
from .kinds import is_real_scalar
from .registry import register_data_type

#: Bits of the spec's ``"NaN"`` for the IEEE 754 types: sign 0, mantissa MSB 1, other mantissa bits 0.
IEEE_NAN = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}
_INFINITIES = {"Infinity": math.inf, "-Infinity": -math.inf}
_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")


def _from_bits(bits: int, dtype: np.dtype) -> np.generic:
    scalar = np.array(bits, dtype=f"u{dtype.itemsize}").view(dtype)[()]
    return cast(np.generic, scalar)  # numpy types a 0-d array's [()] as an array, not a scalar


def _to_bits(value: object, dtype: np.dtype) -> int:
    return int(np.asarray(value, dtype=dtype).view(f"u{dtype.itemsize}"))


@dataclass(frozen=True)
class FloatFormat:
    """The special values of a float format: its ``"NaN"`` bits (``None``: no NaN) and whether it has infinities."""

    nan_bits: int | None
    infinite: bool = True

    def parse(self, value: object, dtype: np.dtype, owner: DataType) -> np.generic:
        """A float (component) fill value of ``dtype``: number, a special name or ``"0x"`` raw bits."""
        digits = 2 * dtype.itemsize
        if isinstance(value, str):
            if value == "NaN" and self.nan_bits is not None:
                return _from_bits(self.nan_bits, dtype)
            if value in _INFINITIES and self.infinite:
                return cast(np.generic, dtype.type(_INFINITIES[value]))  # dtype[Any].type is type[Any]
            hex_digits = value[2:]
            if value.startswith("0x") and len(hex_digits) == digits and _HEX_DIGITS.fullmatch(hex_digits):
                return _from_bits(int(hex_digits, 16), dtype)
        elif is_real_scalar(value):
            return self._from_number(value, dtype, owner)
        names = ('"NaN", ' if self.nan_bits is not None else "") + (
            '"Infinity", "-Infinity", ' if self.infinite else ""
        )
        raise owner._fill_error(f'a number, {names}or "0x" + {digits} hex digits', value)

    def _from_number(self, value: float | int | np.generic, dtype: np.dtype, owner: DataType) -> np.generic:
        # a numpy scalar is cast as it is, keeping its bits (NaN payloads); a Python number goes through float64
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                given = np.asarray(value) if isinstance(value, np.generic) else np.asarray(value, np.float64)
            except OverflowError:  # a JSON integer beyond float64's range
                given = np.asarray(math.inf if int(value) > 0 else -math.inf)
            scalar = cast(np.generic, given.astype(dtype)[()])  # numpy types a 0-d [()] as an array
        if not self.infinite and not np.isfinite(scalar) and not np.isnan(value):
            raise owner._fill_error(f"a number within the finite range of {owner.name!r}", value)
        return scalar

    def to_json(self, value: np.generic) -> float | str:
        """``value``'s JSON form: a number, the type's ``"NaN"``, ``"±Infinity"`` or, for another NaN, hex bits."""
        size = value.dtype.itemsize
        if np.isnan(value):
            bits = _to_bits(value, value.dtype)
            return "NaN" if bits == self.nan_bits else f"0x{bits:0{2 * size}x}"
        if np.isinf(value):
            return "Infinity" if float(value) > 0 else "-Infinity"
        return float(value)


@dataclass(frozen=True)
class FloatType(DataType):
    """A real floating-point data type with the fill-value rules of its `FloatFormat`."""

    category: ClassVar[Category] = "float"
    format: FloatFormat = field(default=FloatFormat(None), compare=False)

    def parse_fill_value(self, value: object) -> np.generic:
        return self.format.parse(value, self.numpy, self)

    def fill_value_to_json(self, value: object) -> float | str:
        return self.format.to_json(self.parse_fill_value(value))  # casting a float fill is parsing it


def _build_ieee(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    dtype = np.dtype(name)
    return FloatType(name, dtype, format=FloatFormat(IEEE_NAN[dtype.itemsize]))


for _name in ("float16", "float32", "float64"):
    register_data_type(_name, _build_ieee)
