"""The shard index: an ``(*chunks_per_shard, 2)`` uint64 array of ``(offset, nbytes)``.

Empty inner chunks have both entries set to ``2**64 - 1`` (spec:
sharding-indexed, "Binary shard format").
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import CorruptShardError

EMPTY = np.uint64(2**64 - 1)
_EMPTY_INT = 2**64 - 1


@dataclass(frozen=True)
class ShardIndex:
    """Where each inner chunk of one shard lives, as byte ranges of the shard value.

    ``generation`` is the store generation of the shard version the index
    was read from (``None``: unknown, or not read from a store). The ranges
    are only valid for bytes read from that same generation. ``encoded``: the
    stored bytes the index was parsed from, if it was (`same_encoding()`).
    """

    entries: np.ndarray
    generation: Hashable | None = None
    encoded: bytes | None = field(default=None, compare=False, repr=False)

    @classmethod
    def empty(cls, chunks_per_shard: tuple[int, ...]) -> ShardIndex:
        return cls(np.full((*chunks_per_shard, 2), EMPTY, dtype=np.uint64))

    def of_generation(self, generation: Hashable | None) -> ShardIndex:
        """This index, marked as read from the shard version ``generation``."""
        return replace(self, generation=generation)

    def same_encoding(self, stored: object) -> bool:
        """Whether ``stored`` (a buffer read from the shard) holds exactly the bytes this index was parsed from:
        then it parses to this index, and need not be parsed again."""
        return self.encoded is not None and self.encoded == stored

    @property
    def chunks_per_shard(self) -> tuple[int, ...]:
        return self.entries.shape[:-1]

    def chunk_range(self, coords: tuple[int, ...]) -> tuple[int, int] | None:
        """``(start, end)`` of the inner chunk at ``coords``, or ``None`` if it is empty."""
        offset, nbytes = self.entries[coords].tolist()  # Python ints: no numpy scalar per comparison
        if offset == _EMPTY_INT:
            return None
        return offset, offset + nbytes

    def validate(self, where: str, shard_size: int | None = None) -> ShardIndex:
        """Raise `CorruptShardError` unless every entry is empty or inside the shard."""
        if self.entries.size <= _CHECKED_AS_INTS:
            _check_entries(self.entries.reshape(-1, 2).tolist(), where, shard_size)
            return self
        offsets, nbytes = self.entries[..., 0], self.entries[..., 1]
        empty = offsets == EMPTY
        if (empty != (nbytes == EMPTY)).any():
            raise _half_empty(where)
        if shard_size is None:
            return self
        ends = offsets[~empty] + nbytes[~empty]
        if ends.size and (int(ends.max()) > shard_size or (ends < offsets[~empty]).any()):
            raise _past_the_end(where, int(ends.max()), shard_size)
        return self


#: Index entries (two per inner chunk) up to which `ShardIndex.validate` checks Python ints, not numpy
#: arrays: a numpy call on a few elements costs as much as checking dozens of ints.
_CHECKED_AS_INTS = 64


def _check_entries(pairs: list[list[int]], where: str, shard_size: int | None) -> None:
    """`ShardIndex.validate` of ``(offset, nbytes)`` pairs as Python ints (ends wrap as uint64 do)."""
    ends = []
    for offset, nbytes in pairs:
        if (offset == _EMPTY_INT) != (nbytes == _EMPTY_INT):
            raise _half_empty(where)
        if offset != _EMPTY_INT:
            ends.append(offset + nbytes)
    if shard_size is None or not ends:
        return
    wrapped = max(end & _EMPTY_INT for end in ends)
    if wrapped > shard_size or max(ends) > _EMPTY_INT:
        raise _past_the_end(where, wrapped, shard_size)


def _half_empty(where: str) -> CorruptShardError:
    return CorruptShardError(f"{where}: shard index has entries with only one of offset/nbytes marked empty")


def _past_the_end(where: str, end: int, shard_size: int) -> CorruptShardError:
    return CorruptShardError(
        f"{where}: shard index points past the end of the shard "
        f"(an inner chunk ends at byte {end}, the shard has {shard_size} bytes)"
    )
