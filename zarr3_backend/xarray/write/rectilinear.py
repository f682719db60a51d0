"""Write side of rectilinear chunk grids: the ``chunks``/``shards`` encodings that ask for one.

Only an explicit request writes a rectilinear grid (other readers may not
read it): per dimension a sequence of lengths (``((31, 28, ...), 45, 90)``
or ``{"time": (31, 28, ...)}``), or ``"dask"``, which makes each dask chunk
one chunk (``chunks="dask"``) or one shard (``shards="dask"``, with regular
inner ``chunks`` dividing every shard). Lengths may add up to more than the
dimension (chunks declared for later appends), never less.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ...core.integers import is_int
from ...errors import WriteError, WriteTypeError

Lengths = tuple[int | tuple[int, ...], ...]


def is_rectilinear_request(value: object) -> bool:
    """``"dask"``, or a ``chunks``/``shards`` value giving lengths for some dimension.

    >>> is_rectilinear_request(((31, 28), 4)), is_rectilinear_request({"time": [31, 28]}), is_rectilinear_request((5, 4))
    (True, True, False)
    """
    if isinstance(value, str):
        return value == "dask"
    items = list(value.values()) if isinstance(value, Mapping) else value
    return isinstance(items, Sequence) and any(_is_lengths(v) for v in items)


def _is_lengths(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def rectilinear_lengths(value: object, var: xr.Variable, key: str, name: str) -> Lengths:
    """Per dimension an int step or a tuple of lengths, checked against ``var``'s shape."""
    where = f"to_zarr3: encoding[{name!r}][{key!r}]"
    if isinstance(value, str):  # "dask"
        if var.chunks is None:
            raise WriteError(f"{where}='dask': {name!r} is not a dask array; chunk it first (ds.chunk(...))")
        value = tuple(tuple(int(n) for n in c) for c in var.chunks)
    if isinstance(value, Mapping):
        if unknown := sorted(map(str, set(value) - set(var.dims))):
            raise WriteError(f"{where} names dimensions {unknown} that {name!r} does not have ({var.dims})")
        value = tuple(value.get(dim, size) for dim, size in zip(var.dims, var.shape))
    if not isinstance(value, Sequence) or len(value) != var.ndim:
        raise WriteError(f"{where}={value!r} needs one entry per dimension of {name!r} {var.dims}")
    out: list[int | tuple[int, ...]] = []
    for dim, item, size in zip(var.dims, value, var.shape):
        if _is_lengths(item):
            assert isinstance(item, Sequence)
            if not item or not all(is_int(n) for n in item):
                raise WriteTypeError(f"{where}[{dim!r}]: expected positive integer lengths, got {item!r}")
            if any(n <= 0 for n in item) or sum(item) < size:
                raise WriteError(
                    f"{where}[{dim!r}]: lengths must be positive and add up to at least {size}, got {tuple(item)}"
                )
            out.append(tuple(int(n) for n in item))
        elif is_int(item) and item > 0:
            out.append(int(item))
        else:
            raise WriteTypeError(
                f"{where}[{dim!r}]: expected a positive integer or a sequence of lengths, got {item!r}"
            )
    return tuple(out)


def regular_or_lengths(lengths: Lengths, shape: Sequence[int]) -> Lengths:
    """Dimensions whose lengths are one repeated length, the last shorter, ending at the dimension's end
    become that int: regular where that means the same chunks.

    >>> regular_or_lengths(((30, 30, 5), (31, 28), (2, 3)), (65, 59, 4))
    (30, 31, (2, 3))
    """
    return tuple(
        d[0] if isinstance(d, tuple) and len(set(d[:-1])) <= 1 and d[-1] <= d[0] and sum(d) == n else d
        for d, n in zip(lengths, shape)
    )


def rectilinear_chunking(
    name: str, var: xr.Variable, encoding: Mapping[str, Any], regular_chunks: tuple[int, ...] | None
) -> tuple[Lengths, Lengths | None]:
    """(chunks, shards) for ``create_array`` from a rectilinear request; ``regular_chunks`` are the inner chunks given."""
    shards_value = encoding.get("shards")
    if is_rectilinear_request(shards_value):
        shards = regular_or_lengths(rectilinear_lengths(shards_value, var, "shards", name), var.shape)
        if regular_chunks is None:
            regular_chunks = tuple(d if isinstance(d, int) else math.gcd(*d) for d in shards)
        return regular_chunks, shards
    chunks = regular_or_lengths(rectilinear_lengths(encoding["chunks"], var, "chunks", name), var.shape)
    if shards_value is not None:
        raise WriteError(
            f"to_zarr3: encoding[{name!r}]: rectilinear 'chunks' cannot be sharded (rectilinear inner chunks are "
            "not specified); give regular 'chunks' and nested or 'dask' 'shards'"
        )
    return chunks, None


def block_edges(var: xr.Variable, origin: Sequence[int]) -> tuple[tuple[int, ...] | None, ...] | None:
    """Where ``var``'s dask blocks end once written at ``origin`` (per dimension); ``None`` if not dask.

    An append along a rectilinear dimension declares its new chunks there: one chunk per appended block.
    """
    if var.chunks is None:
        return None
    return tuple(tuple(int(e) for e in start + np.cumsum(c)) for c, start in zip(var.chunks, origin))
