"""The ``rectilinear`` chunk grid: each dimension has its own list of chunk lengths.

Registered in zarr-extensions (``chunk-grids/rectilinear``)::

    {"name": "rectilinear",
     "configuration": {"kind": "inline", "chunk_shapes": [[31, 28, 31, [30, 2]], 45, 90]}}

Per dimension, a bare integer is a regular step repeated along the axis;
otherwise a list of lengths, where ``[length, count]`` repeats ``length``
``count`` times. Lengths along an axis add up to at least its length (more is
allowed: chunks declared for future appends). An element belongs to the first
chunk whose running sum of lengths exceeds its index. Chunks are stored at
their declared lengths, like the regular grid's edge chunks. One dimension's
lengths are a `ChunkLengths`, kept as runs. The grid by name:
`zarr3_backend.core.chunk_grid.parse_chunk_grid`.
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

_FIELD = "chunk_grid.configuration.chunk_shapes"
#: Edges, counts and their sums stay below this, as shapes do (numpy indexes with int64).
_LIMIT = 2**63


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


DimSpec = int | ChunkLengths


def _positive(value: object, field: str) -> int:
    if not is_int(value, numpy=False) or not 1 <= value < _LIMIT:
        raise MetadataError(f"{field}: expected a positive integer below 2**63, got {value!r}")
    return int(value)


def parse_dim(value: object, field: str) -> DimSpec:
    """One entry of ``chunk_shapes``: a bare step, or a list of lengths and ``[length, count]`` pairs.

    Runs stay runs (`ChunkLengths`), and the lengths must add up to less
    than 2**63, checked as they are read: nothing is expanded.

    >>> parse_dim([[1, 3], 3], "x").lengths
    (1, 1, 1, 3)
    """
    if is_int(value, numpy=False):
        return _positive(value, field)
    if not isinstance(value, list):
        raise MetadataError(f"{field}: expected an integer or a list of lengths, got {value!r}")
    runs: list[tuple[int, int]] = []
    total = 0
    for i, item in enumerate(value):
        where = f"{field}[{i}]"
        if isinstance(item, list):
            if len(item) != 2:
                raise MetadataError(f"{where}: expected a pair [length, count], got {item!r}")
            length, count = (
                _positive(item[0], f"{where}[0] (length)"),
                _positive(item[1], f"{where}[1] (count)"),
            )
        else:
            length, count = _positive(item, where), 1
        total += length * count
        if total >= _LIMIT:
            raise MetadataError(f"{where}: the chunk lengths up to here add up to {total}, not below 2**63")
        runs.append((length, count))
    return ChunkLengths(runs=runs)


def encode_dim(dim: DimSpec) -> int | list[int | list[int]]:
    """The compact JSON form of one dimension: runs of equal lengths as ``[length, count]``.

    >>> encode_dim(ChunkLengths((31, 28, 31, 30, 31, 31)))
    [31, 28, 31, 30, [31, 2]]
    """
    if isinstance(dim, int):
        return dim
    return [length if count == 1 else [length, count] for length, count in dim.runs]


@dataclass(frozen=True)
class RectilinearChunkGrid:
    """Per-dimension chunk lengths; a dimension is a bare regular step or a [`ChunkLengths`][zarr3_backend.core.rectilinear_grid.ChunkLengths].

    >>> grid = RectilinearChunkGrid((ChunkLengths((31, 28, 31)), 45))
    >>> grid.grid_shape((90, 90)), grid.chunk_origin((2, 1)), grid.chunk_shape_at((1, 0))
    ((3, 2), (59, 45), (28, 45))
    """

    dims: tuple[DimSpec, ...]
    name: ClassVar[str] = "rectilinear"
    is_regular: ClassVar[bool] = False

    @classmethod
    def from_json(cls, obj: object) -> RectilinearChunkGrid:
        """Build the grid from the ``chunk_grid`` metadata member; [`MetadataError`][zarr3_backend.errors.MetadataError] names the bad field."""
        configuration = parse_extension(obj, "chunk_grid", may_be_optional=False).configuration
        extra = set(configuration) - {"kind", "chunk_shapes"}
        if extra:
            raise MetadataError(f"chunk_grid.configuration: unexpected members {sorted(extra)}")
        if "kind" not in configuration:
            raise MetadataError(
                "chunk_grid.configuration.kind: required member is missing (only 'inline' is defined)"
            )
        if configuration["kind"] != "inline":
            raise UnknownExtensionError(
                f"chunk_grid.configuration.kind: {configuration['kind']!r} is not supported; "
                "the rectilinear grid defines only 'inline'"
            )
        shapes = configuration.get("chunk_shapes")
        if not isinstance(shapes, list):
            raise MetadataError(f"{_FIELD}: expected a list with one entry per dimension, got {shapes!r}")
        return cls(tuple(parse_dim(value, f"{_FIELD}[{i}]") for i, value in enumerate(shapes)))

    def to_json(self) -> dict[str, Any]:
        """The grid as written in ``zarr.json``, run-length encoded.

        >>> RectilinearChunkGrid((ChunkLengths((2, 2, 1)), 3)).to_json()
        {'name': 'rectilinear', 'configuration': {'kind': 'inline', 'chunk_shapes': [[[2, 2], 1], 3]}}
        """
        shapes = [encode_dim(d) for d in self.dims]
        return {"name": self.name, "configuration": {"kind": "inline", "chunk_shapes": shapes}}

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """The largest declared chunk along each dimension: a bound for buffers, not a grid step."""
        return tuple(d if isinstance(d, int) else d.largest for d in self.dims)

    def validate(self, array_shape: Sequence[int]) -> None:
        """Raise [`MetadataError`][zarr3_backend.errors.MetadataError] unless the grid covers an array of ``array_shape``."""
        if len(array_shape) != self.ndim:
            raise MetadataError(
                f"{_FIELD}: expected {len(array_shape)} entries to match the array shape "
                f"{tuple(array_shape)}, got {self.ndim}"
            )
        for i, (dim, n) in enumerate(zip(self.dims, array_shape)):
            if isinstance(dim, ChunkLengths) and dim.total < n:
                raise MetadataError(
                    f"{_FIELD}[{i}]: the chunk lengths add up to {dim.total}, less than the array's "
                    f"length {n} along dimension {i}"
                )

    def grid_shape(self, array_shape: Sequence[int]) -> tuple[int, ...]:
        """Number of chunks holding array elements along each dimension (declared chunks past the end excluded)."""
        self.validate(array_shape)
        return tuple(
            -(-n // d) if isinstance(d, int) else d.count_covering(n) for d, n in zip(self.dims, array_shape)
        )

    def chunk_origin(self, coords: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            k * d if isinstance(d, int) else d.start(k) for k, d in zip(coords, self.dims, strict=True)
        )

    def chunk_shape_at(self, coords: Sequence[int]) -> tuple[int, ...]:
        """The declared (stored) shape of the chunk at grid index ``coords``."""
        return tuple(d if isinstance(d, int) else d.length(k) for k, d in zip(coords, self.dims, strict=True))

    def chunk_coords(self, array_shape: Sequence[int]) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(n) for n in self.grid_shape(array_shape)))

    @property
    def dim_grids(self) -> tuple[DimSpec, ...]:
        """What [`plan_selection`][zarr3_backend.core.indexing.plan_selection] takes as the chunk grid."""
        return self.dims

    def sizes(self, array_shape: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """Per-dimension lengths of the chunks, cut at the array's edge (dask's ``chunks``).

        >>> RectilinearChunkGrid((ChunkLengths((2, 3, 4)), ChunkLengths(()))).sizes((6, 0))
        ((2, 3, 1), (0,))
        """
        self.validate(array_shape)
        return tuple(_sizes(d, n) for d, n in zip(self.dims, array_shape))

    def extended_to(
        self, shape: Sequence[int], edges: Sequence[Sequence[int] | None] | None = None
    ) -> RectilinearChunkGrid:
        """This grid declaring enough chunks for ``shape``. Declared overshoot is used first; past it, a
        dimension's new chunks end at ``edges[i]`` (positions, e.g. an appended dask array's block edges)
        that lie beyond it, and at the dimension's end.

        >>> grid = RectilinearChunkGrid((ChunkLengths((2, 3)),))
        >>> grid.extended_to((7,)).dims[0].lengths, grid.extended_to((12,), [[4, 8, 12]]).dims[0].lengths
        ((2, 3, 2), (2, 3, 3, 4))
        """
        dims: list[DimSpec] = []
        for i, (dim, n) in enumerate(zip(self.dims, shape, strict=True)):
            if isinstance(dim, int) or dim.total >= n:
                dims.append(dim)
                continue
            given = edges[i] or () if edges is not None else ()
            ends = sorted({*(e for e in given if dim.total < e < n), n})
            dims.append(dim.extended([b - a for a, b in zip([dim.total, *ends], ends)]))
        return RectilinearChunkGrid(tuple(dims))

    def locate_inner(
        self, coords: tuple[int, ...], inner: tuple[int, ...] | None
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shard holding inner chunk ``coords`` of the regular ``inner`` grid (which divides every shard), and its place there.

        >>> RectilinearChunkGrid((ChunkLengths((4, 2, 6)),)).locate_inner((4,), (2,))
        ((2,), (1,))
        """
        if inner is None:
            return coords, (0,) * len(coords)
        outer, local = [], []
        for c, u, dim in zip(coords, inner, self.dims):
            if isinstance(dim, int):
                outer.append(c // (dim // u))
                local.append(c % (dim // u))
            else:
                k = dim.index_of(c * u)
                outer.append(k)
                local.append((c * u - dim.start(k)) // u)
        return tuple(outer), tuple(local)

    def distinct_shapes(self) -> list[tuple[int, ...]]:
        """One shape per distinct length of each dimension (others at their largest): enough to check codecs."""
        largest = self.chunk_shape
        shapes = [largest]
        for i, dim in enumerate(self.dims):
            if isinstance(dim, ChunkLengths):
                shapes += [largest[:i] + (length,) + largest[i + 1 :] for length in dim.distinct_lengths()]
        return shapes


def is_rectilinear_argument(value: object) -> bool:
    """Whether a ``chunks``/``shards`` argument lists lengths for some dimension (``[[31, 28, 31], 45]``)."""
    return isinstance(value, list | tuple) and any(isinstance(v, list | tuple) for v in value)


def rectilinear_from_argument(value: Sequence[object], argument: str) -> RectilinearChunkGrid:
    """The grid a nested ``chunks``/``shards`` argument asks for: per dimension an int step or a sequence of lengths.

    >>> rectilinear_from_argument([[2, 2, 1], 3], "chunks").to_json()["configuration"]["chunk_shapes"]
    [[[2, 2], 1], 3]
    """
    dims: list[DimSpec] = []
    for i, item in enumerate(value):
        where = f"{argument}[{i}]"
        if isinstance(item, list | tuple):
            lengths = [_positive(int(v) if is_int(v) else v, f"{where}") for v in item]
            if not lengths:
                raise MetadataError(f"{where}: expected at least one chunk length, got {item!r}")
            dims.append(ChunkLengths(tuple(lengths)))
        else:
            dims.append(_positive(int(item) if is_int(item) else item, where))
    return RectilinearChunkGrid(tuple(dims))


def _sizes(dim: DimSpec, n: int) -> tuple[int, ...]:
    if n == 0:  # as dask spells an empty dimension, for a regular grid too
        return (0,)
    if isinstance(dim, int):
        return (dim,) * (n // dim) + ((n % dim,) if n % dim else ())
    count = dim.count_covering(n)
    return tuple(min(dim.length(k), n - dim.start(k)) for k in range(count))
