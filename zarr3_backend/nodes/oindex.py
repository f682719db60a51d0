"""``array.oindex[...]``: orthogonal indexing, each axis's integer or boolean array applied independently."""

from __future__ import annotations

from typing import Protocol

import numpy.typing as npt

from ..core.indexing import SelectionLike
from .reads import ReadResult


class _Selectable(Protocol):
    def get(self, selection: SelectionLike, *, orthogonal: bool = False) -> ReadResult: ...

    def set(self, selection: SelectionLike, value: npt.ArrayLike, *, orthogonal: bool = False) -> None: ...


class OrthogonalIndexer:
    """``a.oindex[sel]`` reads and writes ``sel`` orthogonally."""

    def __init__(self, array: _Selectable) -> None:
        self.array = array

    def __getitem__(self, selection: SelectionLike) -> ReadResult:
        return self.array.get(selection, orthogonal=True)

    def __setitem__(self, selection: SelectionLike, value: npt.ArrayLike) -> None:
        self.array.set(selection, value, orthogonal=True)
