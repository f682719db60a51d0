"""Times written into a stored array fit its units and data type exactly, or the write is refused.

xarray encodes datetimes and timedeltas with the encoding stored with the
array (``units``, ``calendar``, ``dtype``), but when a value needs finer units
it silently switches units while the stored attributes keep the old ones, and
an out-of-range value wraps around in the cast to the stored integer type.
Either way the time axis reads back wrong. `encode_into` decodes what
would be stored with the stored attributes and compares it to what was given,
before anything is written.

>>> import numpy as np, xarray as xr
>>> given = np.array(["2021-01-02", "2021-01-02T12"], "datetime64[ns]")
>>> first_misfit(given, np.array([1, 36]), {"units": "days since 2021-01-01"}, np.dtype("int64"))
(1, np.datetime64('2021-01-02T12:00:00.000000000'))
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends.zarr import encode_zarr_variable
from xarray.coding.times import encode_cf_datetime, encode_cf_timedelta

from ...core.stacklevel import caller_stacklevel
from ...errors import WriteError
from ...nodes.array import Array

TIME_KINDS = "mM"  # numpy kinds of timedelta64 and datetime64
CF_TIME_ATTRIBUTES = ("units", "calendar")


def encode_variable(variable: xr.Variable, name: str) -> xr.Variable:
    """xarray's zarr v3 encoding of ``variable``; xarray's warnings are re-issued naming the user's line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        encoded: xr.Variable = encode_zarr_variable(variable, name=name, zarr_format=3)
    for warning in caught:
        warnings.warn(
            str(warning.message), warning.category, stacklevel=caller_stacklevel("zarr3_backend", "xarray")
        )
    return encoded


def encode_into(name: str, variable: xr.Variable, array: Array) -> xr.Variable:
    """``variable`` encoded for the stored ``array``: refused (``WriteError``) when its times would not fit.

    ``variable.encoding`` is the stored one (see `stored.py`). Dask-backed
    times are computed for the check, so the refusal comes before any write.
    """
    if variable.dtype.kind not in TIME_KINDS:
        return encode_variable(variable, name)
    attrs = {k: v for k, v in array.metadata.attributes.items() if k in CF_TIME_ATTRIBUTES}
    loaded = variable.load() if variable.chunks is None else variable.compute()
    stored_dtype = array.dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a misfit is refused below, so xarray's unit-switch warning is noise
        try:
            encoded: xr.Variable = encode_zarr_variable(loaded, name=name, zarr_format=3)
        except (OverflowError, ValueError) as exc:
            raise _refusal(name, attrs, stored_dtype, f"they cannot be encoded ({exc})") from exc
    given = np.asarray(loaded.values)
    misfit = first_misfit(given, np.asarray(encoded.values), attrs, stored_dtype)
    if misfit is not None:
        index, value = first_misfit(given, _in_stored_units(given, attrs), attrs, stored_dtype) or misfit
        raise _refusal(name, attrs, stored_dtype, f"its value {value} (position {index}) does not fit")
    return encoded


def _in_stored_units(given: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """``given`` as float counts of the stored units (never switched to finer ones, unlike the integer encoding)."""
    units, calendar = attrs.get("units"), attrs.get("calendar")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if given.dtype.kind == "M":
            return np.asarray(encode_cf_datetime(given, units, calendar, dtype=np.dtype("float64"))[0])
        return np.asarray(encode_cf_timedelta(given, units, dtype=np.dtype("float64"))[0])


def first_misfit(
    given: np.ndarray, numbers: np.ndarray, attrs: dict[str, Any], stored_dtype: np.dtype
) -> tuple[int, object] | None:
    """The flat position and value of the first time in ``given`` that the stored ``numbers`` do not hold.

    ``numbers`` (what would be stored) are cast to ``stored_dtype`` and decoded
    with the stored ``attrs``; they must give back every value but NaT (which
    is stored as the fill value). ``None`` when all fit.
    """
    given, flat = np.asarray(given).ravel(), np.asarray(numbers).ravel()
    if given.size == 0:
        return None
    fits = _in_range(flat, stored_dtype)
    if stored_dtype.kind in "iu" and flat.dtype.kind == "f":
        fits &= np.where(fits, flat, 0) == np.round(np.where(fits, flat, 0))
    stored = np.where(fits, flat, 0).astype(stored_dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decoded = conventions.decode_cf_variable(
            "time", xr.Variable(("n",), stored, attrs), decode_timedelta=True
        )
    back = np.asarray(decoded.values)
    if back.dtype.kind != given.dtype.kind:  # stored without time units: reads back as plain numbers
        return 0, given[0]
    same = np.isnat(given) | (fits & (back == given))
    if bool(same.all()):
        return None
    index = int(np.argmin(same))
    return index, given[index]


def _in_range(numbers: np.ndarray, stored_dtype: np.dtype) -> np.ndarray:
    """Which ``numbers`` the stored integer type holds (all, for a float type; NaN never for an integer)."""
    if stored_dtype.kind not in "iu":
        return np.ones(numbers.shape, dtype=bool)
    info = np.iinfo(stored_dtype)
    if numbers.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return np.asarray(
                np.isfinite(numbers) & (numbers >= info.min) & (numbers <= info.max), dtype=bool
            )
    return np.asarray((numbers >= info.min) & (numbers <= info.max), dtype=bool)


def _refusal(name: str, attrs: dict[str, Any], stored_dtype: np.dtype, what: str) -> WriteError:
    units = attrs.get("units", "(none)")
    return WriteError(
        f"to_zarr3: variable {name!r} is stored as {stored_dtype} with units {units!r}, and {what}: "
        "it would read back as a different time. Nothing was written. Round the times to the stored "
        f"units (e.g. ds[{name!r}].dt.floor(...)), or rewrite the variable with finer units or a wider "
        f"dtype (encoding={{{name!r}: {{'units': ..., 'dtype': 'int64'}}}}) with mode='w'"
    )
