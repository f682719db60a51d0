"""Parsing ``data_type`` metadata values and mapping numpy dtypes to Zarr data types."""

from __future__ import annotations

import re
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from ...errors import MetadataError, UnknownExtensionError
from ..extension import parse_extension
from . import complex as complex_types
from . import floats, integers, ml, strings, times
from .base import DataType, _check_keys
from .kinds import category_of
from .raw import raw_type
from .registry import get_builder, registered_for_numpy, registered_names
from .struct import LEGACY_NAME, build_struct

#: The family modules, imported for the data types they register.
FAMILIES = (integers, floats, complex_types, ml, strings, times)

#: What `data_type_from_numpy()` accepts: a `DataType`, a numpy dtype (or anything
#: ``np.dtype()`` takes), a Zarr data type name or a ``data_type`` extension object.
DataTypeLike: TypeAlias = DataType | npt.DTypeLike | dict[str, object]

_RAW_NAME = re.compile(r"r(0|[1-9][0-9]*)")
_MAX_RAW_BITS = 8 * (2**31 - 1)  # numpy's largest void item


def parse_data_type(obj: object) -> DataType:
    """Parse the ``data_type`` metadata value.

    Raises `UnknownExtensionError` for names this package does not
    implement (``"must_understand": false`` cannot make a data type optional)
    and `MetadataError` for malformed values.

    >>> parse_data_type("float32").numpy
    dtype('float32')
    >>> parse_data_type("r24").numpy
    dtype('V3')
    >>> parse_data_type({"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}).numpy
    dtype('<M8[ns]')
    """
    extension = parse_extension(obj, "data_type")
    name, configuration = extension.name, extension.configuration
    builder = get_builder(name)
    if builder is not None:
        return builder(name, configuration)
    if raw := _RAW_NAME.fullmatch(name):
        bits = int(raw.group(1)) if len(raw.group(1)) <= len(str(_MAX_RAW_BITS)) else _MAX_RAW_BITS + 1
        if bits == 0 or bits % 8 or bits > _MAX_RAW_BITS:
            raise MetadataError(
                f"data_type: raw type {name[:40]!r} must have a positive multiple of 8 bits, at most {_MAX_RAW_BITS}"
            )
        _check_keys(name, configuration, set())
        return raw_type(bits // 8)
    if name in ("struct", LEGACY_NAME):
        return build_struct(name, configuration, parse_data_type)
    note = "" if extension.must_understand else " ('must_understand': false is not permitted for data types)"
    raise UnknownExtensionError(
        f"data_type: unknown data type {name!r}{note}; supported: {registered_names()}, r<bits>, 'struct'"
    )


_NUMBERS = frozenset(["bool", "int", "uint", "float", "complex"])
_TEXT = frozenset(["fixed_text", "fixed_bytes", "object", "text"])
_SIZED = {"fixed_text": "fixed_length_utf32", "fixed_bytes": "null_terminated_bytes"}


def _from_numpy_text(dtype: np.dtype) -> DataType:
    category = category_of(dtype)
    if category in _SIZED and dtype.itemsize:
        return parse_data_type({"name": _SIZED[category], "configuration": {"length_bytes": dtype.itemsize}})
    return parse_data_type("variable_length_bytes" if category == "fixed_bytes" else "string")


def _from_numpy_category(dtype: np.dtype) -> DataType | None:
    registered = registered_for_numpy(dtype)
    if registered is not None:
        return registered
    category = category_of(dtype)
    if category in _NUMBERS:
        name = dtype.type.__name__
        return parse_data_type(name) if get_builder(name) is not None else None
    if category == "struct":
        return _from_numpy_struct(dtype)
    if category == "raw" and dtype.fields is None and dtype.subdtype is None and dtype.itemsize:
        return raw_type(dtype.itemsize)
    if category in ("datetime", "timedelta"):
        unit, scale_factor = np.datetime_data(dtype)
        return times.time_type(f"numpy.{category}64", unit, scale_factor)
    if category in _TEXT:
        return _from_numpy_text(dtype)
    return None


def _from_numpy_struct(dtype: np.dtype) -> DataType:
    """A numpy structured dtype as ``struct``: the same fields, packed (padding is not stored)."""
    fields = []
    for name in dtype.names or ():
        field_dtype, _, *title = dtype.fields[name]  # type: ignore[index]  # names implies fields
        if title or field_dtype.subdtype is not None:
            raise MetadataError(
                f"dtype: field {name!r} of {dtype} has a title or a subarray shape, which 'struct' cannot hold; "
                "use plain named scalar fields"
            )
        fields.append({"name": name, "data_type": data_type_from_numpy(field_dtype).to_json()})
    return parse_data_type({"name": "struct", "configuration": {"fields": fields}})


def data_type_from_numpy(dtype_like: DataTypeLike) -> DataType:
    """The Zarr data type for a numpy dtype (any byte order), mirroring zarr-python.

    ``V<n>`` maps to the core ``r<8n>``; ``str``, ``object`` and
    ``StringDType`` to ``"string"``; ``U<n>`` to ``fixed_length_utf32``;
    ``S<n>`` to ``null_terminated_bytes`` and ``bytes`` to
    ``variable_length_bytes``. A `DataType`, an extension object
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
        isinstance(dtype_like, str)
        and dtype_like != "bytes"  # numpy's name for S: variable_length_bytes, as zarr-python 3.1 writes it
        and (get_builder(dtype_like) is not None or _RAW_NAME.fullmatch(dtype_like))
    ):
        return parse_data_type(dtype_like)
    try:
        dtype = np.dtype(dtype_like)
    except TypeError as exc:
        raise MetadataError(f"dtype: {dtype_like!r} is not a numpy dtype or Zarr data type") from exc
    data_type = _from_numpy_category(dtype)
    if data_type is None:
        raise MetadataError(
            f"dtype: numpy dtype {dtype} has no Zarr v3 data type here; supported: bool, (u)int8-64, "
            "float16/32/64, complex64/128, V<n> (raw bits), S<n>, U<n>, str/object, datetime64, timedelta64, "
            "and the ml_dtypes types (bfloat16, float8_*, int4 ...)"
        )
    return data_type
