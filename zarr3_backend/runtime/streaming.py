"""Many calls, a few at a time, their results handed over as they finish: the one place calls are paced.

A [`Stream`][zarr3_backend.runtime.streaming.Stream] runs ``call(0)`` ...
``call(count - 1)`` on up to ``limit`` workers, each one pool task that runs
the next index not yet started as soon as its last call finishes (no pool
task, future or thread hand-off per call). The caller iterates the
results in the order they finish, and may move indices not yet started to the
front ([`send_first`][zarr3_backend.runtime.streaming.Stream.send_first]).
With a byte budget, no call starts while the results taken hold that many
bytes and are not yet [released][zarr3_backend.runtime.streaming.Stream.release].

>>> from concurrent.futures import ThreadPoolExecutor
>>> with ThreadPoolExecutor(2) as pool:
...     sorted(Stream(lambda i: i * i, 4, 2, pool))
[(0, 0), (1, 1), (2, 4), (3, 9)]
>>> with ThreadPoolExecutor(2) as pool:
...     collect(lambda i: "abc"[i], 3, 2, pool)
['a', 'b', 'c']
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from typing import Generic, TypeVar, cast

R = TypeVar("R")


class Stream(Generic[R]):
    """``(index, call(index))`` for every index below ``count``, as the calls finish; see the module docstring.

    A call's exception is raised to the iterating caller when its turn comes;
    no call starts after it.
    The iteration's end (completed, ``break`` or an exception) stops starting
    calls and waits for the running ones, so no call outlives it.
    ``weigh(result)`` is the bytes a result holds against ``budget`` until
    released. ``each=False`` wakes the iterating caller only for the last
    result or a failure (a caller that uses the results all at once).
    """

    def __init__(
        self,
        call: Callable[[int], R],
        count: int,
        limit: int,
        pool: Executor,
        *,
        budget: int | None = None,
        weigh: Callable[[R], int] | None = None,
        each: bool = True,
    ) -> None:
        self._call = call
        self._count = count
        self._limit = max(1, limit)
        self._pool = pool
        self._budget = budget
        self._weigh = weigh
        self._lock = threading.Lock()  # a plain lock: workers take it once per call
        self._changed = threading.Condition(self._lock)
        self._unsent = deque(range(count))
        self._finished: deque[tuple[int, R | BaseException, bool]] = deque()
        self._workers = 0  # pool tasks taking calls, each one after the other
        self._held = 0
        self._stopped = False
        self._each = each
        self._answered = 0
        self._start_more()

    @classmethod
    def finished(cls, results: Iterable[R]) -> Stream[R]:
        """A stream whose calls all ran already: ``results`` in order (nothing left to send first)."""
        done = list(results)
        stream: Stream[R] = cls(done.__getitem__, 0, 1, _NO_POOL)
        stream._count = len(done)
        stream._finished.extend((index, result, False) for index, result in enumerate(done))
        return stream

    def send_first(self, indices: Iterable[int]) -> None:
        """Start the calls at ``indices`` before the others not started yet (those started are unaffected)."""
        with self._changed:
            chosen = [i for i in dict.fromkeys(indices) if i in self._unsent]
            for index in reversed(chosen):
                self._unsent.remove(index)
                self._unsent.appendleft(index)

    def release(self, nbytes: int) -> None:
        """Results weighing ``nbytes`` are used up: calls held back by the budget may start."""
        with self._changed:
            self._held -= nbytes
        self._start_more()

    def stop(self) -> None:
        """Start no more calls (those running finish); iteration ends after their results."""
        with self._changed:
            self._stop()
            self._changed.notify_all()

    def _stop(self) -> None:
        self._stopped = True
        self._unsent.clear()

    def close(self) -> None:
        """[`stop`][zarr3_backend.runtime.streaming.Stream.stop], then wait until no call is running."""
        self.stop()
        with self._changed:
            self._changed.wait_for(lambda: self._workers == 0)

    def __iter__(self) -> Iterator[tuple[int, R]]:
        try:
            delivered = 0
            while delivered < self._count:
                with self._changed:
                    self._changed.wait_for(lambda: self._finished or (self._stopped and not self._workers))
                    if not self._finished:
                        return
                    taken, self._finished = self._finished, deque()
                for index, outcome, failed in taken:
                    delivered += 1
                    if failed:
                        raise cast(BaseException, outcome)
                    yield index, cast(R, outcome)
        finally:
            self.close()

    def _start_more(self) -> None:
        """Start workers up to ``limit``: each runs the next call not started, then the next, until none may start."""
        with self._changed:
            more = 0 if self._budget_spent() else min(self._limit - self._workers, len(self._unsent))
            self._workers += max(0, more)
        for _ in range(more):
            try:
                self._pool.submit(self._work)
            except BaseException:  # the pool is shut down (the interpreter exits)
                with self._changed:
                    self._stop()
                    self._workers -= 1
                    self._changed.notify_all()

    def _budget_spent(self) -> bool:
        return self._budget is not None and self._held >= self._budget

    def _work(self) -> None:
        """One worker: takes the next call not started and runs it, hands its result over and takes the next
        under the same lock, until none may start; a failure stops the stream."""
        lock = self._lock
        with lock:
            index = self._next()
        while index is not None:
            try:
                outcome: R | BaseException = self._call(index)
                failed = False
            except BaseException as exc:  # handed to the caller in the call's turn, which ends the stream
                outcome, failed = exc, True
            with lock:
                if not failed and self._weigh is not None:
                    self._held += self._weigh(cast(R, outcome))
                self._finished.append((index, outcome, failed))
                self._answered += 1
                if failed:
                    self._stop()
                if self._each or failed or self._answered == self._count:
                    self._changed.notify_all()
                index = self._next()

    def _next(self) -> int | None:
        """The next call to run (called holding the lock), or ``None``: this worker ends."""
        if self._stopped or not self._unsent or self._budget_spent():
            self._workers -= 1
            if not self._workers:
                self._changed.notify_all()
            return None
        return self._unsent.popleft()


class _NoPool(Executor):
    """The pool of a finished stream: it never starts a call."""


_NO_POOL = _NoPool()


def collect(call: Callable[[int], R], count: int, limit: int, pool: Executor) -> list[R]:
    """``[call(i) for i in range(count)]``, at most ``limit`` at once on ``pool``.

    The first exception propagates once no call is running any more.
    """
    results: list[R | None] = [None] * count
    for index, result in Stream(call, count, limit, pool, each=False):
        results[index] = result
    return cast(list[R], results)
