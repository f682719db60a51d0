"""What ``to_zarr3`` finds in the stored arrays before writing: their CF encoding, and the stored index an
append must not repeat.

For ``mode="a"``, ``"a-"`` and ``"r+"`` the variables already stored (the
group's arrays: `zarr3_backend.writes.target.existing_arrays`) are written
with the encoding they were stored with (``dtype``, ``_FillValue``,
``units`` ...), as ``engine="zarr"`` does, and ``mode="a"`` leaves a stored
variable alone when its values did not change (`unchanged()`).

>>> import numpy as np, zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/stored", shape=(2,), dtype="int16", attributes={"units": "m"})
>>> stored_encoding("v", a)["dtype"]
dtype('int16')
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends.zarr import encode_zarr_variable

from ...core.dtypes.kinds import is_inexact, is_real_number, is_time
from ...errors import WriteError
from ...nodes.array import Array
from ...writes.plan import WriteOptions
from ..backend_array import variable_dtype
from ..read_encoding import decode_fill_value
from .time_values import CF_TIME_ATTRIBUTES, is_datetime_units

#: CF's packing keys, which a variable opened without decoding carries as attributes instead of encoding
_PACKING = frozenset({"scale_factor", "add_offset", "_FillValue", "missing_value", "_Unsigned"})

#: mode="a" compares an existing variable's stored and new values this many bytes at a time.
UNCHANGED_CHECK_BYTES = 64 << 20


def stored_encoding(
    name: str, array: Array, new_attrs: Mapping[Hashable, object] | None = None
) -> dict[str, Any]:
    """The CF encoding of an existing array (``units``, ``dtype``, ``_FillValue`` ...), as xarray derives it.

    Keys that the new variable's ``new_attrs`` already carry (values written
    packed, as rioxarray opens them: ``scale_factor``, ``add_offset``,
    ``_FillValue`` in the attributes) are left out, so the values are written
    as they are, as the first write stored them; such an attribute that
    differs from the stored encoding is refused with `WriteError`.
    """
    attrs = dict(array.metadata.attributes)
    if "_FillValue" in attrs:
        attrs["_FillValue"] = decode_fill_value(attrs["_FillValue"], array)
    dims = array.dimension_names or tuple(f"dim_{i}" for i in range(array.ndim))
    empty = xr.Variable(dims, np.empty((0,) * array.ndim, dtype=variable_dtype(array)), attrs)
    times = is_datetime_units(attrs.get("units"))  # an empty array of most calendars does not decode
    decoded = conventions.decode_cf_variable(name, empty, decode_times=not times)
    encoding = dict(decoded.encoding)
    encoding.update({k: decoded.attrs[k] for k in CF_TIME_ATTRIBUTES if times and k in decoded.attrs})
    given = {str(k): v for k, v in (new_attrs or {}).items() if k in _PACKING and k in encoding}
    if differing := [k for k, v in given.items() if not _same_value(v, encoding[k])]:
        shown = ", ".join(f"{k}={given[k]!r} (stored: {encoding[k]!r})" for k in differing)
        raise WriteError(
            f"to_zarr3: variable {name!r} carries the packing attributes {shown}, which differ from how it is "
            "stored; its values would read back as other numbers. Decode them first (open with "
            "mask_and_scale=True), or write them with the stored attributes"
        )
    return {k: v for k, v in encoding.items() if k not in given}


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


def check_no_repeats(ds: xr.Dataset, existing: dict[str, Array], options: WriteOptions, where: str) -> None:
    """Refuse an append whose index along ``append_dim`` repeats stored values (the same year appended twice).

    Nothing to check for other writes, with ``allow_repeated_index=True``,
    or without a stored and an appended coordinate of that name. The stored coordinate is read whole and CF-decoded, then each
    appended value is looked up in it: a binary search where the stored
    values increase, as time axes do, else a set-membership test.
    """
    append_dim = options.append_dim
    array = None if append_dim is None or options.repeated_index else existing.get(str(append_dim))
    if array is None or append_dim not in ds.coords or ds.sizes[append_dim] == 0:
        return
    stored = np.asarray(_decoded(str(append_dim), array).values)
    appended = np.asarray(ds.coords[append_dim].values)
    try:
        repeated = _found_in(appended, stored)
    except TypeError:  # values that do not compare with the stored ones: the time checks say why
        return
    if repeated.any():
        first, last = (_label(v) for v in (appended[repeated][0], appended[repeated][-1]))
        raise WriteError(
            f"to_zarr3: the append along {append_dim!r} repeats {int(repeated.sum())} index values stored in "
            f"{where}, from {first} to {last} (stored: {_label(stored[0])} to {_label(stored[-1])}); nothing was written. Append "
            f"only the new steps, write the overlap with region='auto', or pass allow_repeated_index=True to "
            "append them anyway"
        )


def _decoded(name: str, array: Array) -> xr.Variable:
    """The stored ``array`` read whole and CF-decoded, as ``engine="zarr3"`` opens it."""
    attrs = dict(array.metadata.attributes)
    if "_FillValue" in attrs:
        attrs["_FillValue"] = decode_fill_value(attrs["_FillValue"], array)
    raw = xr.Variable(tuple(array.dimension_names or (name,)), np.asarray(array[...]), attrs)
    return conventions.decode_cf_variable(name, raw)


def _same_value(a: Any, b: Any) -> bool:
    """Whether two attribute values are equal (NaN equal to NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.array_equal(a, b, equal_nan=is_inexact(a.dtype) and is_inexact(b.dtype)))


def _label(value: Any) -> str:
    return str(np.datetime_as_string(value, unit="auto")) if isinstance(value, np.datetime64) else str(value)


def _found_in(values: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Which of ``values`` are among ``stored``."""
    if stored.size == 0:
        return np.zeros(values.shape, bool)
    if (
        (is_real_number(stored.dtype) or is_time(stored.dtype))
        and stored.size > 1
        and bool(np.all(stored[1:] > stored[:-1]))
    ):
        at = np.searchsorted(stored, values).clip(0, stored.size - 1)
        return np.asarray(stored[at] == values)
    return np.isin(values, stored)
