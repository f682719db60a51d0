"""The `DataType` base class and helpers shared by core and extension types."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias, cast

import numpy as np

from ...errors import MetadataError
from ..integers import is_int
from ..json_types import JSON

#: One element of an array of a data type, as a fill value or a 0-d read: a numpy scalar of its
#: dtype, or a Python ``str`` (``"string"``) or ``bytes`` (``"variable_length_bytes"``) for the
#: object-dtype types.
Scalar: TypeAlias = np.generic | str | bytes

#: What the elements of a data type are (what code would otherwise read from the numpy dtype):
#: the numeric categories, numpy's times, the text and byte types (``fixed_*``: numpy ``U<n>``/``S<n>``;
#: ``object``: Python objects; ``text``: numpy's ``StringDType``), raw bits and records.
Category: TypeAlias = Literal[
    "bool", "int", "uint", "float", "complex", "datetime", "timedelta",
    "fixed_text", "fixed_bytes", "object", "text", "raw", "struct",
]  # fmt: skip


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

    #: What the elements are (see `Category`); `zarr3_backend.core.dtypes.kinds` answers it for numpy dtypes.
    category: ClassVar[Category]

    name: str
    numpy: np.dtype
    configuration: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def bit_width(self) -> int:
        """Bits that carry an element's value: ``8 * item_size``, fewer for the sub-byte types (``int4``: 4)."""
        return 8 * self.numpy.itemsize

    @property
    def swap_unit(self) -> np.dtype | None:
        """For a type numpy cannot byte-swap itself (``bfloat16``), the unsigned dtype to swap it as; else ``None``."""
        return None

    def decode_stored(self, chunk: np.ndarray) -> np.ndarray:
        """Elements as the ``bytes`` codec read them -> canonical elements (identity; sub-byte types clear unused bits)."""
        return chunk

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
        if self.category in ("fixed_text", "fixed_bytes"):
            return cast(
                np.generic, self.numpy.type()
            )  # "" or b"", without allocating a (up to 2 GiB) zeroed item
        return cast(np.generic, np.zeros((), self.numpy)[()])  # numpy types a 0-d array's [()] as an array

    def _fill_error(self, expected: str, got: object) -> MetadataError:
        return MetadataError(f"fill_value: expected {expected} for data type {self.name!r}, got {got!r}")


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
