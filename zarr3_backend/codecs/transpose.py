"""The ``transpose`` codec: permute the dimensions of a chunk.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/transpose/

    {"name": "transpose", "configuration": {"order": [1, 0]}}

``order`` is an explicit permutation of ``0 .. ndim-1``; the encoded chunk
has shape ``[shape[i] for i in order]``. Both directions return views
(``np.transpose``), so no data moves until a later codec needs C order.
The ``"C"``/``"F"`` constants of early drafts are rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import CodecError, MetadataError
from .base import ArrayArrayCodec, ChunkSpec
from .registry import register_codec


def parse_order(order: object) -> tuple[int, ...]:
    """Validate a permutation given as a list of ints.

    >>> parse_order([2, 0, 1])
    (2, 0, 1)
    """
    if isinstance(order, str):
        raise MetadataError(
            f"codec 'transpose': configuration.order: the constant {order!r} is no longer allowed; "
            "give an explicit permutation such as [1, 0]"
        )
    if not isinstance(order, list | tuple) or not all(
        isinstance(i, int | np.integer) and not isinstance(i, bool) for i in order
    ):
        raise MetadataError(
            f"codec 'transpose': configuration.order: expected a list of integers, got {order!r}"
        )
    if sorted(order) != list(range(len(order))):
        raise MetadataError(
            f"codec 'transpose': configuration.order: expected a permutation of 0..{len(order) - 1}, got {list(order)}"
        )
    return tuple(int(i) for i in order)


@dataclass(frozen=True)
class TransposeCodec(ArrayArrayCodec):
    """Permute chunk dimensions: encoded axis ``i`` is decoded axis ``order[i]``."""

    name: ClassVar[str] = "transpose"
    order: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", parse_order(self.order))

    def _configuration(self) -> dict[str, Any]:
        return {"order": list(self.order)}

    def validate(self, spec: ChunkSpec) -> None:
        if len(self.order) != len(spec.shape):
            raise CodecError(
                f"codec 'transpose': order {list(self.order)} has {len(self.order)} entries "
                f"but the chunk has {len(spec.shape)} dimensions (shape {spec.shape})"
            )

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        self.validate(spec)
        return spec.with_shape(tuple(spec.shape[i] for i in self.order))

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return np.transpose(chunk, self.order)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return np.transpose(chunk, np.argsort(self.order))


register_codec(TransposeCodec)
