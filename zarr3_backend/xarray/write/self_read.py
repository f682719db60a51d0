"""A write whose lazy data reads what the write replaces: read it first, or refuse before anything changes.

``mode="w"`` deletes the group before writing, and ``mode="a"``/``"r+"``
overwrite stored chunks while dask tasks may still be reading them, so data
read lazily from the target would come back as fill values or as values
already overwritten. Before any change to the store:

- lazy variables without dask (opened with ``chunks=None``) are read into
  memory (`load_lazy_variables`): the write holds them in memory anyway;
- a dask variable whose graph reads a stored array where this write deletes
  or overwrites data raises `WriteError` (`check_self_reads`), naming the
  variables and the two fixes: ``.load()`` first, or write elsewhere and move.

The reads are found in the dask graph: every xarray lazy array over our
backend array names its store and array path, and the part it reads (the
lazy selection, narrowed by the dask task's block). Stores are compared by
`Store.location`, so every spelling of one store (relative, ``file://``, a
trailing slash, fsspec or obstore on one bucket) is the same. An append reads
its stored rows freely: it writes only new rows (a partly filled last shard
is rewritten with its stored rows unchanged). docs/guide/guarantees.md says this for users.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from dask._task_spec import (
    DataNode,
    GraphNode,
    Task,
    TaskRef,
)  # dask's graph format has no public import path
from xarray.core import indexing

from ...api import WriteMode
from ...errors import WriteError
from ...store.base import Store
from ..backend_array import Zarr3BackendArray
from .plan import DataWrite, WritePlan

#: xarray's lazy array types; each holds the array it wraps as ``.array``.
_WRAPPERS = (indexing.ExplicitlyIndexed, indexing.ImplicitToExplicitIndexingAdapter)
Box = tuple[tuple[int, int], ...]  # per dimension [start, stop)


@dataclass(frozen=True)
class _Read:
    """A part (``box``) of the stored array at ``path`` of ``store`` that a lazy variable reads."""

    store: Store
    path: str
    box: Box
    exact: bool = True  # the lazy selection was step-1 slices: blocks of it narrow ``box``


def read_own_target_first(store: Store, path: str, mode: WriteMode, plan: WritePlan) -> WritePlan:
    """``plan`` ready to change the store: `check_self_reads`, then for ``mode="w"`` `load_lazy_variables`."""
    check_self_reads(store, path, mode, plan)
    return load_lazy_variables(plan) if mode == "w" else plan


def load_lazy_variables(plan: WritePlan) -> WritePlan:
    """``plan`` with every variable that is neither dask nor in memory read now, before the store changes."""
    data = tuple(
        replace(w, variable=w.variable.load()) if w.variable.chunks is None else w for w in plan.data
    )
    return replace(plan, data=data)


def check_self_reads(store: Store, path: str, mode: WriteMode, plan: WritePlan) -> None:
    """Raise `WriteError` if a dask variable of ``plan`` reads data this write deletes or overwrites."""
    lazy = [w for w in plan.data if w.variable.chunks is not None]
    if not lazy:
        return
    group = _joined(_location(store), path)
    replaced = _replaced_boxes(plan)
    readers = sorted(
        {w.name for w in lazy if any(_clashes(r, mode, group, replaced) for r in _reads(w.variable.data))}
    )
    if readers:
        raise WriteError(_message(readers, store, path, mode))


def _clashes(read: _Read, mode: WriteMode, group: str, replaced: Mapping[str, list[Box]]) -> bool:
    """Whether ``read`` is below ``group`` (``mode="w"`` deletes all of it), or meets an overwritten part."""
    where = _joined(_location(read.store), read.path)
    if mode == "w":
        return where == group or where.startswith(group + "/")
    return any(_overlap(read.box, box) for box in replaced.get(where, ()))


def _replaced_boxes(plan: WritePlan) -> dict[str, list[Box]]:
    """Per stored array (location and path): the parts of it this plan writes (new rows of an append included)."""
    created = set(plan.created)
    out: dict[str, list[Box]] = {}
    for write in plan.data:
        if write.array.path not in created:
            where = _joined(_location(write.array.store), write.array.path)
            out.setdefault(where, []).append(_written(write))
    return out


def _written(write: DataWrite) -> Box:
    return tuple((o, o + n) for o, n in zip(write.origin, write.variable.shape))


def _overlap(a: Box, b: Box) -> bool:
    return all(s1 < e2 and s2 < e1 for (s1, e1), (s2, e2) in zip(a, b))


def _location(store: Store) -> str:
    """`Store.location`; a store without one is only ever itself."""
    return (store.location or f"object:{id(store)}").rstrip("/")


def _joined(location: str, path: str) -> str:
    return f"{location}/{path}" if path else location


def _reads(data: Any) -> Iterator[_Read]:
    """The stored parts the dask array ``data`` reads: the wrapped arrays of its culled graph, cut to the blocks getter tasks take."""
    graph = dict(data.__dask_graph__().cull(set(_flat(data.__dask_keys__()))))
    sources = {key: source for key, value in graph.items() if (source := _source(value)) is not None}
    for value in graph.values():
        if isinstance(value, Task):
            yield from _task_reads(value, sources)
        elif isinstance(value, GraphNode):
            yield from (sources[key] for key in value.dependencies if key in sources)


def _task_reads(task: Task, sources: Mapping[Any, _Read]) -> Iterator[_Read]:
    """A getter task's block of a wrapped array (referenced or inline); any other use reads all of it."""
    first, rest = (task.args[0], task.args[1:]) if task.args else (None, ())
    got = _source(first.value) if isinstance(first, DataNode) else None
    if isinstance(first, TaskRef):
        got = sources.get(first.key)
    if got is not None:
        yield _narrowed(got, rest[0].value if rest and isinstance(rest[0], DataNode) else None)
    skip = first.key if isinstance(first, TaskRef) else None
    yield from (sources[key] for key in task.dependencies if key in sources and key != skip)
    yield from (inline for arg in rest if isinstance(arg, DataNode) and (inline := _source(arg.value)))


def _narrowed(source: _Read, block: object) -> _Read:
    """``source`` cut to a getter's block (basic slices of step 1 over the lazy array), else as it is."""
    if not source.exact or not isinstance(block, tuple) or len(block) != len(source.box):
        return source
    box = []
    for (start, stop), item in zip(source.box, block):
        if not isinstance(item, slice) or item.step not in (None, 1):
            return source
        first, last, _ = item.indices(stop - start)
        box.append((start + first, start + max(first, last)))
    return replace(source, box=tuple(box))


def _source(value: object) -> _Read | None:
    """The stored array under xarray's lazy wrappers of ``value``, with the part its lazy selection covers."""
    key = None
    while isinstance(value, _WRAPPERS) and not isinstance(value, Zarr3BackendArray):
        if isinstance(value, indexing.LazilyIndexedArray):
            key = value.key
        elif isinstance(value, indexing.LazilyVectorizedIndexedArray):
            key = None
        value = getattr(value, "array", None)  # xarray's wrappers each hold the wrapped array as .array
    if not isinstance(value, Zarr3BackendArray):
        return None
    array = value.zarr_array
    box = _box(key, array.shape)
    items = key.tuple if isinstance(key, indexing.ExplicitIndexer) else ()
    exact = all(isinstance(i, slice) and i.step in (None, 1) for i in items) and len(items) == array.ndim
    return _Read(array.store, array.path, box, exact or key is None)


def _box(key: object, shape: tuple[int, ...]) -> Box:
    """The part of an array of ``shape`` an outer or basic indexer selects (all of it if unknown)."""
    whole = tuple((0, n) for n in shape)
    items = key.tuple if isinstance(key, indexing.ExplicitIndexer) else None
    if items is None or len(items) != len(shape):
        return whole
    return tuple(_extent(item, n) for item, n in zip(items, shape))


def _extent(item: object, n: int) -> tuple[int, int]:
    if isinstance(item, slice):
        start, stop, step = item.indices(n)
        span = range(start, stop, step)
        return (min(span), max(span) + 1) if span else (0, 0)
    values = np.asarray(item).ravel() % max(n, 1)
    return (int(values.min()), int(values.max()) + 1) if values.size else (0, 0)


def _flat(keys: object) -> Iterable[Any]:
    if isinstance(keys, list):
        for item in keys:
            yield from _flat(item)
    else:
        yield keys


def _message(names: list[str], store: Store, path: str, mode: WriteMode) -> str:
    where = f"group {path!r} of {store!r}" if path else repr(store)
    what = "deletes" if mode == "w" else "overwrites"
    return (
        f"to_zarr3 (mode={mode!r}): the dask data of {names} reads from {where}, which this write {what} "
        "before the reading tasks run, so they would read fill values or values already replaced. Nothing "
        "was written. Load the data first (ds = ds.load()), or write to another location and move it in "
        "place afterwards"
    )
