"""The `DataType` base class and helpers shared by core and extension types."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeGuard, cast

import numpy as np

from ...errors import MetadataError
from ..integers import is_int
from ..json_types import JSON

#: One element of an array of a data type, as a fill value or a 0-d read: a numpy scalar of its
#: dtype, or a Python ``str`` (``"string"``) or ``bytes`` (``"variable_length_bytes"``) for the
#: object-dtype types.
Scalar: TypeAlias = np.generic | str | bytes


@dataclass(frozen=True)
class DataType(ABC):
    """One Zarr v3 data type: its JSON identity and its in-memory numpy dtype.

    Build instances with `parse_data_type()` or `data_type_from_numpy()`.
    Instances are immutable, hashable and picklable.

    Fill value methods obey ``parse_fill_value(fill_value_to_json(v))`` has
    the same bits as ``cast_fill_value(v)``. Scalars are numpy scalars of
    `numpy`, except for object dtypes (``"string"``: ``str``,
    ``"variable_length_bytes"``: ``bytes``).
    """

    name: str
    numpy: np.dtype
    configuration: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def item_size(self) -> int | None:
        """Bytes per element, or ``None`` for variable-length types."""
        return self.numpy.itemsize

    @property
    def implied_endian(self) -> Literal["little"] | None:
        """The byte order a ``bytes`` codec without ``endian`` means for this type (a legacy form); else ``None``."""
        return None

    def to_json(self) -> str | dict[str, Any]:
        """The ``data_type`` metadata value: a name, or ``{"name", "configuration"}``."""
        if self.configuration is None:
            return self.name
        return {"name": self.name, "configuration": dict(self.configuration)}

    @abstractmethod
    def parse_fill_value(self, value: object) -> Scalar:
        """Decode a JSON ``fill_value``; raise `MetadataError` if not permitted."""

    def cast_fill_value(self, value: object) -> Scalar:
        """Convert a user value (Python/numpy scalar or a JSON form) to a fill scalar."""
        return self.parse_fill_value(value)

    def fill_value_to_json(self, value: object) -> JSON:
        """Encode a fill value (anything `cast_fill_value()` accepts) as JSON."""
        item: JSON = np.asarray(self.cast_fill_value(value)).item()  # numpy types item() as Any
        return item

    def default_fill_value(self) -> Scalar:
        """The fill value used when none is given (zero, ``False``, ``""`` or NaT)."""
        if self.numpy.kind in "US":
            return cast(
                np.generic, self.numpy.type()
            )  # "" or b"", without allocating a (up to 2 GiB) zeroed item
        return cast(np.generic, np.zeros((), self.numpy)[()])  # numpy types a 0-d array's [()] as an array

    def _fill_error(self, expected: str, got: object) -> MetadataError:
        return MetadataError(f"fill_value: expected {expected} for data type {self.name!r}, got {got!r}")


def _is_number(value: object) -> TypeGuard[int | float | np.integer[Any] | np.floating[Any]]:
    excluded = (bool, np.bool_, np.timedelta64)  # np.timedelta64 subclasses np.integer
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, excluded)


def _config_int(name: str, configuration: dict[str, Any], key: str, low: int, high: int) -> int:
    value = configuration.get(key)
    if not is_int(value, numpy=False) or not low <= value <= high:
        raise MetadataError(
            f"data_type {name!r}: configuration.{key}: expected an integer in [{low}, {high}], got {value!r}"
        )
    return value


def _check_keys(name: str, configuration: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(configuration) - allowed)
    if extra:
        raise MetadataError(
            f"data_type {name!r}: unexpected configuration keys {extra}; allowed: {sorted(allowed)}"
        )


def needs_endian(dtype: np.dtype) -> bool:
    """Whether byte order applies to ``dtype`` (multi-byte and not raw bytes).

    >>> needs_endian(np.dtype("float32")), needs_endian(np.dtype("uint8")), needs_endian(np.dtype("V3")), needs_endian(np.dtype("S2"))
    (True, False, False, False)
    >>> needs_endian(np.dtype([("a", "u1"), ("b", "u1")])), needs_endian(np.dtype([("a", "u1"), ("b", "<i2")]))
    (False, True)
    """
    if dtype.names:
        return any(needs_endian(dtype.fields[name][0]) for name in dtype.names)  # type: ignore[index]
    return dtype.itemsize > 1 and dtype.kind not in "VS"
