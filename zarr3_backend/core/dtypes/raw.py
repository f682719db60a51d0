"""The core raw-bits data types ``r<N>`` (numpy ``V<N/8>``): fill value a list of N/8 integers in [0, 255].

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/data-types/index.html

    "data_type": "r24", "fill_value": [0, 0, 0]
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..integers import is_int
from ..json_types import JSON
from .base import Category, DataType


class _RawBitsType(DataType):
    """Core ``r<N>``: fill value is a list of N/8 integers in [0, 255]."""

    category: ClassVar[Category] = "raw"

    def parse_fill_value(self, value: object) -> np.void:
        size = self.numpy.itemsize
        if (
            not isinstance(value, (list, tuple))
            or len(value) != size
            or not all(is_int(b, numpy=False) and 0 <= b <= 255 for b in value)
        ):
            raise self._fill_error(f"a list of {size} integers in [0, 255]", value)
        return np.void(bytes(value))

    def cast_fill_value(self, value: object) -> np.void:
        if isinstance(value, np.void):
            value = value.tobytes()
        return self.parse_fill_value(list(value) if isinstance(value, (bytes, bytearray)) else value)

    def fill_value_to_json(self, value: object) -> list[JSON]:
        return list(self.cast_fill_value(value).tobytes())


def raw_type(size: int) -> DataType:
    """The ``r<8 * size>`` data type."""
    return _RawBitsType(f"r{8 * size}", np.dtype(f"V{size}"))
