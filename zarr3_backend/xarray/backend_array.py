"""The lazy array xarray indexes: one call to xarray's explicit-indexing adapter.

Basic and outer (orthogonal) indexers map straight onto
``zarr3_backend.Array.oindex``, which reads only the chunks (inner chunks,
for sharded arrays) a selection touches; xarray's adapter turns vectorized
indexing into an outer read plus an in-memory step.

``await ds.load_async()`` reaches `Zarr3BackendArray.async_getitem()`,
which runs the same read in a worker thread (``asyncio.to_thread``), so the
reads of many variables overlap: loading N variables takes about as long as
the slowest one. The engine's `Array` is kept as
``zarr_array``, not ``array``: xarray follows ``.array`` attributes through
its own wrapper types.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import numpy as np
from xarray.backends.common import BackendArray
from xarray.core import indexing

from ..nodes.array import Array


def variable_dtype(array: Array) -> np.dtype:
    """The dtype xarray sees: numpy's ``StringDType`` for the ``string`` data type, as engine="zarr" does."""
    if array.metadata.data_type.name == "string":
        return np.dtypes.StringDType()
    return array.dtype


class Zarr3BackendArray(BackendArray):
    """A `zarr3_backend.Array` as an xarray backend array (pickles with its array).

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/backend_array", shape=(4,), dtype="int8")
    >>> Zarr3BackendArray(a)[indexing.BasicIndexer((slice(1, 3),))].tolist()
    [0, 0]
    """

    __slots__ = ("dtype", "shape", "zarr_array")

    def __init__(self, array: Array) -> None:
        self.zarr_array = array
        self.shape = array.shape
        self.dtype = variable_dtype(array)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        result = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read
        )
        return cast(np.ndarray, result)  # xarray types the adapter's result as Any

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        """`__getitem__()` in a worker thread, so that many reads run at once."""
        result = await indexing.async_explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read_async
        )
        return cast(np.ndarray, result)  # as above

    async def _read_async(self, key: tuple[Any, ...]) -> np.ndarray:
        return await asyncio.to_thread(self._read, key)

    def _read(self, key: tuple[Any, ...]) -> np.ndarray:
        return np.asarray(self.zarr_array.oindex[key], dtype=self.dtype)
