"""`write_guard()`: what one write holds against other writers, taken at its start and released on every path.

- an append (``mode="a"``/``"a-"``) holds this process's lock of the store,
  the user's ``lock=`` (or ``lock(PENDING_KEY)``), else the store's
  `StoreLease` where the store creates keys atomically; an append the store
  cannot coordinate is refused first (`check_append_coordination()`);
- a region write (``mode="r+"``) without ``lock=`` holds a `RegionMark`
  there, and warns (`warn_partial()`) when it covers shards only partly while
  other writers may run alongside (`concurrent_writers()`); with ``lock=``,
  `WriteGuard.planning()` holds it while the write plans.

Why each is needed: the architecture page, "How a write commits".
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import warnings
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import WriteError
from ..nodes.array import Array
from ..nodes.shard_writes import PartialShardWarning, partial_shards
from ..runtime.locks import LOCAL_LOCKS, KeyLocks, ShardLock, local_lock
from ..runtime.stacklevel import caller_stacklevel
from ..store.base import Store
from .lease import RegionMark, StoreLease
from .records import PENDING_KEY


@dataclass(frozen=True)
class WriteGuard:
    """What `write_guard()` holds: the ``store``, the user's lock (``given``) and the ``locks`` of its shard tasks."""

    store: Store
    mode: str
    given: KeyLocks
    locks: KeyLocks
    region: bool = False

    @property
    def unguarded_region(self) -> bool:
        """Whether this is a ``region=`` write without ``lock=`` (shards it covers partly may race other writers)."""
        return self.region and not self.user_lock

    @property
    def user_lock(self) -> bool:
        """Whether the write was given ``lock=``."""
        return self.given.given is not None

    @property
    def serialised(self) -> bool:
        """Whether no other append can commit meanwhile (``lock=``, or a lease on a store with atomic create)."""
        return self.user_lock or self.store.atomic_create

    def planning(self) -> contextlib.AbstractContextManager[None]:
        """What a region write with ``lock=`` holds while it plans: the lock appends hold from planning to commit,
        so it never reads a half-published append or finishes the publication of one that still runs."""
        return self.given.held(PENDING_KEY) if self.mode == "r+" else contextlib.nullcontext()


@contextlib.contextmanager
def write_guard(
    store: Store,
    mode: str,
    lock: ShardLock,
    append_dim: Hashable | None,
    region: object,
) -> Iterator[WriteGuard]:
    """Hold what a ``mode`` write to ``store`` needs for a ``with`` block (see the module); released on every path."""
    check_append_coordination(store, append_dim, lock)
    given = KeyLocks(lock)
    with contextlib.ExitStack() as held:
        if mode in ("a", "a-"):
            held.enter_context(local_lock(writers_key(store)))  # threads of this process take turns
            held.enter_context(given.held(PENDING_KEY))
            if (
                lock is None and store.atomic_create and not store.transactional
            ):  # a transaction needs no lease
                held.enter_context(StoreLease(store))
            locks = LOCAL_LOCKS if given.single else given
        else:
            if mode == "r+" and lock is None and store.atomic_create:
                held.enter_context(RegionMark(store))  # appends wait for it, and it for them
            locks = given
        yield WriteGuard(store, mode, given, locks, region=bool(region))


def writers_key(store: Store) -> str:
    """The key of this process's lock that its appends to ``store`` hold."""
    return f"to_zarr3 {store!r}"


def check_append_coordination(store: Store, append_dim: Hashable | None, lock: object) -> None:
    """Refuse an append without ``lock=`` to a store other processes can reach and that cannot create keys atomically.

    There no lease can keep two processes' appends from writing the same rows;
    in-process stores (``memory://``) and transactions (an Icechunk session,
    whose commit detects conflicting writers) need neither.
    """
    coordinated = lock is not None or store.atomic_create or store.transactional or store.process_local
    if append_dim is None or coordinated:
        return
    raise WriteError(
        f"to_zarr3: appending along {append_dim!r} to {store!r} needs lock=: this store cannot create a key "
        "atomically, so appends from several processes cannot take turns by themselves and one could publish over "
        "another's rows. Pass one lock shared by every writer of the store (e.g. lock=distributed.Lock('<store>'), "
        "or a multiprocessing.Lock(); lock=threading.Lock() when this process is the only writer), or write "
        "through a store with atomic create (a local path, or an object store through obstore, the default "
        "for s3://, gs:// and az:// URLs)"
    )


def when_no_write_runs(store: Store, action: Callable[[], None]) -> bool:
    """Run ``action`` unless a write of this process to ``store`` holds its writers' lock; whether it ran.

    The lock is never waited for: the write holding it sets things right at its own commit.
    """
    writers = local_lock(writers_key(store))
    if not writers.acquire(blocking=False):
        return False
    try:
        action()
    finally:
        writers.release()
    return True


def concurrent_writers(deferred: bool) -> str | None:
    """Why other writers of the same store may run while this write does, or ``None`` when nothing suggests it.

    One ``to_zarr3`` call never races itself (each shard is written by one
    task), so only independent writes can lose each other's rows: a
    ``deferred`` write (``compute=False`` with dask-backed data) may be
    computed together with others, and a call from a thread other than the
    main one or from a child process (multiprocessing, dask workers) usually
    runs beside sibling calls. Independent programs (e.g. batch jobs) cannot
    be seen from here.

    >>> concurrent_writers(deferred=True)
    'compute=False returns a graph that may be computed together with other writes'
    """
    if deferred:
        return "compute=False returns a graph that may be computed together with other writes"
    if threading.current_thread() is not threading.main_thread():
        return f"it runs in the thread {threading.current_thread().name!r}, likely beside other writers"
    if multiprocessing.parent_process() is not None:
        return "it runs in a child process (a worker), likely beside other writers"
    return None


def warn_partial(writes: Sequence[tuple[str, Array, tuple[int, ...], tuple[int, ...]]], reason: str) -> None:
    """Warn once (`PartialShardWarning`) when region writes ``(name, array, origin, shape)`` cover stored
    chunks (shards) only partly; ``reason`` says why other writers may rewrite the same shards meanwhile."""
    partial = [(name, array, *partial_shards(array, origin, shape)) for name, array, origin, shape in writes]
    partial = [p for p in partial if p[2]]
    if not partial:
        return
    names = ", ".join(repr(p[0]) for p in partial)
    name, array, _, example = partial[0]
    unit = "shard" if array.sharded else "chunk"
    warnings.warn(
        f"to_zarr3: the region write of {names} covers {sum(p[2] for p in partial)} stored {unit}(s) only partly, "
        f"e.g. {example!r}; each is read, merged and rewritten, so another process writing the same {unit} at the "
        f"same time can lose its rows ({reason}). Align regions to the {unit} grid ({array.metadata.chunk_shape} for "
        f"{name!r}), or pass lock= (e.g. lock=lambda key: distributed.Lock(key))",
        PartialShardWarning,
        stacklevel=caller_stacklevel("zarr3_backend"),
    )
