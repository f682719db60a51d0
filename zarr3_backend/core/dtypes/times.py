"""``numpy.datetime64`` and ``numpy.timedelta64``: numpy's times, with the JSON zarr-python 3 writes for them.

Registry: https://github.com/zarr-developers/zarr-extensions/tree/main/data-types/numpy.datetime64

    {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}

The fill value is the int64 count of units (NaT is ``-2**63``).
"""

from __future__ import annotations

from typing import Any, ClassVar, SupportsInt, cast

import numpy as np

from ...errors import MetadataError
from ..integers import is_int
from .base import Category, DataType, _check_keys, _config_int
from .kinds import category_of
from .registry import register_data_type

_INT64 = np.iinfo(np.int64)
_TIME_UNITS = frozenset(
    ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"]
)
_MAX_SCALE_FACTOR = 2**31 - 1


class _TimeType(DataType):
    """``numpy.datetime64`` / ``numpy.timedelta64``: fill value is the int64 count (NaT = -2**63)."""

    def parse_fill_value(self, value: object) -> np.generic:
        if not is_int(value, numpy=False) or not _INT64.min <= value <= _INT64.max:
            raise self._fill_error("a 64-bit signed integer", value)
        scalar = np.array(value, dtype=np.int64).view(self.numpy)[()]
        return cast(np.generic, scalar)  # numpy types a 0-d array's [()] as an array, not a scalar

    def cast_fill_value(self, value: object) -> np.generic:
        category = category_of(np.asarray(value).dtype)
        if category in ("int", "uint") and isinstance(value, SupportsInt) and not isinstance(value, bool):
            return self.parse_fill_value(int(value))
        if category not in (self.category, "fixed_text"):
            raise self._fill_error(f"an integer, a string or a numpy {self.numpy.type.__name__}", value)
        try:
            return cast(np.generic, np.asarray(value, dtype=self.numpy)[()])  # as above
        except ValueError as exc:
            raise self._fill_error(f"a valid {self.numpy.type.__name__}", value) from exc

    def fill_value_to_json(self, value: object) -> int:
        return int(np.asarray(self.cast_fill_value(value)).view(np.int64))

    def default_fill_value(self) -> np.generic:
        return self.parse_fill_value(int(_INT64.min))


class _DatetimeType(_TimeType):
    category: ClassVar[Category] = "datetime"


class _TimedeltaType(_TimeType):
    category: ClassVar[Category] = "timedelta"


def time_type(name: str, unit: str, scale_factor: int) -> DataType:
    code = "M8" if name == "numpy.datetime64" else "m8"
    if unit == "generic":
        if scale_factor != 1:
            raise MetadataError(
                f"data_type {name!r}: scale_factor must be 1 for unit 'generic', got {scale_factor}"
            )
        dtype = np.dtype(code)
    else:
        dtype = np.dtype(f"{code}[{scale_factor}{unit}]")
    cls = _DatetimeType if name == "numpy.datetime64" else _TimedeltaType
    return cls(name, dtype, {"unit": unit, "scale_factor": scale_factor})


def _build_time(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, {"unit", "scale_factor"})
    unit = configuration.get("unit")
    if not isinstance(unit, str) or unit not in _TIME_UNITS:
        expected = f"one of {sorted(_TIME_UNITS)}"
        raise MetadataError(f"data_type {name!r}: configuration.unit: expected {expected}, got {unit!r}")
    scale_factor = _config_int(
        name, {"scale_factor": 1, **configuration}, "scale_factor", 1, _MAX_SCALE_FACTOR
    )
    return time_type(name, unit, scale_factor)


register_data_type("numpy.datetime64", _build_time)
register_data_type("numpy.timedelta64", _build_time)
