"""`to_zarr3()`: shard-per-task Zarr v3 writes of a Dataset, DataArray or DataTree, planned in one place.

Checks the call (`checks`, then the target: ``zarr3_backend.writes.target``),
plans each group without changing the store (`encodings`, `stored`,
`region`: the result is a plain `WritePlan`), then hands the plan to
``zarr3_backend.writes.run``, which writes the data and publishes the
metadata (`publish`, `commit`); no step calls back up. CF encoding is xarray's own, as for
``zarr_format=3``, so the output opens identically with both engines.
docs/architecture.md ("How a write commits") gives the order of publication.

>>> import xarray as xr, zarr3_backend
>>> ds = xr.Dataset({"t": ("x", [1.0, 2.0, 3.0])})
>>> ds.to_zarr3("memory://doc/planner", encoding={"t": {"chunks": (2,), "shards": (2,)}})
>>> zarr3_backend.open_array("memory://doc/planner", "t").shards
(2,)
>>> from zarr3_backend.store import make_store
>>> plan = plan_dataset(ds, make_store("memory://doc/plan"), "", encoding=None, options=WriteOptions("w"))
>>> [(w.name, w.array.path, w.origin) for w in plan.data], sorted(plan.documents)
([('t', 't', (0,))], ['', 't'])
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import xarray as xr
from xarray import conventions

from ...api import WriteMode
from ...coordination.guards import WriteGuard, write_guard
from ...errors import WriteError
from ...nodes.array import Array
from ...nodes.paths import join_path, normalize_path
from ...nodes.shard_writes import append_view
from ...runtime.locks import ShardLock
from ...store import StoreLike, make_store
from ...store.base import Store
from ...writes.commit import CommitMetadata, roll_forward
from ...writes.executor import Deferred, executor_for
from ...writes.plan import DataWrite, Region, Shape, WriteOptions, WritePlan
from ...writes.publish import array_documents, group_plan
from ...writes.run import Run, consolidates, guarded, run_plan
from ...writes.target import CheckedTarget, check_target, existing_arrays
from ...writes.tasks import WriteStep
from ..geo import with_multiscales
from .append_grid import AppendGrid, split_append_chunks
from .checks import check_append, check_fits, check_format, check_names, check_progress, parse_mode
from .encodings import (
    apply_encodings,
    encode_attributes,
    new_array_metadata,
    parse_encodings,
    parse_tree_encodings,
)
from .inputs import as_written, chunked_arrays, fingerprint, request_token
from .packed import check_packed
from .region import place, resolve_region
from .self_read import read_own_target_first
from .stored import check_no_repeats, stored_encoding, unchanged
from .times import encode_into, encode_variable


def to_zarr3(
    obj: xr.Dataset | xr.DataArray | xr.DataTree,
    store: StoreLike,
    mode: WriteMode | None = None,
    group: str | None = None,
    encoding: Mapping[Hashable, object] | None = None,
    *,
    compute: bool = True,
    consolidated: bool | None = None,
    append_dim: Hashable | None = None,
    region: Region = None,
    safe_chunks: bool = True,
    align_chunks: bool = False,
    storage_options: dict[str, Any] | None = None,
    zarr_format: int | None = None,
    write_empty_chunks: bool | None = None,
    progress: bool | Literal["tqdm"] = False,
    write_inherited_coords: bool = False,
    lock: ShardLock = None,
    allow_repeated_index: bool = False,
) -> Deferred | None:
    """Write a Dataset, DataArray or DataTree to a Zarr v3 store, one task per shard (on dask or Cubed).

    The arguments and their order follow `xarray.Dataset.to_zarr()`; all
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
        ``"w-"`` create (default; only into an empty location, or to complete
        the same write left unfinished), ``"w"`` overwrite the group, ``"a"``
        add/overwrite variables (or append along ``append_dim``), ``"a-"`` as
        ``"a"`` but leave stored variables without ``append_dim`` alone,
        ``"r+"`` write into existing variables only (default with ``region``).
    group : str, optional
        The group to write (default: the root).
    encoding : dict, optional
        ``{variable: {key: value}}``. Zarr keys: ``chunks`` (inner chunks when
        sharded) and ``shards`` (an int, one int per dimension, or a dict by
        dimension name). A sequence of lengths for a dimension, e.g. ``"shards":
        (month_lengths, 181, 360)`` or ``{"time": month_lengths}``, asks for a
        rectilinear (calendar) grid: one shard (unsharded: one chunk) per length,
        adding up to at least the dimension; ``"dask"``: one per dask chunk. Inner
        ``chunks`` stay regular (see the calendar chunks guide). ``compressors``, ``filters``, ``serializer``,
        ``codecs`` (the full outer chain; overrides the three before),
        ``index_location``, ``fill_value``, ``chunk_key_encoding``,
        ``write_empty_chunks``. Codecs may be JSON dicts, zarr-python codec
        objects or numcodecs codecs. CF keys: ``dtype``, ``_FillValue``
        (``None``: no ``_FillValue`` attribute), ``missing_value``,
        ``scale_factor``, ``add_offset``, and ``units``/``calendar`` for times.
        Default compressors: zstd then ``crc32c`` (every chunk checksummed;
        give ``compressors`` without ``crc32c`` to turn that off, as
        `create_array()`). Without ``chunks``, dask-backed variables use their (regular) dask
        chunks; ``shards`` without ``chunks`` warns and picks inner chunks.
        For DataTrees ``encoding`` is keyed by group path (``"/"``, ``"/child"``).
    compute : bool, default True
        With ``False`` return a ``dask.delayed`` whose computation writes the
        data (metadata is written already for ``mode="w"``/``"w-"``; for
        ``"a"``/``"a-"`` that computation publishes it, all or nothing). An
        append (``append_dim``) reserves its rows at once instead, as
        ``engine="zarr"`` does: the arrays grow when it is called and the
        new rows read as fill values until it is computed, so several
        deferred appends keep all their rows, in call order.
    consolidated : bool, optional
        Consolidate the group's metadata after writing; ``None`` consolidates
        unless ``mode="r+"`` or into a transaction (Icechunk).
    append_dim : hashable, optional
        Grow the stored arrays along this dimension. Every stored variable
        having it must be in the dataset, and none of its stored labels.
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
        part of a shard warns once with `PartialShardWarning`
        when other writers may run alongside (``compute=False`` with dask data,
        a call from a thread other than the main one or from a child process);
        one call never races itself.
        ``mode="a"``/``"a-"`` writes also hold it (or ``lock(PENDING_KEY)``, the key of the pending record, from `zarr3_backend.coordination.records`)
        from planning to publishing (a deferred append: while it reserves its
        rows), and ``mode="r+"`` writes while planning, so writers sharing it
        never collide. Without it, stores with atomic create serialise appends
        with a lease that region writes wait for; other stores refuse appends.

    Returns
    -------
    None, or with ``compute=False`` the deferred write (on dask a ``dask.delayed``), run by its ``compute()``.

    Examples
    --------
    >>> import numpy as np, xarray as xr, zarr3_backend
    >>> ds = xr.Dataset({"t": ("x", np.arange(4.0))})
    >>> zarr3_backend.to_zarr3(ds, "memory://doc/to_zarr3", "w", encoding={"t": {"chunks": 2, "shards": 4}})
    >>> zarr3_backend.open_array("memory://doc/to_zarr3", "t").chunks
    (2,)

    >>> lengths = {"t": {"chunks": 1, "shards": ((1, 3),)}}  # a rectilinear (calendar) grid: 2 shards
    >>> zarr3_backend.to_zarr3(ds, "memory://doc/to_zarr3_lengths", "w", encoding=lengths)
    >>> zarr3_backend.open_array("memory://doc/to_zarr3_lengths", "t").chunk_sizes
    ((1, 3),)
    """
    check_format(zarr_format)
    check_progress(progress)
    obj = as_written(obj, append_dim)
    options = WriteOptions(
        mode=parse_mode(mode, append_dim, region),
        append_dim=append_dim,
        region=region,
        write_empty_chunks=write_empty_chunks,
        inherited_coords=write_inherited_coords,
        repeated_index=allow_repeated_index,
    )
    given, path = make_store(store, storage_options=storage_options), normalize_path(group)
    chunked = chunked_arrays(obj)
    executor = executor_for(chunked)  # dask, Cubed, ...: as xarray's get_chunked_array_type picks
    with (
        executor.forked(given, bool(chunked)) as forks,  # a transaction written from other processes
        write_guard(
            forks.store if forks is not None else given, options.mode, lock, append_dim, region
        ) as guard,
    ):
        target = guard.store
        token = request_token(executor, obj, path, options, encoding) if options.mode in ("a", "a-") else ""
        run = Run(executor, guard, forks, compute, progress)
        with guard.planning():  # a region write with lock= plans while no append publishes
            if (options.mode != "w" or path) and roll_forward(
                target, token or None, skip_broken=options.mode == "w"
            ):  # this exact request was committed by an earlier, interrupted call
                return None if compute else executor.run([], None, compute=False, progress=False)
            start = check_target(target, path, options.mode, fingerprint(obj, path), compute=compute)
            options = replace(options, replaces=start.replaces)
            plan = guarded(_plan(obj, target, path, encoding, options), guard, compute)
        plan = read_own_target_first(
            target, path, start.mode, plan, replaces=start.replaces
        )  # nothing deleted yet
        if any(write.variable.chunks is not None for write in plan.data):
            executor.check_reachable(target)
        consolidate = consolidates(consolidated, options.mode, target)
        return run_plan(run, plan, _last_step(start, plan, guard, consolidate, token), options, path)


def _plan(
    obj: xr.Dataset | xr.DataTree, target: Store, path: str, encoding: object, options: WriteOptions
) -> WritePlan:
    if isinstance(obj, xr.DataTree):
        return plan_tree(obj, target, path, encoding=encoding, options=options)
    return plan_dataset(obj, target, path, encoding=encoding, options=options)


def _last_step(
    start: CheckedTarget, plan: WritePlan, guard: WriteGuard, consolidate: bool, token: str
) -> WriteStep | None:
    """The step ending the write: a first write's metadata is published now, anything else's after its data."""
    if start.first_write:  # metadata first, its groups marked unfinished until the last step
        return start.publish_first_write(dict(plan.documents), consolidate)
    start.take_over_templates()
    if not plan.documents:
        return None
    expected = {**{a.path: old for a, old in plan.grown}, **dict.fromkeys(plan.created)}
    return CommitMetadata(
        guard.store, dict(plan.documents), consolidate, token, expected, locked=guard.serialised
    )


def plan_tree(
    tree: xr.DataTree, store: Store, path: str, *, encoding: object, options: WriteOptions
) -> WritePlan:
    """The plan for every group of ``tree`` below ``path``; ``encoding`` is keyed by group path (``"/child"``)."""
    encodings = parse_tree_encodings(encoding, tree.groups)
    plan = WritePlan()
    for relative, node in tree.subtree_with_keys:
        dataset = with_multiscales(node.to_dataset(inherit=options.inherited_coords or node is tree), node)
        node_path = normalize_path(join_path(path, relative) if relative != "." else path)
        node_plan = plan_dataset(
            dataset,
            store,
            node_path,
            encoding=encodings.get(node.path),
            options=options,
            nested=relative != ".",
        )
        plan = plan.then(node_plan)
    return plan


def plan_dataset(
    ds: xr.Dataset, store: Store, path: str, *, encoding: object, options: WriteOptions, nested: bool = False
) -> WritePlan:
    """The plan for writing ``ds`` as the group at ``path``: checks, CF encoding, target arrays, documents.

    ``nested``: a group below the top of a DataTree, whose parents are groups of the tree.
    """
    check_names(ds, store, path)
    explicit = parse_encodings(encoding, ds.variables)
    where = f"group {path or '/'!r} of {store!r}"
    existing = existing_arrays(store, path, options.mode)
    explicit, appended_chunks = split_append_chunks(explicit, existing, options.append_dim)
    if options.mode != "w" and (clash := sorted(str(n) for n in set(explicit) & set(existing))):
        raise WriteError(f"to_zarr3: variables {clash} already exist in {where}, but encoding was provided")
    ds, region = resolve_region(ds, options.region, existing, options.append_dim)
    if options.append_dim is not None:
        check_append(ds, existing, options.append_dim, where)
        check_no_repeats(ds, existing, options, where)
    variables, attrs = _encoded_coordinates(ds, explicit, existing, options.mode)
    attributes = encode_attributes(attrs, f"the attributes of {where}")
    grid = AppendGrid.of(ds, existing, options.append_dim, appended_chunks)
    group = _GroupWrite(store, path, where, existing, region, frozenset(explicit), options, grid)
    writes = [w for name, var in variables.items() if (w := group.plan_variable(str(name), var)) is not None]
    grown = tuple((w.grown, w.grown_from) for w in writes if w.grown is not None and w.grown_from is not None)
    created = tuple(w.data.array for w in writes if w.created)
    data = WritePlan(tuple(w.data for w in writes), array_documents(a for a, _ in grown), grown=grown)
    if options.mode != "r+":
        data = data.then(group_plan(store, path, options.mode, attributes, nested))
    return data.then(WritePlan(documents=array_documents(created), created=tuple(a.path for a in created)))


def _encoded_coordinates(
    ds: xr.Dataset,
    explicit: Mapping[Hashable, dict[str, Any]],
    existing: Mapping[str, Array],
    mode: WriteMode,
) -> tuple[dict[Hashable, xr.Variable], dict[Hashable, Any]]:
    """xarray's coordinate encoding of ``ds``, each variable carrying the encoding it is written with."""
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    apply_encodings(variables, explicit, existing)
    if mode == "r+" and (new := sorted(set(variables) - set(existing))):
        raise WriteError(f"to_zarr3: mode='r+' only writes existing variables; {new} are new (use mode='a')")
    for name in set(variables) & set(existing):
        variables[name].encoding = stored_encoding(str(name), existing[str(name)], variables[name].attrs)
    return variables, attrs


@dataclass(frozen=True)
class _VariableWrite:
    data: DataWrite
    grown_from: Shape | None = None  # the stored shape, when an append grows the array
    grown: Array | None = None  # then the array with its new shape (``data.array`` is its append view)
    created: bool = False


@dataclass(frozen=True)
class _GroupWrite:
    """One group's resolved request: what `plan_variable()` needs for each variable."""

    store: Store
    path: str
    where: str
    existing: Mapping[str, Array]
    region: Mapping[Hashable, slice]
    explicit: frozenset[Hashable]
    options: WriteOptions
    grid: AppendGrid  # the new chunks of rectilinear arrays that an append grows

    def plan_variable(self, name: str, variable: xr.Variable) -> _VariableWrite | None:
        """Where ``variable`` goes; ``None`` when ``mode="a"``/``"a-"`` leaves its stored array alone.

        ``variable`` carries the encoding it is written with (CF encoding keeps ``write_empty_chunks``).
        """
        write_empty = self.options.write_empty_chunks
        if write_empty is None:
            write_empty = bool(variable.encoding.get("write_empty_chunks", False))
        array = self.existing.get(name)
        if array is None:
            checked, fits = check_packed(name, variable, None, now=self.options.replaces)
            encoded = encode_variable(checked, name)
            path = join_path(self.path, name)
            metadata = new_array_metadata(
                name, encoded, path=path, explicit=name in self.explicit, where=self.where
            )
            new = DataWrite(
                name, Array(self.store, path, metadata), (0,) * encoded.ndim, encoded, write_empty, fits
            )
            return _VariableWrite(new, created=True)
        if self._keeps(name, variable, array):
            return None
        in_place = self.options.append_dim not in variable.dims  # not appended: over stored values
        fitted, fits = check_packed(name, check_fits(name, variable, array), array.dtype)
        encoded = encode_into(name, fitted, array)
        placement = place(name, encoded, array, region=self.region, append_dim=self.options.append_dim)
        encoded = encoded.transpose(*placement.dims)
        if placement.shape == array.shape:
            return _VariableWrite(
                DataWrite(name, array, placement.origin, encoded, write_empty, fits, in_place)
            )
        grown = Array(
            array.store,
            array.path,
            array.metadata.with_shape(
                placement.shape, self.grid.edges(name, encoded, array, placement.origin)
            ),
        )
        view = append_view(grown, array.shape)
        return _VariableWrite(
            DataWrite(name, view, placement.origin, encoded, write_empty, fits, in_place),
            grown_from=array.shape,
            grown=grown,
        )

    def _keeps(self, name: str, variable: xr.Variable, array: Array) -> bool:
        """``mode="a-"`` outside an append, or ``mode="a"`` on unchanged values, skips a stored variable."""
        mode, append_dim = self.options.mode, self.options.append_dim
        if mode not in ("a", "a-") or self.region or append_dim in variable.dims:
            return False
        return (mode == "a-" and append_dim is not None) or unchanged(variable, name, array, append_dim)
