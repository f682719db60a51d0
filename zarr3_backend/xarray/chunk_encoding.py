"""``chunks`` and ``shards`` of a variable's encoding: parsed, or dropped when they came with it and no longer fit.

- ``chunks`` and ``shards`` are a positive int (every dimension), a sequence
  with one positive int per dimension, or a dict by dimension name (missing
  dimensions, ``-1`` and ``None`` mean the full length, as in dask);
- as with ``engine="zarr"``, a size that is not an integer raises
  ``TypeError`` (:class:`~zarr3_backend.errors.WriteTypeError`), other
  refusals ``ValueError`` (:class:`~zarr3_backend.errors.WriteError`);
- the chunk shapes a variable carries from its source that no longer fit its
  dimensions (after ``isel``) are dropped (:func:`fitting_encoding`), as
  ``engine="zarr"`` does; given in ``encoding=`` they raise.

>>> import numpy as np, xarray as xr
>>> var = xr.Variable(("t", "x"), np.zeros((10, 6)))
>>> parse_shape({"t": 5}, var, "chunks", "v")
(5, 6)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import xarray as xr

from ..core.integers import is_int
from ..errors import WriteError, WriteTypeError


def parse_shape(value: object, var: xr.Variable, key: str, name: str) -> tuple[int, ...] | None:
    """``encoding[name][key]`` (``chunks`` or ``shards``) as one positive int per dimension, or None."""
    if value is None or (isinstance(value, str) and value == "auto"):
        return None
    where = f"to_zarr3: encoding[{name!r}][{key!r}]"
    if isinstance(value, Mapping):
        if unknown := sorted(map(str, set(value) - set(var.dims))):
            raise WriteError(f"{where} names dimensions {unknown} that {name!r} does not have; its dimensions are {var.dims}")
        value = tuple(value.get(dim, -1) for dim in var.dims)
        value = tuple(size if v is None or (is_int(v) and v == -1) else v for v, size in zip(value, var.shape))
    elif is_int(value):
        value = (value,) * var.ndim
    elif not isinstance(value, Sequence) or isinstance(value, str):
        raise WriteTypeError(f"{where} must be an int, a tuple of ints or a dict by dimension name, got {value!r}")
    if len(value) != var.ndim:
        raise WriteError(
            f"{where}={tuple(value)} has {len(value)} entries, but {name!r} has {var.ndim} dimensions {var.dims}; "
            "give one size per dimension (or a dict by dimension name)"
        )
    if not_int := [v for v in value if not is_int(v)]:  # TypeError, as engine="zarr" raises for non-integer sizes
        raise WriteTypeError(f"{where}={tuple(value)}: every size must be a positive integer, got {not_int[0]!r}")
    if bad := [v for v in value if v <= 0]:
        raise WriteError(f"{where}={tuple(value)}: every size must be a positive integer, got {bad[0]!r}")
    return tuple(int(v) for v in value)


def fitting_encoding(var: xr.Variable, encoding: dict[str, Any]) -> dict[str, Any]:
    """``encoding`` without ``chunks``, ``shards`` and ``codecs`` when those chunks or shards do not fit ``var``.

    For the encoding a variable carries from its source, not one given as
    ``encoding=``: after ``isel``/``sel``/``squeeze`` a variable keeps its
    source's chunk shapes (and ``codecs``, which hold the inner chunk shape
    when sharded), one size per dimension it no longer has. They are dropped
    and the chunks chosen anew, as ``engine="zarr"`` does; sizes that are not
    positive integers still raise in :func:`parse_shape`.

    >>> var = xr.Variable(("x",), [0.0] * 4)
    >>> fitting_encoding(var, {"chunks": (2, 2), "shards": None, "compressors": ()})
    {'compressors': ()}
    >>> fitting_encoding(var, {"chunks": (2,), "shards": (4,)})
    {'chunks': (2,), 'shards': (4,)}
    """
    if all(_fits(encoding.get(key), var) for key in ("chunks", "shards")):
        return encoding
    return {k: v for k, v in encoding.items() if k not in ("chunks", "shards", "codecs")}


def _fits(value: object, var: xr.Variable) -> bool:
    """Whether a ``chunks``/``shards`` value has no more or fewer dimensions than ``var`` (ints fit any)."""
    if isinstance(value, Mapping):
        return set(value) <= set(var.dims)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return len(value) == var.ndim
    return True


def regular_dask_chunks(var: xr.Variable) -> tuple[int, ...] | None:
    """The dask chunk shape of ``var`` when it is regular (all blocks equal but the last), else None."""
    if var.chunks is None or not var.ndim:
        return None
    if any(len(set(c[:-1])) > 1 or c[-1] > c[0] for c in var.chunks):
        return None
    return tuple(max(1, int(c[0])) for c in var.chunks)
