"""Selections of shard-sized dask chunks that read only the inner chunks they touch.

With ``chunks={}`` each dask chunk of an ``engine="zarr3"`` variable is one
shard, read by a dask ``getter`` task; ``.sel``/``.isel`` then add ``getitem``
tasks on the blocks. Dask's optimization passes a slice into the getter only
when the tasks end up fused together in one chain, which they do not when the
selected block has several consumers (``ds.v.sel(...).weighted(w).mean()``
uses it twice) nor for chained selections (``.isel(time=3).sel(...)``): the
whole shard is then read and decoded, and sliced after.

`install()` wraps dask's array optimization (the ``array_optimize``
setting) in `PushSelections`, which first runs
`push_selections()` on every graph computed: each ``getitem`` with basic
indices (slices and integers) of a getter task of ours becomes a getter task
of the composed selection, so `Zarr3BackendArray` is asked for just
that and fetches only the inner chunks it touches. Dask's own optimization
then runs as before (and culls the getters no longer needed). Graphs without
our arrays are passed on unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .backend_array import Zarr3BackendArray

Optimizer = Callable[..., Any]
#: The name prefix of the layers dask's slicing (``x[...]``, xarray's ``isel``) makes.
SELECTION_LAYER = "getitem-"


@dataclass(frozen=True)
class PushSelections:
    """`push_selections()`, then dask's array optimization (``inner``, or dask's default when ``None``)."""

    inner: Optimizer | None = None

    def __call__(self, dsk: Any, keys: Sequence[Any], **kwargs: Any) -> Any:
        from dask.array.optimization import optimize

        inner: Optimizer = self.inner or optimize  # dask leaves optimize unannotated
        return inner(push_selections(dsk, keys), keys, **kwargs)


def install() -> None:
    """Make dask's array optimization in this process run `push_selections()` first (once; no-op without dask).

    The ``array_optimize`` setting in force is kept as the inner
    optimization; ``array_optimize=False`` (no optimization) is respected.
    Setting ``array_optimize`` afterwards replaces the pass.
    """
    try:
        import dask.config
    except ImportError:
        return
    current = dask.config.get("array_optimize", None)
    if current is False or isinstance(current, PushSelections):
        return
    dask.config.set(array_optimize=PushSelections(current))


def push_selections(dsk: Any, keys: Sequence[Any]) -> Any:
    """``dsk`` (a ``HighLevelGraph``) with basic selections of zarr3 getter tasks read by getter tasks.

    A block's selections are pushed into its getter only when every layer
    reading the block's layer is a materialized ``getitem`` layer (as dask's slicing
    makes) and every task there reading the block is a ``getitem`` with
    basic indices: otherwise the whole block may be needed anyway, and is
    read once and sliced. Selections of selections are composed. Only the
    layers concerned are materialized, and of a getter layer only the
    blocks those selections read. Returns ``dsk`` itself when nothing
    changes (any other kind of graph too), else a ``HighLevelGraph`` whose
    changed layers are materialized.

    >>> import dask.array as da
    >>> x = da.from_array(list(range(10)), chunks=5)[2:4]
    >>> push_selections(x.__dask_graph__(), x.__dask_keys__()) is x.__dask_graph__()
    True
    """
    from dask.core import flatten
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    if not isinstance(dsk, HighLevelGraph):
        return dsk
    sources = [name for name, layer in dsk.layers.items() if _holds_ours(layer)]
    if not sources:
        return dsk
    readers: dict[str, set[str]] = {}
    for name, needs in dsk.dependencies.items():
        for dependency in needs:
            readers.setdefault(dependency, set()).add(name)
    arrays = {key: (name, value) for name in sources for key, value in _mapping(dsk.layers[name]).items()}
    wanted = set(flatten(keys))
    tasks: dict[str, dict[Any, Any]] = {}  # the layers looked at, materialized; rewritten in place
    changed: dict[str, set[str]] = {}  # rewritten layer -> the source layers its new tasks read
    pending = [reader for name in sources for reader in readers.get(name, ())] + sources
    while pending:
        name = pending.pop()
        consumers = readers.get(name, set())
        if not consumers or not all(_selection_layer(dsk.layers[c], c) for c in consumers):
            continue  # a write, a reduction, ...: the whole block is needed, and its layer is not scanned
        consumed = {c: tasks.setdefault(c, dict(dsk.layers[c])) for c in consumers}
        needed = {
            d
            for found in consumed.values()
            for node in found.values()
            for d in getattr(node, "dependencies", ())
        }
        blocks = tasks.setdefault(name, _tasks_of(dsk.layers[name], needed))
        uses: dict[
            Hashable, list[tuple[str, Hashable, tuple[Any, ...] | None]]
        ] = {}  # block -> tasks reading it
        for consumer in consumers:
            for key, node in consumed[consumer].items():
                for dependency in getattr(node, "dependencies", ()):
                    if dependency in blocks:
                        uses.setdefault(dependency, []).append(
                            (consumer, key, _selection_of(node, dependency))
                        )
        for source, selections in uses.items():
            if source in wanted or any(index is None for _, _, index in selections):
                continue
            getter = _our_getter(arrays, blocks[source])
            if getter is not None:
                _push(getter, selections, tasks, changed, arrays)
        pending.extend(c for c in consumers if c in changed and c not in pending)
    if not changed:
        return dsk
    layers = dict(dsk.layers)
    dependencies = {name: set(deps) for name, deps in dsk.dependencies.items()}
    for name, read in changed.items():
        layer = layers[name]
        layers[name] = MaterializedLayer(tasks[name], layer.annotations, layer.collection_annotations)
        dependencies[name] |= read
    return HighLevelGraph(layers, dependencies)


def _push(
    getter: tuple[Any, ...],
    selections: list[tuple[str, Hashable, Any]],
    tasks: dict[str, dict[Any, Any]],
    changed: dict[str, set[str]],
    arrays: Mapping[Hashable, tuple[str, Any]],
) -> None:
    """Turn the ``getitem`` tasks ``selections`` (layer, key, index) of one getter's block into getter tasks."""
    from dask._task_spec import DataNode, Task, TaskRef

    function, array, block, rest = getter
    try:
        fused = [(layer, key, _fuse(block, index)) for layer, key, index in selections]
    except NotImplementedError:
        return
    read = {arrays[array.key][0]} if isinstance(array, TaskRef) else set()
    for layer, key, index in fused:
        tasks[layer][key] = Task(key, function, array, DataNode(None, index), *rest)
        changed.setdefault(layer, set()).update(read)


def _tasks_of(layer: Any, needed: set[Hashable]) -> dict[Hashable, Any]:
    """The tasks of ``layer``: all of a materialized layer's, only the ``needed`` ones of another (a blockwise getter).

    A getter layer of 750,000 blocks (an hourly variable) is not built whole
    for the few thousand blocks a selection reads (`Layer.cull`).
    """
    from dask.highlevelgraph import MaterializedLayer

    if isinstance(layer, MaterializedLayer):
        return dict(layer)
    culled, _ = layer.cull(needed, needed)
    return dict(culled)


def _selection_layer(layer: Any, name: str) -> bool:
    """Whether a layer may hold selections of a block: a materialized ``getitem`` layer, as dask's slicing makes."""
    from dask.highlevelgraph import MaterializedLayer

    return isinstance(layer, MaterializedLayer) and name.startswith(SELECTION_LAYER)


def _mapping(layer: Any) -> Mapping[Hashable, Any]:
    """A source layer's data (its one key and value), or nothing for a getter layer holding the array itself."""
    from dask.highlevelgraph import MaterializedLayer

    return layer.mapping if isinstance(layer, MaterializedLayer) else {}


def _holds_ours(layer: Any) -> bool:
    """Whether a layer holds an ``engine="zarr3"`` array as data: a one-key layer, or a getter layer's constant."""
    from dask.blockwise import Blockwise
    from dask.highlevelgraph import MaterializedLayer

    if isinstance(layer, MaterializedLayer) and len(layer.mapping) == 1:
        values = list(layer.mapping.values())
    elif isinstance(layer, Blockwise):
        values = [value for value, index in layer.indices if index is None]
    else:
        return False
    return any(_wraps_ours(_value(value)) for value in values)


def _our_getter(
    arrays: Mapping[Hashable, tuple[str, Any]], node: Any
) -> tuple[Any, Any, tuple[Any, ...], tuple[Any, ...]] | None:
    """A getter task reading an ``engine="zarr3"`` variable: its function, array argument, block and other arguments."""
    from dask._task_spec import Task
    from dask.array.core import getter, getter_inline, getter_nofancy

    if not (
        isinstance(node, Task)
        and node.func in (getter, getter_nofancy, getter_inline)
        and len(node.args) in (2, 4)
    ):
        return None
    array, block, *rest = node.args
    if node.kwargs or not _basic(_value(block)) or not _reads_ours(arrays, array):
        return None
    function = getter if node.func is getter_inline else node.func  # as dask's own slice fusion does
    return function, array, _value(block), tuple(rest)


def _selection_of(node: Any, source: Hashable) -> tuple[Any, ...] | None:
    """The basic index of ``node`` if it is a ``getitem`` of the block ``source``."""
    from dask._task_spec import Task, TaskRef
    from dask.array.chunk import getitem

    if not (isinstance(node, Task) and node.func is getitem and len(node.args) == 2 and not node.kwargs):
        return None
    block, index = node.args
    index = _value(index)
    return index if isinstance(block, TaskRef) and block.key == source and _basic(index) else None


def _fuse(block: tuple[Any, ...], index: tuple[Any, ...]) -> tuple[Any, ...]:
    """``index`` of the block selected by ``block``, as one index of the whole array (dask's ``fuse_slice``)."""
    from dask.array.optimization import fuse_slice

    fused: tuple[Any, ...] = fuse_slice(block, index)
    return fused


def _reads_ours(arrays: Mapping[Hashable, tuple[str, Any]], argument: Any) -> bool:
    """Whether a getter's array argument (inline, a data node, or a reference to a source layer) wraps ours."""
    from dask._task_spec import TaskRef

    if isinstance(argument, TaskRef):
        return argument.key in arrays and _wraps_ours(_value(arrays[argument.key][1]))
    return _wraps_ours(_value(argument))


def _wraps_ours(array: Any) -> bool:
    """Whether ``array`` is a Zarr3BackendArray or one of xarray's wrappers around one."""
    for _ in range(8):  # xarray's adapters around a backend array: a few levels of ``.array``
        if isinstance(array, Zarr3BackendArray):
            return True
        array = getattr(array, "array", None)
        if array is None:
            return False
    return False


def _value(node: Any) -> Any:
    from dask._task_spec import DataNode

    return node.value if isinstance(node, DataNode) else node


def _basic(index: Any) -> bool:
    """A tuple of slices and integers: the indices composed here (fancy indexing is left to dask)."""
    return isinstance(index, tuple) and all(
        isinstance(i, (slice, int)) and not isinstance(i, bool) for i in index
    )
