"""The ``reshape`` codec: give a chunk another shape, keeping its C-order element sequence.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/reshape

    {"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}}

Each member of ``shape`` is an output dimension: a positive size, a list of
input dimensions whose sizes multiply to it, or ``-1`` (at most once) for
whatever size keeps the element count. Lists of input dimensions must be
strictly increasing over the whole ``shape`` and must line up with the
input's dimensions (the spec's two constraints), so a reshape never
suggests a transpose. A shape that cannot hold the chunk's elements is a
`CodecError` naming both shapes. Both directions are views (``np.reshape``
of a C-contiguous chunk), copies only where numpy must.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..core.integers import is_int
from ..errors import CodecError, MetadataError
from .base import ArrayArrayCodec, ChunkSpec
from .registry import register_codec

Dimension = int | tuple[int, ...]


def parse_shape(shape: object) -> tuple[Dimension, ...]:
    """Validate ``configuration.shape`` on its own (the input shape is checked by `ReshapeCodec.validate`).

    >>> parse_shape([[0, 1], 10, -1])
    ((0, 1), 10, -1)
    """
    if not isinstance(shape, list | tuple):
        raise MetadataError(f"codec 'reshape': configuration.shape: expected a list, got {shape!r}")
    out: list[Dimension] = []
    for item in shape:
        if isinstance(item, list | tuple) and all(is_int(d, numpy=False) and d >= 0 for d in item):
            out.append(tuple(int(d) for d in item))
        elif is_int(item, numpy=False) and (item > 0 or item == -1):
            out.append(int(item))
        else:
            raise MetadataError(
                "codec 'reshape': configuration.shape: each member must be a positive size, -1 or a list of "
                f"input dimensions, got {item!r} in {shape!r}"
            )
    if sum(1 for d in out if d == -1) > 1:
        raise MetadataError(f"codec 'reshape': configuration.shape: -1 may occur at most once, got {shape!r}")
    flat = [d for dims in out if isinstance(dims, tuple) for d in dims]
    if any(b <= a for a, b in zip(flat, flat[1:])):
        raise MetadataError(
            f"codec 'reshape': configuration.shape: input dimensions must be strictly increasing over the "
            f"whole shape (reshape never transposes; add a transpose codec), got {shape!r}"
        )
    return tuple(out)


@dataclass(frozen=True)
class ReshapeCodec(ArrayArrayCodec):
    """Reshape chunks to ``shape`` (resolved against each chunk's shape)."""

    name: ClassVar[str] = "reshape"
    shape: tuple[Dimension, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", parse_shape(self.shape))

    def _configuration(self) -> dict[str, Any]:
        return {"shape": [list(d) if isinstance(d, tuple) else d for d in self.shape]}

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The encoded shape of a chunk of ``shape``; `CodecError` if this reshape does not fit it.

        >>> ReshapeCodec(shape=[[0, 1], [2], 3]).output_shape((100, 50, 64, 3))
        (5000, 64, 3)
        """
        out = [self._size(d, shape) for d in self.shape]
        total = math.prod(shape)
        if -1 in out:
            rest = math.prod(d for d in out if d != -1)
            if rest == 0 or total % rest:
                raise self._mismatch(shape, out)
            out[out.index(-1)] = total // rest
        if math.prod(out) != total:
            raise self._mismatch(shape, out)
        self._check_alignment(shape, out)
        return tuple(out)

    def _size(self, dims: Dimension, shape: tuple[int, ...]) -> int:
        if isinstance(dims, int):
            return dims
        if any(d >= len(shape) for d in dims):
            raise CodecError(
                f"codec 'reshape': configuration.shape names input dimensions {list(dims)}, but the chunk "
                f"has {len(shape)} dimensions (shape {shape})"
            )
        return math.prod(shape[d] for d in dims)

    def _check_alignment(self, shape: tuple[int, ...], out: list[int]) -> None:
        for i, dims in enumerate(self.shape):
            if isinstance(dims, tuple) and dims:
                before = math.prod(shape[: dims[0]]) == math.prod(out[:i])
                after = math.prod(shape[dims[-1] + 1 :]) == math.prod(out[i + 1 :])
                if not (before and after):
                    raise CodecError(
                        f"codec 'reshape': output dimension {i} is input dimensions {list(dims)} of a chunk of "
                        f"shape {shape}, but the output shape {tuple(out)} does not line up with them"
                    )

    def _mismatch(self, shape: tuple[int, ...], out: list[int]) -> CodecError:
        return CodecError(
            f"codec 'reshape': configuration.shape {self._configuration()['shape']} gives output shape "
            f"{tuple(out)}, which cannot hold the {math.prod(shape)} elements of a chunk of shape {shape}; "
            "the output shape must have as many elements as the chunk"
        )

    def validate(self, spec: ChunkSpec) -> None:
        self.output_shape(spec.shape)

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return spec.with_shape(self.output_shape(spec.shape))

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return chunk.reshape(self.output_shape(spec.shape))

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return chunk.reshape(spec.shape)


register_codec(ReshapeCodec)
