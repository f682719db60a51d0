"""``validate --deep`` of a store ``zarr3 convert`` wrote: every shard against the checksum convert recorded.

See `zarr3_backend.coordination.converted`. A shard whose values differ (deleted,
replaced by another shard, or rewritten since) is reported as a warning, since
writes after the convert (an append to the last shard) change shards legitimately.
"""

from __future__ import annotations

import numpy as np

from ..coordination.converted import checksum, parse_manifest
from ..coordination.records import MANIFEST_KEY
from ..errors import Zarr3Error
from ..nodes.array import Array
from ..store.base import Store
from .base import Problem


def check_converted(store: Store, arrays: dict[str, Array]) -> list[Problem]:
    """A problem for every shard of ``arrays`` whose values differ from what convert recorded (none without a record)."""
    raw = store.get(MANIFEST_KEY)
    if raw is None:
        return []
    try:
        manifest = parse_manifest(raw)
    except Zarr3Error as exc:
        return [Problem(MANIFEST_KEY, "integrity", str(exc), "warning")]
    problems = []
    for path, shards in sorted(manifest.items()):
        array = arrays.get(path)
        if array is None:
            message = (
                f"zarr3 convert recorded {len(shards)} shards of array {path!r}, which is not in the store"
            )
            problems.append(Problem(MANIFEST_KEY, "integrity", message, "warning"))
            continue
        if not hasattr(array.metadata.chunk_grid, "chunk_shape"):
            continue  # not the regular grid convert writes: rewritten since, nothing recorded applies
        regions = _regions(array)
        for key, recorded in sorted(shards.items()):
            problem = _check_shard(array, key, regions.get(key), recorded)
            if problem is not None:
                problems.append(Problem(key, "integrity", problem, "warning"))
    return problems


def _regions(array: Array) -> dict[str, tuple[slice, ...]]:
    grid = array.metadata.chunk_grid
    regions = {}
    for coords in grid.chunk_coords(array.shape):
        origin = grid.chunk_origin(tuple(coords))
        shape = grid.chunk_shape
        regions[array.chunk_key(tuple(coords))] = tuple(
            slice(o, min(o + c, n)) for o, c, n in zip(origin, shape, array.shape)
        )
    return regions


def _check_shard(array: Array, key: str, region: tuple[slice, ...] | None, recorded: str) -> str | None:
    if region is None:
        return f"zarr3 convert recorded shard {key!r}, which is not in the grid of array {array.name!r} now"
    try:
        found = checksum(np.asarray(array.get(region)))
    except Zarr3Error as exc:
        found = f"unreadable ({exc})"
    if found == recorded:
        return None
    return (
        f"the values of shard {key!r} ({found}) are not those zarr3 convert wrote and verified ({recorded}): "
        "the shard was deleted, replaced or rewritten since. If nothing was meant to write it, convert again"
    )
