"""What in a dask graph may read a store unseen: functions of other code and array-likes of unknown kinds.

`graph_reads` finds every stored array a graph holds, but not what a user's
function (``map_blocks``, ``dask.delayed``) or an unknown array-like reads:
`self_read` refuses such a graph where ``mode="w"`` replaces a group, and
`first_opaque` names it. Known: the functions of numpy, dask, xarray,
pandas, the standard library and xarray's compute libraries, in-memory
arrays, stored arrays, and xarray's netCDF backend arrays.

>>> import dask.array as da
>>> first_opaque([da.ones(4, chunks=2) + 1]) is None
True
>>> def double(block):
...     return block * 2
>>> double.__module__ = "analysis"  # as if defined in the user's own module
>>> first_opaque([da.ones(4, chunks=2).map_blocks(double)])
'the function double of analysis'
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator

import numpy as np
from dask._task_spec import DataNode, Task  # the graph format has no public path
from dask.array import Array as DaskArray
from xarray.core import indexing

from .graph_reads import GraphReads, layer_values

#: Top-level packages whose functions and arrays read no store behind the write's back.
KNOWN_PACKAGES = frozenset(
    {
        "builtins",
        "_operator",
        "operator",
        "functools",
        "_functools",
        "itertools",
        "math",
        "numpy",
        "pandas",
        "dask",
        "toolz",
        "tlz",
        "xarray",
        "zarr3_backend",
        "cftime",
        "scipy",
        "bottleneck",
        "numbagg",
        "flox",
    }
)
#: xarray's backends whose arrays read netCDF-like files, never a Zarr store.
FILE_BACKENDS = frozenset({"netCDF4_", "h5netcdf_", "scipy_", "pydap_"})
_DEPTH = 4  # nesting of task arguments looked into


def first_opaque(arrays: Iterable[DaskArray], finder: GraphReads | None = None) -> str | None:
    """A description of the first opaque function or array-like the graphs of ``arrays`` hold, else ``None``.

    Blockwise layers are looked at through their one task template and
    constants, unexpanded; other layers task by task.
    """
    finder = finder or GraphReads()
    return next((f for value in layer_values(arrays) for f in _opaque(value, finder, _DEPTH)), None)


def _opaque(value: object, finder: GraphReads, depth: int) -> Iterator[str]:
    if depth < 0:
        return
    if isinstance(value, DataNode):
        value = value.value
    if isinstance(value, Task):
        yield from _callable(value.func)
        for arg in (*value.args, *value.kwargs.values()):
            yield from _opaque(arg, finder, depth - 1)
    elif isinstance(value, (list, tuple)):
        for item in value[:64]:  # a task's literal arguments: slices, shapes, names
            yield from _opaque(item, finder, depth - 1)
    elif _array_like(value):
        if not _known_array(value, finder):
            yield f"the array-like {type(value).__module__}.{type(value).__qualname__}"
    elif callable(value):
        yield from _callable(value)


def _callable(func: object) -> Iterator[str]:
    while isinstance(func, functools.partial):
        func = func.func
    module = getattr(func, "__module__", None) or type(func).__module__  # functions and callable objects
    if str(module).split(".")[0] not in KNOWN_PACKAGES:
        name = getattr(func, "__qualname__", None) or type(func).__qualname__
        yield f"the function {name} of {module}"


def _array_like(value: object) -> bool:
    return not isinstance(value, type) and all(hasattr(value, a) for a in ("shape", "dtype", "__getitem__"))


def _known_array(value: object, finder: GraphReads) -> bool:
    """In memory, a stored array `graph_reads` locates, or a netCDF backend's array, under xarray's wrappers."""
    if finder.source(value) is not None:
        return True
    while isinstance(value, (indexing.ExplicitlyIndexed, indexing.ImplicitToExplicitIndexingAdapter)):
        module = type(value).__module__
        if module.startswith("xarray.backends.") and module.rsplit(".", 1)[1] in FILE_BACKENDS:
            return True
        inner = getattr(value, "array", None)  # xarray's wrappers each hold the wrapped array as .array
        if inner is None:
            return False
        value = inner
    return isinstance(value, (np.ndarray, np.generic)) or type(value).__module__.split(".")[0] in (
        "numpy",
        "pandas",
    )
