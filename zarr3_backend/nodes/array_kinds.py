"""Arrays described by something other than their own v3 ``zarr.json``: a Zarr v2 array, or a consolidated entry.

A group hands these out in place of a plain `Array`:
a `V2Array` refuses writes, and a `ConsolidatedArray` says,
when a chunk fails to decode, that the consolidated entry it was built from
differs from the array's own ``zarr.json`` (`explain_stale()`).
"""

from __future__ import annotations

from typing import Any

from ..core.indexing import SelectionLike
from ..core.metadata.v2 import READ_ONLY_HINT
from ..errors import CodecError, ReadOnlyError
from .array import Array
from .consolidation import stale_hint
from .reads import ReadResult


class V2Array(Array):
    """A Zarr v2 array (read-only): its metadata is the v3 description that reads its chunks."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (V2Array, (self.store, self.path, self.metadata), {"read_only": True})

    def _check_writable(self) -> None:
        raise ReadOnlyError(f"array {self.name!r} is a Zarr v2 array: {READ_ONLY_HINT}")


class ConsolidatedArray(Array):
    """An array described by a group's consolidated metadata: decode errors say when that copy is stale."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (ConsolidatedArray, (self.store, self.path, self.metadata), {"read_only": self.read_only})

    def get(self, selection: SelectionLike = Ellipsis, *, orthogonal: bool = False) -> ReadResult:
        try:
            return super().get(selection, orthogonal=orthogonal)
        except CodecError as exc:
            explained = explain_stale(exc, [self])
            if explained is exc:
                raise
            raise explained from exc


def explain_stale(exc: CodecError, arrays: list[Array]) -> CodecError:
    """``exc`` with a note that the consolidated entry of one of ``arrays`` is stale, if one is."""
    for array in arrays:
        if isinstance(array, ConsolidatedArray):
            hint = stale_hint(array.store, array.path, array.metadata.to_json())
            if hint is not None:
                return type(exc)(f"{exc}; {hint}")
    return exc
