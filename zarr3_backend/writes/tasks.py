"""The shard-task contract every executor runs: `WriteRequest`, the `WriteStep` ending a write, `ShardProgress`.

A write hands its executor (`zarr3_backend.writes.executor`) the
`WriteRequest`s of its chunked data and at most one `WriteStep`. The
executor aligns each request's data to the stored chunk grid, runs one task
per shard (each assembles its whole shard and index and writes it with
`zarr3_backend.nodes.shard_writes.write_block()`, in one store ``set``), and
runs the step once every shard task succeeded, never if one failed.
`ShardProgress` is the ``progress=True`` line every executor prints.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

import numpy as np
import numpy.typing as npt

from ..nodes.array import Array
from ..runtime.locks import NO_LOCKS, KeyLocks


class WriteStep(Protocol):
    """A step of a write that takes no argument and returns nothing: `run()` does it, once.

    The executor runs one after every shard task succeeded (never if one
    failed), so it must pickle: it may run on a worker. A step that fails
    raises, and the write fails with its error. The steps of ``to_zarr3``:
    docs/architecture.md, "How a write commits".
    """

    def run(self) -> None:
        """Do the step (raise to fail the write)."""


@dataclass(frozen=True)
class WriteRequest:
    """Write ``data`` (a chunked array its executor owns) into ``array`` starting at ``origin``."""

    data: Any
    array: Array
    origin: tuple[int, ...]
    write_empty_chunks: bool = False
    name: str = ""
    locks: KeyLocks = NO_LOCKS


class ShardProgress:
    """Prints ``label: done/total shards (pct%), MB, MB/s`` to ``stream`` as shards complete."""

    def __init__(self, total: int, label: str = "to_zarr3", stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stdout
        self.done = 0
        self.nbytes = 0
        self.started = time.perf_counter()

    def line(self) -> str:
        """The current progress line."""
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        percent = 100 * self.done // self.total if self.total else 100
        return (
            f"{self.label}: {self.done}/{self.total} shards ({percent}%), "
            f"{self.nbytes / 1e6:.0f} MB, {self.nbytes / 1e6 / elapsed:.1f} MB/s"
        )

    def update(self, written: npt.ArrayLike) -> None:
        """Count one finished shard task that wrote ``written`` bytes (an int or a one-element array)."""
        self.done += 1
        self.nbytes += int(np.sum(written))
        self.stream.write("\r" + self.line())
        self.stream.flush()

    def close(self) -> None:
        """End the line (printing it once if no shard was written)."""
        self.stream.write(("\r" + self.line() if not self.done else "") + "\n")
        self.stream.flush()


def inputs_per_block(have: Sequence[int], want: Sequence[int]) -> int:
    """The largest number of ``have`` blocks any ``want`` block overlaps (1-d): what a shard task gathers."""
    have_edges = np.cumsum([0, *have])
    want_edges = np.cumsum([0, *want])
    firsts = np.searchsorted(have_edges, want_edges[:-1], side="right")
    lasts = np.searchsorted(have_edges, want_edges[1:], side="left")
    return int(max(lasts - firsts + 1, default=1))
