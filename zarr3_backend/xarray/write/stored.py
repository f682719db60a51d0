"""What ``to_zarr3`` finds in the store before writing: the group's arrays and their CF encoding.

For ``mode="a"``, ``"a-"`` and ``"r+"`` the variables already stored are
written with the encoding they were stored with (``dtype``, ``_FillValue``,
``units`` ...), as ``engine="zarr"`` does, and ``mode="a"`` leaves a stored
variable alone when its values did not change (`unchanged()`).

>>> import zarr3_backend
>>> _ = zarr3_backend.create_group("memory://doc/stored")
>>> existing_arrays(zarr3_backend.store.make_store("memory://doc/stored"), "", "a")
{}
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends.zarr import encode_zarr_variable

from ...api import WriteMode
from ...core.dtypes.kinds import is_inexact
from ...errors import GroupNotFoundError
from ...nodes.array import Array
from ...nodes.hierarchy import Group, open_node
from ...store.base import Store
from ..backend_array import variable_dtype
from ..read_encoding import decode_fill_value
from .time_values import CF_TIME_ATTRIBUTES, is_datetime_units

#: mode="a" compares an existing variable's stored and new values this many bytes at a time.
UNCHANGED_CHECK_BYTES = 64 << 20


def existing_arrays(store: Store, path: str, mode: WriteMode) -> dict[str, Array]:
    """The arrays of the group at ``path`` (none for ``mode="w"``/``"w-"``), read from their own ``zarr.json``.

    A missing group has none, except for ``mode="r+"``, which raises
    ``FileNotFoundError``.
    """
    if mode in ("w", "w-"):
        return {}
    try:
        group = open_node(store, path, read_only=False, strict=True)  # unfinished writes: checked by .target
    except FileNotFoundError:
        if mode == "r+":
            raise
        return {}
    if not isinstance(group, Group):
        if mode == "r+":
            raise GroupNotFoundError(f"{path or '/'!r} in {store!r} is an array, not a group")
        return {}
    fresh = Group(
        store, path, group.metadata.with_consolidated(None)
    )  # never trust stale consolidated shapes
    return fresh.arrays()


def stored_encoding(name: str, array: Array) -> dict[str, Any]:
    """The CF encoding of an existing array (``units``, ``dtype``, ``_FillValue`` ...), as xarray derives it."""
    attrs = dict(array.metadata.attributes)
    if "_FillValue" in attrs:
        attrs["_FillValue"] = decode_fill_value(attrs["_FillValue"], array)
    dims = array.dimension_names or tuple(f"dim_{i}" for i in range(array.ndim))
    empty = xr.Variable(dims, np.empty((0,) * array.ndim, dtype=variable_dtype(array)), attrs)
    times = is_datetime_units(attrs.get("units"))  # an empty array of most calendars does not decode
    decoded = conventions.decode_cf_variable(name, empty, decode_times=not times)
    encoding = dict(decoded.encoding)
    encoding.update({k: decoded.attrs[k] for k in CF_TIME_ATTRIBUTES if times and k in decoded.attrs})
    return encoding


def unchanged(variable: xr.Variable, name: str, array: Array, append_dim: Hashable | None) -> bool:
    """Whether ``mode="a"`` can skip an existing ``variable`` (outside any append): its stored values are the same.

    Compared block by block (about `UNCHANGED_CHECK_BYTES` at a time, up to
    the first difference), whatever the variable's size: in-memory
    variables, and in an append also dask ones (each block computed for the
    comparison). Outside an append a dask-backed variable is rewritten in
    place (not covered by the all-or-nothing guarantee).
    """
    if variable.chunks is not None and append_dim is None:
        return False
    try:
        encoded = encode_zarr_variable(variable, name=name, zarr_format=3)
    except (OverflowError, TypeError, ValueError):  # values that cannot be stored: encode_into says why
        return False
    if array.dimension_names is None or set(array.dimension_names) != set(encoded.dims):
        return False
    encoded = encoded.transpose(*array.dimension_names)
    if encoded.shape != array.shape:
        return False
    return all(
        _same(np.asarray(array[block]), np.asarray(encoded[block].values))
        for block in _row_blocks(encoded.shape, encoded.dtype.itemsize)
    )


def _row_blocks(shape: tuple[int, ...], itemsize: int) -> list[Any]:
    """Slices of the first axis of about `UNCHANGED_CHECK_BYTES` each (a 0-d array: one block, ``...``)."""
    if not shape:
        return [Ellipsis]
    row = itemsize * int(np.prod(shape[1:]))
    step = max(1, UNCHANGED_CHECK_BYTES // max(row, 1))
    return [slice(start, start + step) for start in range(0, shape[0], step)]


def _same(stored: np.ndarray, new: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(stored, new, equal_nan=is_inexact(new.dtype)))
    except (TypeError, ValueError):
        return bool(np.array_equal(stored.astype(object), new.astype(object)))
