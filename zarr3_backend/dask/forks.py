"""Writing into a transactional store (an Icechunk session) from dask tasks in other processes: forks.

On dask.distributed, `forked_for_tasks` forks the user's session and the whole
write goes through the fork's `ForkedStore`; each task run (`task_forks`)
writes into a private copy and returns its session as its result (a
`ForkWrite`); the graph's last task gathers them (`gathered`) and
`Forks.merge_back` merges exactly these into the user's session. Nothing is
committed: the user calls ``session.commit(...)``. Why, and what survives a
worker's death: the architecture page, "Icechunk forks".
"""

from __future__ import annotations

import contextlib
import pickle
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..errors import WriteError
from ..store import icechunk_api
from ..store.base import Store
from ..store.zarr_python import ZarrPythonStore
from .compute import _distributed_client, compute_writes

if TYPE_CHECKING:
    from dask.delayed import Delayed
    from zarr.abc.store import Store as ZarrStore

# The private copies of the forked stores one task run writes into, by fork id (None: not in a task run).
# asyncio copies the context into the coroutines a task runs on the background loop, so they see it too.
_task_copies: ContextVar[dict[str, Any] | None] = ContextVar("zarr3_task_copies", default=None)


class ForkedStore(ZarrPythonStore):
    """A fork of the user's session; inside `task_forks` every access goes to that run's private copy."""

    def __init__(self, store: ZarrStore, fork_id: str, copy: bool = False) -> None:
        super().__init__(store)
        self.fork_id = fork_id
        self.copy = copy  # unpickled in a task: written only inside `task_forks`, or the writes would be lost

    @property
    def wrapped(self) -> ZarrStore:
        """The fork's store, or the current task run's private copy of it."""
        copies = _task_copies.get()
        if copies is None:
            return self._template
        if self.fork_id not in copies:
            copy = cast(Any, pickle.loads(pickle.dumps(self._template)))
            copies[self.fork_id] = icechunk_api.task_session(copy.session).store
        return cast("ZarrStore", copies[self.fork_id])

    @wrapped.setter
    def wrapped(self, store: ZarrStore) -> None:
        self._template = store

    def __reduce__(self) -> tuple[Callable[..., ForkedStore], tuple[object, ...]]:
        return (ForkedStore, (self._template, self.fork_id, True))

    def _check_writable(self) -> None:
        super()._check_writable()
        if self.copy and _task_copies.get() is None:
            raise WriteError(
                f"{self!r}: a write into a fork of an Icechunk session outside a to_zarr3 write task would be lost"
            )


@dataclass(frozen=True)
class ForkWrite:
    """What one task run wrote into forks: the sessions of its private copies, returned as its result."""

    nbytes: int  # the bytes it wrote (decoded), which `zarr3_backend.dask.progress` counts
    sessions: tuple[Any, ...]

    def __int__(self) -> int:
        return self.nbytes


@dataclass
class TaskForks:
    """The sessions a `task_forks` block wrote into (filled when the block ends)."""

    forked: bool = False  # it wrote through a forked store: its result must carry its sessions
    sessions: tuple[Any, ...] = ()


@contextlib.contextmanager
def task_forks(store: Store | None = None) -> Iterator[TaskForks]:
    """A task run: every `ForkedStore` used in this block writes into a private copy of its fork.

    ``store``, when forked, gets its copy at once (so the run returns one
    even if it writes nothing). When the block ends, the result holds the
    copies' sessions, to be returned as the task's result.
    """
    written = TaskForks(forked=isinstance(store, ForkedStore))
    copies: dict[str, Any] = {}
    token = _task_copies.set(copies)
    try:
        if isinstance(store, ForkedStore):
            store.wrapped  # noqa: B018  (makes the copy)
        yield written
    finally:
        _task_copies.reset(token)
    written.sessions = tuple(copy.session for copy in copies.values())


def task_result(nbytes: int, forks: TaskForks, ndim: int) -> np.ndarray:
    """A shard task's block: its byte count, or a `ForkWrite` when it wrote through a fork."""
    if not forks.forked:
        return np.full((1,) * ndim, nbytes, dtype=np.int64)
    result = np.empty((1,) * ndim, dtype=object)
    result.flat[0] = ForkWrite(nbytes, forks.sessions)
    return result


def gathered(written: Sequence[np.ndarray], names: Sequence[str], last: TaskForks) -> ForkWrite | None:
    """Every fork the shard tasks returned (``written``: their blocks per array ``names``), with ``last``'s.

    ``None`` when nothing was forked. `WriteError` naming the shards whose
    result holds no fork, when others do: what they wrote would be lost.
    """
    blocks = [(name, index, w) for name, block in zip(names, written) for index, w in np.ndenumerate(block)]
    forked = [w for _, _, w in blocks if isinstance(w, ForkWrite)]
    if not forked and not last.sessions:
        return None
    lost = [f"{name} block {index}" for name, index, w in blocks if not isinstance(w, ForkWrite)]
    if lost:
        raise WriteError(
            f"to_zarr3: {len(lost)} shard task(s) returned no fork of the Icechunk session ({', '.join(lost[:5])}), "
            "so what they wrote is lost; nothing was merged into your session: write again"
        )
    sessions = tuple(session for write in forked for session in write.sessions)
    return ForkWrite(sum(w.nbytes for w in forked), sessions + last.sessions)


@dataclass
class Forks:
    """A write through a fork of ``session``: `store` is what it writes to; `finish` ends it."""

    session: Any
    fork: Any
    store: ForkedStore

    def finish(self, delayed: Delayed, compute: bool, progress: bool = False) -> Delayed | None:
        """Compute the write graph and merge its forks back; or (``compute=False``) a delayed that does so."""
        if not compute:
            return merging(delayed, self)
        self.merge_back(compute_writes(delayed, progress))
        return None

    def merge_back(self, written: object) -> None:
        """Merge the client's fork and the forks the graph returned (its result) into the user's session."""
        copies = written.sessions if isinstance(written, ForkWrite) else ()
        icechunk_api.merge_forks(self.session, self.fork, copies)


def merging(result: Delayed, forks: Forks) -> Delayed:
    """``result`` whose ``compute()`` computes the write and merges its forks into the session, in this process.

    (``dask.compute(result)`` would run a finalizer on the cluster, where the user's session is not.)
    """
    from dask.delayed import Delayed

    class MergingDelayed(Delayed):
        __slots__ = ("_forks",)

        def compute(self, **kwargs: Any) -> None:
            self._forks.merge_back(cast(Any, super()).compute(**kwargs))

    merged = cast(Any, MergingDelayed)(result.key, result.dask, layer=result.__dask_layers__()[0])
    merged._forks = forks
    return cast("Delayed", merged)


@contextlib.contextmanager
def forked_for_tasks(store: Store, dask_data: bool) -> Iterator[Forks | None]:
    """A fork of ``store``'s session to write through, when dask tasks in other processes write ``dask_data``.

    ``None`` (write through ``store`` itself) for a store that is not
    transactional, data without dask, or tasks in this process. The write
    ends with `Forks.finish`; if it raises instead, nothing is merged.
    """
    if not (dask_data and isinstance(store, ZarrPythonStore) and store.transactional and not store.read_only):
        yield None
        return
    if _distributed_client() is None:
        _refuse_process_pool(store)
        yield None
        return
    session = cast(Any, store.wrapped).session
    try:
        fork = icechunk_api.fork(session)
    except ValueError as exc:
        raise WriteError(
            f"to_zarr3 writes dask data on a cluster through forks of the Icechunk session, which cannot "
            f"be forked now: {exc}"
        ) from exc
    yield Forks(session, fork, ForkedStore(fork.store, uuid.uuid4().hex))


def _refuse_process_pool(store: Store) -> None:
    import dask
    import dask.multiprocessing

    if dask.base.get_scheduler() is dask.multiprocessing.get:
        raise WriteError(
            f"to_zarr3: {store!r} writes into a transaction; dask's process-pool scheduler cannot merge what "
            "its tasks write back into the session: use dask.distributed or the threaded scheduler"
        )
