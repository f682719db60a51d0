"""The dask `Executor`: a write's shard tasks as one dask graph, on the current dask scheduler.

`DASK` is what `zarr3_backend.writes.executor.executor_for()` returns for dask
arrays (and for data with no chunked array). It builds the graph with
`zarr3_backend.dask.write_graph.store_graph()`, runs it with
`zarr3_backend.dask.compute.compute_writes()`, and writes into an Icechunk
session from other processes through `zarr3_backend.dask.forks`.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, cast

import numpy as np

from ..store.base import Store
from ..writes.executor import Deferred, Forked, ShardTask
from ..writes.tasks import WriteRequest, WriteStep
from .compute import check_reachable, compute_writes
from .forks import forked_for_tasks
from .write_graph import store_graph

if TYPE_CHECKING:
    from dask.array import Array as DaskArray


@dataclass(frozen=True)
class DaskExecutor:
    """Shard tasks on dask: threads by default, ``dask.distributed`` when a client is active."""

    name: str = "dask"

    def owns(self, data: object) -> bool:
        """Whether ``data`` is a dask array."""
        import dask.array as da

        return isinstance(data, da.Array)

    def run(
        self,
        requests: Sequence[WriteRequest],
        last_step: WriteStep | None,
        *,
        compute: bool,
        progress: bool | Literal["tqdm"],
        gate: Sequence[object] = (),
    ) -> Deferred | None:
        """The graph of ``requests`` then ``last_step`` (behind ``gate``): computed (``None``), or a ``dask.delayed``."""
        lazy = [replace(r, data=_lazy(r.data)) for r in requests]
        delayed = store_graph(lazy, last_step, cast("list[DaskArray]", list(gate)))
        if not compute:
            return delayed
        compute_writes(delayed, progress if requests else False)  # no shard tasks: nothing to report
        return None

    def run_tasks(self, tasks: Sequence[ShardTask], *, progress: bool, label: str) -> list[int]:
        """One dask task per shard (keyed as a write graph's shard tasks, so progress counts them)."""
        from dask.delayed import Delayed

        from .progress import SHARD_TASK_PREFIX

        token = uuid.uuid4().hex
        name = f"{SHARD_TASK_PREFIX}{label}-{token}"
        graph: dict[object, object] = {(name, i): (task,) for i, task in enumerate(tasks)}
        final = f"zarr3-{label}-{token}"
        graph[final] = (list, list(graph))
        return cast("list[int]", compute_writes(Delayed(final, graph), progress, label=label))

    def token(self, *parts: object) -> str:
        """dask's deterministic token of ``parts``."""
        from dask.base import tokenize

        return str(tokenize(*parts))

    def check_reachable(self, store: Store) -> None:
        """Refuse a process-local store when the dask scheduler runs tasks in other processes."""
        check_reachable(store)

    def forked(self, store: Store, chunked: bool) -> contextlib.AbstractContextManager[Forked | None]:
        """A fork of ``store``'s Icechunk session when ``chunked`` data is written on a cluster."""
        return forked_for_tasks(store, chunked)


DASK = DaskExecutor()


def _lazy(data: object) -> DaskArray:
    """``data`` as a dask array: in-memory values written by tasks too, behind a write's gate."""
    import dask.array as da

    if isinstance(data, da.Array):
        return data
    values = np.asarray(data)
    return cast("DaskArray", da.from_array(values, chunks=values.shape or ()))
