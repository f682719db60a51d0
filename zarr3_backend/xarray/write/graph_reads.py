"""Which parts of which stored arrays a dask graph reads, found from the xarray lazy arrays inside it.

Every stored array a graph holds (by key or inline in a getter task) names
its store and array path: ours (`Array`, what ``da.from_array`` of one
holds), zarr-python's (``da.from_zarr``), and xarray's lazy wrappers
(``LazilyIndexedArray`` and the rest) around our backend array or around
``engine="zarr"``'s; the wrappers' selection and each getter task's block
tell the part read. Stores are named by `Store.location`, asked once per store. Used by
`self_read` to find a write that reads its own target.
"""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from dask._task_spec import DataNode, GraphNode, Task, TaskRef  # the graph format has no public path
from dask.array import Array as DaskArray
from dask.array.core import getter, getter_inline, getter_nofancy
from dask.blockwise import Blockwise
from dask.core import flatten
from dask.highlevelgraph import HighLevelGraph
from dask.layers import ArraySliceDep
from dask.typing import Key
from xarray.core import indexing

from ...nodes.array import Array
from ...store import make_store
from ...store.base import Store
from ..backend_array import Zarr3BackendArray

#: dask's functions that read one block ``index`` of an array-like: ``getter(array, index, ...)``.
GETTERS = (getter, getter_inline, getter_nofancy)
#: xarray's lazy array types; each holds the array it wraps as ``.array``.
_WRAPPERS = (indexing.ExplicitlyIndexed, indexing.ImplicitToExplicitIndexingAdapter)
Box = tuple[tuple[int, int], ...]  # per dimension [start, stop)


@dataclass(frozen=True)
class StoredRead:
    """A part (``box``) of the stored array at ``where`` (store location, then array path) that a graph reads."""

    where: str
    box: Box
    exact: bool = True  # the lazy selection was step-1 slices: blocks of it narrow ``box``


class GraphReads:
    """Finds the stored parts that dask graphs read, each store's `Store.location` asked once.

    >>> import xarray as xr
    >>> xr.Dataset({"v": ("x", [1, 2, 3, 4])}).to_zarr3("memory://doc/graph_reads", encoding={"v": {"chunks": 2}})
    >>> lazy = xr.open_dataset("memory://doc/graph_reads", engine="zarr3", chunks={}).v  # blocks of 2
    >>> [(read.where, read.box) for read in GraphReads().reads(lazy[2:].data)]
    [('memory:///doc/graph_reads/v', ((2, 4),))]
    """

    def __init__(self) -> None:
        self._locations: dict[int, str] = {}
        self._unlocated: list[Store] = []
        self._stores: dict[int, Store] = {}

    def where(self, store: Store, path: str) -> str:
        """The store's location joined with ``path``; stores without one are told apart by `Store.same_keys`."""
        location = self._locations.get(id(store))
        if location is None:
            location = self._locations[id(store)] = (store.location or self._alias(store)).rstrip("/")
        return f"{location}/{path}" if path else location

    def _alias(self, store: Store) -> str:
        same = next((other for other in self._unlocated if store.same_keys(other)), None)
        if same is None:
            self._unlocated.append(store)
            same = store
        return f"object:{id(same)}"

    def held(self, arrays: Iterable[DaskArray]) -> Iterator[StoredRead]:
        """Every stored array the graphs of ``arrays`` hold (all their lazy selections cover), blockwise layers unexpanded.

        A blockwise layer holds its constants among its ``indices`` (an inline
        array) and in its one task template; other layers are read whole.
        """
        for value in layer_values(arrays):
            if (source := self._held_by(value)) is not None:
                yield source

    def _held_by(self, value: object) -> StoredRead | None:
        if isinstance(value, Task) and value.args and isinstance(value.args[0], DataNode):
            value = value.args[0]
        if isinstance(value, DataNode):
            value = value.value
        return None if isinstance(value, GraphNode) else self.source(value)

    def sources(self, graph: Mapping[Key, object]) -> dict[Key, StoredRead]:
        """The wrapped stored arrays of ``graph``: by key, or by the key of the task holding one inline."""
        return {key: source for key, value in graph.items() if (source := self._held_by(value)) is not None}

    def reads(self, data: DaskArray) -> Iterator[StoredRead]:
        """The parts the dask array ``data`` reads (its culled graph), cut to the blocks getter tasks take.

        Blockwise getter layers (what ``from_array`` builds) tell their blocks without being expanded.
        """
        graph = data.__dask_graph__()
        culled = (
            graph.cull(set(flatten(data.__dask_keys__()))) if isinstance(graph, HighLevelGraph) else graph
        )
        layers = list(culled.layers.values()) if isinstance(culled, HighLevelGraph) else [culled]
        nodes: dict[Key, object] = {}
        for layer in layers:
            if not isinstance(layer, Blockwise):
                nodes.update(layer)
        sources = self.sources(nodes)
        by_key = {key: source for key, source in sources.items() if not isinstance(nodes[key], Task)}
        for key, node in nodes.items():
            if isinstance(node, GraphNode):
                yield from _node_reads(key, node, sources, by_key)
        for layer in layers:
            if isinstance(layer, Blockwise):
                yield from self._blockwise_reads(layer, by_key)

    def _blockwise_reads(self, layer: Blockwise, by_key: Mapping[Key, StoredRead]) -> Iterator[StoredRead]:
        """A blockwise getter's blocks of the array it holds (by reference or inline); any other use: all of it."""
        constants = [value for value, index in layer.indices if index is None] + [layer.task]
        held = [by_key.get(v.key) if isinstance(v, TaskRef) else self._held_by(v) for v in constants]
        found = [read for read in held if read is not None]
        blocks = _getter_blocks(layer) if len(found) == 1 else None
        if blocks is None:
            yield from found
        else:
            yield from (_narrowed(found[0], block) for block in blocks)

    def source(self, value: object) -> StoredRead | None:
        """The stored array under xarray's lazy wrappers of ``value``, with the part its lazy selection covers.

        Stored arrays: ours (`Array`, and the backend array of ``engine="zarr3"``)
        and zarr-python's (``Array``, ``AsyncArray``, and xarray's
        ``ZarrArrayWrapper`` of ``engine="zarr"``), named by their store.
        """
        key = None
        while (located := self._located(value)) is None and isinstance(value, _WRAPPERS):
            if isinstance(value, indexing.LazilyIndexedArray):
                key = value.key
            elif isinstance(value, indexing.LazilyVectorizedIndexedArray):
                key = None
            value = getattr(value, "array", None)  # xarray's wrappers each hold the wrapped array as .array
        if located is None:
            return None
        where, shape = located
        items = key.tuple if isinstance(key, indexing.ExplicitIndexer) else ()
        exact = key is None or (
            len(items) == len(shape) and all(isinstance(i, slice) and i.step in (None, 1) for i in items)
        )
        return StoredRead(where, _box(key, shape), exact)

    def _located(self, value: object) -> tuple[str, tuple[int, ...]] | None:
        """Where a stored array is (`where`) and its shape; ``None`` for anything else."""
        if isinstance(value, Zarr3BackendArray):
            value = value.zarr_array
        if isinstance(value, Array):
            return self.where(value.store, value.path), value.shape
        zarr_array = _zarr_python_array(value)
        if zarr_array is None:
            return None
        store_path = zarr_array.store_path
        return self.where(self._adapted(store_path.store), store_path.path), tuple(zarr_array.shape)

    def _adapted(self, zarr_store: object) -> Store:
        """Our view of a zarr-python store (its location names the same store), made once per store."""
        adapted = self._stores.get(id(zarr_store))
        if adapted is None:
            adapted = self._stores[id(zarr_store)] = make_store(zarr_store, read_only=True)
        return adapted


def layer_values(arrays: Iterable[DaskArray]) -> Iterator[object]:
    """What each layer of the graphs of ``arrays`` holds, each layer once: a blockwise layer's constants and
    task template (unexpanded), any other layer's tasks."""
    seen: set[Hashable] = set()
    for array in arrays:
        graph = array.__dask_graph__()
        layers = graph.layers if isinstance(graph, HighLevelGraph) else {id(graph): graph}
        for name, layer in layers.items():
            if name in seen:
                continue
            seen.add(name)
            if isinstance(layer, Blockwise):
                yield from [v for v, index in layer.indices if index is None] + [layer.task]
            else:
                yield from layer.values()


def _zarr_python_array(value: object) -> Any:
    """zarr-python's ``Array``/``AsyncArray`` in ``value`` (itself, or under xarray's ``ZarrArrayWrapper``).

    Neither is looked for unless its module is imported: nothing can hold one otherwise.
    """
    wrappers = sys.modules.get("xarray.backends.zarr")
    if wrappers is not None and isinstance(value, wrappers.ZarrArrayWrapper):
        value = value.get_array()
    zarr = sys.modules.get("zarr")
    return value if zarr is not None and isinstance(value, (zarr.Array, zarr.AsyncArray)) else None


def _node_reads(
    key: Key,
    node: GraphNode,
    sources: Mapping[Key, StoredRead],
    by_key: Mapping[Key, StoredRead],
) -> Iterator[StoredRead]:
    """A getter task's block of a wrapped array (``sources``: held by key or inline); any other use of one
    held by key (``by_key``) reads all of it."""
    first = node.args[0] if isinstance(node, Task) and node.args else None
    held = first.key if isinstance(first, TaskRef) else key
    if held in sources and isinstance(node, Task):
        index = node.args[1] if len(node.args) > 1 and node.func in GETTERS else None
        yield _narrowed(sources[held], index.value if isinstance(index, DataNode) else None)
    yield from (by_key[k] for k in node.dependencies if k in by_key and k != held)


def _getter_blocks(layer: Blockwise) -> list[tuple[slice, ...]] | None:
    """The index of every block a ``getter(array, index)`` blockwise layer takes (``None``: not such a layer)."""
    if layer.task.func not in GETTERS or len(layer.indices) != 2:
        return None
    name, index = layer.indices[1]
    slices = layer.io_deps.get(name) if isinstance(name, str) else None
    if not isinstance(slices, ArraySliceDep) or tuple(index or ()) != tuple(layer.output_indices):
        return None
    starts = [np.cumsum((0, *lengths)) for lengths in slices.chunks]
    blocks = layer.output_blocks or itertools.product(*(range(len(c)) for c in slices.chunks))
    return [tuple(slice(int(s[i]), int(s[i + 1])) for s, i in zip(starts, block)) for block in blocks]


def _narrowed(source: StoredRead, block: object) -> StoredRead:
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


def plan_reads(finder: GraphReads, data: object) -> Iterator[StoredRead]:
    """The stored arrays a Cubed array's plan reads: the lazy arrays its ``from_array`` steps hold, whole selections.

    Cubed holds each input array as a keyword of its step's function (a
    ``functools.partial`` in the step's pipeline config), so the plan
    (``data.plan()``, unoptimised: every step) names each one; a step's
    blocks are not told apart, so a region is compared with the whole
    selection it reads.
    """
    import cubed

    if not isinstance(data, cubed.Array):
        return
    for _, node in data.plan(optimize_graph=False).dag.nodes(data=True):
        pipeline = node.get("pipeline")
        function = None if pipeline is None or pipeline.config is None else pipeline.config.function
        if isinstance(function, functools.partial):
            yield from (read for value in function.keywords.values() if (read := finder.source(value)))
