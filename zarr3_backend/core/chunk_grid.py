"""The ``regular`` chunk grid: every chunk has the same shape.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/chunk-grids/regular-grid/

.. code-block:: json

    {"name": "regular", "configuration": {"chunk_shape": [5, 20, 400]}}

The grid is aligned with the array origin and may overhang its far edges;
edge chunks are stored at full size (the part outside the array holds the
fill value).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import MetadataError, UnknownExtensionError
from .extension import parse_extension
from .integers import is_int

_FIELD = "chunk_grid.configuration.chunk_shape"


def parse_chunk_shape(value: object, field: str = _FIELD) -> tuple[int, ...]:
    """Return ``value`` as a tuple of positive ints or raise `MetadataError`.

    >>> parse_chunk_shape([5, 20])
    (5, 20)
    """
    if not isinstance(value, (list, tuple)) or not all(is_int(v) and v >= 1 for v in value):
        raise MetadataError(f"{field}: expected a list of positive integers, got {value!r}")
    return tuple(int(v) for v in value)


class ChunkLengths:
    """Explicit chunk lengths along one dimension (of a rectilinear grid); chunk ``k`` starts at the sum before it.

    Kept as runs ``(length, count)`` of equal lengths, as ``zarr.json`` writes
    them: memory and lookups go with the number of runs, never with the number
    of chunks (``[[1, 1000000]]`` is one run). ``ChunkLengths(lengths)`` or
    ``ChunkLengths(runs=...)``; the caller bounds the values (`parse_dim`).

    >>> dim = ChunkLengths((31, 28, 31))
    >>> dim.index_of(58), dim.start(2), dim.count_covering(60)
    (1, 59, 3)
    >>> ChunkLengths(runs=[(1, 10**6)]).start(999_999), ChunkLengths(runs=[(2, 3)]).lengths
    (999999, (2, 2, 2))
    """

    __slots__ = (
        "_arrays",
        "_chunk_ends",
        "_chunk_starts",
        "_flat",
        "_position_ends",
        "_position_starts",
        "runs",
    )

    def __init__(self, lengths: Sequence[int] = (), *, runs: Sequence[tuple[int, int]] | None = None) -> None:
        merged: list[tuple[int, int]] = []
        for length, count in [(length, 1) for length in lengths] if runs is None else runs:
            if merged and merged[-1][0] == length:
                merged[-1] = (length, merged[-1][1] + count)
            elif count:
                merged.append((int(length), int(count)))
        self.runs: tuple[tuple[int, int], ...] = tuple(merged)
        counts = list(itertools.accumulate(count for _, count in merged))
        ends = list(itertools.accumulate(length * count for length, count in merged))
        self._chunk_ends = counts
        self._position_ends = ends
        self._chunk_starts = [0, *counts[:-1]]
        self._position_starts = [0, *ends[:-1]]
        self._flat = len(merged) == (counts[-1] if counts else 0)  # every run one chunk: runs are chunks
        self._arrays: tuple[np.ndarray, ...] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChunkLengths) and self.runs == other.runs

    def __hash__(self) -> int:
        return hash(self.runs)

    def __repr__(self) -> str:
        return f"ChunkLengths(runs={list(self.runs)!r})"

    def __reduce__(self) -> tuple[Callable[..., ChunkLengths], tuple[object, ...]]:
        return (_from_runs, (self.runs,))

    @property
    def lengths(self) -> tuple[int, ...]:
        """Every chunk's length, expanded: only for dimensions known to be small."""
        return tuple(length for length, count in self.runs for _ in range(count))

    @property
    def count(self) -> int:
        """How many chunks are declared."""
        return self._chunk_ends[-1] if self.runs else 0

    @property
    def total(self) -> int:
        """The sum of the declared lengths."""
        return self._position_ends[-1] if self.runs else 0

    @property
    def largest(self) -> int:
        return max((length for length, _ in self.runs), default=1)

    def distinct_lengths(self) -> list[int]:
        return sorted({length for length, _ in self.runs})

    def index_of(self, position: int) -> int:
        """The chunk holding element ``position``: the first whose running sum exceeds it (`count` past the end)."""
        r = bisect.bisect_right(self._position_ends, position)
        if self._flat or r == len(self.runs):
            return r if self._flat else self.count
        return self._chunk_starts[r] + (position - self._position_starts[r]) // self.runs[r][0]

    def start(self, k: int) -> int:
        if self._flat:
            return self._position_starts[k]
        r = self._run(k)
        return self._position_starts[r] + (k - self._chunk_starts[r]) * self.runs[r][0]

    def end(self, k: int) -> int:
        """Where chunk ``k`` ends (exclusive)."""
        return self.start(k) + self.length(k)

    def length(self, k: int) -> int:
        return self.runs[k if self._flat else self._run(k)][0]

    def _run(self, k: int) -> int:
        if not 0 <= k < self.count:
            raise IndexError(f"chunk {k} of {self.count}")
        return bisect.bisect_right(self._chunk_ends, k)

    def count_covering(self, n: int) -> int:
        """How many chunks hold the first ``n`` elements."""
        return self.index_of(n - 1) + 1 if n > 0 else 0

    def chunk_ids(self, positions: np.ndarray) -> np.ndarray:
        """The chunk holding each of ``positions`` (each below `total`), vectorised over the runs."""
        if self._arrays is None:
            self._arrays = tuple(
                np.asarray(values, dtype=np.int64)
                for values in (self._position_ends, self._position_starts, self._chunk_starts)
            ) + (np.asarray([length for length, _ in self.runs], dtype=np.int64),)
        ends, starts, first, lengths = self._arrays
        run = np.searchsorted(ends, positions, side="right")
        if self._flat:
            return run
        ids: np.ndarray = first[run] + (positions - starts[run]) // lengths[run]
        return ids

    def starts_between(self, low: int, high: int) -> list[int]:
        """The chunk starts strictly between ``low`` and ``high``."""
        found: list[int] = []
        r = bisect.bisect_right(self._position_ends, low)
        while r < len(self.runs) and self._position_starts[r] < high:
            length, first = self.runs[r][0], self._position_starts[r]
            j = max(0, (low - first) // length + 1)
            stop = min(self.runs[r][1], -(-(high - first) // length))
            found += [first + i * length for i in range(j, stop) if low < first + i * length]
            r += 1
        return found

    def extended(self, lengths: Sequence[int]) -> ChunkLengths:
        """These lengths followed by ``lengths``."""
        return ChunkLengths(runs=[*self.runs, *((length, 1) for length in lengths)])


def _from_runs(runs: tuple[tuple[int, int], ...]) -> ChunkLengths:
    return ChunkLengths(runs=runs)


@dataclass(frozen=True)
class RegularChunkGrid:
    """A grid of equally shaped chunks aligned with the array origin.

    >>> grid = RegularChunkGrid((5, 20, 400))
    >>> grid.grid_shape((10, 200, 3000))
    (2, 10, 8)
    """

    chunk_shape: tuple[int, ...]
    name: ClassVar[str] = "regular"
    is_regular: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunk_shape", parse_chunk_shape(self.chunk_shape))

    @classmethod
    def from_json(cls, obj: object) -> RegularChunkGrid:
        """Build the grid from the ``chunk_grid`` metadata member.

        >>> RegularChunkGrid.from_json({"name": "regular", "configuration": {"chunk_shape": [4]}})
        RegularChunkGrid(chunk_shape=(4,))
        """
        extension = parse_extension(obj, "chunk_grid", may_be_optional=False)
        name, configuration = extension.name, extension.configuration
        if name != cls.name:
            raise UnknownExtensionError(
                f"chunk_grid: unknown chunk grid {name!r}; supported: 'regular', 'rectilinear'"
            )
        extra = set(configuration) - {"chunk_shape"}
        if extra:
            raise MetadataError(f"chunk_grid.configuration: unexpected members {sorted(extra)}")
        if "chunk_shape" not in configuration:
            raise MetadataError(f"{_FIELD}: required member is missing in {obj!r}")
        return cls(parse_chunk_shape(configuration["chunk_shape"]))

    def to_json(self) -> dict[str, Any]:
        """The grid as written in ``zarr.json``.

        >>> RegularChunkGrid((2, 3)).to_json()
        {'name': 'regular', 'configuration': {'chunk_shape': [2, 3]}}
        """
        return {"name": self.name, "configuration": {"chunk_shape": list(self.chunk_shape)}}

    @property
    def ndim(self) -> int:
        return len(self.chunk_shape)

    def validate(self, array_shape: Sequence[int]) -> None:
        """Raise `MetadataError` unless the grid fits an array of ``array_shape``.

        >>> RegularChunkGrid((2,)).validate((10,))
        """
        if len(array_shape) != self.ndim:
            raise MetadataError(
                f"{_FIELD}: expected {len(array_shape)} entries to match the array shape "
                f"{tuple(array_shape)}, got {self.ndim} ({list(self.chunk_shape)})"
            )

    def grid_shape(self, array_shape: Sequence[int]) -> tuple[int, ...]:
        """Number of chunks along each dimension (``ceil(shape / chunk)``; 0 for empty dims).

        >>> RegularChunkGrid((5, 4)).grid_shape((10, 0))
        (2, 0)
        """
        self.validate(array_shape)
        return tuple(-(-n // c) for n, c in zip(array_shape, self.chunk_shape))

    def chunk_origin(self, coords: Sequence[int]) -> tuple[int, ...]:
        """Array coordinates of the first element of the chunk at grid index ``coords``.

        >>> RegularChunkGrid((5, 20)).chunk_origin((1, 7))
        (5, 140)
        """
        return tuple(k * c for k, c in zip(coords, self.chunk_shape, strict=True))

    def chunk_shape_at(self, coords: Sequence[int]) -> tuple[int, ...]:
        """The stored shape of the chunk at ``coords``: always [`chunk_shape`][zarr3_backend.core.chunk_grid.RegularChunkGrid.chunk_shape]."""
        return self.chunk_shape

    @property
    def dim_grids(self) -> tuple[int, ...]:
        """What [`plan_selection`][zarr3_backend.core.indexing.plan_selection] takes as the chunk grid."""
        return self.chunk_shape

    def sizes(self, array_shape: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """Per-dimension lengths of the chunks, cut at the array's edge (dask's ``chunks``).

        >>> RegularChunkGrid((4,)).sizes((10,))
        ((4, 4, 2),)
        """
        self.validate(array_shape)
        return tuple(
            (c,) * (n // c) + ((n % c,) if n % c else ()) for c, n in zip(self.chunk_shape, array_shape)
        )

    def distinct_shapes(self) -> list[tuple[int, ...]]:
        return [self.chunk_shape]

    def locate_inner(
        self, coords: tuple[int, ...], inner: tuple[int, ...] | None
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The stored chunk (shard) holding inner chunk ``coords`` of the regular ``inner`` grid, and its place there.

        >>> RegularChunkGrid((4, 6)).locate_inner((3, 1), (2, 3))
        ((1, 0), (1, 1))
        """
        if inner is None:
            return coords, (0,) * len(coords)
        ratio = [c // u for c, u in zip(self.chunk_shape, inner)]
        return tuple(c // r for c, r in zip(coords, ratio)), tuple(c % r for c, r in zip(coords, ratio))

    def chunk_coords(self, array_shape: Sequence[int]) -> Iterator[tuple[int, ...]]:
        """Every grid index of an array of ``array_shape``, in C order.

        >>> list(RegularChunkGrid((5,)).chunk_coords((12,)))
        [(0,), (1,), (2,)]
        """
        return itertools.product(*(range(n) for n in self.grid_shape(array_shape)))
