"""Refuse ``to_zarr3`` writes that would damage a store, before anything is written.

Each check raises a `WriteError` (a ``ValueError``) or `WriteTypeError` naming
the variable and the fix: variable names (valid node names without ``/``),
appends (every stored variable with the append dimension, nothing the store
lacks), fixed-length strings that would be truncated, and the values of
``mode``, ``zarr_format`` and ``progress``. What a write coordinates with
other writers is checked by `zarr3_backend.coordination.guards`.

>>> import numpy as np, xarray as xr
>>> check_names(xr.Dataset({"a/b": ("x", np.arange(2))}))
Traceback (most recent call last):
...
zarr3_backend.errors.WriteError: to_zarr3: variable name 'a/b' contains '/', which would make a nested group; rename it (e.g. ds.rename({'a/b': 'a_b'}))
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import xarray as xr

from ...api import WRITE_MODES, WriteMode
from ...core.dtypes.kinds import is_fixed_size_text, is_object, is_text_like, is_unicode
from ...errors import NodeNameError, WriteError, WriteTypeError
from ...nodes.array import Array
from ...nodes.paths import unstorable_name, validate_node_name
from ...store.base import Store

PROGRESS_VALUES = (False, True, "tqdm")


def check_names(ds: xr.Dataset, store: Store | None = None, path: str = "") -> None:
    """Every variable name is a non-empty string without ``/`` (``TypeError`` for non-strings, as xarray).

    ``None``, which xarray's engine stores as ``__values__``, is refused too:
    the Zarr v3 spec reserves node names starting with ``__``. So are names
    the ``store`` cannot hold as a directory: a metadata document's name
    (``zarr.json``), our temporary files' prefix, and (local files) names
    longer than the file system allows; ``path``'s groups are checked alike.
    """
    for group in filter(None, path.split("/")):
        if problem := unstorable_name(group, store):
            raise WriteError(
                f"to_zarr3: group {group!r} cannot be stored: it {problem}; choose another group="
            )
    for name in ds.variables:
        if name is None:
            raise WriteTypeError(
                "to_zarr3: a variable is named None, which engine='zarr' stores as '__values__', a node name the "
                "Zarr v3 spec reserves ('__' prefix); rename it (e.g. ds.rename({None: 'values'}))"
            )
        if not isinstance(name, str):
            raise WriteTypeError(
                f"to_zarr3: variable names must be strings, got {type(name).__name__} {name!r}; rename it (ds.rename(...))"
            )
        if not name:
            raise WriteError("to_zarr3: variable names must be non-empty strings, got ''")
        if "/" in name:
            raise WriteError(
                f"to_zarr3: variable name {name!r} contains '/', which would make a nested group; "
                f"rename it (e.g. ds.rename({{{name!r}: {name.replace('/', '_')!r}}}))"
            )
        try:
            validate_node_name(name)
        except NodeNameError as exc:
            raise WriteError(
                f"to_zarr3: variable {name!r} cannot be stored: {exc}; rename it (ds.rename(...))"
            ) from exc
        if problem := unstorable_name(name, store):
            raise WriteError(
                f"to_zarr3: variable {name!r} cannot be stored: it {problem}; rename it (ds.rename(...))"
            )


def check_append(ds: xr.Dataset, existing: Mapping[str, Array], append_dim: Hashable, where: str) -> None:
    """There is something to append to, and the variables with ``append_dim`` in ``ds`` and stored are the same."""
    if not existing:
        raise WriteError(
            f"to_zarr3: append_dim={append_dim!r}, but there is nothing to append to at {where}: no arrays there. "
            "Write the first part without append_dim (mode='w-', which writes only into an empty location), then append"
        )
    stored_dims = {d for a in existing.values() for d in a.dimension_names or ()}
    if append_dim not in stored_dims:
        raise WriteError(
            f"to_zarr3: append_dim={append_dim!r} is not a dimension of the arrays in {where} "
            f"(their dimensions: {sorted(map(str, stored_dims))})"
        )
    missing = sorted(
        n for n, a in existing.items() if append_dim in (a.dimension_names or ()) and n not in ds.variables
    )
    if missing:
        raise WriteError(
            f"to_zarr3: the append along {append_dim!r} leaves out {missing}, which have {append_dim!r} in {where}; "
            "they would end up shorter than the rest and the store unreadable. Include them in the dataset"
        )
    new = sorted(str(n) for n, v in ds.variables.items() if append_dim in v.dims and n not in existing)
    if new:
        raise WriteError(
            f"to_zarr3: the append along {append_dim!r} brings {new}, which {where} lacks; created by the append "
            f"they would hold only the appended rows and the store would no longer open. Add them first at the "
            f"stored length with mode='a' and no append_dim (e.g. ds_full[{new}].to_zarr3(store, mode='a')), "
            "then append"
        )


def check_fits(name: str, var: xr.Variable, array: Array) -> xr.Variable:
    """``var`` (before CF encoding), refused if its strings do not fit the fixed-length ``array`` (or a numeric one).

    In-memory strings are measured now. Dask-backed object strings are returned
    wrapped so that each block is measured in its write task, before it is cast
    to the stored type; a block that does not fit fails the write (an append is
    then rolled back).
    """
    stored = array.dtype
    if is_fixed_size_text(var.dtype) and not is_text_like(stored):
        raise WriteError(
            f"to_zarr3: variable {name!r} holds strings ({var.dtype.str}), but the stored array has data type "
            f"{stored}; convert them (ds[name].astype({str(stored)!r})) or rewrite the whole group with mode='w' (which deletes everything stored in it first)"
        )
    if not is_fixed_size_text(stored) or not (is_fixed_size_text(var.dtype) or is_object(var.dtype)):
        return var
    have = _length(stored)
    if is_object(var.dtype) and var.chunks is not None:
        return var.copy(
            data=var.data.map_blocks(_fitting, name, have, stored.str, dtype=var.dtype), deep=False
        )
    _refuse_longer(
        name, _needed(np.asarray(var.data) if is_object(var.dtype) else var.dtype), have, stored.str
    )
    return var


def _fitting(block: np.ndarray, name: str, have: int, stored: str) -> np.ndarray:
    _refuse_longer(name, _needed(block), have, stored)
    return block


def _refuse_longer(name: str, need: int, have: int, stored: str) -> None:
    if need > have:
        raise WriteError(
            f"to_zarr3: variable {name!r} holds strings of up to {need} characters, but the stored array has "
            f"fixed length {have} ({stored}); they would be truncated. Shorten them, or rewrite the variable "
            "as variable-length strings (ds[name].astype(object)) by rewriting the whole group with mode='w' "
            "(which deletes everything stored in it first)"
        )


def _needed(values: np.ndarray | np.dtype) -> int:
    if isinstance(values, np.dtype):
        return _length(values)
    return max((len(v) for v in values.ravel() if isinstance(v, str | bytes)), default=0)


def _length(dtype: np.dtype) -> int:
    return dtype.itemsize // 4 if is_unicode(dtype) else dtype.itemsize


def check_format(zarr_format: int | None) -> None:
    """Only Zarr v3 is written: ``zarr_format`` is ``None`` or ``3``."""
    if zarr_format not in (None, 3):
        raise WriteError(
            f"to_zarr3: zarr_format={zarr_format!r} is not supported; zarr3_backend writes Zarr v3 only and reads "
            "Zarr v2 read-only (pass zarr_format=3 or leave it out; to move a Zarr v2 store to v3 run "
            "'zarr3 convert SRC DST'; to write Zarr v2 use ds.to_zarr(..., zarr_format=2))"
        )


def parse_mode(mode: WriteMode | None, append_dim: Hashable | None, region: object) -> WriteMode:
    """``mode``, or its default (``"a"`` with ``append_dim``, ``"r+"`` with ``region``, else ``"w-"``), checked."""
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in WRITE_MODES:
        raise WriteError(f"to_zarr3: mode must be one of {', '.join(map(repr, WRITE_MODES))}, got {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise WriteError(f"to_zarr3: append_dim needs mode='a' or 'a-' (or None), got mode={mode!r}")
    if region is not None and mode not in ("a", "a-", "r+"):
        raise WriteError(f"to_zarr3: region needs mode='r+', 'a' or 'a-' (or None), got mode={mode!r}")
    return mode


def check_progress(progress: object) -> None:
    """``progress`` is one of `PROGRESS_VALUES`."""
    if not any(progress is v or (isinstance(v, str) and progress == v) for v in PROGRESS_VALUES):
        raise WriteError(
            f"to_zarr3: progress must be False, True (dask's or distributed's bar) or 'tqdm', got {progress!r}"
        )
