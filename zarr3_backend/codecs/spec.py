"""The chunk spec threaded through a codec chain: shape, data type and fill value of one chunk."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.dtypes import DataType


@dataclass(frozen=True)
class ChunkSpec:
    """What a codec sees: the shape, data type and fill value of one chunk.

    ``fill_value`` is a numpy scalar of ``data_type.numpy``.
    """

    shape: tuple[int, ...]
    data_type: DataType
    fill_value: Any

    @property
    def dtype(self) -> np.dtype[Any]:
        """The in-memory (native byte order) numpy dtype of the chunk."""
        return self.data_type.numpy

    @property
    def size(self) -> int:
        """Number of elements in the chunk (exact: a Python int)."""
        return math.prod(self.shape)

    def with_shape(self, shape: tuple[int, ...]) -> ChunkSpec:
        """A copy of this spec with another chunk shape (this spec itself for its own shape)."""
        shape = tuple(shape)
        return self if shape == self.shape else replace(self, shape=shape)
