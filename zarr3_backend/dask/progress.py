"""``progress=True`` for writes: shards done out of the total, with the data rate (needs dask).

Every shard task of a write graph (see `zarr3_backend.dask.write_graph`) is
keyed ``("zarr3-write-shard-<token>", i, j, ...)`` and returns the number of
(decoded) bytes it wrote, so progress is counted in shards whatever the
scheduler: on dask.distributed the client waits on one future per shard as
they complete; on local schedulers a dask callback sees each shard task
finish. The line is rewritten in place and ends with the totals::

    to_zarr3: 7/10 shards (70%), 532 MB, 266 MB/s
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ..writes.tasks import ShardProgress

if TYPE_CHECKING:  # dask is imported where a graph is computed; distributed where a client is used
    from dask.callbacks import Callback
    from dask.delayed import Delayed
    from distributed import Client

#: Name prefix of the shard tasks' keys.
SHARD_TASK_PREFIX = "zarr3-write-shard-"


def is_shard_key(key: Hashable) -> bool:
    """Whether ``key`` names a shard task of a write graph."""
    return isinstance(key, tuple) and isinstance(key[0], str) and key[0].startswith(SHARD_TASK_PREFIX)


def shard_keys(delayed: Delayed) -> list[Hashable]:
    """The keys of the shard tasks in a write graph."""
    return [key for key in delayed.__dask_graph__() if is_shard_key(key)]


def compute_with_progress(delayed: Delayed, label: str = "to_zarr3", **options: object) -> object:
    """Compute a write graph on a local scheduler (``options`` go to ``delayed.compute``), printing progress.

    Returns the graph's result.
    """
    progress = ShardProgress(len(shard_keys(delayed)), label)
    try:
        with _shard_callback(progress):
            return delayed.compute(**options)
    finally:
        progress.close()


def compute_on_cluster(
    delayed: Delayed, client: Client, progress: bool = False, label: str = "to_zarr3"
) -> object:
    """Compute a write graph on a distributed ``client``, printing `ShardProgress` if ``progress``; its result.

    The shard tasks and the final task are submitted together (one graph),
    and the client waits on one future per shard (fetching the bytes each
    wrote only to report them). When one fails, this
    raises only once every shard task has ended: a task still running on a
    worker would otherwise write after the caller rolled the write back.
    """
    from distributed import as_completed, wait

    keys = shard_keys(delayed)
    counter = ShardProgress(len(keys), label) if progress else None
    futures = client.get(dict(delayed.__dask_graph__()), [*keys, delayed.key], sync=False)
    final = futures.pop()
    try:
        if counter is None:
            wait(futures)  # no shard's result travels to the client
        else:
            for future in as_completed(futures):
                counter.update(future.result())
        return final.result()
    except BaseException:
        wait(futures)
        raise
    finally:
        if counter is not None:
            counter.close()


def _shard_callback(progress: ShardProgress) -> Callback:
    """A dask callback counting the finished shard tasks of local schedulers into ``progress``."""
    from dask.callbacks import Callback

    def posttask(key: Hashable, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        if is_shard_key(key):
            progress.update(result)

    return Callback(posttask=posttask)
