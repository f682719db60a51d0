"""Writing into a transactional store (an Icechunk session) from dask tasks in other processes: forks.

A writable Icechunk session refuses to pickle, and a copy of it in a task
would keep what the task wrote to itself. So when ``to_zarr3`` writes dask
data into a transactional `ZarrPythonStore`
and the tasks run in other processes (dask.distributed), `forked_for_tasks`
forks the user's session (``session.fork()``) and the whole write goes
through the fork: the client writes the metadata into it, and every task
writes into its own unpickled copy, which registers itself in its process.
When the graph has run, `Forks.merge_back` collects every copy from
the workers (``client.run``) and merges them, with the client's fork, into
the user's session (``session.merge(...)``). Nothing is committed: the user
calls ``session.commit(...)``. A failed write merges nothing, so the user's
session is as it was.

Only these members beyond zarr-python's store ABC are used:
``store.session.fork()``, ``session.merge(*forks)``, ``fork.store``, and the
fork's store pickling. Threaded and synchronous schedulers need no fork:
their tasks write through the user's session itself.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..errors import WriteError
from ..runtime import PerProcess
from ..store import icechunk_api
from ..store.base import Store
from ..store.zarr_python import ZarrPythonStore
from .compute import _distributed_client

if TYPE_CHECKING:
    from dask.delayed import Delayed
    from distributed import Client
    from zarr.abc.store import Store as ZarrStore


@dataclass
class _Copies:
    """The copies of forked stores unpickled in this process, by fork id, and this process's identity."""

    by_fork: dict[str, list[ForkedStore]] = field(default_factory=dict)
    process: str = field(default_factory=lambda: uuid.uuid4().hex)
    lock: threading.Lock = field(default_factory=threading.Lock)


_here = PerProcess(_Copies)  # a forked worker starts with none, under an identity of its own


class ForkedStore(ZarrPythonStore):
    """A fork of the user's session; each copy unpickled in a process registers itself under ``fork_id``."""

    def __init__(self, store: ZarrStore, fork_id: str) -> None:
        super().__init__(store)
        self.fork_id = fork_id

    def __reduce__(self) -> tuple[Callable[..., ForkedStore], tuple[object, ...]]:
        return (_arrive, (self.wrapped, self.fork_id))


def _arrive(wrapped: ZarrStore, fork_id: str) -> ForkedStore:
    store = ForkedStore(icechunk_api.task_session(cast(Any, wrapped).session).store, fork_id)
    here = _here.get()
    with here.lock:
        here.by_fork.setdefault(fork_id, []).append(store)
    return store


def _take(fork_id: str) -> tuple[str, list[Any]]:
    """This process's identity and the sessions of its copies of fork ``fork_id`` (forgotten here)."""
    here = _here.get()
    with here.lock:
        copies = here.by_fork.pop(fork_id, [])
    return here.process, [cast(Any, copy.wrapped).session for copy in copies]


def _process(_: object = None) -> str:
    return _here.get().process


@dataclass
class Forks:
    """A write through a fork of ``session``: `store` is what it writes to; `merge_back` ends it."""

    session: Any
    fork: Any
    store: ForkedStore
    processes: set[str] = field(default_factory=set)  # the worker processes when the write began

    def merge_back(self) -> None:
        """Merge the client's fork and every task's copy into the user's session (nothing is committed)."""
        client = _client()
        taken = [_take(self.store.fork_id)]
        if client is not None:
            taken += list(client.run(_take, self.store.fork_id).values())
        lost = self.processes - {process for process, _ in taken}
        if lost:
            raise WriteError(
                f"to_zarr3: {len(lost)} dask worker process(es) ended during the write, and what their tasks "
                "wrote into forks of the Icechunk session is lost; nothing was merged into your session: "
                "write again"
            )
        icechunk_api.merge_forks(self.session, self.fork, [copy for _, copies in taken for copy in copies])

    def drop(self) -> None:
        """Forget the copies of a failed write (its forks are never merged)."""
        _take(self.store.fork_id)
        client = _client()
        if client is not None:
            with contextlib.suppress(Exception):
                client.run(_take, self.store.fork_id)

    def finish(self, result: Delayed | None, compute: bool) -> Delayed | None:
        """After a computed write: merge back. A deferred one: a delayed whose computation merges back."""
        if compute:
            self.merge_back()
            return None
        assert result is not None
        return merging(result, self)


def merging(result: Delayed, forks: Forks) -> Delayed:
    """``result`` whose ``compute()`` merges the forks back into the session, in the calling process.

    (``dask.compute(result)`` would run a finalizer on the cluster, where the user's session is not.)
    """
    from dask.delayed import Delayed

    class MergingDelayed(Delayed):
        __slots__ = ("_forks",)

        def compute(self, **kwargs: Any) -> Any:
            try:
                computed = cast(Any, super()).compute(**kwargs)
            except BaseException:
                self._forks.drop()
                raise
            self._forks.merge_back()
            return computed

    merged = cast(Any, MergingDelayed)(result.key, result.dask, layer=result.__dask_layers__()[0])
    merged._forks = forks
    return cast("Delayed", merged)


@contextlib.contextmanager
def forked_for_tasks(store: Store, dask_data: bool) -> Iterator[Forks | None]:
    """A fork of ``store``'s session to write through, when dask tasks in other processes write ``dask_data``.

    ``None`` (write through ``store`` itself) for a store that is not
    transactional, data without dask, or tasks in this process. The write
    must call `Forks.finish`; if it raises, the forks are dropped.
    """
    if not (dask_data and isinstance(store, ZarrPythonStore) and store.transactional and not store.read_only):
        yield None
        return
    client = _client()
    if client is None:
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
    forks = Forks(session, fork, ForkedStore(fork.store, uuid.uuid4().hex))
    forks.processes = set(client.run(_process).values())
    try:
        yield forks
    except BaseException:
        forks.drop()
        raise


def _client() -> Client | None:
    """The dask.distributed client that runs dask's computations now, if any."""
    return _distributed_client()


def _refuse_process_pool(store: Store) -> None:
    import dask
    import dask.multiprocessing

    if dask.base.get_scheduler() is dask.multiprocessing.get:
        raise WriteError(
            f"to_zarr3: {store!r} writes into a transaction; dask's process-pool scheduler cannot merge what "
            "its tasks write back into the session: use dask.distributed or the threaded scheduler"
        )
