"""The `Executor` seam: what runs a write's shard tasks (dask, Cubed, ...), picked from the data.

An executor knows one chunked-array library. `executor_for()` picks the one
owning a write's chunked data, as xarray's ``get_chunked_array_type`` picks
a chunk manager: each known executor is asked `Executor.owns()` only when its
library is imported already (data of a library not imported cannot exist).
Ours are `BUILTIN` (dask in `zarr3_backend.dask.executor`, Cubed in
`zarr3_backend.cubed`); a third registers under the entry-point group
`ENTRY_POINTS` (``name = "module:attribute"``, an `Executor` instance) and
is found the same way. Data with no chunked array goes to dask, the default.

>>> import numpy as np
>>> executor_for([np.arange(3)]).name
'dask'
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol, cast

from ..errors import WriteError
from ..store.base import Store
from .tasks import WriteRequest, WriteStep

#: The entry-point group of executors besides ours.
ENTRY_POINTS = "zarr3_backend.executors"
#: Our executors: name -> (the library whose arrays it owns, "module:attribute" of the executor).
BUILTIN = {
    "dask": ("dask", "zarr3_backend.dask.executor:DASK"),
    "cubed": ("cubed", "zarr3_backend.cubed:CUBED"),
}
DEFAULT = "dask"

Progress = bool | Literal["tqdm"]
ShardTask = Callable[[], int]  # one shard's whole work, picklable; returns the bytes it wrote


class Deferred(Protocol):
    """A write not run yet (``compute=False``): ``compute()`` runs it (a ``dask.delayed`` on dask)."""

    def compute(self, **kwargs: object) -> object:
        """Run the write."""


class Forked(Protocol):
    """A write through a fork of a transaction (Icechunk): `store` is written to, `finish` merges the forks back."""

    @property
    def store(self) -> Store:
        """The fork to write through."""

    def finish(self, deferred: Any, compute: bool, progress: bool = False) -> Deferred | None:
        """Run ``deferred`` (from `Executor.run` with ``compute=False``) and merge; or a deferred doing both."""


class Executor(Protocol):
    """What runs the shard tasks of a write: one per shard, then the write's `WriteStep` (see `tasks`)."""

    @property
    def name(self) -> str:
        """The name users give (``chunked_array_type``), e.g. ``"dask"``."""

    def owns(self, data: object) -> bool:
        """Whether ``data`` is an array of this executor's library."""

    def run(
        self,
        requests: Sequence[WriteRequest],
        last_step: WriteStep | None,
        *,
        compute: bool,
        progress: Progress,
        gate: Sequence[object] = (),
    ) -> Deferred | None:
        """Write every request, one task per shard, then ``last_step``; with ``compute=False`` a deferred
        write (its ``compute()`` does it). Returns only once every task is finished or cancelled.

        With a ``gate`` (checks of the write's blocks, arrays of this executor) a request's data may be in
        memory, and no shard task runs before all of the gate is computed."""

    def run_tasks(self, tasks: Sequence[ShardTask], *, progress: bool, label: str) -> list[int]:
        """Run ``tasks`` (independent, one per shard) and return their results, in order."""

    def token(self, *parts: object) -> str:
        """A token of ``parts`` (the data included), equal for an equal request: how a retry is recognised."""

    def check_reachable(self, store: Store) -> None:
        """Raise `WriteError` when the tasks would run where ``store`` cannot be reached."""

    def forked(self, store: Store, chunked: bool) -> contextlib.AbstractContextManager[Forked | None]:
        """A fork of ``store``'s transaction when ``chunked`` data is written from other processes; else ``None``."""


def executor_for(data: Iterable[object]) -> Executor:
    """The executor owning the chunked arrays among ``data`` (the default when there are none).

    `WriteError` when two executors' arrays are mixed (as xarray refuses
    mixing chunk managers) or no executor owns a chunked array.
    """
    chunked = [d for d in data if hasattr(d, "chunks") and not _is_numpy(d)]
    if not chunked:
        return executor_named(DEFAULT)
    owners: dict[str, Executor] = {}
    for name, library in _known().items():
        if (library is None or library in sys.modules) and any(
            (executor := executor_named(name)).owns(d) for d in chunked
        ):
            owners[name] = executor
    if len(owners) > 1:
        raise WriteError(f"to_zarr3: the data mixes arrays of {sorted(owners)}; chunk it with one of them")
    if not owners:
        kinds = sorted({type(d).__module__ + "." + type(d).__name__ for d in chunked})
        raise WriteError(f"to_zarr3: no executor writes arrays of type {kinds}; known: {sorted(_known())}")
    return next(iter(owners.values()))


def executor_named(name: str) -> Executor:
    """The executor called ``name`` (`WriteError` if none is known by it)."""
    if name in BUILTIN:
        target = BUILTIN[name][1]
    else:
        found = [e.value for e in entry_points(group=ENTRY_POINTS) if e.name == name]
        if not found:
            raise WriteError(f"no executor named {name!r}; known: {sorted(_known())}")
        target = found[0]
    module, _, attribute = target.partition(":")
    return cast(Executor, getattr(importlib.import_module(module), attribute))


def _known() -> dict[str, str | None]:
    """Executor name -> the library whose arrays it owns (``None``, unknown: a third party's, always asked)."""
    known: dict[str, str | None] = {name: library for name, (library, _) in BUILTIN.items()}
    for point in entry_points(group=ENTRY_POINTS):
        known.setdefault(point.name, None)
    return known


def _is_numpy(data: object) -> bool:
    return type(data).__module__.partition(".")[0] == "numpy"
