"""The xarray data store: raw variables, attributes and encoding of one Zarr v3 group.

Building a store costs the group's metadata only (one listing plus one
batched fetch of the children's ``zarr.json``, or nothing beyond the group's
own document when it carries consolidated metadata). Index coordinates, the
1-D arrays named like their dimension that xarray loads anyway to build
indexes, are read for many stores at once with one batched
`read_many()`; on object storage, a coordinate
whose ``zarr.json`` arrives while other members' are still being fetched is
read right away instead. Every other variable stays lazy. CF decoding is
left to xarray.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, wait
from functools import cached_property, partial
from typing import Any

import numpy as np
from xarray.backends.common import AbstractDataStore
from xarray.core import indexing
from xarray.core.utils import Frozen, FrozenDict
from xarray.core.variable import Variable

from ..coordination.records import APPENDING_ATTRIBUTE, UNFINISHED_ATTRIBUTE
from ..core.metadata.v2 import V2ArrayMetadata
from ..errors import CodecError, UnknownExtensionError
from ..nodes.array import Array
from ..nodes.array_kinds import explain_stale
from ..nodes.hierarchy import Group
from ..nodes.reads import ReadResult, is_remote, read_many
from ..runtime import submit_io
from .backend_array import Zarr3BackendArray, variable_dtype
from .dims import DIMENSION_KEY, array_dims, group_dims
from .read_encoding import (
    PreferredChunks,
    decode_fill_value,
    preferred_chunks,
    shared_chunk_sizes,
    shared_v2_task_chunks,
    variable_encoding,
)


class Zarr3DataStore(AbstractDataStore):
    """One group as xarray sees it (read-only).

    ``fill_value_as_mask``: an array's ``fill_value`` becomes the
    ``_FillValue`` attribute xarray masks with (``use_zarr_fill_value_as_mask``),
    unless the array already has a CF ``_FillValue`` attribute that masks
    something (not NaN): that one is what the writer meant, so it stays the
    mask. A NaN ``_FillValue`` (xarray's default for floats) masks nothing,
    since NaN reads as NaN anyway, so the ``fill_value`` replaces it.

    >>> import zarr3_backend
    >>> g = zarr3_backend.create_group("memory://doc/datastore", attributes={"title": "t"})
    >>> _ = g.create_array("x", shape=(3,), dtype="int8", dimension_names=["x"])
    >>> store = Zarr3DataStore(g)
    >>> sorted(store.get_variables()), store.get_attrs(), dict(store.get_dimensions())
    (['x'], {'title': 't'}, {'x': 3})
    """

    #: What each variable's ``preferred_chunks`` encoding reports (``chunks={}``): see
    #: `preferred_chunks()`.
    preferred: PreferredChunks = "shard"

    def __init__(
        self, group: Group, drop_variables: Iterable[str] = (), fill_value_as_mask: bool = False
    ) -> None:
        self.group = group
        self.fill_value_as_mask = fill_value_as_mask
        drop = set(drop_variables)
        self.early: dict[str, Future[list[ReadResult]]] = {}
        try:
            members = _members(group, partial(self._read_if_index, drop) if is_remote(group.store) else None)
            self.arrays = {n: m for n, m in members.items() if isinstance(m, Array) and n not in drop}
            self.groups = {n: m for n, m in members.items() if isinstance(m, Group)}
            self.dims = group_dims(self.arrays, f"group {group.name!r} in {group.store!r}")
        except BaseException:
            for read in self.early.values():
                read.cancel()  # those not started; on an I/O thread (datatree levels), waiting for them could hang
            wait(self.early.values())  # no read outlives the failed open
            raise
        self.loaded: dict[str, np.ndarray] | None = None

    def _read_if_index(self, drop: set[str], name: str, node: Array | Group) -> None:
        """Start reading ``node`` on the I/O pool if it is an index coordinate, while other members arrive."""
        if isinstance(node, Array) and name not in drop and array_dims(node).names == (name,):
            self.early[name] = submit_io(read_many, [(node, Ellipsis, False)])

    def index_arrays(self) -> dict[str, Array]:
        """The arrays xarray turns into indexes: 1-D, named like their dimension."""
        return {n: a for n, a in self.arrays.items() if self.dims[n].names == (n,)}

    def get_variables(self) -> Frozen[str, Variable]:
        if self.loaded is None:
            load_index_coordinates([self])
        return FrozenDict((name, self._variable(name, array)) for name, array in self.arrays.items())

    def _variable(self, name: str, array: Array) -> Variable:
        dims = self.dims[name]
        attrs = dict(array.metadata.attributes)
        if dims.from_attribute:
            del attrs[DIMENSION_KEY]
        encoding = variable_encoding(array, dims.names)
        shared = self.shared_v2_chunks.get(name) if self.preferred == "shard" else None
        encoding["preferred_chunks"] = shared_chunk_sizes(
            dict(zip(dims.names, shared)) if shared else preferred_chunks(array, dims.names, self.preferred),
            dict(zip(dims.names, array.shape)),
        )
        if isinstance(array.metadata, V2ArrayMetadata):
            _v2_fill_value(array.metadata, array, attrs, self.fill_value_as_mask)
        elif "_FillValue" in attrs:
            attrs["_FillValue"] = decode_fill_value(attrs["_FillValue"], array)
        if (
            self.fill_value_as_mask
            and not isinstance(array.metadata, V2ArrayMetadata)
            and _masks_nothing(attrs.get("_FillValue"))
        ):
            del encoding["fill_value"]
            attrs["_FillValue"] = array.fill_value
        data: Any = (self.loaded or {}).get(name)
        if data is None:
            data = indexing.LazilyIndexedArray(Zarr3BackendArray(array))
        return Variable(dims.names, data, attrs, encoding)

    @cached_property
    def shared_v2_chunks(self) -> dict[str, tuple[int, ...]]:
        """The ``chunks={}`` dask chunks of the group's Zarr v2 arrays, agreed per dimension across them."""
        return shared_v2_task_chunks({n: (a, self.dims[n].names) for n, a in self.arrays.items()})

    def get_attrs(self) -> dict[str, Any]:
        hidden = (
            "_nc",
            UNFINISHED_ATTRIBUTE,
            APPENDING_ATTRIBUTE,
        )  # netCDF internals; marks of unfinished writes (reported when opened)
        return {k: v for k, v in self.group.metadata.attributes.items() if not k.lower().startswith(hidden)}

    def get_dimensions(self) -> Frozen[str, int]:
        return FrozenDict(
            (d, n) for name, a in self.arrays.items() for d, n in zip(self.dims[name].names, a.shape)
        )

    def get_encoding(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        """Nothing to release: stores hold no open files between reads."""


def _v2_fill_value(metadata: V2ArrayMetadata, array: Array, attrs: dict[str, Any], mask: bool) -> None:
    """``_FillValue`` of a v2 array as ``engine="zarr"`` gives it: the array's ``fill_value`` when masking, else the decoded attribute."""
    if mask:
        if metadata.v2_fill_value is not None:
            attrs["_FillValue"] = array.fill_value
    elif "_FillValue" in attrs:
        attrs["_FillValue"] = decode_fill_value(attrs["_FillValue"], array)


def _masks_nothing(fill_value: Any) -> bool:
    """Whether a decoded ``_FillValue`` attribute masks no value: absent or a real NaN."""
    return fill_value is None or (isinstance(fill_value, float) and np.isnan(fill_value))


def load_index_coordinates(stores: Sequence[Zarr3DataStore]) -> None:
    """Read the index coordinates of all ``stores`` in one batched read (those not read early)."""
    wanted = [(store, name, array) for store in stores for name, array in store.index_arrays().items()]
    batched = [array for store, name, array in wanted if name not in store.early]
    try:
        read = iter(read_many([(array, Ellipsis, False) for array in batched]) if batched else [])
        values = [
            store.early[name].result()[0] if name in store.early else next(read) for store, name, _ in wanted
        ]
    except CodecError as exc:
        explained = explain_stale(exc, [array for _, _, array in wanted])
        if explained is exc:
            raise
        raise explained from exc
    loaded: dict[Zarr3DataStore, dict[str, np.ndarray]] = {store: {} for store in stores}
    for (store, name, array), value in zip(wanted, values):
        loaded[store][name] = np.asarray(value, dtype=variable_dtype(array))
    for store, arrays in loaded.items():
        store.loaded = arrays


def _members(group: Group, arrived: Callable[[str, Array | Group], None] | None) -> dict[str, Array | Group]:
    try:
        return group.members(arrived)
    except UnknownExtensionError as exc:
        raise UnknownExtensionError(
            f"cannot open group {group.name!r} in {group.store!r} with engine='zarr3': {exc}"
        ) from exc
