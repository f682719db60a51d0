""":func:`to_zarr3`: shard-per-task Zarr v3 writes of a Dataset, DataArray or DataTree.

The ``ds.to_zarr3(...)`` methods that call it are added in
:mod:`~zarr3_backend.xarray_backend.methods`; the checks that run before
anything is written live in :mod:`.write_checks` and :mod:`.write_encoding`.

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

>>> import xarray as xr, zarr3_backend
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
import xarray as xr
from xarray import conventions
from xarray.backends.api import DATAARRAY_NAME
from xarray.backends.zarr import FillValueCoder, encode_zarr_variable

from .. import api
from ..array import Array
from ..dask_io import (
    PartialShardWarning, WriteRequest, check_reachable, compute_writes, partial_shards, store_graph, write_numpy,
)
from ..errors import NodeExistsError, WriteError, WriteNotImplementedError, WriteTypeError
from ..hierarchy import Group, join_path, missing_parents, normalize_path, read_node_metadata
from ..metadata import GroupMetadata
from ..store import make_store
from ..store.base import Store
from .backend_array import variable_dtype
from .commit import Commit, Documents, group_document, publish, roll_back, roll_forward
from .encoding import decode_fill_value
from .region import check_region_fits, resolve_region
from .write_checks import check_append, check_fits, check_names, check_progress, encode_attributes
from .write_encoding import check_codecs_agree, chunking, parse_encodings, zarr_encoding

Mode = Literal["w-", "w", "a", "a-", "r+"]
DATAARRAY_VARIABLE = "xarray_dataarray_variable"


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
    group: str | None = None,
    encoding: Mapping[Hashable, Any] | None = None,
    *,
    compute: bool = True,
    consolidated: bool | None = None,
    append_dim: Hashable | None = None,
    region: Mapping[Hashable, slice | Literal["auto"]] | Literal["auto"] | None = None,
    safe_chunks: bool = True,
    align_chunks: bool = False,
    storage_options: dict[str, Any] | None = None,
    zarr_format: int | None = None,
    write_empty_chunks: bool | None = None,
    progress: bool | Literal["tqdm"] = False,
    write_inherited_coords: bool = False,
    lock: Any = None,
) -> Any:
    """Write a Dataset, DataArray or DataTree to a Zarr v3 store, one dask task per shard.

    The arguments and their order follow :meth:`xarray.Dataset.to_zarr`; all
    checks run before anything is written.

    Parameters
    ----------
    obj : Dataset, DataArray or DataTree
        What to write. An unnamed DataArray (or one named like one of its
        coordinates) is stored as ``xarray_dataarray_variable`` with its name
        in the group attribute ``__xarray_dataarray_name__``, which
        ``xr.open_dataarray`` restores.
    store : str, os.PathLike or Store
        A local path, an fsspec URL (with ``storage_options``) or a
        zarr3_backend ``Store``.
    mode : {"w-", "w", "a", "a-", "r+"}, optional
        ``"w-"`` create (default), ``"w"`` overwrite the group, ``"a"``
        add/overwrite variables (or append along ``append_dim``), ``"a-"`` as
        ``"a"`` but leave stored variables without ``append_dim`` alone,
        ``"r+"`` write into existing variables only (default with ``region``).
    group : str, optional
        The group to write (default: the root).
    encoding : dict, optional
        ``{variable: {key: value}}``. Zarr keys: ``chunks`` (inner chunks when
        sharded) and ``shards`` (an int, one int per dimension, or a dict by
        dimension name), ``compressors``, ``filters``, ``serializer``,
        ``codecs`` (the full outer chain; overrides the three before),
        ``index_location``, ``fill_value``, ``chunk_key_encoding``,
        ``write_empty_chunks``. Codecs may be JSON dicts, zarr-python codec
        objects or numcodecs codecs. CF keys: ``dtype``, ``_FillValue``
        (``None``: no ``_FillValue`` attribute), ``missing_value``,
        ``scale_factor``, ``add_offset``, and ``units``/``calendar`` for times.
        Without ``chunks``, dask-backed variables use their (regular) dask
        chunks; ``shards`` without ``chunks`` warns and picks inner chunks.
        For DataTrees ``encoding`` is keyed by group path (``"/"``, ``"/child"``).
    compute : bool, default True
        With ``False`` return a ``dask.delayed`` whose computation writes the
        data (metadata is written already for ``mode="w"``/``"w-"``; for
        ``"a"``/``"a-"`` that computation publishes it, all or nothing).
    consolidated : bool, optional
        Consolidate the group's metadata after writing; ``None`` consolidates
        unless ``mode="r+"``.
    append_dim : hashable, optional
        Grow the stored arrays along this dimension. Every stored variable
        having it must be in the dataset.
    region : dict or "auto", optional
        ``{dim: slice(start, stop)}`` (step 1) or ``"auto"`` per dimension
        (found from the stored coordinate); the stored arrays must cover it.
    safe_chunks, align_chunks : bool
        Accepted for compatibility. Dask chunks are always aligned to the
        shard grid (rechunked with a ``ShardAlignmentWarning`` when needed),
        so no two tasks ever write the same stored chunk.
    storage_options : dict, optional
        fsspec options for a URL ``store``.
    zarr_format : {None, 3}
        Only Zarr v3 is written; ``2`` raises.
    write_empty_chunks : bool, optional
        Store chunks that hold only the fill value (default: skip them).
    progress : {False, True, "tqdm"}
        ``True``: shards done out of the total and MB/s, on any scheduler; ``"tqdm"``: tqdm's bar.
    write_inherited_coords : bool, default False
        DataTree only: also write coordinates inherited from parent groups.
    lock : lock or callable, optional
        Guards each read-modify-write of a shard that the write covers only
        partly: an object with ``acquire``/``release`` (one lock for all
        shards) or a callable returning a lock for a shard's store key (e.g.
        ``lambda key: distributed.Lock(key)``). Without it, a region covering
        part of a shard warns with :class:`~zarr3_backend.dask_io.PartialShardWarning`.

    Returns
    -------
    None, or with ``compute=False`` a ``dask.delayed`` object.

    Examples
    --------
    >>> import numpy as np, xarray as xr, zarr3_backend
    >>> ds = xr.Dataset({"t": ("x", np.arange(4.0))})
    >>> zarr3_backend.to_zarr3(ds, "memory://doc/to_zarr3", "w", encoding={"t": {"chunks": 2, "shards": 4}})
    >>> zarr3_backend.open_array("memory://doc/to_zarr3", "t").chunks
    (2,)
    """
    _check_format(zarr_format)
    check_progress(progress)
    if isinstance(obj, xr.DataTree) and append_dim is not None:
        raise WriteNotImplementedError(
            f"to_zarr3: append_dim={append_dim!r} is not supported for a DataTree (nor by DataTree.to_zarr); "
            "append each group's Dataset: tree[path].to_dataset().to_zarr3(store, group=path, append_dim=...)"
        )
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
        _plan_tree(obj, target, path, mode, _tree_encoding(encoding), region, write_empty_chunks, write_inherited_coords, writes)
    else:
        _plan_dataset(obj, target, path, mode, encoding, append_dim, region, write_empty_chunks, writes)
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


def _check_format(zarr_format: int | None) -> None:
    if zarr_format not in (None, 3):
        raise WriteError(
            f"to_zarr3: zarr_format={zarr_format!r} is not supported; zarr3_backend writes Zarr v3 only "
            "(pass zarr_format=3 or leave it out; for Zarr v2 use ds.to_zarr(..., zarr_format=2))"
        )


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
        raise WriteError(f"to_zarr3: mode must be one of 'w-', 'w', 'a', 'a-', 'r+', got {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise WriteError(f"to_zarr3: append_dim needs mode='a' or 'a-' (or None), got mode={mode!r}")
    if region is not None and mode not in ("a", "a-", "r+"):
        raise WriteError(f"to_zarr3: region needs mode='r+', 'a' or 'a-' (or None), got mode={mode!r}")
    return mode


def _dataarray_as_dataset(array: xr.DataArray) -> xr.Dataset:
    """The DataArray as a one-variable Dataset that ``xr.open_dataarray`` reads back with its name.

    A name that cannot be a variable (``None``, or a coordinate's name) is
    stored in the group attribute ``__xarray_dataarray_name__`` (as xarray's
    engine does) under the valid node name :data:`DATAARRAY_VARIABLE` (xarray's
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


def _tree_encoding(encoding: Any) -> dict[str, Any]:
    if encoding is None:
        return {}
    if not isinstance(encoding, Mapping):
        raise WriteTypeError(f"to_zarr3: a DataTree's encoding must be a dict keyed by group path, got {type(encoding).__name__}")
    return dict(encoding)


def _plan_tree(tree: xr.DataTree, store: Store, path: str, mode: Mode, encoding: dict[str, Any], region: Any,
               write_empty: bool | None, inherited: bool, writes: _Writes) -> None:
    unknown = set(encoding) - set(tree.groups)
    if unknown:
        raise WriteError(f"to_zarr3: encoding keys {sorted(unknown)} are not groups of the DataTree {list(tree.groups)}")
    for relative, node in tree.subtree_with_keys:
        dataset = node.to_dataset(inherit=inherited or node is tree)
        node_path = join_path(path, relative) if relative != "." else path
        node_path = normalize_path(node_path)
        _plan_dataset(dataset, store, node_path, mode, encoding.get(node.path), None, region, write_empty, writes)


def _plan_dataset(ds: xr.Dataset, store: Store, path: str, mode: Mode, encoding: Any,
                  append_dim: Hashable | None, region: Any, write_empty: bool | None, writes: _Writes) -> None:
    check_names(ds)
    explicit = parse_encodings(encoding, ds.variables)
    where = f"group {path or '/'!r} of {store!r}"
    existing = _existing_arrays(store, path, mode)
    if mode != "w" and (clash := sorted(set(explicit) & set(existing))):
        raise WriteError(f"to_zarr3: variables {clash} already exist in {where}, but encoding was provided")
    ds, region = resolve_region(ds, region, existing, append_dim)
    if append_dim is not None:
        check_append(ds, existing, append_dim, where)
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    for name, enc in explicit.items():
        variables[name].encoding = enc
    if mode == "r+" and (new := sorted(set(variables) - set(existing))):
        raise WriteError(f"to_zarr3: mode='r+' only writes existing variables; {new} are new (use mode='a')")
    for name in set(variables) & set(existing):
        variables[name].encoding = _existing_encoding(name, existing[name])
    attributes = encode_attributes(attrs, f"the attributes of {where}")
    planned: list[tuple[str, xr.Variable, tuple[Array, tuple[int, ...]] | dict[str, Any]]] = []
    for name, variable in variables.items():
        if mode in ("a", "a-") and name in existing and not region and append_dim not in variable.dims:
            if (mode == "a-" and append_dim is not None) or _unchanged(variable, name, existing[name], append_dim):
                continue
        if name in existing:
            variable = check_fits(name, variable, existing[name])
        encoded = encode_zarr_variable(variable, name=name, zarr_format=3)
        if name in existing:
            array, origin = _existing_target(name, encoded, existing[name], region, append_dim, writes)
            encoded = encoded.transpose(*existing[name].dimension_names)
            if region and writes.lock is None:
                _warn_partial(name, array, origin, encoded.shape)
            planned.append((name, encoded, (array, origin)))
        else:
            planned.append((name, encoded, _array_spec(name, encoded, name in explicit, where)))
    if mode != "r+":
        _plan_group(store, path, mode, attributes, writes)  # after every check: mode="w" erases the group here
    for name, encoded, plan in planned:
        if isinstance(plan, dict):
            array = Array(store, join_path(path, name), api.build_array_metadata(join_path(path, name), **plan))
            writes.documents[array.path] = array.metadata.to_json()
            writes.created.append(array.path)
            plan = array, (0,) * encoded.ndim
        _schedule(writes, plan[0], plan[1], encoded, name, write_empty)


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


def _existing_target(name: str, var: xr.Variable, array: Array, region: dict[Hashable, slice], append_dim: Any,
                     writes: _Writes) -> tuple[Array, tuple[int, ...]]:
    """Where ``var`` goes in an existing array; a grown copy of the array when appending."""
    dims = array.dimension_names
    if dims is None or set(dims) != set(var.dims):
        raise WriteError(f"to_zarr3: variable {name!r} exists with dimensions {dims}, the dataset has {var.dims}")
    sizes = dict(zip(var.dims, var.shape))
    origin, shape = [], list(array.shape)
    for axis, dim in enumerate(dims):
        start, stop = 0, array.shape[axis]
        if dim == append_dim:
            start, stop = array.shape[axis], array.shape[axis] + sizes[dim]
            shape[axis] = stop
        elif dim in region:
            start, stop, _ = region[dim].indices(array.shape[axis])
            check_region_fits(name, dim, region[dim], sizes[dim], array.shape[axis])
        if stop - start != sizes[dim]:
            raise WriteError(
                f"to_zarr3: variable {name!r} has {sizes[dim]} elements along {dim!r}, but the stored array "
                f"{array.shape} has {stop - start} there; write a part of it with region={{{dim!r}: slice(start, stop)}}, "
                "grow it with append_dim, or overwrite it with mode='w'"
            )
        origin.append(start)
    if tuple(shape) != array.shape:
        old_shape = array.shape
        array = Array(array.store, array.path, array.metadata.with_shape(tuple(shape)))
        writes.documents[array.path] = array.metadata.to_json()
        writes.grown.append((array, old_shape))
    return array, tuple(origin)


def _array_spec(name: str, var: xr.Variable, explicit: bool, where: str) -> dict[str, Any]:
    """The ``api.create_array`` arguments for a new variable; every encoding check runs here."""
    encoding = zarr_encoding(name, var, explicit)
    attrs = dict(var.attrs)
    fill_value = encoding.pop("fill_value", None)
    if fill_value is None and var.dtype.kind == "f":
        fill_value = np.nan
    if (cf_fill := attrs.pop("_FillValue", None)) is not None:
        attrs["_FillValue"] = FillValueCoder.encode(cf_fill, var.dtype)
    chunks, shards = chunking(name, var, encoding, explicit)
    check_codecs_agree(name, encoding)
    codecs = encoding.get("codecs")
    return dict(
        shape=var.shape, dtype=str if var.dtype.kind == "O" else var.dtype,
        chunks=(shards or chunks) if codecs is not None else chunks, shards=shards,
        fill_value=fill_value, compressors=encoding.get("compressors", "auto"), filters=encoding.get("filters", ()),
        serializer=encoding.get("serializer", "auto"), codecs=codecs,
        index_location=encoding.get("index_location", "end"), chunk_key_encoding=encoding.get("chunk_key_encoding"),
        dimension_names=[str(d) for d in var.dims], attributes=encode_attributes(attrs, f"variable {name!r} in {where}"),
    )


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


