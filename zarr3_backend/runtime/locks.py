"""Every lock a write uses, as xarray keeps them in ``backends/locks.py``: local, per key, and the user's ``lock=``.

`local_lock()` is this process's lock of a key (it pickles, so on a dask
worker it guards that worker's tasks). `KeyLocks` wraps the user's
``lock=`` once: one object with ``acquire``/``release`` for every key
(``threading.Lock``, ``multiprocessing.Lock``, ``distributed.Lock``), a
callable returning the lock of a key (``lambda key: distributed.Lock(key)``),
or none; `KeyLocks.held()` guards one store key with it.

>>> import threading
>>> with KeyLocks(threading.Lock()).held("t/c/0"):
...     pass
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable


@runtime_checkable
class Lock(Protocol):
    """A lock: ``threading.Lock``, ``multiprocessing.Lock``, ``distributed.Lock``, ..."""

    def acquire(self) -> object: ...

    def release(self) -> object: ...


#: The ``lock=`` of a write: one lock for every key, a callable giving the lock of a key, or ``None``.
ShardLock: TypeAlias = Lock | Callable[[str], Lock] | None

_LOCAL_LOCKS: dict[str, threading.Lock] = {}
_LOCAL_LOCKS_GUARD = threading.Lock()


def local_lock(key: str) -> threading.Lock:
    """This process's lock for ``key`` (one per key, created on first use); a module-level function, so it pickles."""
    with _LOCAL_LOCKS_GUARD:
        return _LOCAL_LOCKS.setdefault(key, threading.Lock())


@dataclass(frozen=True)
class KeyLocks:
    """The locks guarding store keys: ``given`` itself when it is one lock, ``given(key)`` when a callable, or none."""

    given: ShardLock = None

    @property
    def single(self) -> bool:
        """Whether one lock guards every key (or none does)."""
        return self.given is None or isinstance(self.given, Lock)

    def held(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Hold the lock of ``key`` for a ``with`` block (nothing without locks)."""
        if self.given is None:
            return contextlib.nullcontext()
        return _holding(self.given if isinstance(self.given, Lock) else self.given(key))


#: No lock: every key is written by one task, or the write holds a lease instead.
NO_LOCKS = KeyLocks()
#: This process's lock of each key: tasks of one process take turns.
LOCAL_LOCKS = KeyLocks(local_lock)


@contextlib.contextmanager
def _holding(mutex: Lock) -> Iterator[None]:
    mutex.acquire()
    try:
        yield
    finally:
        mutex.release()
