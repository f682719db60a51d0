"""The ``cast_value`` codec: store integer or float values as another integer or float type.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/cast_value

    {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
     "out_of_range": "clamp", "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}

Encoding converts each value to ``data_type`` by its numerical value
(`zarr3_backend.codecs.casting`); decoding converts back to the chunk's
data type by the same rules. ``scalar_map`` pairs are fill values of the
input and output types (``decode`` pairs the other way round); the first
pair for a value wins ("readers MUST use the first occurrence"), and a
later pair for the same input is dropped, so metadata written back never
repeats one ("writers SHOULD NOT"; zarr-python 3.4 reads the last). The
fill value is cast like the elements and must come back unchanged, else the
array is refused: the spec says such a fill value "MUST" be an error, though
zarr-python 3.4 writes arrays with one (fill 0.0, ``decode [[0, "NaN"]]``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, cast

import numpy as np

from ..core.dtypes import DataType, parse_data_type
from ..core.dtypes.kinds import is_numpy_real_number
from ..errors import CodecError, MetadataError
from .base import ArrayArrayCodec, ChunkSpec
from .casting import OUT_OF_RANGE, ROUNDINGS, OutOfRange, Rounding, cast_array
from .registry import parse_config_choice, register_codec

_KEYS = {"data_type", "rounding", "out_of_range", "scalar_map"}
_DIRECTIONS = ("encode", "decode")
#: One direction of ``scalar_map``: (input, output) JSON fill value pairs, in order.
Pairs = tuple[tuple[Any, Any], ...]


@dataclass(frozen=True)
class CastValueCodec(ArrayArrayCodec):
    """Convert values to ``data_type`` with the given rounding and out-of-range rule."""

    name: ClassVar[str] = "cast_value"
    data_type: DataType
    rounding: Rounding = "nearest-even"
    out_of_range: OutOfRange | None = None
    encode_map: Pairs = ()
    decode_map: Pairs = ()

    @classmethod
    def from_json(cls, configuration: dict[str, Any]) -> CastValueCodec:
        extra = sorted(set(configuration) - _KEYS)
        if extra:
            raise MetadataError(
                f"codec 'cast_value': unknown configuration keys {extra}; allowed: {sorted(_KEYS)}"
            )
        if "data_type" not in configuration:
            raise MetadataError("codec 'cast_value': configuration.data_type is required, e.g. \"uint8\"")
        data_type = _parse_target(configuration["data_type"])
        rounding = parse_config_choice(
            cls.name, "rounding", configuration.get("rounding", "nearest-even"), ROUNDINGS
        )
        out_of_range = configuration.get("out_of_range")
        if out_of_range is not None:
            parse_config_choice(cls.name, "out_of_range", out_of_range, OUT_OF_RANGE)
            if out_of_range == "wrap" and data_type.category == "float":
                raise MetadataError(
                    f"codec 'cast_value': configuration.out_of_range 'wrap' needs an integer data_type, "
                    f"got {data_type.name!r}; use 'clamp'"
                )
        maps = _parse_scalar_map(configuration.get("scalar_map", {}))
        return cls(data_type, cast(Rounding, rounding), out_of_range, *maps)

    def _configuration(self) -> dict[str, Any]:
        configuration: dict[str, Any] = {"data_type": self.data_type.to_json()}
        if self.rounding != "nearest-even":
            configuration["rounding"] = self.rounding
        if self.out_of_range is not None:
            configuration["out_of_range"] = self.out_of_range
        pairs = {
            d: [list(p) for p in m] for d, m in zip(_DIRECTIONS, (self.encode_map, self.decode_map)) if m
        }
        if pairs:
            configuration["scalar_map"] = pairs
        return configuration

    def validate(self, spec: ChunkSpec) -> None:
        encoded = self.resolve_spec(spec).fill_value
        back = self.decode(np.asarray(encoded, self.data_type.numpy), spec)[()]
        fill = np.asarray(spec.fill_value, spec.dtype)[()]
        if not (back == fill or (np.isnan(back) and np.isnan(fill))):
            raise CodecError(
                f"codec 'cast_value': the fill value {fill.item()!r} becomes {encoded.item()!r} in "
                f"{self.data_type.name!r} and decodes to {back.item()!r}; the cast_value specification says a "
                "fill value that cannot survive the round trip MUST be treated as an error (zarr-python 3.4 "
                'writes such arrays, e.g. fill 0.0 with scalar_map.decode [[0, "NaN"]], where a written 0.0 '
                "reads back as NaN and an unwritten one as 0.0). Choose a fill value that survives the cast, "
                "or map it with configuration.scalar_map"
            )

    def _maps(self, source: DataType) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
        pairs = json.dumps([self.encode_map, self.decode_map])  # a key that tells -0.0 from 0
        return _scalar_maps(pairs, _numeric(source, "the chunk's data type"), self.data_type)

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        fill = np.asarray(spec.fill_value, spec.dtype)
        try:
            encoded = self.encode(fill, spec)
        except CodecError as exc:
            raise CodecError(f"{exc} (casting the fill value {fill.item()!r})") from exc
        return ChunkSpec(spec.shape, self.data_type, encoded[()])

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        return input_size // spec.dtype.itemsize * self.data_type.numpy.itemsize

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        encode_map, _ = self._maps(spec.data_type)
        return cast_array(chunk, self.data_type.numpy, self.rounding, self.out_of_range, encode_map)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        _, decode_map = self._maps(spec.data_type)
        return cast_array(chunk, spec.dtype, self.rounding, self.out_of_range, decode_map)


def _numeric(data_type: DataType, what: str) -> DataType:
    if not is_numpy_real_number(data_type.numpy):
        raise CodecError(
            f"codec 'cast_value': {what} must be an integer or floating-point type, got {data_type.name!r}"
        )
    return data_type


def _parse_target(value: object) -> DataType:
    try:
        data_type = parse_data_type(value)
    except MetadataError as exc:
        raise type(exc)(f"codec 'cast_value': configuration.data_type: {exc}") from exc
    try:
        return _numeric(data_type, "configuration.data_type")
    except CodecError as exc:
        raise MetadataError(str(exc)) from exc


def _parse_scalar_map(value: object) -> tuple[Pairs, Pairs]:
    where = "codec 'cast_value': configuration.scalar_map"
    if not isinstance(value, dict) or set(value) - set(_DIRECTIONS):
        raise MetadataError(f"{where}: expected an object with 'encode' and/or 'decode', got {value!r}")
    maps = []
    for direction in _DIRECTIONS:
        pairs = value.get(direction, [])
        if not isinstance(pairs, list) or not all(
            isinstance(p, list | tuple)
            and len(p) == 2
            and all(isinstance(x, int | float | str) and not isinstance(x, bool) for x in p)
            for p in pairs
        ):
            raise MetadataError(
                f"{where}.{direction}: expected a list of [input, output] pairs, got {pairs!r}"
            )
        maps.append(_first_of_each(tuple((p[0], p[1]) for p in pairs)))
    return maps[0], maps[1]


def _first_of_each(pairs: Pairs) -> Pairs:
    """``pairs`` without those whose input repeats an earlier one: readers use the first (spec), writers do not repeat.

    >>> _first_of_each(((1, 5), (2, 6), (1, 7)))
    ((1, 5), (2, 6))
    """
    kept: list[tuple[Any, Any]] = []
    for pair in pairs:
        if not any(pair[0] == earlier for earlier, _ in kept):
            kept.append(pair)
    return tuple(kept)


@lru_cache(maxsize=256)
def _scalar_maps(
    pairs: str, source: DataType, target: DataType
) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
    """The scalar map pairs (JSON) as scalars: ``encode`` from ``source`` to ``target``, ``decode`` back."""
    encode_map, decode_map = json.loads(pairs)
    return _parse_pairs(encode_map, source, target, "encode"), _parse_pairs(
        decode_map, target, source, "decode"
    )


def _parse_pairs(
    pairs: Pairs, key_type: DataType, value_type: DataType, direction: str
) -> list[tuple[Any, Any]]:
    parsed = []
    for index, (key, value) in enumerate(pairs):
        try:
            parsed.append((key_type.parse_fill_value(key), value_type.parse_fill_value(value)))
        except MetadataError as exc:
            raise CodecError(
                f"codec 'cast_value': configuration.scalar_map.{direction}[{index}]: {exc}"
            ) from exc
    return parsed


register_codec(CastValueCodec)
