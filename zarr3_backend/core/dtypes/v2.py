"""Zarr v2 ``dtype`` and ``fill_value`` metadata -> the data types and fill scalars arrays read with.

Spec: https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html ("Data type encoding", "Fill value encoding").

A v2 ``dtype`` is a numpy type string (``"<f8"``, ``"|b1"``, ``">M8[ns]"``,
``"|S12"``, ``"<U4"``, ``"|V8"``, ``"|O"``) or, for structured types, a list
of ``[name, dtype]`` / ``[name, dtype, shape]`` fields. The stored byte order
is kept in `V2DataType.stored`; arrays are read in native byte order
(`V2DataType.data_type`), as for Zarr v3. Object arrays (``"|O"``) take
their data type from the object codec (the first filter): ``vlen-utf8`` reads
as the ``string`` type, ``vlen-bytes`` as ``variable_length_bytes``, anything
else (``vlen-array``, ``json2``, ``msgpack2``) as a generic object type.

>>> t = parse_v2_dtype(">i2", None, "a/.zarray")
>>> t.stored, t.data_type.numpy
(dtype('>i2'), dtype('int16'))
>>> parse_v2_fill_value("-Infinity", parse_v2_dtype("<f4", None, "x"), "x")
np.float32(-inf)
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from ...errors import MetadataError
from ..integers import is_int
from ..json_types import JSON
from . import DataType, Scalar, data_type_from_numpy, parse_data_type
from .base import Category

#: A simple v2 type string: byte order, kind, item size and, for times, a unit.
_TYPESTR = re.compile(r"[<>|=]([biufcmMSUVO])([0-9]{1,10})?(\[[0-9]{0,10}[A-Za-z]{1,7}\])?")
_MAX_FIELDS = 4096
_INFINITIES = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


class _StructuredType(DataType):
    """A numpy structured dtype (Zarr v2 only); fill values are base64 of one stored item."""

    category: ClassVar[Category] = "struct"

    def parse_fill_value(self, value: object) -> Scalar:
        if isinstance(value, np.void):
            return value
        raise self._fill_error("a numpy structured scalar", value)

    def fill_value_to_json(self, value: object) -> str:
        """Base64 of the item's bytes (in native byte order), the v2 form."""
        return base64.b64encode(np.asarray(value, dtype=self.numpy).tobytes()).decode("ascii")

    def default_fill_value(self) -> Scalar:
        return cast(np.generic, np.zeros((), self.numpy)[()])  # numpy types a 0-d array's [()] as an array


class _ObjectType(DataType):
    """Python objects of any kind, as ``vlen-array``, ``json2`` or ``msgpack2`` decode them (Zarr v2 only)."""

    category: ClassVar[Category] = "object"

    item_size = None

    def parse_fill_value(self, value: object) -> Scalar:
        return cast(Scalar, value)  # any object: the missing-chunk value is whatever the metadata says

    def default_fill_value(self) -> Scalar:
        return cast(Scalar, None)  # numpy's empty value for object arrays


@dataclass(frozen=True)
class V2DataType:
    """A v2 ``dtype``: as stored (byte order included) and as read (native byte order)."""

    stored: np.dtype
    data_type: DataType


def parse_v2_dtype(value: object, object_codec: str | None, where: str) -> V2DataType:
    """The data type of a ``.zarray`` ``dtype`` value; ``object_codec`` is the first filter's id (for ``"|O"``).

    Raises `MetadataError` naming ``where`` and ``dtype`` for anything the spec does not describe.

    >>> parse_v2_dtype([["x", "<f4"], ["n", ">u2", [2]]], None, "s/.zarray").data_type.numpy
    dtype([('x', '<f4'), ('n', '<u2', (2,))])
    >>> parse_v2_dtype("|O", "vlen-utf8", "s/.zarray").data_type.name
    'string'
    """
    stored = _numpy_dtype(value, where, depth=0)
    if stored.hasobject and stored.kind != "O":
        raise MetadataError(
            f"{where}: dtype: object fields inside a structured dtype are not supported, got {value!r}"
        )
    if stored.kind == "O":
        return V2DataType(stored, _object_type(object_codec))
    native = stored.newbyteorder("=")
    if stored.fields is not None:
        return V2DataType(stored, _StructuredType("structured", native))
    try:
        return V2DataType(stored, data_type_from_numpy(native))
    except MetadataError as exc:
        raise MetadataError(f"{where}: dtype: {value!r} has no data type here ({exc})") from exc


def v2_dtype_json(stored: np.dtype) -> JSON:
    """``stored`` as a v2 ``dtype`` value: its type string, or for a structured type ``[[name, dtype(, shape)], ...]``.

    >>> v2_dtype_json(parse_v2_dtype([["x", ">i2"], ["y", "<f4", [2]]], None, "s").stored)
    [['x', '>i2'], ['y', '<f4', [2]]]
    """
    if stored.fields is None:
        return stored.str
    fields: list[JSON] = []
    for name, (field_dtype, *_) in stored.fields.items():
        base, shape = field_dtype.subdtype or (field_dtype, ())
        item = v2_dtype_json(base)
        fields.append([name, item, list(shape)] if shape else [name, item])
    return fields


def _object_type(object_codec: str | None) -> DataType:
    if object_codec == "vlen-utf8":
        return parse_data_type("string")
    if object_codec == "vlen-bytes":
        return parse_data_type("variable_length_bytes")
    return _ObjectType("object", np.dtype("O"))


def _numpy_dtype(value: object, where: str, depth: int) -> np.dtype:
    if isinstance(value, str):
        match = _TYPESTR.fullmatch(value)
        sized = match is not None and (match.group(2) is not None or match.group(1) in "O")
        timed = match is not None and (match.group(3) is None or match.group(1) in "mM")
        if not (match and sized and timed):
            raise MetadataError(
                f"{where}: dtype: expected a numpy type string such as '<f8' or '|S4', got {value!r}"
            )
        try:
            dtype = np.dtype(value)
        except (TypeError, ValueError) as exc:
            raise MetadataError(f"{where}: dtype: numpy rejects {value!r} ({exc})") from exc
        if dtype.itemsize == 0 and dtype.kind in "SUV":
            raise MetadataError(f"{where}: dtype: {value!r} has items of zero bytes")
        return dtype
    if isinstance(value, list) and value and len(value) <= _MAX_FIELDS and depth < 8:
        fields = [_field(item, where, depth) for item in value]
        try:
            return np.dtype(fields)
        except (TypeError, ValueError) as exc:
            raise MetadataError(
                f"{where}: dtype: numpy rejects the structured dtype {value!r} ({exc})"
            ) from exc
    raise MetadataError(
        f"{where}: dtype: expected a type string or a list of [name, dtype(, shape)] fields, got {str(value)[:200]!r}"
    )


def _field(item: object, where: str, depth: int) -> tuple[Any, ...]:
    if not (isinstance(item, list) and len(item) in (2, 3) and isinstance(item[0], str)):
        raise MetadataError(
            f"{where}: dtype: a structured field must be [name, dtype] or [name, dtype, shape], got {item!r}"
        )
    dtype = _numpy_dtype(item[1], where, depth + 1)
    if len(item) == 2:
        return (item[0], dtype)
    shape = item[2]
    if not (
        isinstance(shape, list)
        and len(shape) <= 32
        and all(is_int(n, numpy=False) and 0 < n < 2**31 for n in shape)
    ):
        raise MetadataError(
            f"{where}: dtype: field {item[0]!r}: shape must be a list of positive integers, got {shape!r}"
        )
    return (item[0], dtype, tuple(shape))


def parse_v2_fill_value(value: object, dtype: V2DataType, where: str) -> Scalar:
    """The fill scalar (native byte order) for a ``.zarray`` ``fill_value``; ``null`` gives the type's default.

    Floats take numbers, ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``; complex
    numbers also ``[real, imag]``; ``S``, ``V`` and structured types base64
    text of the stored bytes; ``U`` a string; times an integer count or ``"NaT"``.

    >>> parse_v2_fill_value("AAE=", parse_v2_dtype("|S3", None, "b"), "b")
    np.bytes_(b'\\x00\\x01')
    """
    data_type = dtype.data_type
    if value is None:
        return data_type.default_fill_value()
    kind = dtype.stored.kind
    try:
        if kind == "O":
            return _object_fill(value, data_type)
        if kind in "SV":
            return _from_base64(value, dtype)
        if kind == "U":  # zarr-python 2 read a number as its text (it wrote 0 by default)
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            return data_type.parse_fill_value(str(value) if numeric else value)
        if kind == "b":
            return data_type.parse_fill_value(value if isinstance(value, bool) else _bool(value))
        if kind in "iu":
            return data_type.parse_fill_value(value)
        if kind in "mM":
            return _time_fill(value, data_type)
        if kind == "f":
            return cast(np.generic, data_type.numpy.type(_float(value)))
        return cast(np.generic, data_type.numpy.type(_complex(value)))
    except (MetadataError, TypeError, ValueError, OverflowError) as exc:
        raise MetadataError(
            f"{where}: fill_value: {value!r} is not a fill value for dtype {dtype.stored.str!r} ({exc})"
        ) from exc


def _bool(value: object) -> bool:
    if value in (0, 1) and not isinstance(value, float):
        return bool(value)
    raise ValueError("expected true, false, 0 or 1")


def _float(value: object) -> float:
    if isinstance(value, str) and value in _INFINITIES:
        return _INFINITIES[value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ValueError("expected a number, 'NaN', 'Infinity' or '-Infinity'")


def _complex(value: object) -> complex:
    if isinstance(value, list) and len(value) == 2:
        return complex(_float(value[0]), _float(value[1]))
    return complex(_float(value))


def _time_fill(value: object, data_type: DataType) -> Scalar:
    if value == "NaT":
        return cast(np.generic, data_type.numpy.type("NaT"))
    return data_type.parse_fill_value(value)


def _from_base64(value: object, dtype: V2DataType) -> Scalar:
    if not isinstance(value, str):
        raise ValueError("expected base64 text")
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64 ({exc})") from exc
    stored = dtype.stored
    if stored.kind == "S":
        if len(raw) > stored.itemsize:
            raise ValueError(f"{len(raw)} bytes, at most {stored.itemsize} fit")
        return np.bytes_(raw)
    if len(raw) != stored.itemsize:
        raise ValueError(f"{len(raw)} bytes, expected {stored.itemsize}")
    item = np.frombuffer(raw, stored).astype(dtype.data_type.numpy)[0]
    return cast(np.generic, item)


def _object_fill(value: object, data_type: DataType) -> Scalar:
    """Object arrays: a string fill for ``string``, base64 or text for bytes; other values as given.

    zarr-python wrote ``0`` as the fill value of many object arrays; a value
    the type cannot hold reads as the type's default (``""``, ``b""``).
    """
    if data_type.name == "string":
        return value if isinstance(value, str) else data_type.default_fill_value()
    if data_type.name == "variable_length_bytes":
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except binascii.Error:
                return value.encode()
        return data_type.default_fill_value()
    return data_type.parse_fill_value(value)
