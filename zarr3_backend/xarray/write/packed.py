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
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from ...core.dtypes.kinds import category_of, is_integer, is_numpy_real_number
from ...errors import WriteError

if TYPE_CHECKING:
    from dask.array import Array as DaskArray

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
    name: str, var: xr.Variable, stored_dtype: np.dtype | None, *, now: bool = False
) -> tuple[xr.Variable, DaskArray | None]:
    """``var`` (before CF encoding, carrying the stored encoding), refused when a value would not pack.

    Checked: numbers going into an integer array (``stored_dtype``, or for a
    new array the encoding's ``dtype``) that are packed
    (``scale_factor``/``add_offset``) or of another dtype; complex values
    into any integer array, and bools into a packed one, are refused
    outright. In-memory values are checked now. Dask-backed ones are
    returned wrapped so that each block is checked in the task computing
    it, before it is cast, and with a dask array of one bool per block
    (``None`` for in-memory values): a write that must not start before
    every block fits (over stored values) waits for it, so the blocks
    checked are the blocks written, computed once. ``now`` (a
    ``mode="w"`` that deletes the group before writing) also checks them
    before returning, by computing them once more.
    """
    packing = Packing.of({**var.encoding, "dtype": stored_dtype or var.encoding.get("dtype")})
    category = category_of(var.dtype) if isinstance(var.dtype, np.dtype) else "object"
    if packing is not None and (category == "complex" or (category == "bool" and _scaled(var))):
        raise WriteError(_kind_message(name, var, packing))
    numeric = isinstance(var.dtype, np.dtype) and is_numpy_real_number(var.dtype)
    if packing is None or not numeric or not _packs(var, packing):
        return var, None
    if var.chunks is None:
        _checked(np.asarray(var.values), name, packing)
        return var, None
    checked = var.data.map_blocks(_checked, name, packing, dtype=var.dtype)
    ones = tuple((1,) * len(sizes) for sizes in var.data.chunks)
    fits = checked.map_blocks(_fits, chunks=ones, dtype=bool)
    if now:
        var.data.map_blocks(_checked_fits, name, packing, chunks=ones, dtype=bool).compute()
    return var.copy(data=checked, deep=False), fits


def _checked_fits(block: np.ndarray, name: str, packing: Packing) -> np.ndarray:
    return _fits(_checked(block, name, packing))


def _fits(block: np.ndarray) -> np.ndarray:
    """A checked block's mark: one ``True`` per dimension (nothing of the block is held)."""
    return np.ones((1,) * block.ndim, dtype=bool)


def _packs(var: xr.Variable, packing: Packing) -> bool:
    """Whether encoding changes ``var``'s numbers: packed, or cast to another dtype."""
    return _scaled(var) or var.dtype != packing.dtype


def _scaled(var: xr.Variable) -> bool:
    return any(k in var.encoding for k in PACKING_KEYS)


def _kind_message(name: str, var: xr.Variable, packing: Packing) -> str:
    kind = "complex" if category_of(var.dtype) == "complex" else "bool"
    fix = "ds[name].real (or abs(...))" if kind == "complex" else "ds[name].astype('float64')"
    return (
        f"to_zarr3: variable {name!r} holds {kind} values ({var.dtype}), but is stored as {packing.dtype} "
        f"(scale_factor={packing.scale_factor!r}, add_offset={packing.add_offset!r}), which cannot hold them "
        f"(xarray would store {'their real part, wrapped around' if kind == 'complex' else 'nothing: it fails'}). "
        f"Nothing was written. Convert them first ({fix}), or write the variable elsewhere "
        "with a dtype that holds them (encoding=...)"
    )


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
