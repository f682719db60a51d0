"""Zarr v3 data types <-> numpy dtypes, and their JSON fill values.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/data-types/index.html
Extensions: https://github.com/zarr-developers/zarr-extensions/tree/main/data-types

Core types are written as short-hand names (``"float32"``, ``"r24"``);
extensions with parameters as objects, exactly as zarr-python 3.1 writes them::

    {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}

A :class:`DataType` knows its in-memory numpy dtype (always native byte
order; byte order on disk is the ``bytes`` codec's business) and converts
fill values between JSON and numpy scalars. Float fill values keep their
exact bits, NaN payloads included: a NaN other than the spec's ``"NaN"`` is
written as ``"0x…"`` hex.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from .errors import MetadataError, UnknownExtensionError

__all__ = ["DataType", "data_type_from_numpy", "is_fill", "parse_data_type"]

_INT64 = np.iinfo(np.int64)
#: Bits of the spec's ``"NaN"``: sign 0, mantissa MSB 1, other mantissa bits 0.
_CANONICAL_NAN = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}
_INFINITIES = {"Infinity": math.inf, "-Infinity": -math.inf}
_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")
_RAW_NAME = re.compile(r"r(0|[1-9][0-9]*)")
_TIME_UNITS = frozenset(["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"])
_MAX_SCALE_FACTOR = 2**31 - 1


@dataclass(frozen=True)
class DataType(ABC):
    """One Zarr v3 data type: its JSON identity and its in-memory numpy dtype.

    Build instances with :func:`parse_data_type` or :func:`data_type_from_numpy`.
    Instances are immutable, hashable and picklable.

    Fill value methods obey ``parse_fill_value(fill_value_to_json(v))`` has
    the same bits as ``cast_fill_value(v)``. Scalars are numpy scalars of
    :attr:`numpy`, except for object dtypes (``"string"``: ``str``,
    ``"variable_length_bytes"``: ``bytes``).
    """

    name: str
    numpy: np.dtype
    configuration: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def item_size(self) -> int | None:
        """Bytes per element, or ``None`` for variable-length types."""
        return self.numpy.itemsize

    def to_json(self) -> str | dict[str, Any]:
        """The ``data_type`` metadata value: a name, or ``{"name", "configuration"}``."""
        if self.configuration is None:
            return self.name
        return {"name": self.name, "configuration": dict(self.configuration)}

    @abstractmethod
    def parse_fill_value(self, value: Any) -> Any:
        """Decode a JSON ``fill_value``; raise :class:`MetadataError` if not permitted."""

    def cast_fill_value(self, value: Any) -> Any:
        """Convert a user value (Python/numpy scalar or a JSON form) to a fill scalar."""
        return self.parse_fill_value(value)

    def fill_value_to_json(self, value: Any) -> Any:
        """Encode a fill value (anything :meth:`cast_fill_value` accepts) as JSON."""
        return self.cast_fill_value(value).item()

    def default_fill_value(self) -> Any:
        """The fill value used when none is given (zero, ``False``, ``""`` or NaT)."""
        return np.zeros((), self.numpy)[()]

    def _fill_error(self, expected: str, got: Any) -> MetadataError:
        return MetadataError(f"fill_value: expected {expected} for data type {self.name!r}, got {got!r}")


def _is_number(value: Any) -> bool:
    excluded = (bool, np.bool_, np.timedelta64)  # np.timedelta64 subclasses np.integer
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, excluded)


class _BoolType(DataType):
    def parse_fill_value(self, value: Any) -> np.bool_:
        if not isinstance(value, (bool, np.bool_)):
            raise self._fill_error("true or false", value)
        return np.bool_(value)


class _IntType(DataType):
    def parse_fill_value(self, value: Any) -> np.integer:
        info = np.iinfo(self.numpy)
        whole = not isinstance(value, (float, np.floating)) or float(value).is_integer()
        if not (_is_number(value) and whole and info.min <= int(value) <= info.max):
            raise self._fill_error(f"an integer in [{info.min}, {info.max}]", value)
        return self.numpy.type(int(value))


def _from_bits(bits: int, dtype: np.dtype) -> Any:
    return np.array(bits, dtype=f"u{dtype.itemsize}").view(dtype)[()]


def _to_bits(value: Any, dtype: np.dtype) -> int:
    return int(np.asarray(value, dtype=dtype).view(f"u{dtype.itemsize}"))


def _parse_float(value: Any, dtype: np.dtype, owner: DataType) -> np.floating:
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
    def parse_fill_value(self, value: Any) -> np.floating:
        return _parse_float(value, self.numpy, self)

    def fill_value_to_json(self, value: Any) -> float | str:
        return _float_to_json(self.cast_fill_value(value))


class _ComplexType(DataType):
    @property
    def _part(self) -> np.dtype:
        return np.dtype(f"f{self.numpy.itemsize // 2}")

    def parse_fill_value(self, value: Any) -> np.complexfloating:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise self._fill_error("a 2-element list [real, imag]", value)
        parts = [_parse_float(v, self._part, self) for v in value]
        return np.array(parts, dtype=self._part).view(self.numpy)[0]

    def cast_fill_value(self, value: Any) -> np.complexfloating:
        if isinstance(value, (list, tuple)):
            return self.parse_fill_value(value)
        if not (_is_number(value) or isinstance(value, (complex, np.complexfloating))):
            raise self._fill_error("a complex number or [real, imag]", value)
        with np.errstate(over="ignore"):
            return self.numpy.type(value)

    def fill_value_to_json(self, value: Any) -> list[float | str]:
        parts = np.asarray(self.cast_fill_value(value)).reshape(1).view(self._part)
        return [_float_to_json(part) for part in parts]


class _RawBitsType(DataType):
    """Core ``r<N>``: fill value is a list of N/8 integers in [0, 255]."""

    def parse_fill_value(self, value: Any) -> np.void:
        size = self.numpy.itemsize
        if (
            not isinstance(value, (list, tuple))
            or len(value) != size
            or not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value)
        ):
            raise self._fill_error(f"a list of {size} integers in [0, 255]", value)
        return np.void(bytes(value))

    def cast_fill_value(self, value: Any) -> np.void:
        if isinstance(value, np.void):
            value = value.tobytes()
        return self.parse_fill_value(list(value) if isinstance(value, (bytes, bytearray)) else value)

    def fill_value_to_json(self, value: Any) -> list[int]:
        return list(self.cast_fill_value(value).tobytes())


class _Base64Type(DataType):
    """Byte-string types whose fill value is base64 text (zarr-python's convention)."""

    def parse_fill_value(self, value: Any) -> Any:
        if not isinstance(value, str):
            raise self._fill_error("a base64 string", value)
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise self._fill_error("a base64 string", value) from exc
        return self._from_bytes(raw)

    def cast_fill_value(self, value: Any) -> Any:
        if isinstance(value, np.void):
            value = value.tobytes()
        if isinstance(value, (bytes, bytearray)):
            return self._from_bytes(bytes(value))
        return self.parse_fill_value(value)

    def fill_value_to_json(self, value: Any) -> str:
        raw = self.cast_fill_value(value)
        return base64.b64encode(raw.tobytes() if isinstance(raw, np.void) else bytes(raw)).decode("ascii")

    @abstractmethod
    def _from_bytes(self, raw: bytes) -> Any:
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
    """``variable_length_bytes``: numpy object arrays of ``bytes``."""

    item_size = None

    def _from_bytes(self, raw: bytes) -> bytes:
        return raw

    def default_fill_value(self) -> bytes:
        return b""


class _FixedLengthUTF32Type(DataType):
    """``fixed_length_utf32`` (numpy ``U<n>``): fill value is a JSON string."""

    def parse_fill_value(self, value: Any) -> np.str_:
        length = self.numpy.itemsize // 4
        if not isinstance(value, str) or len(value) > length:
            raise self._fill_error(f"a string of at most {length} characters", value)
        return np.str_(value)


class _StringType(DataType):
    """``string``: variable-length UTF-8, numpy object arrays of ``str``."""

    item_size = None

    def parse_fill_value(self, value: Any) -> str:
        if not isinstance(value, str):
            raise self._fill_error("a string", value)
        return value

    def fill_value_to_json(self, value: Any) -> str:
        return self.cast_fill_value(value)

    def default_fill_value(self) -> str:
        return ""


class _TimeType(DataType):
    """``numpy.datetime64`` / ``numpy.timedelta64``: fill value is the int64 count (NaT = -2**63)."""

    def parse_fill_value(self, value: Any) -> np.generic:
        if not isinstance(value, int) or isinstance(value, bool) or not _INT64.min <= value <= _INT64.max:
            raise self._fill_error("a 64-bit signed integer", value)
        return np.array(value, dtype=np.int64).view(self.numpy)[()]

    def cast_fill_value(self, value: Any) -> np.generic:
        kind = np.asarray(value).dtype.kind
        if kind in "iu" and not isinstance(value, bool):
            return self.parse_fill_value(int(value))
        if kind not in (self.numpy.kind, "U"):
            raise self._fill_error(f"an integer, a string or a numpy {self.numpy.type.__name__}", value)
        try:
            return np.asarray(value, dtype=self.numpy)[()]
        except ValueError as exc:
            raise self._fill_error(f"a valid {self.numpy.type.__name__}", value) from exc

    def fill_value_to_json(self, value: Any) -> int:
        return int(np.asarray(self.cast_fill_value(value)).view(np.int64))

    def default_fill_value(self) -> np.generic:
        return self.parse_fill_value(int(_INT64.min))


_CORE = {
    "bool": "?",
    **{f"int{8 * n}": f"i{n}" for n in (1, 2, 4, 8)},
    **{f"uint{8 * n}": f"u{n}" for n in (1, 2, 4, 8)},
    **{f"float{8 * n}": f"f{n}" for n in (2, 4, 8)},
    "complex64": "c8",
    "complex128": "c16",
}
_CORE_CLASSES: dict[str, type[DataType]] = {
    "b": _BoolType, "i": _IntType, "u": _IntType, "f": _FloatType, "c": _ComplexType
}  # fmt: skip


def _core_type(name: str) -> DataType:
    dtype = np.dtype(_CORE[name])
    return _CORE_CLASSES[dtype.kind](name, dtype)


def _raw_type(size: int) -> DataType:
    return _RawBitsType(f"r{8 * size}", np.dtype(f"V{size}"))


def _time_type(name: str, unit: str, scale_factor: int) -> DataType:
    code = "M8" if name == "numpy.datetime64" else "m8"
    if unit == "generic":
        if scale_factor != 1:
            raise MetadataError(f"data_type {name!r}: scale_factor must be 1 for unit 'generic', got {scale_factor}")
        dtype = np.dtype(code)
    else:
        dtype = np.dtype(f"{code}[{scale_factor}{unit}]")
    return _TimeType(name, dtype, {"unit": unit, "scale_factor": scale_factor})


def _config_int(name: str, configuration: dict[str, Any], key: str, low: int, high: int) -> int:
    value = configuration.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise MetadataError(
            f"data_type {name!r}: configuration.{key}: expected an integer in [{low}, {high}], got {value!r}"
        )
    return value


def _check_keys(name: str, configuration: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(configuration) - allowed)
    if extra:
        raise MetadataError(f"data_type {name!r}: unexpected configuration keys {extra}; allowed: {sorted(allowed)}")


def _length_bytes(name: str, configuration: dict[str, Any]) -> int:
    _check_keys(name, configuration, {"length_bytes"})
    return _config_int(name, configuration, "length_bytes", 1, 2**31 - 1)


def _build_fixed_utf32(name: str, configuration: dict[str, Any]) -> DataType:
    length = _length_bytes(name, configuration)
    if length % 4:
        raise MetadataError(f"data_type {name!r}: configuration.length_bytes must be a multiple of 4, got {length}")
    return _FixedLengthUTF32Type(name, np.dtype(f"U{length // 4}"), {"length_bytes": length})


def _build_time(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, {"unit", "scale_factor"})
    unit = configuration.get("unit")
    if unit not in _TIME_UNITS:
        expected = f"one of {sorted(_TIME_UNITS)}"
        raise MetadataError(f"data_type {name!r}: configuration.unit: expected {expected}, got {unit!r}")
    scale_factor = _config_int(name, {"scale_factor": 1, **configuration}, "scale_factor", 1, _MAX_SCALE_FACTOR)
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
    "fixed_length_utf32": _build_fixed_utf32,
    "raw_bytes": partial(_build_sized, _RawBytesType, "V"),
    "null_terminated_bytes": partial(_build_sized, _NullTerminatedBytesType, "S"),
    "numpy.datetime64": _build_time,
    "numpy.timedelta64": _build_time,
}


def _split_extension(obj: Any) -> tuple[str, dict[str, Any], bool]:
    """``(name, configuration, must_understand)`` of a short-hand name or extension object."""
    if isinstance(obj, str):
        return obj, {}, True
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise MetadataError(f"data_type: expected a name or an object with a string 'name', got {obj!r}")
    extra = sorted(set(obj) - {"name", "configuration", "must_understand"})
    configuration = obj.get("configuration", {})
    must_understand = obj.get("must_understand", True)
    if extra or not isinstance(configuration, dict) or not isinstance(must_understand, bool):
        expected = "{'name': str, 'configuration': object, 'must_understand': bool}"
        raise MetadataError(f"data_type: expected {expected}, got {obj!r}")
    return obj["name"], configuration, must_understand


def parse_data_type(obj: Any) -> DataType:
    """Parse the ``data_type`` metadata value.

    Raises :class:`UnknownExtensionError` for names this package does not
    implement (``"must_understand": false`` cannot make a data type optional)
    and :class:`MetadataError` for malformed values.

    >>> parse_data_type("float32").numpy
    dtype('float32')
    >>> parse_data_type("r24").numpy
    dtype('V3')
    >>> parse_data_type({"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}).numpy
    dtype('<M8[ns]')
    """
    name, configuration, must_understand = _split_extension(obj)
    if name in _CORE:
        _check_keys(name, configuration, set())
        return _core_type(name)
    if raw := _RAW_NAME.fullmatch(name):
        bits = int(raw.group(1))
        if bits == 0 or bits % 8:
            raise MetadataError(f"data_type: raw type {name!r} must have a positive multiple of 8 bits")
        _check_keys(name, configuration, set())
        return _raw_type(bits // 8)
    if name in _EXTENSIONS:
        return _EXTENSIONS[name](name, configuration)
    note = "" if must_understand else " ('must_understand': false is not permitted for data types)"
    raise UnknownExtensionError(
        f"data_type: unknown data type {name!r}{note}; supported: {sorted(_CORE)}, r<bits>, {sorted(_EXTENSIONS)}"
    )


def _from_numpy_text(dtype: np.dtype) -> DataType:
    sized = {"U": "fixed_length_utf32", "S": "null_terminated_bytes"}
    if dtype.kind in sized and dtype.itemsize:
        return parse_data_type({"name": sized[dtype.kind], "configuration": {"length_bytes": dtype.itemsize}})
    return parse_data_type("variable_length_bytes" if dtype.kind == "S" else "string")


def _from_numpy_kind(dtype: np.dtype) -> DataType | None:
    if dtype.kind in _CORE_CLASSES:
        name = dtype.type.__name__
        return _core_type(name) if name in _CORE else None
    if dtype.kind == "V" and dtype.fields is None and dtype.subdtype is None and dtype.itemsize:
        return _raw_type(dtype.itemsize)
    if dtype.kind in "Mm":
        unit, scale_factor = np.datetime_data(dtype)
        return _time_type("numpy.datetime64" if dtype.kind == "M" else "numpy.timedelta64", unit, scale_factor)
    if dtype.kind in "USOT":
        return _from_numpy_text(dtype)
    return None


def data_type_from_numpy(dtype_like: Any) -> DataType:
    """The Zarr data type for a numpy dtype (any byte order), mirroring zarr-python.

    ``V<n>`` maps to the core ``r<8n>``; ``str``, ``object`` and
    ``StringDType`` to ``"string"``; ``U<n>`` to ``fixed_length_utf32``;
    ``S<n>`` to ``null_terminated_bytes`` and ``bytes`` to
    ``variable_length_bytes``. A :class:`DataType`, an extension object
    (``dict``) or a Zarr-only name such as ``"r24"`` or ``"string"`` is
    accepted too.

    >>> data_type_from_numpy(">f8").to_json()
    'float64'
    >>> data_type_from_numpy("U5").to_json()
    {'name': 'fixed_length_utf32', 'configuration': {'length_bytes': 20}}
    """
    if isinstance(dtype_like, DataType):
        return dtype_like
    if isinstance(dtype_like, dict) or (
        isinstance(dtype_like, str) and (dtype_like in _EXTENSIONS or _RAW_NAME.fullmatch(dtype_like))
    ):
        return parse_data_type(dtype_like)
    try:
        dtype = np.dtype(dtype_like)
    except TypeError as exc:
        raise MetadataError(f"dtype: {dtype_like!r} is not a numpy dtype or Zarr data type") from exc
    data_type = _from_numpy_kind(dtype)
    if data_type is None:
        raise MetadataError(
            f"dtype: numpy dtype {dtype} has no Zarr v3 data type here; supported: bool, (u)int8-64, "
            "float16/32/64, complex64/128, V<n> (raw bits), S<n>, U<n>, str/object, datetime64, timedelta64"
        )
    return data_type


def _float_is_fill(chunk: np.ndarray, fill: Any) -> bool:
    bits = f"u{chunk.dtype.itemsize}"
    fill_bits = np.asarray(fill, dtype=chunk.dtype).view(bits)
    if chunk.size and np.asarray(chunk[(slice(0, 1),) * chunk.ndim]).view(bits).item(0) != fill_bits:
        return False  # the common case for real data, decided without scanning the chunk
    return bool((chunk.view(bits) == fill_bits).all())


def is_fill(chunk: np.ndarray, fill: Any) -> bool:
    """Whether every element of ``chunk`` equals ``fill`` (so the chunk need not be stored).

    Floats compare bitwise (``-0.0`` is not ``0.0``, and a NaN matches only
    a NaN fill with the same payload, so no NaN payload is ever lost);
    complex numbers compare each part that way; NaT matches a NaT fill.

    >>> is_fill(np.full(4, np.nan), np.float64("nan"))
    True
    >>> is_fill(np.full(4, -np.nan), np.float64("nan"))
    False
    >>> is_fill(np.array([0.0, -0.0]), 0.0)
    False
    """
    kind = chunk.dtype.kind
    if kind == "f":
        return _float_is_fill(chunk, fill)
    if kind == "c":
        fill = chunk.dtype.type(fill)
        return _float_is_fill(chunk.real, fill.real) and _float_is_fill(chunk.imag, fill.imag)
    if kind in "Mm" and np.isnat(fill):
        return bool(np.isnat(chunk).all())
    return bool(np.all(chunk == fill))
