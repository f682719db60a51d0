"""``bool`` and the core integer data types (``int8`` ... ``uint64``); the integer fill-value rules.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/core/v3.0.html#fill-value

A fill value is ``true``/``false`` for ``bool`` and a JSON integer in the
type's range for integers (a float with no fraction is accepted, as written
by some writers). The sub-byte integers (``int2``, ``int4``, ``uint2``,
``uint4``) are in `zarr3_backend.core.dtypes.ml`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from .base import Category, DataType, _check_keys
from .kinds import is_real_scalar
from .registry import register_data_type


class BoolType(DataType):
    """``bool``: fill value ``true`` or ``false``."""

    category: ClassVar[Category] = "bool"

    def parse_fill_value(self, value: object) -> np.bool_:
        if not isinstance(value, (bool, np.bool_)):
            raise self._fill_error("true or false", value)
        return np.bool_(value)


@dataclass(frozen=True)
class IntType(DataType):
    """A signed or unsigned integer type; ``low``..``high`` is its range (``None``: numpy's ``iinfo``)."""

    category: ClassVar[Category] = "int"
    low: int | None = None
    high: int | None = None

    def parse_fill_value(self, value: object) -> np.generic:
        low, high = self._range()
        whole = not isinstance(value, (float, np.floating)) or float(value).is_integer()
        if not (is_real_scalar(value) and whole and low <= int(value) <= high):
            raise self._fill_error(f"an integer in [{low}, {high}]", value)
        return cast(np.generic, self.numpy.type(int(value)))  # numpy types dtype[Any].type as type[Any]

    def _range(self) -> tuple[int, int]:
        if self.low is not None and self.high is not None:
            return self.low, self.high
        info = np.iinfo(self.numpy)
        return int(info.min), int(info.max)


class UIntType(IntType):
    """An unsigned integer type."""

    category: ClassVar[Category] = "uint"


def _build_bool(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    return BoolType(name, np.dtype("?"))


def _build_int(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    return (UIntType if name.startswith("u") else IntType)(name, np.dtype(name))


register_data_type("bool", _build_bool)
for _bits in (8, 16, 32, 64):
    register_data_type(f"int{_bits}", _build_int)
    register_data_type(f"uint{_bits}", _build_int)
