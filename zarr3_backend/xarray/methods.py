"""``Dataset.to_zarr3``, ``DataArray.to_zarr3``, ``DataTree.to_zarr3`` and `open_zarr3()`.

After ``import zarr3_backend`` (with xarray installed) every Dataset,
DataArray and DataTree has a ``to_zarr3`` method. It is registered with
xarray's supported extension mechanism, ``xarray.register_*_accessor``: the
accessor object is callable, so ``ds.to_zarr3(...)`` reads like a method, and
it carries `to_zarr3()`'s signature
(without ``obj``) and docstring, so ``help(ds.to_zarr3)`` shows them.
Positional arguments follow xarray's ``to_zarr`` of the same type:
``store, mode, group, encoding`` for Datasets and DataArrays and
``store, mode, encoding, consolidated, group, write_inherited_coords, compute``
for DataTrees.

>>> import numpy as np, xarray as xr, zarr3_backend
>>> xr.Dataset({"t": ("x", np.arange(3.0))}).to_zarr3("memory://doc/methods", "w")
>>> open_zarr3("memory://doc/methods").t.chunks
((3,),)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import xarray as xr

if TYPE_CHECKING:
    from xarray.backends.common import T_PathFileOrDataStore

    from ..writes.executor import Deferred
    from .root import Location


def _planned_to_zarr3() -> Callable[..., Deferred | None]:
    """`to_zarr3()` itself: the write wing (planner, encodings, writes) is imported at the first write."""
    from .write.planner import to_zarr3

    return to_zarr3


def _signature(to_zarr3: Callable[..., Deferred | None], order: tuple[str, ...]) -> inspect.Signature:
    """``to_zarr3``'s signature without ``obj``: ``order`` positional-or-keyword, the rest keyword-only."""
    signature = inspect.signature(to_zarr3)
    by_name = {p.name: p for p in list(signature.parameters.values())[1:]}
    positional = [by_name[n].replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in order]
    rest = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for n, p in by_name.items() if n not in order]
    return inspect.Signature([*positional, *rest], return_annotation=signature.return_annotation)


class ToZarr3:
    """``ds.to_zarr3(...)`` / ``da.to_zarr3(...)``: `to_zarr3()` of the object it is bound to."""

    order: tuple[str, ...] = ("store", "mode", "group", "encoding")

    def __init__(self, obj: xr.Dataset | xr.DataArray | xr.DataTree) -> None:
        _document(type(self))
        self._obj = obj

    def __call__(self, *args: object, **kwargs: object) -> Deferred | None:
        signature = inspect.signature(type(self).__call__)  # the __signature__ _document gave it
        arguments = signature.bind(self, *args, **kwargs).arguments
        del arguments["self"]
        return _planned_to_zarr3()(self._obj, **arguments)


class DataTreeToZarr3(ToZarr3):
    """``tree.to_zarr3(...)``: positional arguments in ``DataTree.to_zarr``'s order."""

    order = ("store", "mode", "encoding", "consolidated", "group", "write_inherited_coords", "compute")

    def __call__(self, *args: object, **kwargs: object) -> Deferred | None:
        return super().__call__(*args, **kwargs)


class _FromToZarr3:
    """An accessor class's ``__doc__`` or ``__signature__`` until first read, then `to_zarr3()`'s.

    Class attributes, so ``help(xr.Dataset.to_zarr3)`` and ``inspect.signature`` work before any
    accessor exists; reading one documents the class (`_document`), which replaces both.
    """

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, obj: object, owner: type[ToZarr3]) -> object:
        _document(owner)
        return vars(owner)[self.attribute]


def _document(cls: type[ToZarr3]) -> None:
    """Give the accessor ``to_zarr3``'s docstring and call signature, for ``help()`` and ``inspect`` (once)."""
    if not isinstance(vars(cls).get("__signature__"), _FromToZarr3):
        return
    to_zarr3 = _planned_to_zarr3()
    call = _signature(to_zarr3, cls.order)
    self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    type.__setattr__(cls, "__doc__", to_zarr3.__doc__)
    cls.__call__.__doc__ = to_zarr3.__doc__
    cls.__call__.__signature__ = call.replace(  # type: ignore[attr-defined]
        parameters=[self, *call.parameters.values()]
    )
    type.__setattr__(cls, "__signature__", call)


for _accessor in (ToZarr3, DataTreeToZarr3):
    for _attribute in ("__doc__", "__signature__"):
        type.__setattr__(_accessor, _attribute, _FromToZarr3(_attribute))


def open_zarr3(store: Location, **kwargs: Any) -> xr.Dataset:
    """``xr.open_dataset(store, engine="zarr3", chunks={})``: lazy dask arrays, one chunk per stored shard.

    Keyword arguments go to `xarray.open_dataset()` (``group``,
    ``storage_options``, ``decode_times`` ...); ``chunks`` may override ``{}``.
    """
    kwargs.setdefault("chunks", {})
    # xarray types open_dataset's first argument for its own engines; it hands it to ours untouched.
    return xr.open_dataset(cast("T_PathFileOrDataStore", store), engine="zarr3", **kwargs)


def register() -> None:
    """Give Dataset, DataArray and DataTree a ``to_zarr3`` method (idempotent)."""
    # xarray leaves the register_*_accessor functions unannotated; this names their shape.
    registrations: tuple[
        tuple[type, Callable[[str], Callable[[type[ToZarr3]], object]], type[ToZarr3]], ...
    ] = (
        (xr.Dataset, xr.register_dataset_accessor, ToZarr3),
        (xr.DataArray, xr.register_dataarray_accessor, ToZarr3),
        (xr.DataTree, xr.register_datatree_accessor, DataTreeToZarr3),
    )
    for cls, register_accessor, accessor in registrations:
        if "to_zarr3" not in vars(cls):
            register_accessor("to_zarr3")(accessor)


register()
