"""State that belongs to one process: a forked child makes its own on first use, found by a changed pid.

Threads do not survive ``fork`` (a child has only the thread that forked),
so pools, clients with connections and locks held by other threads must not
be inherited. [`PerProcess`][zarr3_backend.runtime.process.PerProcess] keeps
a value with the pid that made it and makes a new one when asked from
another process; no fork hook is registered.

>>> counter = PerProcess(list)
>>> counter.get() is counter.get()
True
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_locks: dict[int, threading.Lock] = {}  # one per process: a lock copied from the parent may be held forever


def process_lock() -> threading.Lock:
    """A lock of the calling process (never one inherited through ``fork``)."""
    pid = os.getpid()
    lock = _locks.get(pid)
    return lock if lock is not None else _locks.setdefault(pid, threading.Lock())


class PerProcess(Generic[T]):
    """``factory()``, made once per process: the first call in a forked child makes the child's own."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._pid: int | None = None
        self._value: T | None = None

    def get(self) -> T:
        """This process's value, made on first use."""
        pid = os.getpid()
        if self._pid != pid:
            with process_lock():
                if self._pid != pid:
                    self._value = self._factory()
                    self._pid = pid  # after the value: a reader that sees this pid sees the value
        value = self._value
        assert value is not None
        return value

    def reset(self) -> None:
        """Forget the value: the next [`get`][zarr3_backend.runtime.process.PerProcess.get] makes a new one."""
        with process_lock():
            self._pid = None
            self._value = None
