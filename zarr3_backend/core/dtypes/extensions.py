"""Extension data types real data uses, with the JSON zarr-python 3.1 writes for them.

``string``, ``variable_length_bytes`` (registered as ``bytes``), ``fixed_length_utf32``, ``raw_bytes``,
``null_terminated_bytes``, ``numpy.datetime64`` and ``numpy.timedelta64``.
"""

from __future__ import annotations

import base64
import binascii
from abc import abstractmethod
from collections.abc import Callable
from functools import partial
from typing import Any, SupportsInt, cast

import numpy as np

from ...errors import MetadataError
from ..integers import is_int
from .base import DataType, _check_keys, _config_int

_INT64 = np.iinfo(np.int64)
_TIME_UNITS = frozenset(
    ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"]
)
_MAX_SCALE_FACTOR = 2**31 - 1


class _Base64Type(DataType):
    """Byte-string types whose fill value is base64 text (zarr-python's convention)."""

    def parse_fill_value(self, value: object) -> np.generic | bytes:
        if not isinstance(value, str):
            raise self._fill_error("a base64 string", value)
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise self._fill_error("a base64 string", value) from exc
        return self._from_bytes(raw)

    def cast_fill_value(self, value: object) -> np.generic | bytes:
        if isinstance(value, np.void):
            value = value.tobytes()
        if isinstance(value, (bytes, bytearray)):
            return self._from_bytes(bytes(value))
        return self.parse_fill_value(value)

    def fill_value_to_json(self, value: object) -> str:
        raw = self.cast_fill_value(value)
        return base64.b64encode(raw if isinstance(raw, bytes) else raw.tobytes()).decode("ascii")

    @abstractmethod
    def _from_bytes(self, raw: bytes) -> np.generic | bytes:
        """The fill scalar for ``raw``; raise if its length does not fit."""


class _RawBytesType(_Base64Type):
    """``raw_bytes`` (zarr-python's name for numpy ``V<n>``)."""

    def _from_bytes(self, raw: bytes) -> np.void:
        if len(raw) != self.numpy.itemsize:
            raise self._fill_error(f"exactly {self.numpy.itemsize} bytes", raw)
        return np.void(raw)


class _NullTerminatedBytesType(_Base64Type):
    """``null_terminated_bytes`` (numpy ``S<n>``)."""

    def _from_bytes(self, raw: bytes) -> np.bytes_:
        if len(raw) > self.numpy.itemsize:
            raise self._fill_error(f"at most {self.numpy.itemsize} bytes", raw)
        return np.bytes_(raw)


class _VariableLengthBytesType(_Base64Type):
    """``variable_length_bytes`` (and the registered ``bytes``): numpy object arrays of ``bytes``.

    The registered ``bytes`` also spells a fill value as a list of integers in [0, 255].
    """

    item_size = None

    def parse_fill_value(self, value: object) -> np.generic | bytes:
        if self.name == "bytes" and isinstance(value, list):
            if not all(is_int(b, numpy=False) and 0 <= b <= 255 for b in value):
                raise self._fill_error("base64 text or a list of integers in [0, 255]", value)
            return bytes(value)
        return super().parse_fill_value(value)

    def _from_bytes(self, raw: bytes) -> bytes:
        return raw

    def default_fill_value(self) -> bytes:
        return b""


class _FixedLengthUTF32Type(DataType):
    """``fixed_length_utf32`` (numpy ``U<n>``): fill value is a JSON string."""

    def parse_fill_value(self, value: object) -> np.str_:
        length = self.numpy.itemsize // 4
        if not isinstance(value, str) or len(value) > length:
            raise self._fill_error(f"a string of at most {length} characters", value)
        return np.str_(value)


class _StringType(DataType):
    """``string``: variable-length UTF-8, numpy object arrays of ``str``."""

    item_size = None

    def parse_fill_value(self, value: object) -> str:
        if not isinstance(value, str):
            raise self._fill_error("a string", value)
        return value

    def fill_value_to_json(self, value: object) -> str:
        return self.parse_fill_value(value)

    def default_fill_value(self) -> str:
        return ""


class _TimeType(DataType):
    """``numpy.datetime64`` / ``numpy.timedelta64``: fill value is the int64 count (NaT = -2**63)."""

    def parse_fill_value(self, value: object) -> np.generic:
        if not is_int(value, numpy=False) or not _INT64.min <= value <= _INT64.max:
            raise self._fill_error("a 64-bit signed integer", value)
        scalar = np.array(value, dtype=np.int64).view(self.numpy)[()]
        return cast(np.generic, scalar)  # numpy types a 0-d array's [()] as an array, not a scalar

    def cast_fill_value(self, value: object) -> np.generic:
        kind = np.asarray(value).dtype.kind
        if kind in "iu" and isinstance(value, SupportsInt) and not isinstance(value, bool):
            return self.parse_fill_value(int(value))
        if kind not in (self.numpy.kind, "U"):
            raise self._fill_error(f"an integer, a string or a numpy {self.numpy.type.__name__}", value)
        try:
            return cast(np.generic, np.asarray(value, dtype=self.numpy)[()])  # as above
        except ValueError as exc:
            raise self._fill_error(f"a valid {self.numpy.type.__name__}", value) from exc

    def fill_value_to_json(self, value: object) -> int:
        return int(np.asarray(self.cast_fill_value(value)).view(np.int64))

    def default_fill_value(self) -> np.generic:
        return self.parse_fill_value(int(_INT64.min))


def _time_type(name: str, unit: str, scale_factor: int) -> DataType:
    code = "M8" if name == "numpy.datetime64" else "m8"
    if unit == "generic":
        if scale_factor != 1:
            raise MetadataError(
                f"data_type {name!r}: scale_factor must be 1 for unit 'generic', got {scale_factor}"
            )
        dtype = np.dtype(code)
    else:
        dtype = np.dtype(f"{code}[{scale_factor}{unit}]")
    return _TimeType(name, dtype, {"unit": unit, "scale_factor": scale_factor})


def _length_bytes(name: str, configuration: dict[str, Any]) -> int:
    _check_keys(name, configuration, {"length_bytes"})
    return _config_int(name, configuration, "length_bytes", 1, 2**31 - 1)


def _build_fixed_utf32(name: str, configuration: dict[str, Any]) -> DataType:
    length = _length_bytes(name, configuration)
    if length % 4:
        raise MetadataError(
            f"data_type {name!r}: configuration.length_bytes must be a multiple of 4, got {length}"
        )
    return _FixedLengthUTF32Type(name, np.dtype(f"U{length // 4}"), {"length_bytes": length})


def _build_time(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, {"unit", "scale_factor"})
    unit = configuration.get("unit")
    if not isinstance(unit, str) or unit not in _TIME_UNITS:
        expected = f"one of {sorted(_TIME_UNITS)}"
        raise MetadataError(f"data_type {name!r}: configuration.unit: expected {expected}, got {unit!r}")
    scale_factor = _config_int(
        name, {"scale_factor": 1, **configuration}, "scale_factor", 1, _MAX_SCALE_FACTOR
    )
    return _time_type(name, unit, scale_factor)


def _build_bare(cls: type[DataType], code: str, name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    return cls(name, np.dtype(code))


def _build_sized(cls: type[DataType], code: str, name: str, configuration: dict[str, Any]) -> DataType:
    length = _length_bytes(name, configuration)
    return cls(name, np.dtype(f"{code}{length}"), {"length_bytes": length})


_EXTENSIONS: dict[str, Callable[[str, dict[str, Any]], DataType]] = {
    "string": partial(_build_bare, _StringType, "O"),
    "variable_length_bytes": partial(_build_bare, _VariableLengthBytesType, "O"),
    "bytes": partial(_build_bare, _VariableLengthBytesType, "O"),
    "fixed_length_utf32": _build_fixed_utf32,
    "raw_bytes": partial(_build_sized, _RawBytesType, "V"),
    "null_terminated_bytes": partial(_build_sized, _NullTerminatedBytesType, "S"),
    "numpy.datetime64": _build_time,
    "numpy.timedelta64": _build_time,
}
