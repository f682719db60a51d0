"""The ``scale_offset`` codec: ``(x - offset) * scale`` on encode, ``x / scale + offset`` on decode.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/scale_offset

    {"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}

``offset`` (default 0) and ``scale`` (default 1) are JSON fill values of the
chunk's data type (an integer or float type), kept as written. The
arithmetic is the data type's own: floats stay in their width (overflow is
±inf, as IEEE 754 says); for integers a result or intermediate value outside
the type, or a decode that does not divide exactly, raises `CodecError`. The
fill value is encoded like the elements. With a ``cast_value`` codec after
it, this replaces ``numcodecs.fixedscaleoffset``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from ..core.dtypes import DataType
from ..core.dtypes.kinds import is_float, is_numpy_real_number
from ..errors import CodecError, MetadataError
from .base import ArrayArrayCodec, ChunkSpec
from .registry import register_codec

_FIELDS = ("offset", "scale")


@dataclass(frozen=True)
class ScaleOffsetCodec(ArrayArrayCodec):
    """Subtract ``offset``, then multiply by ``scale``, in the chunk's data type."""

    name: ClassVar[str] = "scale_offset"
    offset: float | str = 0
    scale: float | str = 1

    def __post_init__(self) -> None:
        for member in _FIELDS:
            value = getattr(self, member)
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise MetadataError(
                    f"codec 'scale_offset': configuration.{member}: expected a number or a fill value "
                    f'string such as "NaN", got {value!r}'
                )

    @classmethod
    def from_json(cls, configuration: dict[str, Any]) -> ScaleOffsetCodec:
        extra = sorted(set(configuration) - set(_FIELDS))
        if extra:
            raise MetadataError(
                f"codec 'scale_offset': unknown configuration keys {extra}; allowed: offset, scale"
            )
        return cls(**configuration)

    def to_json(self) -> dict[str, Any]:
        """Like zarr-python: members at their default are left out, and so is an empty configuration."""
        configuration = {
            m: getattr(self, m) for m, default in zip(_FIELDS, (0, 1)) if getattr(self, m) != default
        }
        return {"name": self.name, "configuration": configuration} if configuration else {"name": self.name}

    def validate(self, spec: ChunkSpec) -> None:
        _operands(self.offset, self.scale, spec.data_type)

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        fill = self.encode(np.asarray(spec.fill_value, spec.dtype), spec)
        return ChunkSpec(spec.shape, spec.data_type, fill[()])

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        offset, scale = _operands(self.offset, self.scale, spec.data_type)
        if is_float(chunk.dtype):
            with np.errstate(over="ignore", invalid="ignore"):
                return np.asarray((chunk - offset) * scale)
        if chunk.size:
            low, high = int(chunk.min()), int(chunk.max())  # the map is monotonic: its extremes are at these
            _check_range(chunk.dtype, "encode", [low - int(offset), high - int(offset)])
            _check_range(
                chunk.dtype, "encode", [(low - int(offset)) * int(scale), (high - int(offset)) * int(scale)]
            )
        return np.asarray((chunk - offset) * scale)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        offset, scale = _operands(self.offset, self.scale, spec.data_type)
        if is_float(chunk.dtype):
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return np.asarray(chunk / scale + offset)
        if chunk.size:
            if np.any(chunk % scale):
                raise CodecError(
                    f"codec 'scale_offset': a stored value is not a multiple of scale {self.scale!r}, so it "
                    f"has no exact {chunk.dtype} decoding (corrupt data or a wrong scale)"
                )
            quotients = [int(chunk.min()) // int(scale), int(chunk.max()) // int(scale)]
            _check_range(chunk.dtype, "decode", quotients)
            _check_range(chunk.dtype, "decode", [q + int(offset) for q in quotients])
        return np.asarray(chunk // scale + offset)


def _check_range(dtype: np.dtype, action: str, values: list[int]) -> None:
    info = np.iinfo(dtype)
    outside = [v for v in values if not info.min <= v <= info.max]
    if outside:
        raise CodecError(
            f"codec 'scale_offset': {action} reaches {outside[0]}, outside the range of {dtype} "
            f"[{info.min}, {info.max}]; choose an offset and scale that keep the data in range"
        )


def _operands(offset: float | str, scale: float | str, data_type: DataType) -> tuple[Any, Any]:
    """``offset`` and ``scale`` as scalars of ``data_type``; `CodecError` naming the member if one is not."""
    return _parsed_operands(json.dumps([offset, scale]), data_type)  # a key that tells -0.0 from 0


@lru_cache(maxsize=256)
def _parsed_operands(operands: str, data_type: DataType) -> tuple[Any, Any]:
    if not is_numpy_real_number(data_type.numpy):
        raise CodecError(
            f"codec 'scale_offset' needs an integer or floating-point data type, got {data_type.name!r}"
        )
    parsed = []
    for member, value in zip(_FIELDS, json.loads(operands)):
        try:
            parsed.append(data_type.parse_fill_value(value))
        except MetadataError as exc:
            raise CodecError(f"codec 'scale_offset': configuration.{member}: {exc}") from exc
    if parsed[1] == 0:
        raise CodecError("codec 'scale_offset': configuration.scale must not be zero")
    return parsed[0], parsed[1]


register_codec(ScaleOffsetCodec)
