"""What ``to_zarr3`` writes of its input: a DataArray as the one-variable Dataset ``xr.open_dataarray`` reads back."""

from __future__ import annotations

from collections.abc import Hashable

import xarray as xr
from xarray.backends.api import DATAARRAY_NAME

from ...errors import WriteNotImplementedError

#: The node name of a DataArray whose own name cannot be a variable (xarray's placeholder starts with ``__``).
DATAARRAY_VARIABLE = "xarray_dataarray_variable"


def dataarray_as_dataset(array: xr.DataArray) -> xr.Dataset:
    """The DataArray as a one-variable Dataset that ``xr.open_dataarray`` reads back with its name.

    A name that cannot be a variable (``None``, or a coordinate's name) is
    stored in the group attribute ``__xarray_dataarray_name__`` (as xarray's
    engine does) under the valid node name `DATAARRAY_VARIABLE` (xarray's
    own placeholder starts with the reserved ``__``).
    """
    if array.name is not None and array.name not in array.coords and array.name not in array.dims:
        return array.to_dataset()
    name = DATAARRAY_VARIABLE
    while name in array.coords or name in array.dims:
        name = f"_{name}"
    dataset = array.to_dataset(name=name)
    dataset.attrs[DATAARRAY_NAME] = array.name
    return dataset


def as_written(
    obj: xr.Dataset | xr.DataArray | xr.DataTree, append_dim: Hashable | None
) -> xr.Dataset | xr.DataTree:
    """``obj`` as the Dataset or DataTree written; a DataTree cannot be appended to."""
    if isinstance(obj, xr.DataTree) and append_dim is not None:
        raise WriteNotImplementedError(
            f"to_zarr3: append_dim={append_dim!r} is not supported for a DataTree (nor by DataTree.to_zarr); "
            "append each group's Dataset: tree[path].to_dataset().to_zarr3(store, group=path, append_dim=...)"
        )
    return dataarray_as_dataset(obj) if isinstance(obj, xr.DataArray) else obj


def chunked_arrays(obj: xr.Dataset | xr.DataTree) -> list[object]:
    """The chunked arrays (dask, Cubed, ...) of ``obj``'s variables, every group of a DataTree's included."""
    nodes = obj.subtree if isinstance(obj, xr.DataTree) else [obj]
    return [v.data for node in nodes for v in node.variables.values() if v.chunks is not None]
