"""Write planning for ``to_zarr3``: the array each variable goes to, and the metadata documents to publish.

:func:`plan_dataset` plans one group, :func:`plan_tree` every group of a
DataTree (parents first). The result is a :class:`WritePlan`, plain data:
the variables to write and where (:class:`DataWrite`), the ``zarr.json``
documents to publish, and the arrays an append grows or the call creates
(what a failed ``mode="a"`` write rolls back). Plans of several groups
combine with :meth:`WritePlan.then`.

Every check runs while planning, and planning never changes the store:
``mode="w"`` erases the group later, once every group of the write has
passed every check (:mod:`.first_write`).

>>> import numpy as np, xarray as xr
>>> from zarr3_backend.store import make_store
>>> ds = xr.Dataset({"t": ("x", np.arange(3.0))})
>>> plan = plan_dataset(ds, make_store("memory://doc/write_plan"), "", encoding=None, options=WriteOptions("w"))
>>> [(w.name, w.array.path, w.origin) for w in plan.data], sorted(plan.documents)
([('t', 't', (0,))], ['', 't'])
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import xarray as xr
from xarray import conventions
from xarray.backends.zarr import encode_zarr_variable

from ..api import WriteMode
from ..core.metadata import GroupMetadata
from ..errors import NodeExistsError, WriteError, WriteTypeError
from ..nodes.array import Array
from ..nodes.lookup import read_node_metadata
from ..nodes.paths import join_path, normalize_path
from ..nodes.placement import missing_parents
from ..store.base import Store
from .commit import Documents, group_document
from .region import Region, Shape, place, resolve_region
from .stored import existing_arrays, stored_encoding, unchanged
from .write_checks import check_append, check_fits, check_names, encode_attributes
from .write_encoding import new_array_metadata, parse_encodings


@dataclass(frozen=True)
class WriteOptions:
    """The ``to_zarr3`` arguments that shape every group's plan (``mode`` already checked)."""

    mode: WriteMode
    append_dim: Hashable | None = None
    region: Region = None
    write_empty_chunks: bool | None = None
    inherited_coords: bool = False


@dataclass(frozen=True)
class DataWrite:
    """Write ``variable`` (CF-encoded, in the array's dimension order) into ``array`` at ``origin``."""

    name: str
    array: Array
    origin: Shape
    variable: xr.Variable
    write_empty: bool


@dataclass(frozen=True)
class WritePlan:
    """Everything one ``to_zarr3`` call writes: data, then the metadata documents to publish.

    ``defaults`` are the paths whose document is only a missing ancestor's
    empty group; ``grown`` pairs arrays an append grows with their old shape;
    ``created`` are the paths of new arrays.
    """

    data: tuple[DataWrite, ...] = ()
    documents: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    defaults: frozenset[str] = frozenset()
    grown: tuple[tuple[Array, Shape], ...] = ()
    created: tuple[str, ...] = ()

    def then(self, later: WritePlan) -> WritePlan:
        """This plan followed by ``later``: its documents replace ours, except defaults for paths we have."""
        kept = {p: d for p, d in later.documents.items() if p not in later.defaults or p not in self.documents}
        return WritePlan(
            data=self.data + later.data,
            documents={**self.documents, **kept},
            defaults=(self.defaults - kept.keys()) | (later.defaults & kept.keys()),
            grown=self.grown + later.grown,
            created=self.created + later.created,
        )


def plan_tree(tree: xr.DataTree, store: Store, path: str, *, encoding: object, options: WriteOptions) -> WritePlan:
    """The plan for every group of ``tree`` below ``path``; ``encoding`` is keyed by group path (``"/child"``)."""
    encodings = _tree_encoding(encoding)
    unknown = set(encodings) - set(tree.groups)
    if unknown:
        raise WriteError(f"to_zarr3: encoding keys {sorted(unknown)} are not groups of the DataTree {list(tree.groups)}")
    plan = WritePlan()
    for relative, node in tree.subtree_with_keys:
        dataset = node.to_dataset(inherit=options.inherited_coords or node is tree)
        node_path = normalize_path(join_path(path, relative) if relative != "." else path)
        node_plan = plan_dataset(dataset, store, node_path, encoding=encodings.get(node.path), options=options,
                                 nested=relative != ".")
        plan = plan.then(node_plan)
    return plan


def _tree_encoding(encoding: object) -> dict[str, Any]:
    if encoding is None:
        return {}
    if not isinstance(encoding, Mapping):
        raise WriteTypeError(f"to_zarr3: a DataTree's encoding must be a dict keyed by group path, got {type(encoding).__name__}")
    return dict(encoding)


def plan_dataset(ds: xr.Dataset, store: Store, path: str, *, encoding: object, options: WriteOptions,
                 nested: bool = False) -> WritePlan:
    """The plan for writing ``ds`` as the group at ``path``: checks, CF encoding, target arrays, documents.

    ``nested``: a group below the top of a DataTree, whose parents are groups of the tree.
    """
    check_names(ds)
    explicit = parse_encodings(encoding, ds.variables)
    where = f"group {path or '/'!r} of {store!r}"
    existing = existing_arrays(store, path, options.mode)
    if options.mode != "w" and (clash := sorted(str(n) for n in set(explicit) & set(existing))):
        raise WriteError(f"to_zarr3: variables {clash} already exist in {where}, but encoding was provided")
    ds, region = resolve_region(ds, options.region, existing, options.append_dim)
    if options.append_dim is not None:
        check_append(ds, existing, options.append_dim, where)
    variables, attrs = _encoded_coordinates(ds, explicit, existing, options.mode)
    attributes = encode_attributes(attrs, f"the attributes of {where}")
    group = _GroupWrite(store, path, where, existing, region, frozenset(explicit), options)
    writes = [w for name, var in variables.items() if (w := group.plan_variable(str(name), var)) is not None]
    grown = tuple((w.grown, w.grown_from) for w in writes if w.grown is not None and w.grown_from is not None)
    created = tuple(w.data.array for w in writes if w.created)
    data = WritePlan(tuple(w.data for w in writes), _documents(a for a, _ in grown), grown=grown)
    if options.mode != "r+":
        data = data.then(_group_plan(store, path, options.mode, attributes, nested))
    return data.then(WritePlan(documents=_documents(created), created=tuple(a.path for a in created)))


def _encoded_coordinates(ds: xr.Dataset, explicit: Mapping[Hashable, dict[str, Any]], existing: Mapping[str, Array],
                         mode: WriteMode) -> tuple[dict[Hashable, xr.Variable], dict[Hashable, Any]]:
    """xarray's coordinate encoding of ``ds``, each variable carrying the encoding it is written with."""
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    for name, enc in explicit.items():
        variables[name].encoding = enc
    if mode == "r+" and (new := sorted(set(variables) - set(existing))):
        raise WriteError(f"to_zarr3: mode='r+' only writes existing variables; {new} are new (use mode='a')")
    for name in set(variables) & set(existing):
        variables[name].encoding = stored_encoding(str(name), existing[str(name)])
    return variables, attrs


def _documents(arrays: Iterable[Array]) -> dict[str, dict[str, Any]]:
    return {array.path: array.metadata.to_json() for array in arrays}


@dataclass(frozen=True)
class _VariableWrite:
    data: DataWrite
    grown_from: Shape | None = None  # the stored shape, when an append grows the array
    grown: Array | None = None  # then the array with its new shape (``data.array`` is its append view)
    created: bool = False


def _append_view(grown: Array, old_shape: Shape) -> Array:
    """The array an append writes through: ``grown`` with each grown axis rounded up to whole shards.

    Its last shard's rows beyond the new shape are then kept as stored, not
    reset to the fill value: they may hold the rows of a later deferred
    append that reserved them (see :mod:`.commit`).
    """
    grid = grown.metadata.chunk_shape
    shape = tuple(n if n == old else -(-n // c) * c for n, old, c in zip(grown.shape, old_shape, grid))
    return Array(grown.store, grown.path, grown.metadata.with_shape(shape))


@dataclass(frozen=True)
class _GroupWrite:
    """One group's resolved request: what :meth:`plan_variable` needs for each variable."""

    store: Store
    path: str
    where: str
    existing: Mapping[str, Array]
    region: Mapping[Hashable, slice]
    explicit: frozenset[Hashable]
    options: WriteOptions

    def plan_variable(self, name: str, variable: xr.Variable) -> _VariableWrite | None:
        """Where ``variable`` goes; ``None`` when ``mode="a"``/``"a-"`` leaves its stored array alone."""
        array = self.existing.get(name)
        if array is None:
            encoded = encode_zarr_variable(variable, name=name, zarr_format=3)
            path = join_path(self.path, name)
            metadata = new_array_metadata(name, encoded, path=path, explicit=name in self.explicit, where=self.where)
            return _VariableWrite(self._data(Array(self.store, path, metadata), (0,) * encoded.ndim, name, encoded), created=True)
        if self._keeps(name, variable, array):
            return None
        encoded = encode_zarr_variable(check_fits(name, variable, array), name=name, zarr_format=3)
        placement = place(name, encoded, array, region=self.region, append_dim=self.options.append_dim)
        encoded = encoded.transpose(*placement.dims)
        if placement.shape == array.shape:
            return _VariableWrite(self._data(array, placement.origin, name, encoded))
        grown = Array(array.store, array.path, array.metadata.with_shape(placement.shape))
        return _VariableWrite(self._data(_append_view(grown, array.shape), placement.origin, name, encoded),
                              grown_from=array.shape, grown=grown)

    def _keeps(self, name: str, variable: xr.Variable, array: Array) -> bool:
        """``mode="a-"`` outside an append, or ``mode="a"`` on unchanged values, skips a stored variable."""
        mode, append_dim = self.options.mode, self.options.append_dim
        if mode not in ("a", "a-") or self.region or append_dim in variable.dims:
            return False
        return (mode == "a-" and append_dim is not None) or unchanged(variable, name, array, append_dim)

    def _data(self, array: Array, origin: Shape, name: str, encoded: xr.Variable) -> DataWrite:
        write_empty = self.options.write_empty_chunks
        if write_empty is None:
            write_empty = bool(encoded.encoding.get("write_empty_chunks", False))
        return DataWrite(name, array, origin, encoded, write_empty)


def _group_plan(store: Store, path: str, mode: WriteMode, attributes: dict[str, Any], nested: bool) -> WritePlan:
    """The group's document and its missing ancestors' (defaults; the tree plans a ``nested`` group's parents).

    What is at ``path`` is read for ``mode="a"``/``"a-"`` only: ``mode="w"``
    replaces whatever is there (valid or not), ``mode="w-"`` writes only where
    nothing is (both checked by :mod:`.first_write`).
    """
    existing = read_node_metadata(store, path) if mode in ("a", "a-") else None
    if existing is not None and not isinstance(existing, GroupMetadata):
        raise NodeExistsError(f"{path or '/'!r} in {store!r} is an array, not a group; to_zarr3 writes groups")
    parents = missing_parents(store, path) if path and not nested else []
    documents: Documents = {parent: GroupMetadata().to_json() for parent in parents}
    documents[path] = group_document(existing if isinstance(existing, GroupMetadata) else None, attributes)
    return WritePlan(documents=documents, defaults=frozenset(parents))
