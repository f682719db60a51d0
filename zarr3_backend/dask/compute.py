"""Running a write graph (`store_graph()`) on the current dask scheduler.

`compute_writes()` computes it, with optional progress, on
dask.distributed (`compute_on_cluster()`)
or on dask's threaded scheduler (``dask.local.get_async``) over one persistent
pool of the runtime, and returns only once every task of this write is
finished or cancelled.
`check_reachable()` refuses a process-local (``memory://``) store when
the tasks would run in other processes.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from ..errors import WriteError
from ..runtime import TrackedExecutor, current_pool, private_pool, shared_pool
from ..store.base import Store

if TYPE_CHECKING:  # dask and distributed are optional: this module imports them where it uses them
    from dask.delayed import Delayed
    from distributed import Client


def _distributed_client() -> Client | None:
    """The distributed Client that ``compute`` would use, if any."""
    try:
        import dask.base
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        return None
    return client if dask.base.get_scheduler() == client.get else None


def check_reachable(store: Store) -> None:
    """Refuse a process-local (``memory://``) store when the writes would run in other processes."""
    if not store.process_local:
        return
    import dask.base
    import dask.multiprocessing

    client = _distributed_client()
    other = client is not None and any(pid != os.getpid() for pid in client.run(os.getpid).values())
    if other or dask.base.get_scheduler() is dask.multiprocessing.get:
        raise WriteError(
            f"the store {store!r} lives in this process's memory, but the dask scheduler runs tasks in "
            "other processes, whose writes would be lost; write to a path or an object store (s3://, gs://) instead"
        )


def compute_writes(delayed: Delayed, progress: bool | str = False, *, label: str = "to_zarr3") -> object:
    """Compute a `store_graph()` on the current scheduler, with ``progress`` (its lines start with ``label``).

    Returns the graph's result (the forks it wrote into, see `zarr3_backend.dask.forks`).

    ``True`` prints shards done out of the total and the data rate
    (`zarr3_backend.dask.progress`), on any scheduler; ``"tqdm"``
    shows tqdm's bar of dask tasks (on dask.distributed, where tqdm's dask
    callback sees nothing, the shard line instead). On dask's default threaded scheduler
    the tasks run on a persistent pool of ours (its threads keep their
    scratch buffers from one write to the next), and this write's tasks are
    all finished or cancelled before this returns or raises: after a
    failure no write task is still running, so the caller can clean up safely.
    On dask.distributed the same holds (`compute_on_cluster()`).
    """
    client = _distributed_client()
    if client is not None:
        from .progress import compute_on_cluster

        return compute_on_cluster(delayed, client, progress=bool(progress), label=label)
    with _own_pool() as options:
        if progress is True:
            from .progress import compute_with_progress

            return compute_with_progress(delayed, label=label, **options)
        if progress == "tqdm":
            from tqdm.dask import TqdmCallback

            with TqdmCallback(desc=label):
                return delayed.compute(**options)
        return delayed.compute(**options)


@contextlib.contextmanager
def _own_pool() -> Iterator[dict[str, Any]]:
    """``{"scheduler": get}`` when dask would use its threaded scheduler; on exit, this write's tasks are done.

    ``get`` is dask's threaded scheduling (``dask.local.get_async``) over one
    persistent pool of dask's ``CPU_COUNT`` threads (the runtime's ``write``
    pool), so their scratch buffers (see [`zarr3_backend.runtime.scratch`][zarr3_backend.runtime.scratch])
    and malloc arenas stay warm across writes; only the tasks of this write
    are cancelled (if not started) and awaited on exit. A write started
    from one of those threads (a write inside a write task) gets a fresh
    pool instead, which cannot deadlock on its own workers.
    """
    import dask.base
    import dask.threaded
    from dask.system import CPU_COUNT

    if dask.base.get_scheduler() not in (None, dask.threaded.get):
        yield {}
        return
    if current_pool() == _WRITE_POOL:
        with private_pool(CPU_COUNT) as fresh:
            yield {"scheduler": _threaded_get(fresh, CPU_COUNT)}
        return
    tracked = TrackedExecutor(shared_pool(_WRITE_POOL, CPU_COUNT))
    try:
        yield {"scheduler": _threaded_get(tracked, CPU_COUNT)}
    finally:
        tracked.drain()


_WRITE_POOL = "write"  # threads ``zarr3-write_<n>``


def _threaded_get(pool: Executor, workers: int) -> Callable[..., Any]:
    """dask's threaded scheduling of a graph on ``pool``, ``workers`` tasks at once."""

    def get(dsk: Mapping[Any, Any], keys: Any, **kwargs: Any) -> Any:
        from dask.local import get_async

        for ignored in ("pool", "num_workers"):  # ours are given
            kwargs.pop(ignored, None)
        return get_async(pool.submit, workers, dsk, keys, get_id=threading.get_ident, **kwargs)

    return get
