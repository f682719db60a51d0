"""Complex data types: the core ``complex64``/``complex128`` and the registry's ``complex_*`` types.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/core/v3.0.html#fill-value;
registry: https://github.com/zarr-developers/zarr-extensions/tree/main/data-types (``complex_*``)

A fill value is ``[real, imag]``, each part a float fill value of the
component type (``"NaN"``, ``"Infinity"``, hex bits ...).

``complex_float32`` and ``complex_float64`` are ``complex64`` and
``complex128`` under their registered names. numpy has no complex type of
narrower parts, so ``complex_float16``, ``complex_bfloat16`` and the
``complex_float8_*``/``float4``/``float6`` types are held as records
``[("real", part), ("imag", part)]``: the bytes are the spec's (real, then
imaginary), and the ``bytes`` codec swaps each part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np

from ..json_types import JSON
from .base import Category, DataType, _check_keys
from .floats import IEEE_NAN, FloatFormat
from .kinds import is_real_scalar
from .ml import FLOAT_FORMATS, clear_high_bits, ml_dtype
from .registry import register_data_type


@dataclass(frozen=True)
class ComplexType(DataType):
    """A numpy complex type (``complex64``, ``complex128``)."""

    category: ClassVar[Category] = "complex"
    part_format: FloatFormat = field(default=FloatFormat(None), compare=False)

    @property
    def _part(self) -> np.dtype:
        return np.dtype(f"f{self.numpy.itemsize // 2}")

    def parse_fill_value(self, value: object) -> np.generic:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise self._fill_error("a 2-element list [real, imag]", value)
        parts = [self.part_format.parse(v, self._part, self) for v in value]
        return self._from_parts(np.array(parts, dtype=self._part))

    def _from_parts(self, parts: np.ndarray) -> np.generic:
        return cast(np.generic, parts.view(self.numpy)[0])  # numpy types an element of ndarray[Any] as Any

    def cast_fill_value(self, value: object) -> np.generic:
        if isinstance(value, (list, tuple)):
            return self.parse_fill_value(value)
        if not (is_real_scalar(value) or isinstance(value, (complex, np.complexfloating))):
            raise self._fill_error("a complex number or [real, imag]", value)
        with np.errstate(over="ignore"):
            return cast(np.generic, self.numpy.type(value))  # dtype[Any].type is type[Any]

    def fill_value_to_json(self, value: object) -> list[JSON]:
        parts = np.asarray(self.cast_fill_value(value)).reshape(1).view(self._part)
        return [self.part_format.to_json(part) for part in parts]


@dataclass(frozen=True)
class ComplexPairType(ComplexType):
    """A ``complex_*`` type of parts numpy has no complex type for, held as a ``(real, imag)`` record."""

    category: ClassVar[Category] = "struct"
    part: np.dtype = field(default=np.dtype("f2"), compare=False)
    part_bits: int = 16

    @property
    def _part(self) -> np.dtype:
        return self.part

    @property
    def swap_unit(self) -> np.dtype | None:
        return np.dtype(f"u{self.part.itemsize}") if self.part.itemsize > 1 else None

    def decode_stored(self, chunk: np.ndarray) -> np.ndarray:
        return chunk if self.part_bits >= 8 else clear_high_bits(chunk, self.part_bits)

    def cast_fill_value(self, value: object) -> np.generic:
        if isinstance(value, (list, tuple)):
            return self.parse_fill_value(value)
        if isinstance(value, np.void) and value.dtype == self.numpy:
            return value
        if not (is_real_scalar(value) or isinstance(value, (complex, np.complexfloating))):
            raise self._fill_error("a complex number, [real, imag] or a (real, imag) record", value)
        number = complex(value)
        return self._from_parts(np.array([number.real, number.imag]).astype(self.part))


def _pair(name: str, part: np.dtype, part_format: FloatFormat, part_bits: int) -> DataType:
    record = np.dtype([("real", part), ("imag", part)])
    return ComplexPairType(name, record, part_format=part_format, part=part, part_bits=part_bits)


def _build(name: str, configuration: dict[str, Any]) -> DataType:
    _check_keys(name, configuration, set())
    numpy_name = {"complex_float32": "complex64", "complex_float64": "complex128"}.get(name, name)
    if numpy_name in ("complex64", "complex128"):
        dtype = np.dtype(numpy_name)
        return ComplexType(name, dtype, part_format=FloatFormat(IEEE_NAN[dtype.itemsize // 2]))
    part_name = name.removeprefix("complex_")
    if part_name == "float16":
        return _pair(name, np.dtype("f2"), FloatFormat(IEEE_NAN[2]), 16)
    part_format, part_bits = FLOAT_FORMATS[part_name]
    return _pair(name, ml_dtype(part_name), part_format, part_bits)


for _name in ("complex64", "complex128", "complex_float32", "complex_float64", "complex_float16"):
    register_data_type(_name, _build)
for _part_name in FLOAT_FORMATS:
    if _part_name != "float8_e4m3fn":  # not registered, as its part type is not (tensorstore's name)
        register_data_type(f"complex_{_part_name}", _build)
