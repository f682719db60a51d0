"""One batch of calls or coroutines with each one's exception returned in its place, not raised; and the
process's background event loop, for stores whose API is coroutines.

A store sorts out each request's outcome itself (missing, past the end, a
failure), so a batch never stops at its first error.

>>> capture(int, "x")
ValueError("invalid literal for int() with base 10: 'x'")
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import ParamSpec, TypeVar

from .process import PerProcess

T = TypeVar("T")
P = ParamSpec("P")


def capture(func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | BaseException:
    """``func(*args, **kwargs)``, or the exception it raised."""
    try:
        return func(*args, **kwargs)
    except Exception as exc:  # sorted out per request by the caller
        return exc


async def gather(coros: Sequence[Awaitable[T]], limit: int) -> list[T | BaseException]:
    """Run ``coros`` concurrently on the running loop, at most ``limit`` at a time; exceptions are returned.

    A single one is awaited in place: no task whose result would take loop iterations to come back.
    """
    if len(coros) == 1:
        return [await _capture_async(coros[0])]
    semaphore = asyncio.Semaphore(limit)

    async def bounded(coro: Awaitable[T]) -> T:
        async with semaphore:
            return await coro

    return await asyncio.gather(*(bounded(coro) for coro in coros), return_exceptions=True)


async def _capture_async(coro: Awaitable[T]) -> T | BaseException:
    try:
        return await coro
    except Exception as exc:  # sorted out per request by the caller, as ``gather`` returns it
        return exc


def _start_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="zarr3-event-loop", daemon=True).start()
    return loop


_background_loop = PerProcess(_start_loop)


def run_on_loop(work: Coroutine[object, None, T]) -> T:
    """Run ``work`` on this process's background event loop (started on first use) and wait for its result.

    Raises ``RuntimeError`` when called from that loop itself, where waiting would never end.
    """
    loop = _background_loop.get()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        work.close()
        raise RuntimeError("a synchronous call from the background event loop itself would wait forever")
    return asyncio.run_coroutine_threadsafe(work, loop).result()
