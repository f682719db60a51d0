"""What ``convert`` writes: every node's target metadata, chosen before any data moves.

An array keeps its shape, data type, fill value, attributes and dimension
names; only its chunking and codecs change. Its inner chunks are the source
chunks (the inner chunks of a sharded source), and its shards follow
`default_shards()`; ``chunks``, ``shards`` and ``codecs`` override them,
for every array or per array path.

A Zarr v2 array's metadata is carried over as xarray's ``engine="zarr"``
reads it, so that the converted array reads as the same variable: the names
in its ``_ARRAY_DIMENSIONS`` attribute become ``dimension_names`` (and the
attribute is dropped, as xarray writes v3), and a ``fill_value`` other than
``null`` (which xarray reads as the CF ``_FillValue`` of a v2 array) is
also recorded as the ``_FillValue`` attribute, in the JSON form xarray gives
it in Zarr v3, except for ``datetime64``/``timedelta64`` arrays: xarray can
neither write such an attribute in Zarr v3 (``to_zarr`` raises) nor read one
(``engine="zarr"`` refuses to open the store), and it does not mask these
arrays with the v2 fill value either, so their values read the same without
it. No other attribute changes.
"""

from __future__ import annotations

import base64
import json
import math
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import numpy as np

from ..codecs.registry import codec_from_json
from ..core.dtypes import Scalar, parse_data_type
from ..core.dtypes.kinds import category_of
from ..core.json_types import JSON
from ..core.metadata import ArrayMetadata
from ..core.metadata.v2 import V2ArrayMetadata
from ..core.shared_grouping import Stored, shared_grouping
from ..errors import ArgumentError, MetadataError, Zarr3Error, with_location
from ..nodes.array import Array
from ..nodes.creation import DEFAULT_INDEX_CODECS, CodecLike, build_array_metadata
from ..nodes.hierarchy import Group
from ..store.base import Store
from .codecs import carried_codecs

#: The decoded size `default_shards()` aims at (shards hold at most this, and at least half of it
#: unless the array is smaller or one inner chunk is larger).
SHARD_TARGET_BYTES = 128 << 20
#: A small array is cut into at least this many shards where each still holds `MIN_SHARD_BYTES` (and whole
#: inner chunks), so that a dask computation over it has two tasks per core on up to 8 cores, not one in all.
#: A constant, not the machine's core count: the plan of a convert must not change with the machine resuming it.
MIN_SHARDS = 16
MIN_SHARD_BYTES = 8 << 20
VARIABLE_ITEM_BYTES = 16  # the size assumed for an element of a variable-length type
DIMENSION_KEY = "_ARRAY_DIMENSIONS"

T = TypeVar("T")
#: A setting for every array (``shards=(24, 721, 1440)``), or per array path (``{"t2m": (24, 721, 1440)}``).
PerArray: TypeAlias = T | Mapping[str, T] | None


@dataclass(frozen=True)
class ArrayPlan:
    """One array to convert: its ``path``, the ``source`` array and the ``metadata`` it gets in DST."""

    path: str
    source: Array
    metadata: ArrayMetadata


@dataclass(frozen=True)
class Plan:
    """Everything a convert writes besides the data: group attributes and array metadata, by path."""

    source: str
    groups: dict[str, dict[str, Any]]
    arrays: list[ArrayPlan]

    def to_json(self) -> dict[str, Any]:
        """The plan as recorded in DST, to compare with the plan of a resumed run."""
        arrays = {a.path: a.metadata.to_json() for a in self.arrays}
        return {"source": self.source, "groups": self.groups, "arrays": arrays}

    def difference(self, recorded: JSON) -> str | None:
        """Where ``recorded`` (an earlier run's `to_json()`, parsed) differs from this plan, or ``None``.

        >>> plan = Plan("a.zarr", {"": {"title": "t"}}, [])
        >>> plan.difference({"source": "a.zarr", "groups": {"": {"title": "u"}}, "arrays": {}})
        "groups/ (root)/title: 'u' then, 't' now"
        """
        return _difference(recorded, self.to_json(), "")


def _difference(before: Any, after: Any, where: str) -> str | None:
    """The first place (a ``/``-joined path of keys) where two JSON values differ; NaN equals NaN."""
    if _canonical(before) == _canonical(after):
        return None
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            found = _difference(before.get(key), after.get(key), f"{where}/{key or ' (root)'}".lstrip("/"))
            if found is not None:
                return found
    return f"{where}: {before!r} then, {after!r} now"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def default_shards(
    shape: Sequence[int], chunks: Sequence[int], item_size: int, target: int = SHARD_TARGET_BYTES
) -> tuple[int, ...]:
    """The shard shape ``convert`` gives an array of ``shape`` with inner ``chunks``.

    A shard holds whole inner chunks, at most ``target`` bytes decoded (at
    least one chunk); an array smaller than `MIN_SHARDS` such shards gets
    smaller ones, one `MIN_SHARDS`-th of the array but at least
    `MIN_SHARD_BYTES`, so that dask has enough tasks. A shard grows along the
    last dimension first, up to the array's extent, then along the one
    before, and so on, so that shards are slabs of the leading dimension
    (time, usually) covering the other dimensions whole whenever such a slab
    fits. Each shard then holds between half of that size and all of it,
    unless the array is smaller or one chunk is larger.

    >>> default_shards((8760, 721, 1440), (1, 721, 1440), 4)  # 32 hourly fields: 133 MB
    (32, 721, 1440)
    >>> default_shards((100, 1000, 1000), (10, 100, 100), 8, target=16 << 20)
    (10, 200, 1000)
    >>> default_shards((10, 365, 73, 144), (1, 365, 73, 144), 4)  # 10 members, 153 MB: 10 shards, not 1
    (1, 365, 73, 144)
    """
    small = max(MIN_SHARD_BYTES, math.prod(shape) * item_size // MIN_SHARDS)
    budget = max(1, min(target, small) // max(1, math.prod(chunks) * item_size))
    counts = [max(1, -(-n // c)) for n, c in zip(shape, chunks)]
    multiples = [1] * len(chunks)
    for dim in reversed(range(len(chunks))):
        multiples[dim] = min(counts[dim], budget)
        budget //= multiples[dim]
    return tuple(c * m for c, m in zip(chunks, multiples))


def make_plan(
    root: Array | Group,
    source: str,
    *,
    chunks: PerArray[Sequence[int]],
    shards: PerArray[Sequence[int]],
    codecs: PerArray[Sequence[CodecLike]],
) -> Plan:
    """The plan converting the hierarchy at ``root`` (``source`` names it in the record)."""
    nodes: list[tuple[str, Array | Group]] = [("", root), *(root.walk() if isinstance(root, Group) else [])]
    arrays = [(path, node) for path, node in nodes if isinstance(node, Array)]
    for name, option in (("chunks", chunks), ("shards", shards), ("codecs", codecs)):
        unknown: list[str] = (
            sorted(set(option) - {p for p, _ in arrays}) if isinstance(option, Mapping) else []
        )
        if unknown:
            raise ArgumentError(
                f"{name}: no array {unknown[0]!r} in {source}; arrays: {sorted(p for p, _ in arrays)}"
            )
    inner = {path: _shape_for(path, array, chunks) or _source_chunks(array) for path, array in arrays}
    chosen = shared_shards([(p, a, inner[p]) for p, a in arrays if _shape_for(p, a, shards) is None])
    return Plan(
        source,
        {path: dict(node.attrs) for path, node in nodes if isinstance(node, Group)},
        [
            ArrayPlan(
                path,
                array,
                target_metadata(
                    path,
                    array,
                    chunks=inner[path],
                    shards=_shape_for(path, array, shards) or chosen[path],
                    codecs=_for(path, codecs),
                ),
            )
            for path, array in arrays
        ],
    )


def shared_shards(arrays: Sequence[tuple[str, Array, Sequence[int]]]) -> dict[str, tuple[int, ...]]:
    """The default shards of ``arrays`` (path, array, inner chunks): `default_shards`, agreed per dimension.

    The arrays of one group that share a dimension (name, extent and inner
    chunk) get the same shard along it, the smallest any of them would pick
    on its own (`zarr3_backend.core.shared_grouping.shared_grouping`),
    so a float32 and an int16 variable read back with one chunking.
    """
    by_group: dict[str, dict[str, Stored]] = {}
    for path, array, inner in arrays:
        dims = carried_over(array.metadata)[1] or (None,) * array.ndim
        item_size = array.metadata.data_type.item_size or VARIABLE_ITEM_BYTES
        group = by_group.setdefault(path.rpartition("/")[0], {})
        group[path] = Stored(dims, tuple(inner), array.shape, item_size)
    chosen: dict[str, tuple[int, ...]] = {}
    for stored in by_group.values():
        chosen.update(
            shared_grouping(
                stored,
                lambda s: default_shards(s.shape, s.chunks, s.itemsize, SHARD_TARGET_BYTES),
                whole_chunks=True,
            )
        )
    return chosen


def past_the_extent(plan: ArrayPlan) -> str | None:
    """Why a shard of ``plan``'s array is longer than the array along a dimension, or ``None`` if none is."""
    target = Array(plan.source.store, plan.path, plan.metadata)
    shards, inner = target.shards or target.chunks, target.chunks
    longer = [(i, n, s, c) for i, (n, s, c) in enumerate(zip(target.shape, shards, inner)) if s > n and s > c]
    if not longer:
        return None
    i, n, s, c = longer[0]
    return (
        f"{plan.path or '/'}: shards of {s} along dimension {i}, which has {n}: a shard holds whole inner "
        f"chunks ({c}), so {n} needs {-(-n // c)} of them; nothing is stored past {n}"
    )


def _for(path: str, option: PerArray[T]) -> T | None:
    return option.get(path) if isinstance(option, Mapping) else option


def _shape_for(path: str, array: Array, option: PerArray[Sequence[int]]) -> Sequence[int] | None:
    """The shape set for ``path``: by path, or one shape for every array with as many dimensions."""
    if isinstance(option, Mapping) or option is None or len(option) == array.ndim:
        return _for(path, option)
    return None


def _source_chunks(array: Array) -> tuple[int, ...]:
    """The source's (inner) chunk shape; for a rectilinear grid, its largest chunk."""
    regular = array.sharded or array.metadata.chunk_grid.is_regular
    return array.chunks if regular else array.metadata.chunk_shape


def target_metadata(
    path: str,
    array: Array,
    *,
    chunks: Sequence[int] | None,
    shards: Sequence[int] | None,
    codecs: Sequence[CodecLike] | None,
) -> ArrayMetadata:
    """The metadata ``array`` gets in DST (see the module docstring); a bad setting raises naming ``path``."""
    metadata = array.metadata
    inner = tuple(chunks) if chunks is not None else _source_chunks(array)
    item_size = metadata.data_type.item_size or VARIABLE_ITEM_BYTES
    outer = tuple(shards) if shards is not None else default_shards(array.shape, inner, item_size)
    attributes, dimension_names = carried_over(metadata)
    _check_v3_data_type(path, metadata)
    try:
        options: dict[str, Any] = {"chunks": inner, "shards": outer}
        codecs = codecs if codecs is not None else carried_codecs(array)
        if codecs is not None:
            chain = [codec.to_json() for codec in map(codec_from_json, codecs) if codec is not None]
            sharding = {"chunk_shape": list(inner), "codecs": chain, "index_codecs": DEFAULT_INDEX_CODECS}
            options = {"chunks": outer, "codecs": [{"name": "sharding_indexed", "configuration": sharding}]}
        return build_array_metadata(
            path,
            shape=array.shape,
            dtype=metadata.data_type,
            fill_value=metadata.fill_value,
            attributes=attributes,
            dimension_names=dimension_names,
            **options,
        )
    except Zarr3Error as exc:  # metadata and codec chain errors alike
        raise with_location(exc, f"array {path or '/'!r}") from exc


def _check_v3_data_type(path: str, metadata: ArrayMetadata) -> None:
    """Refuse a data type only Zarr v2 has (structured, generic objects), naming the array."""
    name = metadata.data_type.to_json()
    try:
        parse_data_type(name)
    except MetadataError as exc:
        raise MetadataError(
            f"array {path or '/'!r}: its data type {name!r} (numpy {metadata.data_type.numpy}) has no Zarr v3 "
            "equivalent, so it cannot be converted (nothing was written)"
        ) from exc


def carried_over(metadata: ArrayMetadata) -> tuple[dict[str, Any], tuple[str | None, ...] | None]:
    """The attributes and dimension names an array keeps (a v2 array's as described in the module docstring)."""
    attributes = dict(metadata.attributes)
    if not isinstance(metadata, V2ArrayMetadata):
        return attributes, metadata.dimension_names
    names = attributes.get(DIMENSION_KEY)
    dimension_names = metadata.dimension_names
    if isinstance(names, list) and len(names) == metadata.ndim and all(isinstance(n, str) for n in names):
        dimension_names = tuple(names)
        del attributes[DIMENSION_KEY]
    fill = (
        None
        if metadata.v2_fill_value is None
        else cf_fill_value(metadata.fill_value, metadata.data_type.numpy)
    )
    if fill is not None:
        attributes["_FillValue"] = fill
    return attributes, dimension_names


def describe_source(src: object, store: Store) -> str:
    """How the plan names SRC: an absolute path for a local path, else the URL or the store."""
    if isinstance(src, str | os.PathLike) and "://" not in os.fspath(src):
        return os.path.abspath(os.fspath(src))
    return os.fspath(src).rstrip("/") if isinstance(src, str | os.PathLike) else repr(store)


def cf_fill_value(value: Scalar | float, dtype: np.dtype) -> JSON:
    """A v2 ``fill_value`` as the ``_FillValue`` attribute xarray writes in Zarr v3; ``None`` when it has none.

    ``datetime64`` and ``timedelta64`` have none (see the module docstring).

    >>> cf_fill_value(float("nan"), np.dtype("float32")), cf_fill_value(-32767, np.dtype("int16"))
    ('AAAAAAAA+H8=', -32767)
    >>> cf_fill_value(np.datetime64(5, "s"), np.dtype("M8[s]")) is None
    True
    """
    category = category_of(dtype)
    if category in ("datetime", "timedelta"):
        return None
    if category == "float":
        return _b64_double(float(value))
    if category == "complex":
        number = complex(value)  # type: ignore[arg-type]  # a complex dtype's fill is a complex scalar
        return [_b64_double(number.real), _b64_double(number.imag)]
    if category in ("int", "uint"):
        return int(value)
    if category == "bool":
        return bool(value)
    if category == "fixed_bytes" and isinstance(value, bytes | np.bytes_):
        return base64.standard_b64encode(bytes(value)).decode()
    return str(value) if isinstance(value, str) else None


def _b64_double(value: float) -> str:
    return base64.standard_b64encode(struct.pack("<d", value)).decode()
