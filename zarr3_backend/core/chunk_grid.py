"""The chunk grids by name (`parse_chunk_grid`), and the ``regular`` one: every chunk has the same shape.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/chunk-grids/regular-grid/

.. code-block:: json

    {"name": "regular", "configuration": {"chunk_shape": [5, 20, 400]}}

The grid is aligned with the array origin and may overhang its far edges;
edge chunks are stored at full size (the part outside the array holds the
fill value). The ``rectilinear`` grid (`RectilinearChunkGrid`, each
dimension its own chunk lengths) is in `zarr3_backend.core.rectilinear_grid`;
both answer the same questions (`ChunkGrid`).
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from ..errors import MetadataError, UnknownExtensionError
from .extension import parse_extension
from .integers import is_int
from .rectilinear_grid import RectilinearChunkGrid

_FIELD = "chunk_grid.configuration.chunk_shape"


def parse_chunk_shape(value: object, field: str = _FIELD) -> tuple[int, ...]:
    """Return ``value`` as a tuple of positive ints or raise `MetadataError`.

    >>> parse_chunk_shape([5, 20])
    (5, 20)
    """
    if not isinstance(value, (list, tuple)) or not all(is_int(v) and v >= 1 for v in value):
        raise MetadataError(f"{field}: expected a list of positive integers, got {value!r}")
    return tuple(int(v) for v in value)


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
        ratio = _inner_per_chunk(self.chunk_shape, inner)
        return tuple(map(operator.floordiv, coords, ratio)), tuple(map(operator.mod, coords, ratio))

    def chunk_coords(self, array_shape: Sequence[int]) -> Iterator[tuple[int, ...]]:
        """Every grid index of an array of ``array_shape``, in C order.

        >>> list(RegularChunkGrid((5,)).chunk_coords((12,)))
        [(0,), (1,), (2,)]
        """
        return itertools.product(*(range(n) for n in self.grid_shape(array_shape)))


#: Either grid; both answer the same questions (grid shape, chunk origin and shape, sizes).
ChunkGrid: TypeAlias = RegularChunkGrid | RectilinearChunkGrid


def parse_chunk_grid(obj: object) -> ChunkGrid:
    """The grid described by a ``chunk_grid`` metadata member.

    >>> parse_chunk_grid({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [3]}})
    RectilinearChunkGrid(dims=(3,))
    """
    if parse_extension(obj, "chunk_grid", may_be_optional=False).name == RectilinearChunkGrid.name:
        return RectilinearChunkGrid.from_json(obj)
    return RegularChunkGrid.from_json(obj)


@functools.lru_cache(maxsize=64)
def _inner_per_chunk(chunk_shape: tuple[int, ...], inner: tuple[int, ...]) -> tuple[int, ...]:
    """Inner chunks per stored chunk along each dimension (asked once per piece of a read: remembered)."""
    return tuple(c // u for c, u in zip(chunk_shape, inner))
