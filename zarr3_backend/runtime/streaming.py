"""Many calls, a few at a time, their results handed over as they finish: the one place calls are paced.

A [`Stream`][zarr3_backend.runtime.streaming.Stream] runs ``call(0)`` ...
``call(count - 1)`` on a pool, at most ``limit`` at once: whenever one
finishes, the next index not yet started starts. The caller iterates the
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
from concurrent.futures import Executor, Future
from functools import partial
from typing import Generic, TypeVar, cast

R = TypeVar("R")


class Stream(Generic[R]):
    """``(index, call(index))`` for every index below ``count``, as the calls finish; see the module docstring.

    A call's exception is raised to the iterating caller when its turn comes.
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
        self._changed = threading.Condition()
        self._unsent = deque(range(count))
        self._finished: deque[tuple[int, R | BaseException, bool]] = deque()
        self._running = 0
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
            self._stopped = True
            self._unsent.clear()
            self._changed.notify_all()

    def close(self) -> None:
        """[`stop`][zarr3_backend.runtime.streaming.Stream.stop], then wait until no call is running."""
        self.stop()
        with self._changed:
            self._changed.wait_for(lambda: self._running == 0)

    def __iter__(self) -> Iterator[tuple[int, R]]:
        try:
            delivered = 0
            while delivered < self._count:
                with self._changed:
                    self._changed.wait_for(lambda: self._finished or (self._stopped and not self._running))
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
        while True:
            with self._changed:
                if (
                    self._stopped
                    or not self._unsent
                    or self._running >= self._limit
                    or (self._budget is not None and self._held >= self._budget)
                ):
                    return
                index = self._unsent.popleft()
                self._running += 1
            try:
                future = self._pool.submit(self._call, index)
            except BaseException as exc:  # the pool is shut down (the interpreter exits)
                self._done(index, exc, True)
                return
            future.add_done_callback(partial(self._settle, index))

    def _settle(self, index: int, future: Future[R]) -> None:
        try:
            outcome: R | BaseException = future.result()
        except BaseException as exc:  # handed to the caller in the call's turn, which ends the stream
            self._done(index, exc, True)
            return
        self._done(index, outcome, False)
        self._start_more()

    def _done(self, index: int, outcome: R | BaseException, failed: bool) -> None:
        with self._changed:
            self._running -= 1
            if not failed and self._weigh is not None:
                self._held += self._weigh(cast(R, outcome))
            self._finished.append((index, outcome, failed))
            self._answered += 1
            if self._each or failed or self._answered == self._count or not self._running:
                self._changed.notify_all()


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
