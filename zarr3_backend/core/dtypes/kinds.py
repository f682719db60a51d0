"""What a numpy dtype holds, as the data-type registry sees it: the one place numpy's ``dtype.kind`` is read.

numpy calls every dtype from another package (ml_dtypes' ``bfloat16``,
``float8_*``, ``int4`` ...) kind ``V``, raw bytes. Code that asks "is this a
float?" asks `is_float()` here instead, which asks the registered data type
for those dtypes, so a ``bfloat16`` chunk is byte-swapped, its fill value
compared bit for bit and its NaNs found like a ``float32`` one's.

>>> import numpy as np
>>> category_of(np.dtype("float32")), category_of(np.dtype("U3")), category_of(np.dtype("M8[s]"))
('float', 'fixed_text', 'datetime')
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeGuard

import numpy as np

from .base import Category
from .registry import registered_for_numpy

_NUMPY_CATEGORIES: dict[str, Category] = {
    "b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex", "M": "datetime", "m": "timedelta",
    "U": "fixed_text", "S": "fixed_bytes", "O": "object", "T": "text", "V": "raw",
}  # fmt: skip


@cache
def category_of(dtype: np.dtype) -> Category:
    """The category of ``dtype``: its registered data type's for another package's dtype, else from numpy's kind."""
    if dtype.names:
        return "struct"
    registered = registered_for_numpy(dtype)
    if registered is not None:
        return registered.category
    return _NUMPY_CATEGORIES[dtype.kind]


def is_integer(dtype: np.dtype) -> bool:
    """Signed or unsigned integers (``int4`` and ``uint2`` included); not ``bool``."""
    return category_of(dtype) in ("int", "uint")


def is_float(dtype: np.dtype) -> bool:
    """Real floating point (``bfloat16`` and the ``float8_*``/``float4``/``float6`` formats included)."""
    return category_of(dtype) == "float"


def is_inexact(dtype: np.dtype) -> bool:
    """Real or complex floating point: the dtypes that can hold NaN (``equal_nan`` applies)."""
    return category_of(dtype) in ("float", "complex")


def is_real_number(dtype: np.dtype) -> bool:
    """Integers or real floats: what arithmetic codecs (``scale_offset``, ``cast_value``) accept."""
    return category_of(dtype) in ("int", "uint", "float")


def is_time(dtype: np.dtype) -> bool:
    """numpy ``datetime64`` or ``timedelta64``."""
    return category_of(dtype) in ("datetime", "timedelta")


def is_fixed_size_text(dtype: np.dtype) -> bool:
    """numpy ``U<n>`` or ``S<n>``: text or bytes of a fixed number of characters."""
    return category_of(dtype) in ("fixed_text", "fixed_bytes")


def is_object(dtype: np.dtype) -> bool:
    """numpy ``object`` (Python strings, bytes, cftime dates ... in an array)."""
    return category_of(dtype) == "object"


def needs_endian(dtype: np.dtype) -> bool:
    """Whether byte order applies to ``dtype`` (multi-byte and not raw bytes).

    >>> needs_endian(np.dtype("float32")), needs_endian(np.dtype("uint8")), needs_endian(np.dtype("V3")), needs_endian(np.dtype("S2"))
    (True, False, False, False)
    >>> needs_endian(np.dtype([("a", "u1"), ("b", "u1")])), needs_endian(np.dtype([("a", "u1"), ("b", "<i2")]))
    (False, True)
    """
    if dtype.names:
        return any(needs_endian(dtype.fields[name][0]) for name in dtype.names)  # type: ignore[index]
    return dtype.itemsize > 1 and category_of(dtype) not in ("raw", "fixed_bytes")


def is_number(dtype: np.dtype) -> bool:
    """``bool``, integers, real or complex floats: what CF decoding treats as numbers."""
    return category_of(dtype) in ("bool", "int", "uint", "float", "complex")


def is_numpy_real_number(dtype: np.dtype) -> bool:
    """numpy's own integers and real floats (``np.iinfo``/``np.finfo`` describe them); not ml_dtypes' formats."""
    return category_of(dtype) in ("int", "uint", "float") and registered_for_numpy(dtype) is None


def is_datetime(dtype: np.dtype) -> bool:
    """numpy ``datetime64``."""
    return category_of(dtype) == "datetime"


def is_timedelta(dtype: np.dtype) -> bool:
    """numpy ``timedelta64``."""
    return category_of(dtype) == "timedelta"


def is_unicode(dtype: np.dtype) -> bool:
    """numpy ``U<n>`` (fixed-size UTF-32 text)."""
    return category_of(dtype) == "fixed_text"


def is_numpy_string(dtype: np.dtype) -> bool:
    """numpy's variable-length ``StringDType``."""
    return category_of(dtype) == "text"


def is_text_like(dtype: np.dtype) -> bool:
    """Text or bytes of any size: numpy ``U<n>``, ``S<n>``, ``StringDType`` or ``object``."""
    return category_of(dtype) in ("fixed_text", "fixed_bytes", "object", "text")


def is_real_scalar(value: object) -> TypeGuard[int | float | np.integer[Any] | np.floating[Any]]:
    """A Python or numpy integer or real float (ml_dtypes' scalars included), not a ``bool`` or a time.

    >>> is_real_scalar(3), is_real_scalar(np.float32(1.5)), is_real_scalar(True), is_real_scalar(np.timedelta64(1))
    (True, True, False, False)
    """
    if isinstance(value, (bool, np.bool_, np.timedelta64)):  # np.timedelta64 subclasses np.integer
        return False
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    return isinstance(value, np.generic) and is_real_number(value.dtype)
