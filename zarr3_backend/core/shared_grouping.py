"""One grouping of stored chunks per dimension across a dataset, so that its variables share one chunking.

Reading a Zarr v2 store with ``chunks={}`` groups whole stored chunks into
larger dask chunks, and ``convert`` groups inner chunks into shards. Decided
per variable (by its bytes), a float32 and an int16 variable stored in the
same 30-day chunks would get different groupings (240 and 510 days), so
``ds.chunks`` raises and arithmetic between them fragments. Here each
variable first proposes its own grouping; then every dimension takes, for
all the variables that share it with the same extent and stored chunk, the
smallest proposal (so no variable's block exceeds what it proposed), and
every such variable gets that one.

>>> v = {"t2m": Stored(("time", "x"), (30, 10), (730, 10), 4), "tp": Stored(("time", "x"), (30, 10), (730, 10), 2)}
>>> per_variable = lambda s: (240, 10) if s.itemsize == 4 else (510, 10)
>>> shared_grouping(v, per_variable)
{'t2m': (240, 10), 'tp': (240, 10)}
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Stored:
    """A variable's stored chunking: its dimension names (``None`` for unnamed), chunk, shape, item size."""

    dims: tuple[Hashable | None, ...]
    chunks: tuple[int, ...]
    shape: tuple[int, ...]
    itemsize: int


def shared_grouping(
    variables: Mapping[str, Stored],
    propose: Callable[[Stored], tuple[int, ...]],
    *,
    whole_chunks: bool = False,
) -> dict[str, tuple[int, ...]]:
    """Each variable's block shape, agreed per dimension: whole stored chunks, cut at the extent.

    ``propose`` gives one variable's own choice (a multiple of its chunk, or
    at least its extent, along each axis). Unnamed dimensions are not shared.
    ``whole_chunks``: blocks are never cut at the extent (shards hold whole
    inner chunks, so a 730-day axis in 30-day chunks needs a 750-day shard).
    """
    proposals = {name: propose(stored) for name, stored in variables.items()}
    smallest: dict[tuple[Hashable, ...], int] = {}
    for name, stored in variables.items():
        for key, count in zip(_keys(name, stored), _counts(stored, proposals[name])):
            smallest[key] = min(smallest.get(key, count), count)
    return {
        name: tuple(
            chunk * smallest[key] if whole_chunks else min(chunk * smallest[key], size)
            for key, chunk, size in zip(_keys(name, stored), stored.chunks, stored.shape)
        )
        for name, stored in variables.items()
    }


def _keys(name: str, stored: Stored) -> list[tuple[Hashable, ...]]:
    """What a dimension is shared by: its name, extent and stored chunk (an unnamed one by its variable)."""
    return [
        (dim, size, chunk) if dim is not None else (None, name, axis, size, chunk)
        for axis, (dim, chunk, size) in enumerate(zip(stored.dims, stored.chunks, stored.shape))
    ]


def _counts(stored: Stored, block: tuple[int, ...]) -> list[int]:
    """How many stored chunks ``block`` groups along each axis (a block past the extent counts what it covers)."""
    return [max(1, -(-min(b, size) // chunk)) for b, chunk, size in zip(block, stored.chunks, stored.shape)]
