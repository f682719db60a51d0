"""Zarr v3 data types <-> numpy dtypes, and their JSON fill values.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/data-types/index.html
Extensions: https://github.com/zarr-developers/zarr-extensions/tree/main/data-types

Core types are written as short-hand names (``"float32"``, ``"r24"``);
extensions with parameters as objects, exactly as zarr-python 3.1 writes them::

    {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}

A `DataType` knows its in-memory numpy dtype (always native byte
order; byte order on disk is the ``bytes`` codec's business) and converts
fill values between JSON and numpy scalars. Float fill values keep their
exact bits, NaN payloads included: a NaN other than the spec's ``"NaN"`` is
written as ``"0x…"`` hex.
"""

from __future__ import annotations

from .base import DataType, Scalar
from .fill import is_fill
from .parse import DataTypeLike, data_type_from_numpy, parse_data_type

__all__ = ["DataType", "DataTypeLike", "Scalar", "data_type_from_numpy", "is_fill", "parse_data_type"]
