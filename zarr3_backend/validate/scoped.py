"""Validating named arrays only (``validate_store(..., arrays=[...])``): each array's ``zarr.json``, then its
keys, listed under its own prefix and checked in batches as the listing streams in, so memory stays bounded
whatever the number of chunks; what lies outside those arrays is not looked at.

>>> import zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/scoped", "v", shape=(4,), dtype="int8", chunks=(2,))
>>> a[:] = 1
>>> validate_arrays(a.store, ["v"], deep=True)
[]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence

from ..core.metadata import ArrayMetadata, metadata_key, parse_node_metadata
from ..nodes.array import Array
from ..nodes.paths import normalize_path
from ..store.base import Store
from .base import Problem, Progress, check_chunk_keys, check_chunks, describe_error

#: Keys checked per batch of a streamed listing.
BATCH = 10_000

#: ``listed(n)``: ``n`` keys listed so far (called once per batch).
Listed = Callable[[int], None]


def validate_arrays(
    store: Store,
    arrays: Sequence[str],
    *,
    deep: bool = False,
    progress: Callable[[int], Progress] | None = None,
    listed: Listed | None = None,
) -> list[Problem]:
    """The problems of the arrays at ``arrays`` (paths in ``store``): their metadata, their keys and, with
    ``deep``, their chunks; in key order. ``progress(total)`` counts the chunks checked; its total is the
    number of chunks the arrays' grids hold, an upper bound of those stored."""
    problems: list[Problem] = []
    found = [a for a in (_open(store, normalize_path(p), problems) for p in arrays) if a is not None]
    total = sum(math.prod(a.metadata.chunk_grid.grid_shape(a.shape)) for a in found)
    bar = progress(total) if progress is not None and deep else None
    counted = 0
    for array in found:
        for batch in batches(_keys_of(store, array), BATCH):
            chunk_keys = check_chunk_keys(array, batch, problems)
            if deep:
                problems += check_chunks(store, {array.path: array}, {array.path: chunk_keys}, None)
                if bar is not None:
                    bar.update(len(chunk_keys))
            counted += len(batch)
            if listed is not None:
                listed(counted)
    if bar is not None:
        bar.close()
    return sorted(problems, key=lambda p: p.key)


def _open(store: Store, path: str, problems: list[Problem]) -> Array | None:
    """The array at ``path``, or None with the problem that stops it from opening."""
    key = metadata_key(path)
    raw = store.get(key)
    if raw is None:
        problems.append(Problem(key, "metadata", f"no array at {path or '/'!r}: {key} not found"))
        return None
    try:
        metadata = parse_node_metadata(raw, key)
        if not isinstance(metadata, ArrayMetadata):
            message = f"{path or '/'!r} is a group, not an array; name the arrays to check, or check the whole store"
            problems.append(Problem(key, "metadata", message))
            return None
        return Array(store, path, metadata, read_only=True)  # builds and checks the codec chain
    except Exception as exc:  # report it, as validate_store does, and go on with the other arrays
        problems.append(Problem(key, "metadata", describe_error(exc)))
        return None


def _keys_of(store: Store, array: Array) -> Iterator[str]:
    own = metadata_key(array.path)
    return (k for k in store.list_prefix(f"{array.path}/" if array.path else "") if k != own)


def batches(keys: Iterator[str], size: int) -> Iterator[list[str]]:
    """``keys`` in lists of ``size`` (the last one shorter)."""
    while batch := list(itertools.islice(keys, size)):
        yield batch
