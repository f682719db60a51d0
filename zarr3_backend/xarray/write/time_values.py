"""What times a write brings, and whether they name the same days as a stored time axis.

Values are numpy datetimes or timedeltas, or cftime dates of one calendar
(numpy's datetimes are proleptic Gregorian). Timezone-aware values, values of
several kinds or calendars, and values that are not times are refused. Dates
of one calendar go into an axis of another only within the Gregorian family
(``standard``, ``proleptic_gregorian``) and from 1582-10-15 on, where both name
the same days; a ``360_day`` or ``noleap`` date has no such day in ``standard``.

>>> import numpy as np
>>> same_times(np.array(["2000-01-01"], "M8[s]"), np.array(["2000-01-01"], "M8[ns]"))
array([ True])
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from xarray.core.common import contains_cftime_datetimes

from ...core.dtypes.kinds import category_of, is_datetime, is_object, is_time, is_timedelta
from ...errors import WriteError
from ...nodes.array import Array

CF_TIME_ATTRIBUTES = ("units", "calendar")
GREGORIAN = frozenset({"standard", "proleptic_gregorian"})
REFORM = (1582, 10, 15)  # before it "standard" dates are Julian, numpy's proleptic Gregorian
CALENDAR_ALIASES = {"gregorian": "standard", "365_day": "noleap", "366_day": "all_leap"}
NUMPY_CALENDAR = "proleptic_gregorian"
KINDS_FIX = (
    "Make them one kind: cftime dates of the stored calendar (e.g. xr.date_range(..., calendar=..., "
    "use_cftime=True)) or numpy datetime64 values"
)
TZ_FIX = (
    "Drop the time zone first, e.g. ds = ds.assign_coords(time=ds.indexes['time'].tz_convert(None)) "
    "for naive UTC times"
)


@dataclass(frozen=True)
class StoredTime:
    """A stored array as times are encoded into it: the variable's name, CF ``units``, ``calendar``, ``dtype``."""

    name: str
    units: str | None
    calendar: str
    dtype: np.dtype

    @classmethod
    def of(cls, name: str, array: Array) -> StoredTime:
        """The stored ``units`` and ``calendar`` attributes (CF's default calendar: ``"standard"``)."""
        attributes = array.metadata.attributes
        units = attributes.get("units")
        calendar = canonical_calendar(str(attributes.get("calendar") or "standard"))
        return cls(name, units if isinstance(units, str) else None, calendar, array.dtype)

    @property
    def attrs(self) -> dict[str, Any]:
        """The attributes decoding reads (``units`` only when stored)."""
        return {"units": self.units, "calendar": self.calendar} if self.units else {}

    def refusal(self, what: str, fix: str) -> WriteError:
        """A `WriteError` naming the variable, its stored encoding, ``what`` does not fit and the ``fix``."""
        return WriteError(
            f"to_zarr3: variable {self.name!r} is stored as {self.dtype} with units {self.units or '(none)'!r} "
            f"and calendar {self.calendar!r}, and {what}: it would read back as a different time. "
            f"Nothing was written. {fix.format(name=self.name)}"
        )


def canonical_calendar(name: str) -> str:
    """CF's calendar ``name`` lower-cased, aliases to one name (``gregorian`` → ``standard``)."""
    lowered = name.lower()
    return CALENDAR_ALIASES.get(lowered, lowered)


def is_datetime_units(units: str | None) -> bool:
    """Whether ``units`` are CF datetime units (``"<unit> since <date>"``)."""
    return units is not None and " since " in units


def holds_times(variable: xr.Variable, units: str | None) -> bool:
    """Whether ``variable``'s values are (meant as) times: datetime or timedelta dtypes, or objects that
    go into a datetime axis (``units``) or are cftime dates (in memory)."""
    dtype = variable.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        return True
    if not isinstance(dtype, np.dtype) or not (is_time(dtype) or is_object(dtype)):
        return False
    if not is_object(dtype) or is_datetime_units(units):
        return True
    return variable.chunks is None and bool(contains_cftime_datetimes(variable))


def given_times(variable: xr.Variable, stored: StoredTime) -> np.ndarray:
    """``variable``'s (loaded) values as one kind of time: numpy datetimes/timedeltas or cftime objects.

    Refused (`WriteError`): timezone-aware values, values of several kinds
    or calendars, and values that are not times.
    """
    if isinstance(variable.dtype, pd.DatetimeTZDtype):
        first = pd.Series(np.ravel(variable.data)).iloc[0]  # keeps the time zone, unlike .values
        raise stored.refusal(f"its value {first} (position 0) is timezone-aware ({variable.dtype})", TZ_FIX)
    values = np.asarray(variable.values)
    if not is_object(values.dtype):
        return values
    kinds = [_kind(v) for v in values.ravel()]
    if "timezone-aware" in kinds:
        index = kinds.index("timezone-aware")
        raise stored.refusal(
            f"its value {values.ravel()[index]!r} (position {index}) is timezone-aware", TZ_FIX
        )
    present = sorted({k for k in kinds if k != "missing"})
    if len(present) > 1:
        index = next(i for i, k in enumerate(kinds) if k == present[-1])
        what = f"its values mix {', '.join(present)} (e.g. {values.ravel()[index]!r} at position {index})"
        raise stored.refusal(what, KINDS_FIX)
    if present and not present[0].startswith(("cftime", "datetime")):
        index = kinds.index(present[0])
        raise stored.refusal(
            f"its value {values.ravel()[index]!r} (position {index}) is not a time", KINDS_FIX
        )
    return values.astype("datetime64[us]") if present == ["datetime"] else values


def _kind(value: object) -> str:
    """``"missing"``, ``"timezone-aware"``, ``"cftime <calendar>"``, ``"datetime"`` (naive), else the type."""
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "missing"
    if isinstance(value, np.datetime64 | np.timedelta64) and np.isnat(value):
        return "missing"
    if isinstance(value, datetime.datetime):
        return "datetime" if value.tzinfo is None else "timezone-aware"
    if isinstance(value, np.datetime64):
        return "datetime"
    calendar = _cftime_calendar(value)
    return f"cftime {calendar}" if calendar is not None else type(value).__name__


def _cftime_calendar(value: object) -> str | None:
    """The canonical calendar of a cftime date, ``None`` for anything else."""
    cftime_datetime = _cftime_class()
    if cftime_datetime is None or not isinstance(value, cftime_datetime):
        return None
    date: Any = value  # a cftime date (cftime ships no types)
    return canonical_calendar(date.calendar or "standard")


@cache
def _cftime_class() -> type | None:
    """``cftime.datetime``, the base class of every cftime date; ``None`` without cftime."""
    try:
        import cftime
    except ImportError:
        return None
    return cftime.datetime  # type: ignore[no-any-return]  # cftime ships no types


def check_calendar(given: np.ndarray, stored: StoredTime) -> None:
    """Refuse dates that the stored calendar cannot hold as the same days (see the module's rule)."""
    if is_timedelta(given.dtype) or not is_datetime_units(stored.units):
        return
    flat = given.ravel()
    present = np.flatnonzero(~is_missing(flat))
    if not present.size:
        return
    first = flat[present[0]]
    calendar = NUMPY_CALENDAR if is_datetime(given.dtype) else _cftime_calendar(first)
    if calendar == stored.calendar:
        return
    if calendar in GREGORIAN and stored.calendar in GREGORIAN:
        early = [i for i in present if (_fields(flat[i]) or REFORM) < REFORM]
        if not early:
            return
        index, first = early[0], flat[early[0]]
        what = f"its value {first} (position {index}) is before 1582-10-15, where the calendars differ"
    else:
        what = f"its value {first} (position {present[0]}) is a {calendar} date, not a {stored.calendar} one"
    raise stored.refusal(
        what,
        f"Convert the dates first (ds.convert_calendar({stored.calendar!r}, use_cftime=True)), or rewrite "
        "the variable in their calendar with mode='w'",
    )


def is_missing(values: np.ndarray) -> np.ndarray:
    """Which ``values`` are missing (NaT, ``None`` or NaN): stored as the fill value."""
    if is_time(values.dtype):
        return np.asarray(np.isnat(values), dtype=bool)
    return np.array([_kind(v) == "missing" for v in values.ravel()], dtype=bool).reshape(values.shape)


def same_times(given: np.ndarray, back: np.ndarray) -> np.ndarray:
    """Which of the flat ``given`` times ``back`` holds exactly: numpy values compared as such, else by
    their fields to the microsecond (numpy datetimes finer than that are not held)."""
    if is_time(given.dtype) and category_of(back.dtype) == category_of(given.dtype):
        return np.asarray(given == back, dtype=bool)
    if is_datetime(given.dtype):
        exact = given.astype("datetime64[us]")
        held = np.array([_fields(g) == _fields(b) for g, b in zip(exact, back)], dtype=bool)
        return np.asarray(held & (exact == given), dtype=bool)
    return np.array([_fields(g) == _fields(b) for g, b in zip(given, back)], dtype=bool)


def _fields(value: object) -> tuple[int, ...] | None:
    """(year, month, day, hour, minute, second, microsecond) of a Python, numpy or cftime date, else ``None``."""
    if isinstance(value, np.datetime64):
        value = value.astype("datetime64[us]").astype(object)
    if not isinstance(value, datetime.datetime) and _cftime_calendar(value) is None:
        return None
    v: datetime.datetime = value  # type: ignore[assignment]  # cftime dates have the same fields
    return (v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)
