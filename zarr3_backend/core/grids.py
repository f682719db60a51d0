"""Chunk grids by name: ``regular`` and ``rectilinear``."""

from __future__ import annotations

from typing import TypeAlias

from .chunk_grid import RegularChunkGrid
from .extension import parse_extension
from .rectilinear_grid import RectilinearChunkGrid

#: Either grid; both answer the same questions (grid shape, chunk origin and shape, sizes).
ChunkGrid: TypeAlias = RegularChunkGrid | RectilinearChunkGrid


def parse_chunk_grid(obj: object) -> ChunkGrid:
    """The grid described by a ``chunk_grid`` metadata member.

    >>> parse_chunk_grid({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [3]}})
    RectilinearChunkGrid(dims=(3,))
    """
    if parse_extension(obj, "chunk_grid", may_be_optional=False).name == RectilinearChunkGrid.name:
        return RectilinearChunkGrid.from_json(obj)
    return RegularChunkGrid.from_json(obj)
