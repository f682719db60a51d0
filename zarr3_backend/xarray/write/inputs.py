"""What ``to_zarr3`` makes of its input: the Dataset written, its chunked arrays, and what identifies the request.

A DataArray is written as the one-variable Dataset ``xr.open_dataarray``
reads back (`as_written`). A request is recognised by its `fingerprint`
(re-running the same write completes an unfinished one) and its
`request_token` (a retried append, data included, is not appended twice).

>>> import xarray as xr
>>> fingerprint(xr.Dataset({"t": ("x", [1.0])}), "") == fingerprint(xr.Dataset({"t": ("x", [2.0])}), "")
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable

import xarray as xr
from xarray.backends.api import DATAARRAY_NAME

from ...errors import WriteNotImplementedError
from ...writes.executor import Executor
from ...writes.plan import WriteOptions

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


def fingerprint(obj: xr.Dataset | xr.DataTree, path: str) -> str:
    """What makes a re-run "the same write": the group path and every group's variable names, dimensions, shapes, types."""
    datasets = (
        {".": obj} if isinstance(obj, xr.Dataset) else {p: node.dataset for p, node in obj.subtree_with_keys}
    )
    described = [
        path,
        sorted(
            [
                p,
                sorted(
                    [str(n), [str(d) for d in v.dims], list(v.shape), v.dtype.str]
                    for n, v in ds.variables.items()
                ),
            ]
            for p, ds in datasets.items()
        ),
    ]
    return hashlib.sha256(json.dumps(described).encode()).hexdigest()[:32]


def request_token(
    executor: Executor, obj: xr.Dataset | xr.DataTree, path: str, options: WriteOptions, encoding: object
) -> str:
    """A deterministic token of the write request (data included), to recognise a retry."""
    return executor.token(obj, path, options.mode, options.append_dim, options.region, encoding)
