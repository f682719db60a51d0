"""Deciding whether a chunk holds only the fill value (so it need not be stored)."""

from __future__ import annotations

from typing import cast

import numpy as np

from .base import Scalar
from .kinds import category_of


def _float_is_fill(chunk: np.ndarray, fill: Scalar) -> bool:
    bits = f"u{chunk.dtype.itemsize}"
    fill_bits = np.asarray(fill, dtype=chunk.dtype).view(bits)
    if chunk.size and np.asarray(chunk[(slice(0, 1),) * chunk.ndim]).view(bits).item(0) != fill_bits:
        return False  # the common case for real data, decided without scanning the chunk
    return bool((chunk.view(bits) == fill_bits).all())


def _ends_are_fill(chunk: np.ndarray, fill: Scalar) -> bool:
    """Whether the first and the last element equal ``fill``: real data fails this without a scan of the chunk."""
    return bool(chunk[(0,) * chunk.ndim] == fill) and bool(chunk[(-1,) * chunk.ndim] == fill)


def is_fill(chunk: np.ndarray, fill: Scalar) -> bool:
    """Whether every element of ``chunk`` equals ``fill`` (so the chunk need not be stored).

    Floats compare bitwise (``-0.0`` is not ``0.0``, and a NaN matches only
    a NaN fill with the same payload, so no NaN payload is ever lost);
    complex numbers compare each part that way; NaT matches a NaT fill. ``bfloat16``
    and the other ml_dtypes floats are floats here.

    >>> is_fill(np.full(4, np.nan), np.float64("nan"))
    True
    >>> is_fill(np.full(4, -np.nan), np.float64("nan"))
    False
    >>> is_fill(np.array([0.0, -0.0]), 0.0)
    False
    """
    category = category_of(chunk.dtype)
    if (
        category == "struct"
    ):  # records compare bytewise, like floats: -0.0 and NaN payloads in a field are kept
        raw = np.dtype(f"V{chunk.dtype.itemsize}")
        return bool(np.all(chunk.view(raw) == np.asarray(fill, chunk.dtype).view(raw)))
    if category == "float":
        return _float_is_fill(chunk, fill)
    if category == "complex":
        pair = cast(np.complexfloating, chunk.dtype.type(fill))  # numpy types dtype[Any].type as type[Any]
        return _float_is_fill(chunk.real, pair.real) and _float_is_fill(chunk.imag, pair.imag)
    if category in ("datetime", "timedelta") and np.isnat(fill):
        return bool(np.isnat(chunk).all())
    if chunk.size and not chunk.dtype.hasobject and not _ends_are_fill(chunk, fill):
        return False
    return bool(np.all(chunk == fill))
