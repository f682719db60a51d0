"""The ``struct`` extension data type: records of named, fixed-size fields (numpy structured arrays).

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/data-types/struct

    {"name": "struct", "configuration": {"fields": [
        {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}

Fields are packed in declaration order with no padding (numpy's default
layout); a field may be any fixed-size data type, a ``struct`` included.
The fill value is an object with every field's fill value. The legacy name
``structured`` (fields as ``[name, data_type]`` pairs, fill values as base64
of little-endian bytes) is read and written back as ``struct``.
"""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, cast

import numpy as np

from ...errors import MetadataError
from ..json_types import JSON
from .base import Category, DataType, _check_keys

LEGACY_NAME = "structured"


@dataclass(frozen=True)
class StructType(DataType):
    """``struct``: the numpy dtype is the packed structured dtype of the ``fields`` (names and data types)."""

    category: ClassVar[Category] = "struct"
    fields: tuple[tuple[str, DataType], ...] = ()
    legacy: bool = field(default=False, compare=False)  # read as "structured": base64 fill values allowed

    @property
    def implied_endian(self) -> Literal["little"] | None:
        """``structured`` arrays written without ``endian`` are little-endian (the alias's spec)."""
        return "little" if self.legacy else None

    def parse_fill_value(self, value: object) -> np.void:
        if isinstance(value, str) and self.legacy:
            return self._from_base64(value)
        names = [name for name, _ in self.fields]
        if not isinstance(value, dict) or sorted(value) != sorted(names):
            raise self._fill_error(f"an object with exactly the fields {names}", value)
        out = np.zeros((), self.numpy)
        for name, field_type in self.fields:
            out[name] = field_type.parse_fill_value(value[name])
        return cast(np.void, out[()])

    def cast_fill_value(self, value: object) -> np.void:
        if isinstance(value, dict | str):
            return self.parse_fill_value(value)
        try:
            item = (
                np.asarray(value, dtype=self.numpy)
                if isinstance(value, np.void)
                else np.array(value, self.numpy)
            )
        except (TypeError, ValueError) as exc:
            raise self._fill_error("a record (tuple, numpy void or object of field values)", value) from exc
        if item.shape != ():
            raise self._fill_error("one record", value)
        return cast(np.void, item[()])

    def fill_value_to_json(self, value: object) -> dict[str, JSON]:
        item = self.cast_fill_value(value)
        return {name: field_type.fill_value_to_json(item[name]) for name, field_type in self.fields}

    def default_fill_value(self) -> np.void:
        out = np.zeros((), self.numpy)
        for name, field_type in self.fields:
            out[name] = field_type.default_fill_value()
        return cast(np.void, out[()])

    def _from_base64(self, value: str) -> np.void:
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise self._fill_error("a base64 string", value) from exc
        if len(raw) != self.numpy.itemsize:
            raise self._fill_error(f"base64 of exactly {self.numpy.itemsize} bytes", value)
        little = np.frombuffer(raw, self.numpy.newbyteorder("<"))
        return cast(np.void, little.astype(self.numpy)[0])


def build_struct(name: str, configuration: dict[str, Any], parse: Callable[[object], DataType]) -> DataType:
    """The ``struct`` (or legacy ``structured``) data type of ``configuration``; `MetadataError` naming the field."""
    _check_keys(name, configuration, {"fields"})
    fields = configuration.get("fields")
    if not isinstance(fields, list) or not fields:
        raise MetadataError(
            f"data_type {name!r}: configuration.fields: expected a non-empty list, got {fields!r}"
        )
    parsed = tuple(_parse_field(name, index, item, parse) for index, item in enumerate(fields))
    counts = Counter(field_name for field_name, _ in parsed)
    duplicates = sorted(n for n, count in counts.items() if count > 1)
    if duplicates:
        raise MetadataError(f"data_type {name!r}: configuration.fields: duplicate field names {duplicates}")
    numpy = np.dtype([(field_name, field_type.numpy) for field_name, field_type in parsed])
    canonical = {"fields": [{"name": n, "data_type": t.to_json()} for n, t in parsed]}
    return StructType("struct", numpy, canonical, parsed, legacy=name == LEGACY_NAME)


def _parse_field(
    name: str, index: int, item: object, parse: Callable[[object], DataType]
) -> tuple[str, DataType]:
    where = f"data_type {name!r}: configuration.fields[{index}]"
    if name == LEGACY_NAME and isinstance(item, list) and len(item) == 2:
        field_name, field_json = item
    elif isinstance(item, dict) and set(item) == {"name", "data_type"}:
        field_name, field_json = item["name"], item["data_type"]
    else:
        raise MetadataError(f'{where}: expected an object {{"name": ..., "data_type": ...}}, got {item!r}')
    if not isinstance(field_name, str) or not field_name:
        raise MetadataError(f"{where}.name: expected a non-empty string, got {field_name!r}")
    try:
        field_type = parse(field_json)
    except MetadataError as exc:
        raise type(exc)(f"{where}.data_type: {exc}") from exc
    if field_type.item_size is None or field_type.numpy.hasobject:
        raise MetadataError(
            f"{where}.data_type: {field_type.name!r} has no fixed size; struct fields need fixed-size data types"
        )
    return field_name, field_type
