"""Read side of rectilinear chunk grids: the encoding and dask chunks of a variable whose chunks differ in length.

``chunks={}`` gives one dask chunk per stored chunk, or per shard when
sharded: the grid's own boundaries (a month per task on a monthly grid).
Kept apart from the regular grid's grouping of stored chunks into dask chunks
(see [`preferred_chunks`][zarr3_backend.xarray.read_encoding.preferred_chunks]).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.metadata.v2 import V2ArrayMetadata
from ..nodes.array import Array


def is_rectilinear(array: Array) -> bool:
    """Whether ``array`` has a rectilinear chunk grid (chunks or shards of differing lengths)."""
    return not isinstance(array.metadata, V2ArrayMetadata) and not array.metadata.chunk_grid.is_regular


def rectilinear_chunking(array: Array) -> dict[str, Any]:
    """``chunks`` and ``shards`` encoding: per-dimension lengths (cut at the array's edge) where the grid has them.

    Unsharded: ``chunks`` holds the lengths; sharded: ``shards`` does, with the regular inner ``chunks``.
    Writing the variable back with this encoding keeps the grid.
    """
    sizes = array.chunk_sizes
    if array.sharded:
        return {"chunks": array.chunks, "shards": sizes}
    return {"chunks": sizes, "shards": None}


def rectilinear_preferred_chunks(
    array: Array, dims: tuple[str, ...], choice: str | int | Mapping[str, int]
) -> dict[str, tuple[int, ...]]:
    """The dask chunks ``chunks={}`` gives a rectilinear array: one per stored chunk (shard), as lengths per dimension.

    With ``choice`` other than ``"shard"`` on a sharded array, each shard is
    split into that many inner chunks (``"inner"``: one), never across a shard boundary.
    """
    sizes = array.chunk_sizes
    if choice == "shard" or not array.sharded:
        return dict(zip(dims, sizes))
    multiples = (
        dict.fromkeys(dims, 1)
        if isinstance(choice, str)
        else dict.fromkeys(dims, choice)
        if isinstance(choice, int)
        else {dim: choice.get(dim, 1) for dim in dims}
    )
    return {
        dim: tuple(_split(lengths, multiples[dim] * inner))
        for dim, lengths, inner in zip(dims, sizes, array.chunks)
    }


def _split(lengths: tuple[int, ...], step: int) -> list[int]:
    out = []
    for length in lengths:
        out += [step] * (length // step) + ([length % step] if length % step else [])
    return out
