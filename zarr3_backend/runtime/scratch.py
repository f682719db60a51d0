"""Scratch arrays lent to one thread at a time: reused from chunk to chunk, never aliased.

Each thread keeps its chunk-sized temporaries (allocating one per chunk costs
page faults) and lends one at a time with `borrow()`; borrowing again before
the ``with`` block ends raises `ScratchBufferError`. Nothing may keep a view
after the block; a copy that only saves an allocation checks `in_use()`.
Object arrays are never reused. More: the architecture page, "Memory".

>>> with borrow((2, 3), np.dtype("int16")) as chunk:
...     chunk.shape, chunk.dtype.name
((2, 3), 'int16')
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

import numpy as np

from ..errors import ScratchBufferError

#: Arrays (shapes and data types) a thread keeps at most; it forgets them all when one more is needed.
MAX_KEPT = 8


class _Lender(threading.local):
    """One thread's scratch arrays by ``(shape, dtype)``, and whether one of them is lent now."""

    def __init__(self) -> None:
        self.arrays: dict[tuple[tuple[int, ...], np.dtype[Any]], np.ndarray[Any, np.dtype[Any]]] = {}
        self.lent = False


_lender = _Lender()


def borrow(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Loan:
    """Lend the calling thread's scratch array of ``shape`` and ``dtype`` for one ``with`` block.

    The contents are arbitrary on entry. Entering raises
    `ScratchBufferError` if the thread's
    scratch is already lent (a nested borrow), and ``MemoryError`` if a new
    array cannot be allocated.
    """
    return Loan(shape, dtype)


class Loan:
    """The context manager `borrow()` returns."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.shape = shape
        self.dtype = dtype

    def __enter__(self) -> np.ndarray[Any, np.dtype[Any]]:
        lender = _lender
        if lender.lent:
            raise ScratchBufferError(
                f"this thread's scratch buffer is still lent; a nested borrow of {self.shape} {self.dtype} "
                "would alias it (finish with the first buffer, or copy out of it, before borrowing again)"
            )
        key = (self.shape, self.dtype)  # not dtype.str: every ml_dtypes type of one size is "|V1"
        array = lender.arrays.get(key)
        if array is None or self.dtype.hasobject:
            if len(lender.arrays) >= MAX_KEPT:
                lender.arrays.clear()
            array = np.empty(self.shape, dtype=self.dtype)
            if not self.dtype.hasobject:
                lender.arrays[key] = array
        lender.lent = True
        return array

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        _lender.lent = False


def in_use() -> bool:
    """Whether the calling thread's scratch is lent now (an optional copy may then do without it)."""
    return _lender.lent
