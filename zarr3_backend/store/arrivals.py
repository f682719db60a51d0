"""The values of a batch of requests as they arrive, with a say in what is sent next.

A reader that learns from its first values which of the other requests
matter most (a group learns the names of its coordinates from its first
member documents) calls :meth:`Arrivals.prefer`, and those requests go out
before the rest that are not sent yet.

>>> arrivals = Arrivals([(1, b"b"), (0, b"a")])
>>> arrivals.prefer([0])  # already fetched: nothing to reorder
>>> list(arrivals)
[(1, b'b'), (0, b'a')]
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from concurrent.futures import Future, wait

from ..errors import StoreError

Arrival = tuple[int, bytes | None]
#: What a request came back with: its bytes, or the exception it raised.
Answer = bytes | bytearray | Exception


class Arrivals:
    """``(request index, value)`` pairs of one batch, in the order the values arrived.

    This base holds a batch fetched all at once, so there is nothing left to
    prefer; :class:`LaneArrivals` sends requests as lanes free up.
    """

    def __init__(self, arrived: Iterable[Arrival]) -> None:
        self._arrived = arrived

    def __iter__(self) -> Iterator[Arrival]:
        return iter(self._arrived)

    def prefer(self, indices: Iterable[int]) -> None:
        """Send the requests at ``indices`` before the others not sent yet (those sent are unaffected)."""


def move_forward(unsent: deque[int], indices: Iterable[int]) -> list[int]:
    """Move those of ``indices`` still in ``unsent`` to its front, in their order; return them.

    >>> queue = deque([0, 1, 2, 3])
    >>> move_forward(queue, [3, 9, 2]), list(queue)
    ([3, 2], [3, 2, 0, 1])
    """
    chosen = [i for i in dict.fromkeys(indices) if i in unsent]
    for index in reversed(chosen):
        unsent.remove(index)
        unsent.appendleft(index)
    return chosen


class LaneArrivals(Arrivals):
    """Requests sent on an event loop by ``lanes`` senders, each taking the next unsent request once its last is answered.

    ``fetch(index)`` is the request's coroutine and ``outcome(index, answer)``
    turns its answer (bytes, or the exception it raised) into the value,
    raising for errors. Answers are handed over in a few batches, when the
    first, the ``lanes``-th, a preferred or the last request is answered: the
    consumer's thread wakes a handful of times, not once per request (each
    wake takes the GIL from the loop's thread, which delayed requests when
    the client was CPU-bound). A consumer that stops early (an error, a
    ``break``) stops the sending, and waits for the requests in flight.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fetch: Callable[[int], Awaitable[bytes | bytearray]],
        count: int,
        lanes: int,
        outcome: Callable[[int, Answer], bytes | None],
    ) -> None:
        self._unsent = deque(range(count))
        self._preferred: set[int] = set()
        self._ready = threading.Condition()
        self._answers: list[tuple[int, Answer]] = []
        self._due = False  # whether the consumer should take the answers waiting
        self._answered = 0
        self._count = count
        self._lanes = max(1, min(lanes, count))
        self._fetch = fetch
        self._outcome = outcome
        self._senders = asyncio.run_coroutine_threadsafe(self._send(), loop)
        self._senders.add_done_callback(lambda _: self._hand_over(None))

    async def _send(self) -> None:
        await asyncio.gather(*(self._lane() for _ in range(self._lanes)))

    async def _lane(self) -> None:
        while (index := self._next()) is not None:
            try:
                answer: Answer = await self._fetch(index)
            except Exception as exc:  # sorted out by ``outcome`` when consumed
                answer = exc
            self._hand_over((index, answer))

    def _next(self) -> int | None:
        with self._ready:
            return self._unsent.popleft() if self._unsent else None

    def _hand_over(self, answer: tuple[int, Answer] | None) -> None:
        """Keep ``answer`` (``None``: the senders ended) and wake the consumer when a batch is due."""
        with self._ready:
            if answer is not None:
                self._answers.append(answer)
                self._answered += 1
            if (
                answer is None
                or self._answered in (1, self._lanes, self._count)
                or answer[0] in self._preferred
            ):
                self._due = True
                self._ready.notify()

    def prefer(self, indices: Iterable[int]) -> None:
        with self._ready:
            self._preferred.update(move_forward(self._unsent, indices))

    def __iter__(self) -> Iterator[Arrival]:
        delivered = 0
        try:
            while delivered < self._count:
                for index, answer in self._take():
                    delivered += 1
                    yield index, self._outcome(index, answer)
        finally:
            with self._ready:
                self._unsent.clear()
            wait([self._senders])  # what is in flight ends before the caller goes on

    def _take(self) -> list[tuple[int, Answer]]:
        with self._ready:
            self._ready.wait_for(lambda: self._due or self._senders.done())
            answers, self._answers, self._due = self._answers, [], False
            if not answers and self._senders.done():
                raise _stopped(self._senders)
            return answers


def _stopped(senders: Future[None]) -> StoreError:
    """The error for senders that ended without answering every request (their loop was stopped or cancelled them)."""
    reason = "cancelled" if senders.cancelled() else repr(senders.exception())
    return StoreError(f"fetching stopped before every request was answered: {reason}")
