"""Numbers written into a stored integer array fit it, or the write is refused.

xarray packs values with the stored ``scale_factor`` and ``add_offset``,
rounds them and casts them to the stored integer dtype: a value outside the
dtype's range wraps around (``int8``: 300 reads back as 44), one that packs to
the fill value reads back as missing, and a missing value without a fill
value becomes an arbitrary integer. `check_packed()` refuses such values,
naming the variable, the values that fit and the first that does not.

>>> import numpy as np
>>> packing = Packing(np.dtype("int8"), scale_factor=0.5, add_offset=0.0, fill_value=-128)
>>> packing.first_misfit(np.array([1.0, 70.0]))
(1, np.float64(70.0), 140.0)
>>> packing.fitting_range()
'-64 to 63.5 (the fill value -128 aside)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ...core.dtypes.kinds import is_integer, is_numpy_real_number
from ...errors import WriteError

PACKING_KEYS = ("scale_factor", "add_offset")


@dataclass(frozen=True)
class Packing:
    """How values are stored in an integer ``dtype``: ``(value - add_offset) / scale_factor``, rounded;
    missing values as ``fill_value`` (``None``: there is none)."""

    dtype: np.dtype
    scale_factor: float = 1.0
    add_offset: float = 0.0
    fill_value: int | None = None

    @classmethod
    def of(cls, encoding: dict[str, Any]) -> Packing | None:
        """The packing an encoding (the stored one) gives an integer ``dtype``; ``None`` for any other."""
        dtype = encoding.get("dtype")
        if dtype is None or not is_integer(np.dtype(dtype)):
            return None
        dtype = np.dtype(dtype)
        fill = encoding.get("_FillValue", encoding.get("missing_value"))
        fill = None if fill is None else int(np.asarray(fill).ravel()[0])
        if str(encoding.get("_Unsigned", "")).lower() == "true":  # NetCDF's unsigned values in signed storage
            dtype = np.dtype(f"u{dtype.itemsize}")
            fill = None if fill is None else fill % (1 << (8 * dtype.itemsize))
        scale_factor, add_offset = encoding.get("scale_factor", 1.0), encoding.get("add_offset", 0.0)
        return cls(dtype, float(scale_factor), float(add_offset), fill)

    def first_misfit(self, values: np.ndarray) -> tuple[int, object, float] | None:
        """(flat position, value, packed value) of the first of ``values`` that does not pack; ``None`` if all do."""
        flat = np.asarray(values).ravel()
        with np.errstate(invalid="ignore", over="ignore"):
            packed = np.round((flat.astype("float64") - self.add_offset) / self.scale_factor)
        info = np.iinfo(self.dtype)
        missing = np.isnan(packed) & np.isnan(flat.astype("float64"))
        with np.errstate(invalid="ignore"):
            fits = (packed >= info.min) & (packed <= info.max) & (packed != self.fill_value)
        fits |= missing & (self.fill_value is not None)
        if bool(fits.all()):
            return None
        index = int(np.argmin(fits))
        return index, flat[index], float(packed[index])

    def fitting_range(self) -> str:
        """The values that pack, in the variable's units."""
        info = np.iinfo(self.dtype)
        ends = sorted(v * self.scale_factor + self.add_offset for v in (float(info.min), float(info.max)))
        aside = f" (the fill value {self.fill_value} aside)" if self.fill_value is not None else ""
        return f"{ends[0]:g} to {ends[1]:g}{aside}"


def check_packed(
    name: str, var: xr.Variable, stored_dtype: np.dtype | None, *, in_place: bool = False
) -> xr.Variable:
    """``var`` (before CF encoding, carrying the stored encoding), refused when a value would not pack.

    Checked: numbers going into an integer array (``stored_dtype``, or for a
    new array the encoding's ``dtype``) that are packed
    (``scale_factor``/``add_offset``) or of another dtype. In-memory values are
    checked now, and so are dask-backed ones written ``in_place`` (over stored
    values: a failing write task would leave the others' blocks written), by
    computing them once for the check. Other dask-backed ones (appended rows,
    new arrays) are returned wrapped so that each block is checked in its
    write task, before it is cast (the write then fails; an append is rolled back).
    """
    packing = Packing.of({**var.encoding, "dtype": stored_dtype or var.encoding.get("dtype")})
    numeric = isinstance(var.dtype, np.dtype) and is_numpy_real_number(var.dtype)
    if packing is None or not numeric or not _packs(var, packing):
        return var
    if var.chunks is not None and not in_place:
        checked = var.data.map_blocks(_checked, name, packing, dtype=var.dtype)
        return var.copy(data=checked, deep=False)
    if var.chunks is not None:
        ones = tuple((1,) * len(sizes) for sizes in var.data.chunks)
        var.data.map_blocks(_fits, name, packing, chunks=ones, dtype=bool).compute()  # nothing is held
        return var
    _checked(np.asarray(var.values), name, packing)
    return var


def _fits(block: np.ndarray, name: str, packing: Packing) -> np.ndarray:
    _checked(block, name, packing)
    return np.ones((1,) * block.ndim, dtype=bool)


def _packs(var: xr.Variable, packing: Packing) -> bool:
    """Whether encoding changes ``var``'s numbers: packed, or cast to another dtype."""
    return any(k in var.encoding for k in PACKING_KEYS) or var.dtype != packing.dtype


def _checked(block: np.ndarray, name: str, packing: Packing) -> np.ndarray:
    misfit = packing.first_misfit(block)
    if misfit is None:
        return block
    index, value, packed = misfit
    how = ", ".join(f"{k}={getattr(packing, k)!r}" for k in PACKING_KEYS)
    what = "is missing and there is no fill value" if np.isnan(packed) else f"packs to {packed:g}"
    raise WriteError(
        f"to_zarr3: variable {name!r} is stored as {packing.dtype} ({how}), which holds values from "
        f"{packing.fitting_range()}; its value {value} (position {index}) {what}, and would read back as "
        "a different number. Nothing was written. Clip or mask those values (ds[name].clip(...)), or rewrite "
        "the variable with a wider dtype or another scale_factor/add_offset (encoding=...) with mode='w'"
    )
