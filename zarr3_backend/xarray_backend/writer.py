"""``Dataset.to_zarr3``, ``DataArray.to_zarr3`` and ``DataTree.to_zarr3``: shard-per-task Zarr v3 writes.

After ``import zarr3_backend`` (with xarray installed) every Dataset,
DataArray and DataTree has a ``to_zarr3`` method. It is registered with
xarray's supported extension mechanism, ``xarray.register_*_accessor``: the
accessor object is callable, so ``ds.to_zarr3(...)`` reads like a method.

CF encoding is xarray's own, exactly as its zarr backend does it for
``zarr_format=3`` (times to integers with ``units``/``calendar``,
``scale_factor``, the ``coordinates`` attribute, the ``_FillValue``
attribute JSON-encoded by xarray's ``FillValueCoder``, the array
``fill_value`` from ``encoding["fill_value"]``, NaN for floats by default),
so the output opens identically with ``engine="zarr3"`` and ``engine="zarr"``.
Dimension names go to the arrays' ``dimension_names``.

Writes follow :mod:`zarr3_backend.dask_io`: one dask task per stored chunk
(shard) writes it whole. Metadata is published by
:mod:`~zarr3_backend.xarray_backend.commit`: before the data for
``mode="w"``/``"w-"`` (so ``compute=False`` leaves an openable template),
after every data task succeeded for ``mode="a"``/``"a-"`` (so a failed
append or new variable leaves the store as it was). Either way the store
root's consolidated metadata is rebuilt once per call.
In-memory (numpy) variables are written on the client, as xarray does.

>>> import xarray as xr, zarr3_backend, zarr3_backend.xarray_backend.writer
>>> ds = xr.Dataset({"t": ("x", [1.0, 2.0, 3.0])})
>>> ds.to_zarr3("memory://doc/writer", encoding={"t": {"chunks": (2,), "shards": (2,)}})
>>> zarr3_backend.open_array("memory://doc/writer", "t").shards
(2,)
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr
from xarray import conventions
from xarray.backends.zarr import FillValueCoder, encode_zarr_attr_value, encode_zarr_variable

from .. import api
from ..array import Array
from ..dask_io import PartialShardWarning, WriteRequest, check_reachable, compute_writes, partial_shards, store_graph, write_numpy
from ..errors import NodeExistsError
from ..hierarchy import Group, join_path, missing_parents, normalize_path, read_node_metadata
from ..metadata import GroupMetadata
from ..store import make_store
from ..store.base import Store
from .backend_array import variable_dtype
from .commit import Commit, Documents, group_document, publish, roll_back, roll_forward
from .encoding import decode_fill_value

Mode = Literal["w-", "w", "a", "a-", "r+"]
VALID_ENCODING = frozenset({
    "chunks", "shards", "compressors", "filters", "serializer", "codecs", "index_location",
    "fill_value", "chunk_key_encoding", "write_empty_chunks",
})


UNCHANGED_CHECK_BYTES = 64 << 20  # mode="a" compares existing variables up to this size before rewriting them


@dataclass
class _Writes:
    """Everything one ``to_zarr3`` call writes: data, and the metadata documents to publish."""

    requests: list[WriteRequest] = field(default_factory=list)
    eager: list[tuple[Array, tuple[int, ...], Any, bool]] = field(default_factory=list)
    documents: Documents = field(default_factory=dict)
    lock: Any = None
    grown: list[tuple[Array, tuple[int, ...]]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)


def to_zarr3(
    obj: xr.Dataset | xr.DataArray | xr.DataTree,
    store: Any,
    mode: Mode | None = None,
    *,
    group: str | None = None,
    encoding: Mapping[Hashable, Any] | None = None,
    append_dim: Hashable | None = None,
    region: Mapping[Hashable, slice | Literal["auto"]] | Literal["auto"] | None = None,
    compute: bool = True,
    storage_options: dict[str, Any] | None = None,
    consolidated: bool | None = None,
    write_empty_chunks: bool | None = None,
    progress: bool | Literal["tqdm"] = False,
    write_inherited_coords: bool = False,
    lock: Any = None,
) -> Any:
    """Write a Dataset, DataArray or DataTree to a Zarr v3 store, one dask task per shard.

    Parameters follow :meth:`xarray.Dataset.to_zarr`. ``store`` is a path, an
    fsspec URL (with ``storage_options``) or a zarr3_backend ``Store``.
    ``mode``: ``"w-"`` create (default), ``"w"`` overwrite the group, ``"a"``
    add/overwrite variables (or append along ``append_dim``), ``"a-"`` as
    ``"a"`` but leave variables without ``append_dim`` alone, ``"r+"`` write
    into existing variables only (``region``: dict of slices or ``"auto"``).
    ``encoding[name]`` may hold ``chunks`` (inner chunks when sharded),
    ``shards``, ``compressors``, ``filters``, ``serializer``, ``codecs`` (full
    outer chain), ``index_location``, ``fill_value``, ``chunk_key_encoding``
    and ``write_empty_chunks``, plus the CF keys (``dtype``, ``units``,
    ``_FillValue``, ``scale_factor`` ...). Without ``chunks``, dask-backed
    variables use their dask chunks (when regular); nothing is sharded unless
    ``shards`` is given. Dask chunks that do not nest in the shard grid are
    rechunked to it with a :class:`~zarr3_backend.dask_io.ShardAlignmentWarning`.
    ``consolidated=None`` consolidates unless ``mode="r+"``. ``progress``:
    ``True`` shows dask's (or distributed's) progress bar, ``"tqdm"`` tqdm's.
    For DataTrees ``encoding`` is keyed by group path (``"/"``, ``"/child"``).
    ``lock`` guards each read-modify-write of a shard that a write covers
    only partly: an object with ``acquire``/``release`` (one lock for all
    shards) or a callable returning a lock for a shard's store key (e.g.
    ``lambda key: distributed.Lock(key)``); without it, a region covering
    part of a shard warns with :class:`~zarr3_backend.dask_io.PartialShardWarning`.

    Returns ``None``, or with ``compute=False`` a ``dask.delayed`` object whose
    computation writes the data (metadata is already written for ``mode="w"``
    and ``"w-"``; for ``"a"``/``"a-"`` that computation publishes it).
    """
    if isinstance(obj, xr.DataArray):
        obj = _dataarray_as_dataset(obj)
    mode = _choose_mode(mode, append_dim, region)
    target = make_store(store, storage_options=storage_options)
    path = normalize_path(group)
    token = _request_token(obj, path, mode, append_dim, region, encoding) if mode in ("a", "a-") else ""
    if roll_forward(target, token or None):
        return _done(compute)  # this exact request was committed by an earlier, interrupted call
    writes = _Writes(lock=lock)
    if isinstance(obj, xr.DataTree):
        _plan_tree(obj, target, path, mode, dict(encoding or {}), region, write_empty_chunks, write_inherited_coords, writes)
    else:
        _plan_dataset(obj, target, path, mode, dict(encoding or {}), append_dim, region, write_empty_chunks, writes)
    consolidate = bool(consolidated or (consolidated is None and mode != "r+"))
    finalize = None
    if mode in ("w", "w-"):
        publish(target, writes.documents, consolidate)
    elif writes.documents:
        finalize = Commit(target, writes.documents, consolidate, token)
    if writes.requests:
        check_reachable(target)
    return _write_data(target, writes, finalize, compute, progress)


def _write_data(store: Store, writes: _Writes, finalize: Commit | None, compute: bool, progress: Any) -> Any:
    """Eager data on the client, then the dask graph ending in ``finalize``; roll back a failed commit-less write."""
    try:
        for array, origin, data, write_empty in writes.eager:
            write_numpy(array, origin, data, write_empty, writes.lock)
        delayed = store_graph(writes.requests, finalize)
        if not compute:
            return delayed
        compute_writes(delayed, progress)
    except BaseException:
        if finalize is not None:
            roll_back(store, writes.grown, writes.created)
        raise
    return None


def _request_token(obj: Any, path: str, mode: str, append_dim: Any, region: Any, encoding: Any) -> str:
    """A deterministic token of the write request (data included), to recognise a retry."""
    from dask.base import tokenize

    return tokenize(obj, path, mode, append_dim, region, encoding)


def _done(compute: bool) -> Any:
    if compute:
        return None
    import dask

    return dask.delayed(None)


def _choose_mode(mode: Mode | None, append_dim: Any, region: Any) -> Mode:
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in ("w-", "w", "a", "a-", "r+"):
        raise ValueError(f"to_zarr3: mode must be one of 'w-', 'w', 'a', 'a-', 'r+', got {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise ValueError(f"to_zarr3: append_dim needs mode='a' or 'a-' (or None), got mode={mode!r}")
    if region is not None and mode not in ("a", "a-", "r+"):
        raise ValueError(f"to_zarr3: region needs mode='r+', 'a' or 'a-' (or None), got mode={mode!r}")
    return mode


def _dataarray_as_dataset(array: xr.DataArray) -> xr.Dataset:
    """The DataArray as a one-variable Dataset (``xr.open_dataarray`` reads it back)."""
    if array.name is None or array.name in array.coords or array.name in array.dims:
        raise ValueError(
            f"to_zarr3: a DataArray needs a name that is not one of its coordinates (got {array.name!r}); "
            "xarray's placeholder '__xarray_dataarray_variable__' is a reserved Zarr v3 node name. "
            "Use da.rename('name').to_zarr3(...)"
        )
    return array.to_dataset()


def _plan_tree(tree: xr.DataTree, store: Store, path: str, mode: Mode, encoding: dict[str, Any], region: Any,
               write_empty: bool | None, inherited: bool, writes: _Writes) -> None:
    unknown = set(encoding) - set(tree.groups)
    if unknown:
        raise ValueError(f"to_zarr3: encoding keys {sorted(unknown)} are not groups of the DataTree {list(tree.groups)}")
    for relative, node in tree.subtree_with_keys:
        dataset = node.to_dataset(inherit=inherited or node is tree)
        node_path = join_path(path, relative) if relative != "." else path
        node_path = normalize_path(node_path)
        _plan_dataset(dataset, store, node_path, mode, dict(encoding.get(node.path) or {}), None, region, write_empty, writes)


def _plan_dataset(ds: xr.Dataset, store: Store, path: str, mode: Mode, encoding: dict[Hashable, Any],
                  append_dim: Hashable | None, region: Any, write_empty: bool | None, writes: _Writes) -> None:
    for name in ds.variables:
        if not isinstance(name, str) or not name:
            raise ValueError(f"to_zarr3: variable names must be non-empty strings, got {name!r}")
    existing = _existing_arrays(store, path, mode)
    if mode != "w" and (clash := sorted(set(encoding) & set(existing))):
        raise ValueError(f"to_zarr3: variables {clash} already exist in {path or '/'!r}, but encoding was provided")
    ds, region = _resolve_region(ds, region, existing, append_dim)
    if append_dim is not None and append_dim not in {d for a in existing.values() for d in a.dimension_names or ()}:
        raise ValueError(f"to_zarr3: append_dim={append_dim!r} is not a dimension of the existing arrays in {path or '/'!r}")
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    for name, enc in encoding.items():
        if name not in variables:
            raise ValueError(f"to_zarr3: encoding given for {name!r}, which is not a variable of the dataset")
        variables[name].encoding = dict(enc)
    if mode == "r+" and (new := sorted(set(variables) - set(existing))):
        raise ValueError(f"to_zarr3: mode='r+' only writes existing variables; {new} are new (use mode='a')")
    for name in set(variables) & set(existing):
        variables[name].encoding = _existing_encoding(name, existing[name])
    if mode != "r+":
        _plan_group(store, path, mode, {k: encode_zarr_attr_value(v) for k, v in attrs.items()}, writes)
    for name, variable in variables.items():
        if mode in ("a", "a-") and name in existing and not region and append_dim not in variable.dims:
            if (mode == "a-" and append_dim is not None) or _unchanged(variable, name, existing[name], append_dim):
                continue
        encoded = encode_zarr_variable(variable, name=name, zarr_format=3)
        if name in existing:
            array, origin = _existing_target(name, encoded, existing[name], region, append_dim, writes)
            encoded = encoded.transpose(*existing[name].dimension_names)
            if region and writes.lock is None:
                _warn_partial(name, array, origin, encoded.shape)
        else:
            array, origin = _create_array(store, join_path(path, name), name, encoded, name in encoding), (0,) * encoded.ndim
            writes.documents[array.path] = array.metadata.to_json()
            writes.created.append(array.path)
        _schedule(writes, array, origin, encoded, name, write_empty)


def _existing_arrays(store: Store, path: str, mode: Mode) -> dict[str, Array]:
    if mode in ("w", "w-"):
        return {}
    try:
        group = api.open_group(store, path, mode="r+")
    except FileNotFoundError:
        if mode == "r+":
            raise
        return {}
    fresh = Group(store, path, group.metadata.with_consolidated(None))  # never trust stale consolidated shapes
    return fresh.arrays()


def _plan_group(store: Store, path: str, mode: Mode, attributes: dict[str, Any], writes: _Writes) -> None:
    """The group's document (and missing ancestors') for publishing; ``mode="w"`` erases the group now."""
    existing = read_node_metadata(store, path)
    if mode == "w-" and existing is not None:
        raise NodeExistsError(
            f"a {existing.node_type} already exists at {path or '/'!r} in {store!r}; pass mode='w' to replace it"
        )
    if mode == "w":
        store.delete_prefix(f"{path}/" if path else "")
        existing = None
    if mode in ("a", "a-") and existing is not None and not isinstance(existing, GroupMetadata):
        raise NodeExistsError(f"{path or '/'!r} in {store!r} is an array, not a group; to_zarr3 writes groups")
    for parent in missing_parents(store, path) if path else []:
        writes.documents.setdefault(parent, GroupMetadata().to_json())
    writes.documents[path] = group_document(existing if isinstance(existing, GroupMetadata) else None, attributes)


def _unchanged(variable: xr.Variable, name: str, array: Array, append_dim: Any) -> bool:
    """Whether ``mode="a"`` can skip an existing ``variable`` (outside any append): its stored values are the same.

    Compared: in-memory variables, and in an append also dask ones, up to
    :data:`UNCHANGED_CHECK_BYTES`; others are rewritten in place (not covered
    by the all-or-nothing guarantee).
    """
    if variable.nbytes > UNCHANGED_CHECK_BYTES or (variable.chunks is not None and append_dim is None):
        return False
    encoded = encode_zarr_variable(variable, name=name, zarr_format=3)
    if array.dimension_names is None or set(array.dimension_names) != set(encoded.dims):
        return False
    new = np.asarray(encoded.transpose(*array.dimension_names).values)
    stored = np.asarray(array[...])
    if new.shape != stored.shape:
        return False
    try:
        return bool(np.array_equal(stored, new, equal_nan=new.dtype.kind in "fc"))
    except (TypeError, ValueError):
        return bool(np.array_equal(stored.astype(object), new.astype(object)))


def _existing_encoding(name: str, array: Array) -> dict[str, Any]:
    """The CF encoding of an existing array (``units``, ``dtype``, ``_FillValue`` ...), as xarray derives it."""
    attrs = dict(array.metadata.attributes)
    if "_FillValue" in attrs:
        attrs["_FillValue"] = decode_fill_value(attrs["_FillValue"], array)
    dims = array.dimension_names or tuple(f"dim_{i}" for i in range(array.ndim))
    empty = xr.Variable(dims, np.empty((0,) * array.ndim, dtype=variable_dtype(array)), attrs)
    return dict(conventions.decode_cf_variable(name, empty).encoding)


def _resolve_region(ds: xr.Dataset, region: Any, existing: dict[str, Array], append_dim: Any) -> tuple[xr.Dataset, dict[Hashable, slice]]:
    """Validate ``region`` (detecting ``"auto"`` entries from the stored coordinates) and drop indexes."""
    if region is None:
        return ds, {}
    if region == "auto":
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, Mapping):
        raise TypeError(f"to_zarr3: region must be a dict of slices or 'auto', got {type(region).__name__}")
    resolved = {}
    for dim, selection in region.items():
        if dim not in ds.dims:
            raise ValueError(f"to_zarr3: region dimension {dim!r} is not a dimension of the dataset {list(ds.dims)}")
        if isinstance(selection, str) and selection == "auto":
            selection = _detect_region(ds, dim, existing)
        if not isinstance(selection, slice) or selection.step not in (None, 1):
            raise TypeError(f"to_zarr3: region[{dim!r}] must be a slice with step 1 or 'auto', got {selection!r}")
        resolved[dim] = selection
    if append_dim is not None and append_dim in resolved:
        raise ValueError(f"to_zarr3: {append_dim!r} cannot be both append_dim and a region dimension")
    unrelated = [k for k, v in ds.variables.items() if resolved and not set(resolved) & set(v.dims)]
    if unrelated:
        raise ValueError(f"to_zarr3: with region, every variable needs a region dimension; drop {unrelated} first")
    return ds.drop_vars(ds.indexes), resolved


def _detect_region(ds: xr.Dataset, dim: Hashable, existing: dict[str, Array]) -> slice:
    if dim not in ds.variables:
        return slice(0, ds.sizes[dim])
    if dim not in existing:
        raise ValueError(f"to_zarr3: region {dim!r}='auto' needs the coordinate {dim!r} in the store; it is missing")
    array = existing[str(dim)]
    attrs = {k: v for k, v in array.metadata.attributes.items() if k != "_FillValue"}
    stored = conventions.decode_cf_variable(str(dim), xr.Variable((dim,), array[...], attrs))
    positions = pd.Index(stored.values).get_indexer(ds[dim].values)
    if (positions < 0).any() or (np.diff(positions) != 1).any():
        raise ValueError(f"to_zarr3: the values of {dim!r} are not one contiguous run of the stored {dim!r} coordinate")
    return slice(int(positions[0]), int(positions[-1]) + 1)


def _existing_target(name: str, var: xr.Variable, array: Array, region: dict[Hashable, slice], append_dim: Any,
                     writes: _Writes) -> tuple[Array, tuple[int, ...]]:
    """Where ``var`` goes in an existing array; a grown copy of the array when appending."""
    dims = array.dimension_names
    if dims is None or set(dims) != set(var.dims):
        raise ValueError(f"to_zarr3: variable {name!r} exists with dimensions {dims}, the dataset has {var.dims}")
    sizes = dict(zip(var.dims, var.shape))
    origin, shape = [], list(array.shape)
    for axis, dim in enumerate(dims):
        start, stop = 0, array.shape[axis]
        if dim == append_dim:
            start, stop = array.shape[axis], array.shape[axis] + sizes[dim]
            shape[axis] = stop
        elif dim in region:
            start, stop, _ = region[dim].indices(array.shape[axis])
        if stop - start != sizes[dim]:
            raise ValueError(
                f"to_zarr3: variable {name!r} has {sizes[dim]} elements along {dim!r}, "
                f"the stored array {array.shape} has room for {stop - start} there; use region or append_dim"
            )
        origin.append(start)
    if tuple(shape) != array.shape:
        old_shape = array.shape
        array = Array(array.store, array.path, array.metadata.with_shape(tuple(shape)))
        writes.documents[array.path] = array.metadata.to_json()
        writes.grown.append((array, old_shape))
    return array, tuple(origin)


def _create_array(store: Store, path: str, name: str, var: xr.Variable, explicit: bool) -> Array:
    encoding = _zarr_encoding(name, var, explicit)
    attrs = dict(var.attrs)
    fill_value = encoding.pop("fill_value", None)
    if fill_value is None and var.dtype.kind == "f":
        fill_value = np.nan
    if (cf_fill := attrs.pop("_FillValue", None)) is not None:
        attrs["_FillValue"] = FillValueCoder.encode(cf_fill, var.dtype)
    chunks, shards = _chunking(var, encoding)
    codecs = encoding.get("codecs")
    return Array(store, path, api.build_array_metadata(
        path, shape=var.shape, dtype=str if var.dtype.kind == "O" else var.dtype,
        chunks=(shards or chunks) if codecs is not None else chunks, shards=shards,
        fill_value=fill_value, compressors=encoding.get("compressors", "auto"), filters=encoding.get("filters", ()),
        serializer=encoding.get("serializer", "auto"), codecs=codecs,
        index_location=encoding.get("index_location", "end"), chunk_key_encoding=encoding.get("chunk_key_encoding"),
        dimension_names=[str(d) for d in var.dims], attributes={k: encode_zarr_attr_value(v) for k, v in attrs.items()},
    ))


def _zarr_encoding(name: str, var: xr.Variable, explicit: bool) -> dict[str, Any]:
    """The zarr keys of ``var.encoding``; unknown keys are an error when the user passed them."""
    encoding = {k: v for k, v in var.encoding.items() if k not in ("source", "original_shape", "preferred_chunks")}
    unknown = sorted(set(encoding) - VALID_ENCODING - {"dimension_names", "dtype"})
    if explicit and unknown:
        raise ValueError(f"to_zarr3: unexpected encoding keys for {name!r}: {unknown}; valid are {sorted(VALID_ENCODING)}")
    return {k: _codec_json(v) if k in ("compressors", "filters", "serializer", "codecs") else v
            for k, v in encoding.items() if k in VALID_ENCODING}


def _codec_json(value: Any) -> Any:
    """zarr-python codec objects (``to_dict()``) become JSON; lists are converted item by item."""
    if isinstance(value, list | tuple):
        return [_codec_json(v) for v in value]
    return value.to_dict() if hasattr(value, "to_dict") else value


def _expand(value: Any, ndim: int) -> tuple[int, ...] | None:
    if value is None or (isinstance(value, str) and value == "auto"):
        return None
    if isinstance(value, int | np.integer):
        return (int(value),) * ndim
    value = tuple(int(v) for v in value)
    return value if len(value) == ndim else None


def _chunking(var: xr.Variable, encoding: dict[str, Any]) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """(chunks, shards): explicit encoding first, else regular dask chunks, else automatic chunks."""
    chunks, shards = _expand(encoding.get("chunks"), var.ndim), _expand(encoding.get("shards"), var.ndim)
    dask_chunks = _regular_dask_chunks(var)
    if chunks is None and shards is not None:
        fits = dask_chunks is not None and all(s % c == 0 for s, c in zip(shards, dask_chunks))
        chunks = dask_chunks if fits else _inner_chunks(shards, var.dtype.itemsize)
    elif chunks is None:
        chunks = dask_chunks
    return chunks, shards


def _regular_dask_chunks(var: xr.Variable) -> tuple[int, ...] | None:
    if var.chunks is None or not var.ndim:
        return None
    if any(len(set(c[:-1])) > 1 or c[-1] > c[0] for c in var.chunks):
        return None
    return tuple(max(1, int(c[0])) for c in var.chunks)


def _inner_chunks(shards: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Inner chunks dividing ``shards``: split the largest dimension until a chunk holds ~4 MiB or less."""
    chunks = list(shards)
    while np.prod(chunks) * max(itemsize, 1) > api.TARGET_CHUNK_BYTES:
        dim = int(np.argmax(chunks))
        divisor = next((d for d in range(2, chunks[dim] + 1) if chunks[dim] % d == 0), None)
        if divisor is None or chunks[dim] == 1:
            break
        chunks[dim] //= divisor
    return tuple(chunks)


def _warn_partial(name: str, array: Array, origin: tuple[int, ...], shape: tuple[int, ...]) -> None:
    count, example = partial_shards(array, origin, shape)
    if count:
        unit = "shard" if array.shards else "chunk"
        warnings.warn(
            f"to_zarr3: the region write of {name!r} covers {count} stored {unit}(s) only partly, e.g. {example!r}; "
            f"each is read, merged and rewritten, so another process writing the same {unit} at the same time can "
            f"lose its rows. Align regions to the {unit} grid {array.metadata.chunk_shape}, or pass lock= "
            "(e.g. lock=lambda key: distributed.Lock(key))",
            PartialShardWarning,
            stacklevel=4,
        )


def _schedule(writes: _Writes, array: Array, origin: tuple[int, ...], var: xr.Variable, name: str, write_empty: bool | None) -> None:
    if write_empty is None:
        write_empty = bool(var.encoding.get("write_empty_chunks", False))
    data = var.data
    if var.chunks is not None:
        writes.requests.append(WriteRequest(data, array, origin, write_empty, name, writes.lock))
    else:
        writes.eager.append((array, origin, np.asarray(data), write_empty))


class _ToZarr3:
    """``obj.to_zarr3(store, mode=None, **kwargs)``: see :func:`to_zarr3`."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __call__(self, store: Any, mode: Mode | None = None, **kwargs: Any) -> Any:
        return to_zarr3(self._obj, store, mode, **kwargs)


def register() -> None:
    """Give Dataset, DataArray and DataTree a ``to_zarr3`` method (idempotent)."""
    for cls, register_accessor in (
        (xr.Dataset, xr.register_dataset_accessor),
        (xr.DataArray, xr.register_dataarray_accessor),
        (xr.DataTree, xr.register_datatree_accessor),
    ):
        if "to_zarr3" not in vars(cls):
            register_accessor("to_zarr3")(_ToZarr3)


register()
