"""The data of a convert: one task per output shard, which reads, writes and verifies that shard.

A task (`ShardCopy`) reads its shard's source region, takes its `checksum()`,
writes the shard with one store ``set`` (`write_block()`), reads it back and
compares checksums (`ChecksumError` on a mismatch), then records the shard as
done with its stored generation. A resumed run (`ShardResume`) copies again
each shard recorded as done whose stored shard or source values changed. A
task holds about one shard of decoded values at a time. Each task is a
shard task of the executor seam (`zarr3_backend.writes.executor.Executor.run_tasks()`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import ChecksumError
from ..nodes.array import Array
from ..nodes.shard_writes import write_block
from ..store.base import ByteRange, Versioned
from .progress_record import Done, Record, checksum


@dataclass(frozen=True)
class ShardCopy:
    """Copy the shard at grid index ``coords`` of ``target`` from ``source``, verify it and record it."""

    source: Array
    target: Array
    coords: tuple[int, ...]
    record: Record

    @property
    def key(self) -> str:
        """The shard's store key in DST."""
        return self.target.chunk_key(self.coords)

    @property
    def region(self) -> tuple[slice, ...]:
        """The shard's part of the array (the last shards along a dimension may be cut by the shape)."""
        grid = self.target.metadata.chunk_grid
        origin = grid.chunk_origin(self.coords)
        return tuple(slice(o, min(o + c, n)) for o, c, n in zip(origin, grid.chunk_shape, self.target.shape))

    @property
    def nbytes(self) -> int:
        """Decoded bytes of the shard's region."""
        return int(np.prod([s.stop - s.start for s in self.region])) * self.target.dtype.itemsize

    def __call__(self) -> int:
        """Copy, verify, record; returns the decoded bytes copied."""
        region = self.region
        values = np.asarray(self.source.get(region))
        expected = checksum(values)
        write_block(self.target, tuple(s.start for s in region), values)
        nbytes = values.nbytes
        del values
        stored = self.stored()  # before the read back: a later replacement never passes as verified
        found = checksum(np.asarray(self.target.get(region)))
        if found != expected:
            raise ChecksumError(
                f"{self.key}: the shard read back has checksum {found}, but the source values of its region "
                f"{region} have {expected}; the shard was stored wrongly (or the source changed meanwhile). "
                "Run the convert again to rewrite it"
            )
        self.record.mark(
            self.key, Done(expected, stored.value is not None, _generation(stored), self.record.run)
        )
        return nbytes

    def stored(self) -> Versioned:
        """The shard's stored generation (no bytes: a zero-length read); value ``None`` if it is not stored."""
        return self.target.store.get_many_versioned([(self.key, ByteRange(0, 0))])[0]


@dataclass(frozen=True)
class ShardResume:
    """On a resumed run, check a shard an earlier run recorded (`Done`) and copy it again if it differs.

    The stored shard must still be the one recorded (its generation, which
    holds its size; where the store reports none, its values' checksum), and
    the source region must still hold the values recorded (their checksum).
    """

    copy: ShardCopy
    done: Done

    def __call__(self) -> int:
        """0 if the shard still holds what was recorded, else the decoded bytes copied again."""
        if self.unchanged():
            return 0
        return self.copy()

    def unchanged(self) -> bool:
        copy, done = self.copy, self.done
        stored = copy.stored()
        if (stored.value is not None) != done.stored:
            return False  # deleted, or written where nothing was
        if done.generation is None or _generation(stored) is None:
            if checksum(np.asarray(copy.target.get(copy.region))) != done.checksum:
                return False
        elif _generation(stored) != done.generation:
            return False  # replaced or rewritten
        return checksum(np.asarray(copy.source.get(copy.region))) == done.checksum


def _generation(stored: Versioned) -> str | None:
    """A generation as recorded: its ``repr`` (stable across processes for every store's generations)."""
    return None if stored.generation is None else repr(stored.generation)


def shard_copies(
    source: Array, target: Array, record: Record, done: dict[str, Done | None]
) -> Iterator[ShardCopy | ShardResume]:
    """A task for every shard of ``target``: a `ShardCopy`, or a `ShardResume` for one in ``done``."""
    for coords in target.metadata.chunk_grid.chunk_coords(target.shape):
        copy = ShardCopy(source, target, tuple(coords), record)
        entry = done.get(copy.key)
        yield copy if entry is None else ShardResume(copy, entry)
