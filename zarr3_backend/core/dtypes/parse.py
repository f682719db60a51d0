"""Parsing ``data_type`` metadata values and mapping numpy dtypes to Zarr data types."""

from __future__ import annotations

import re
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from ...errors import MetadataError, UnknownExtensionError
from ..extension import parse_extension
from .base import DataType, _check_keys
from .core import _CORE, _CORE_CLASSES, _core_type, _raw_type
from .extensions import _EXTENSIONS, _time_type
from .struct import LEGACY_NAME, build_struct

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
    if name in _CORE:
        _check_keys(name, configuration, set())
        return _core_type(name)
    if raw := _RAW_NAME.fullmatch(name):
        bits = int(raw.group(1)) if len(raw.group(1)) <= len(str(_MAX_RAW_BITS)) else _MAX_RAW_BITS + 1
        if bits == 0 or bits % 8 or bits > _MAX_RAW_BITS:
            raise MetadataError(
                f"data_type: raw type {name[:40]!r} must have a positive multiple of 8 bits, at most {_MAX_RAW_BITS}"
            )
        _check_keys(name, configuration, set())
        return _raw_type(bits // 8)
    if name in _EXTENSIONS:
        return _EXTENSIONS[name](name, configuration)
    if name in ("struct", LEGACY_NAME):
        return build_struct(name, configuration, parse_data_type)
    note = "" if extension.must_understand else " ('must_understand': false is not permitted for data types)"
    raise UnknownExtensionError(
        f"data_type: unknown data type {name!r}{note}; supported: {sorted(_CORE)}, r<bits>, {sorted([*_EXTENSIONS, 'struct'])}"
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
    if dtype.names:
        return _from_numpy_struct(dtype)
    if dtype.kind == "V" and dtype.fields is None and dtype.subdtype is None and dtype.itemsize:
        return _raw_type(dtype.itemsize)
    if dtype.kind in "Mm":
        unit, scale_factor = np.datetime_data(dtype)
        return _time_type(
            "numpy.datetime64" if dtype.kind == "M" else "numpy.timedelta64", unit, scale_factor
        )
    if dtype.kind in "USOT":
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
        and (dtype_like in _EXTENSIONS or dtype_like in _CORE or _RAW_NAME.fullmatch(dtype_like))
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
