"""Text and byte-string data types, with the JSON zarr-python 3 writes for them.

Registry: https://github.com/zarr-developers/zarr-extensions/tree/main/data-types

``string`` (variable-length UTF-8), ``fixed_length_utf32`` (numpy ``U<n>``; fill
value a JSON string), ``variable_length_bytes`` (registered as ``bytes``),
``null_terminated_bytes`` (numpy ``S<n>``) and ``raw_bytes`` (numpy ``V<n>``),
whose fill values are base64 text.

    {"name": "fixed_length_utf32", "configuration": {"length_bytes": 20}}, "fill_value": "none"
"""

from __future__ import annotations

import base64
import binascii
from abc import abstractmethod
from functools import partial
from typing import Any, ClassVar

import numpy as np

from ...errors import MetadataError
from ..integers import is_int
from .base import Category, DataType, _check_keys, _config_int
from .registry import register_data_type


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

    category: ClassVar[Category] = "raw"

    def _from_bytes(self, raw: bytes) -> np.void:
        if len(raw) != self.numpy.itemsize:
            raise self._fill_error(f"exactly {self.numpy.itemsize} bytes", raw)
        return np.void(raw)


class _NullTerminatedBytesType(_Base64Type):
    """``null_terminated_bytes`` (numpy ``S<n>``)."""

    category: ClassVar[Category] = "fixed_bytes"

    def _from_bytes(self, raw: bytes) -> np.bytes_:
        if len(raw) > self.numpy.itemsize:
            raise self._fill_error(f"at most {self.numpy.itemsize} bytes", raw)
        return np.bytes_(raw)


class _VariableLengthBytesType(_Base64Type):
    """``variable_length_bytes`` (and the registered ``bytes``): numpy object arrays of ``bytes``.

    The registered ``bytes`` also spells a fill value as a list of integers in [0, 255].
    """

    category: ClassVar[Category] = "object"

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

    category: ClassVar[Category] = "fixed_text"

    def parse_fill_value(self, value: object) -> np.str_:
        length = self.numpy.itemsize // 4
        if not isinstance(value, str) or len(value) > length:
            raise self._fill_error(f"a string of at most {length} characters", value)
        return np.str_(value)


class _StringType(DataType):
    """``string``: variable-length UTF-8, numpy object arrays of ``str``."""

    category: ClassVar[Category] = "object"

    item_size = None

    def parse_fill_value(self, value: object) -> str:
        if not isinstance(value, str):
            raise self._fill_error("a string", value)
        return value

    def fill_value_to_json(self, value: object) -> str:
        return self.parse_fill_value(value)

    def default_fill_value(self) -> str:
        return ""


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


def _build_bare(cls: type[DataType], code: str, name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    return cls(name, np.dtype(code))


def _build_sized(cls: type[DataType], code: str, name: str, configuration: dict[str, Any]) -> DataType:
    length = _length_bytes(name, configuration)
    return cls(name, np.dtype(f"{code}{length}"), {"length_bytes": length})


register_data_type("string", partial(_build_bare, _StringType, "O"))
register_data_type("variable_length_bytes", partial(_build_bare, _VariableLengthBytesType, "O"))
register_data_type("bytes", partial(_build_bare, _VariableLengthBytesType, "O"))
register_data_type("fixed_length_utf32", _build_fixed_utf32)
register_data_type("raw_bytes", partial(_build_sized, _RawBytesType, "V"))
register_data_type("null_terminated_bytes", partial(_build_sized, _NullTerminatedBytesType, "S"))
