"""Times written into a stored array fit its units, calendar and data type exactly, or the write is refused.

xarray encodes datetimes (numpy or cftime) and timedeltas with the encoding
stored with the array (``units``, ``calendar``, ``dtype``), but when a value
needs finer units it silently switches units while the stored attributes keep
the old ones, an out-of-range value wraps around in the cast to the stored
integer type, and a date of one calendar is stored by its fields in another.
Each reads back as a different time. `encode_into` refuses such a write
before anything is written: the values must be one kind of time (numpy
datetimes or timedeltas, or cftime dates of one calendar; never
timezone-aware), name the same days in the stored calendar (see `time_values`),
and what would be stored, decoded with the stored attributes, must give them
back exactly.

>>> import numpy as np
>>> given = np.array(["2021-01-02", "2021-01-02T12"], "datetime64[ns]")
>>> stored = StoredTime("time", "days since 2021-01-01", "standard", np.dtype("int64"))
>>> first_misfit(given, np.array([1, 36]), stored)
(1, np.datetime64('2021-01-02T12:00:00.000000000'))
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends.zarr import encode_zarr_variable
from xarray.coding.times import CFDatetimeCoder, encode_cf_datetime, encode_cf_timedelta

from ...core.dtypes.kinds import is_float, is_integer, is_object, is_time, is_timedelta
from ...core.dtypes.registry import registered_for_numpy
from ...errors import WriteTypeError
from ...nodes.array import Array
from ...runtime.stacklevel import caller_stacklevel
from .time_values import StoredTime, check_calendar, given_times, holds_times, is_missing, same_times

ROUND_FIX = (
    "Round the times to the stored units (e.g. ds[{name!r}].dt.floor(...)), or rewrite the variable with "
    "finer units or a wider dtype (encoding={{{name!r}: {{'units': ..., 'dtype': 'int64'}}}}) with mode='w'"
)


def encode_variable(variable: xr.Variable, name: str) -> xr.Variable:
    """xarray's zarr v3 encoding of ``variable``; xarray's warnings are re-issued naming the user's line.

    Dask-backed Python objects (``datetime.timedelta``, strings) are computed
    first: xarray infers their type only in memory. A ``_FillValue`` on a variable of an ml_dtypes type (``bfloat16`` ...) raises `WriteTypeError`:
    xarray's CF encoder cannot mask those types (its ``notnull`` refuses them with a bare ``TypeError``).
    """
    if "_FillValue" in {**variable.attrs, **variable.encoding} and registered_for_numpy(variable.dtype):
        raise WriteTypeError(
            f"to_zarr3: variable {name!r} is {variable.dtype}, to which xarray's CF encoding cannot apply a "
            "_FillValue; drop _FillValue from its encoding and attributes (the array's fill value, NaN for "
            "the float formats, still marks missing values)"
        )
    variable = _objects_loaded(variable)
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
    stored = StoredTime.of(name, array)
    variable = _objects_loaded(variable)
    if not holds_times(variable, stored.units):
        return encode_variable(variable, name)
    loaded = variable.load() if variable.chunks is None else variable.compute()
    given = given_times(loaded, stored)
    check_calendar(given, stored)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a misfit is refused below, so xarray's unit-switch warning is noise
        try:
            encoded: xr.Variable = encode_zarr_variable(loaded.copy(data=given), name=name, zarr_format=3)
        except (OverflowError, ValueError, TypeError, AttributeError) as exc:  # cftime's, past year 9999
            index, value = _first_unencodable(given, stored)
            what = f"its value {value} (position {index}) cannot be encoded in them ({exc})"
            raise stored.refusal(what, ROUND_FIX) from exc
    misfit = first_misfit(given, np.asarray(encoded.values), stored)
    if misfit is not None:
        counts = _in_stored_units(given, stored)
        index, value = first_misfit(given, counts, stored) or misfit
        what = f"its value {value} (position {index}) {_why(counts.ravel()[index], stored)}"
        raise stored.refusal(what, ROUND_FIX)
    return encoded


def _why(count: float, stored: StoredTime) -> str:
    """Why a time counting ``count`` stored units does not fit."""
    unit = (stored.units or "").split(" since ")[0]
    if np.isnan(count):
        return "does not fit"
    if is_integer(stored.dtype) and not np.iinfo(stored.dtype).min <= count <= np.iinfo(stored.dtype).max:
        return f"is {count:.15g} {unit}, past the range of {stored.dtype}"
    if is_integer(stored.dtype) and count != np.round(count):
        return f"is {count:.15g} {unit}, not a whole number of them"
    return "does not read back the same"


def _first_unencodable(given: np.ndarray, stored: StoredTime) -> tuple[int, object]:
    """(flat position, value) of the first of ``given`` that does not fit or that xarray (or cftime) cannot
    encode at all (a year past 9999 under a ``"days since"`` axis)."""
    flat = given.ravel()
    try:
        found = first_misfit(given, _in_stored_units(given, stored), stored)
    except (OverflowError, ValueError, TypeError, AttributeError):
        found = None
    for index in range(flat.size) if found is None else ():
        if np.isnan(_in_stored_units(flat[index : index + 1], stored)).all():
            return index, flat[index]
    return found or (0, flat[0])


def _in_stored_units(given: np.ndarray, stored: StoredTime) -> np.ndarray:
    """``given`` as float counts of the stored units (never switched to finer ones), NaN where none exists."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if is_timedelta(given.dtype):
                return np.asarray(encode_cf_timedelta(given, stored.units, dtype=np.dtype("float64"))[0])
            float64 = np.dtype("float64")
            return np.asarray(encode_cf_datetime(given, stored.units, stored.calendar, dtype=float64)[0])
        except (OverflowError, ValueError, TypeError, AttributeError):  # AttributeError: cftime's, past 9999
            return np.full(given.shape, np.nan)


def first_misfit(given: np.ndarray, numbers: np.ndarray, stored: StoredTime) -> tuple[int, object] | None:
    """The flat position and value of the first time in ``given`` that the stored ``numbers`` do not hold.

    ``numbers`` (what would be stored) are cast to the stored dtype and
    decoded with the stored attributes (cftime dates for cftime ``given``);
    they must give back every value but the missing ones (stored as the fill
    value). An empty ``given`` fits without decoding. ``None`` when all fit.
    """
    given, flat = np.asarray(given).ravel(), np.asarray(numbers).ravel()
    if given.size == 0:
        return None
    fits = _in_range(flat, stored.dtype)
    if is_integer(stored.dtype) and is_float(flat.dtype):
        fits &= np.where(fits, flat, 0) == np.round(np.where(fits, flat, 0))
    back = _decoded(np.where(fits, flat, 0).astype(stored.dtype), stored, cftime=is_object(given.dtype))
    if back is None:  # stored without time units: reads back as plain numbers
        return 0, given[0]
    same = is_missing(given) | (fits & same_times(given, back))
    if bool(same.all()):
        return None
    index = int(np.argmin(same))
    return index, given[index]


def _decoded(numbers: np.ndarray, stored: StoredTime, cftime: bool) -> np.ndarray | None:
    """``numbers`` decoded with the stored attributes (as cftime dates if asked), ``None`` if not as times."""
    variable = xr.Variable(("n",), numbers, stored.attrs)
    coder = CFDatetimeCoder(use_cftime=True) if cftime else True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            decoded = conventions.decode_cf_variable(
                "time", variable, decode_times=coder, decode_timedelta=True
            )
        except (OverflowError, ValueError, TypeError):
            return None
    back = np.asarray(decoded.values)
    return back if is_time(back.dtype) or is_object(back.dtype) else None


def _in_range(numbers: np.ndarray, stored_dtype: np.dtype) -> np.ndarray:
    """Which ``numbers`` the stored integer type holds (all, for a float type; NaN never for an integer)."""
    if not is_integer(stored_dtype):
        return np.ones(numbers.shape, dtype=bool)
    info = np.iinfo(stored_dtype)
    if is_float(numbers.dtype):
        with np.errstate(invalid="ignore"):
            return np.asarray(
                np.isfinite(numbers) & (numbers >= info.min) & (numbers <= info.max), dtype=bool
            )
    return np.asarray((numbers >= info.min) & (numbers <= info.max), dtype=bool)


def _objects_loaded(variable: xr.Variable) -> xr.Variable:
    """``variable`` computed if it holds Python objects under dask, made as xarray makes in-memory values
    (``datetime.timedelta`` objects become ``timedelta64``, as they do in memory)."""
    if variable.chunks is None or not is_object(variable.dtype):
        return variable
    return xr.Variable(variable.dims, variable.values, variable.attrs, variable.encoding)
