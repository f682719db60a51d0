"""One dimension's share of a selection in one chunk (see [`indexing`][zarr3_backend.core.indexing])."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

DimIndex = int | slice | np.ndarray
OutIndex = slice | np.ndarray | None


class DimChunk(NamedTuple):
    """The part of one dimension's selection that falls in one chunk."""

    chunk_index: int  #: chunk index along the dimension
    chunk_sel: DimIndex  #: positions inside the full-size chunk (slices have a positive step)
    out_sel: OutIndex  #: positions in the output; ``None`` if the dimension is dropped
    complete: bool  #: covers every in-array element of the chunk along this dimension
