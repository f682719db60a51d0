"""What a variable records about its Zarr array: ``encoding`` and the decoded ``_FillValue``.

``_FillValue`` attributes are decoded by xarray's own ``FillValueCoder``, as
its zarr backend does for Zarr v3 (where the array ``fill_value`` goes to
``encoding`` and a CF ``_FillValue`` attribute, if any, is JSON-encoded by
xarray: base64 of a little-endian float64 for floats, a pair of those for
complex numbers).
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias, cast

import numpy as np
from xarray.backends.zarr import FillValueCoder

from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from ..core.dtypes.kinds import category_of, is_number, is_numpy_string
from ..core.metadata import metadata_key
from ..core.metadata.v2 import V2ArrayMetadata
from ..core.shared_grouping import Stored, shared_grouping
from ..errors import ArgumentError, MetadataError
from ..nodes.array import Array
from .backend_array import variable_dtype
from .rectilinear import is_rectilinear, rectilinear_chunking, rectilinear_preferred_chunks

#: What ``open_dataset(..., preferred_chunks=)`` accepts: ``"shard"``, ``"inner"``, or a number of inner
#: chunks per dask chunk (one for every dimension, or by dimension name).
PreferredChunks: TypeAlias = Literal["shard", "inner"] | int | Mapping[str, int]

CODER_DTYPES = {
    "string": "string",
    "variable_length_bytes": "bytes",
}  # v3 data types FillValueCoder knows by name


def decode_fill_value(value: object, array: Array) -> object:
    """The ``_FillValue`` attribute of ``array``, decoded by xarray's ``FillValueCoder`` as ``engine="zarr"`` does.

    A value the coder does not read (a data type it does not handle, or a
    value of another type, e.g. a plain number written by another tool) is
    returned as stored; a string that is not what xarray writes (not the
    base64 of 8 bytes for a float) raises `MetadataError` naming the array.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/fill", shape=(1,), dtype="float32")
    >>> decode_fill_value("AAAAAAAA+H8=", a), decode_fill_value(-9999.0, a)
    (nan, -9999.0)
    """
    dtype = CODER_DTYPES.get(array.metadata.data_type.name, array.dtype)
    if isinstance(dtype, np.dtype) and not is_number(dtype):
        return value
    try:
        # Handed to xarray's coder unchecked, as engine="zarr" hands it; the coder checks what it needs.
        decoded: object = FillValueCoder.decode(
            cast("int | float | str | bytes | list[object]", value), dtype
        )
        return decoded
    except TypeError:  # the coder's "expected ..." refusals
        return value
    except (ValueError, struct.error, IndexError, OverflowError) as exc:  # bad base64, not 8 bytes, no pair
        kind = "a pair of those" if isinstance(dtype, np.dtype) and category_of(dtype) == "complex" else "one"
        raise MetadataError(
            f"array {array.name!r} ({metadata_key(array.path)}): its _FillValue attribute {str(value)[:100]!r} is not the base64 of "
            f"8 bytes (a little-endian float64; {kind} for this {dtype} variable) that xarray writes "
            f"({type(exc).__name__}: {exc}); fix or delete that attribute in the array's metadata"
        ) from exc


def variable_encoding(array: Array, dims: tuple[str, ...]) -> dict[str, Any]:
    """Everything needed to write ``array`` again the same way, plus xarray's ``preferred_chunks``.

    ``filters``, ``serializer`` and ``compressors`` are the (inner, when
    sharded) chain split by codec kind, as ``engine="zarr"`` reports them, in
    JSON form; ``codecs`` is the full outer chain.
    """
    metadata = array.metadata
    if isinstance(metadata, V2ArrayMetadata):
        return v2_encoding(array, metadata, dims)
    return {
        **(
            rectilinear_chunking(array)
            if is_rectilinear(array)
            else {"chunks": array.chunks, "shards": array.shards}
        ),
        "preferred_chunks": preferred_chunks(array, dims),
        **codec_parts(array.codecs, array.sharded),
        "codecs": [dict(codec) for codec in metadata.codecs],
        "fill_value": array.fill_value,
        "dimension_names": metadata.dimension_names,
        "chunk_key_encoding": metadata.chunk_key_encoding.to_json(),
        "dtype": variable_dtype(array),
    }


#: Decoded bytes of the dask chunk ``chunks={}`` gives a Zarr v2 variable: whole v2 chunks, grouped up to about this.
V2_TASK_BYTES = 64 << 20


def v2_encoding(array: Array, metadata: V2ArrayMetadata, dims: tuple[str, ...]) -> dict[str, Any]:
    """The encoding ``engine="zarr"`` gives a Zarr v2 array: chunks, numcodecs ``compressors`` and ``filters``, no shards.

    A ``fill_value`` is left out, as there: v2 keeps it in ``_FillValue``.
    ``preferred_chunks`` (the dask chunks of ``chunks={}``) group whole v2
    chunks (see `v2_task_chunks()`): v2 chunks are often small, and one
    dask task each costs more than reading it.
    """
    import numcodecs  # v2 arrays name numcodecs codecs; a process that opens none never imports it

    compressor = metadata.zarray.get("compressor")
    encoding: dict[str, Any] = {
        "chunks": array.chunks,
        "preferred_chunks": dict(zip(dims, v2_task_chunks(array))),
        "compressors": () if compressor is None else (numcodecs.get_codec(compressor),),
        "filters": tuple(numcodecs.get_codec(f) for f in metadata.zarray.get("filters") or ()),
        "shards": None,
    }
    dtype = variable_dtype(array)
    if is_numpy_string(dtype):
        encoding["dtype"] = dtype
    return encoding


def v2_task_chunks(array: Array) -> tuple[int, ...]:
    """The dask chunk ``chunks={}`` gives a Zarr v2 array: its chunks grouped to about `V2_TASK_BYTES`."""
    return grouped_chunks(array.chunks, array.shape, array.dtype.itemsize, V2_TASK_BYTES)


#: Shards smaller than this, in arrays of at least `MANY_SHARDS` of them, are grouped into larger dask
#: chunks by ``chunks={}``: a dask task costs more to schedule than such a shard costs to read.
SMALL_SHARD_BYTES = 1 << 20
MANY_SHARDS = 1024


def shard_task_chunks(array: Array) -> tuple[int, ...]:
    """The dask chunk ``chunks={}`` gives a Zarr v3 array: one shard, or runs of small shards.

    An array of `MANY_SHARDS` or more shards smaller than `SMALL_SHARD_BYTES` gets
    whole shards grouped along the leading axes (`grouped_chunks()`) up to dask's
    ``array.chunk-size``, so that 10^6 hourly shards make a graph of a few hundred
    tasks; a task reads its shards as one batch, and a selection pushed into it
    (`zarr3_backend.xarray.dask_slices`) still reads only the inner chunks it touches.
    """
    outer = array.shards or array.chunks
    itemsize = max(array.dtype.itemsize, 1)
    shards = math.prod(-(-n // c) for n, c in zip(array.shape, outer))
    if shards < MANY_SHARDS or math.prod(outer) * itemsize >= SMALL_SHARD_BYTES:
        return tuple(outer)
    return grouped_chunks(tuple(outer), array.shape, itemsize, dask_chunk_bytes())


#: A dimension split into at least this many dask chunks gets its ``preferred_chunks`` as the tuple of
#: their sizes, one tuple object for every variable of the store along it (see `shared_chunk_sizes()`).
SHARED_SIZES_FROM = 10_000


def shared_chunk_sizes(
    preferred: Mapping[str, int | tuple[int, ...]], sizes: Mapping[str, int]
) -> dict[str, int | tuple[int, ...]]:
    """``preferred`` with each dimension of `SHARED_SIZES_FROM` or more chunks given as one shared tuple of sizes.

    xarray turns an int preferred chunk into a new tuple of chunk sizes for
    every variable, and dask then sums it up anew (``toolz.accumulate``, a
    Python loop: 0.35 s per variable of 750,000 chunks). Dask caches those
    sums by the tuple's identity: the same ``(size, chunk)`` gives the same
    tuple object here, so the sums are computed once per grid, not once per
    variable. Dimensions of fewer chunks keep their int, as ``engine="zarr"``
    reports it.

    >>> a = shared_chunk_sizes({"time": 1, "x": 4}, {"time": 20_000, "x": 8})
    >>> a["x"], len(a["time"]), a["time"] is shared_chunk_sizes({"time": 1}, {"time": 20_000})["time"]
    (4, 20000, True)
    """
    return {
        dim: _chunk_sizes(sizes[dim], chunk)
        if isinstance(chunk, int) and chunk > 0 and sizes[dim] >= chunk * SHARED_SIZES_FROM
        else chunk
        for dim, chunk in preferred.items()
    }


@functools.lru_cache(maxsize=64)
def _chunk_sizes(size: int, chunk: int) -> tuple[int, ...]:
    return (chunk,) * (size // chunk) + ((size % chunk,) if size % chunk else ())


def dask_chunk_bytes() -> int:
    """Dask's configured ``array.chunk-size`` in bytes (128 MiB without dask)."""
    try:
        import dask.config
        from dask.utils import parse_bytes
    except ImportError:
        return 128 << 20
    return int(parse_bytes(dask.config.get("array.chunk-size")))


def grouped_chunks(
    chunks: tuple[int, ...], shape: tuple[int, ...], itemsize: int, target: int = V2_TASK_BYTES
) -> tuple[int, ...]:
    """Whole ``chunks`` grouped into blocks of about ``target`` bytes, along the leading axes first.

    Each axis is grown (to a multiple of its chunk, or to the whole axis)
    until the block reaches ``target``; the axes after the one where it
    does keep their chunk size, so blocks stay contiguous runs of chunks.

    >>> grouped_chunks((19, 91, 180), (730, 361, 720), 4, target=16 << 20)
    (247, 91, 180)
    >>> grouped_chunks((10, 10), (20, 1000), 8, target=1 << 20)
    (20, 1000)
    """
    grouped = list(chunks)
    for axis, (chunk, size) in enumerate(zip(chunks, shape)):
        block = math.prod(grouped) * max(itemsize, 1)
        if block >= target or chunk >= size:
            continue
        grouped[axis] = min(chunk * max(1, target // block), size)
        if grouped[axis] < size:
            break
    return tuple(grouped)


def shared_v2_task_chunks(arrays: Mapping[str, tuple[Array, tuple[str, ...]]]) -> dict[str, tuple[int, ...]]:
    """The dask chunks ``chunks={}`` gives the Zarr v2 arrays of one group (each with its dimension names).

    Stored chunks are grouped per dimension across the group
    (`zarr3_backend.core.shared_grouping.shared_grouping`), each
    variable proposing `v2_task_chunks`: variables that share a
    dimension and its stored chunk get the same dask chunks along it,
    whatever their data types, so ``ds.chunks`` is defined.
    """
    stored = {
        name: Stored(dims, array.chunks, array.shape, array.dtype.itemsize)
        for name, (array, dims) in arrays.items()
        if isinstance(array.metadata, V2ArrayMetadata)
    }
    return shared_grouping(stored, lambda s: grouped_chunks(s.chunks, s.shape, s.itemsize, V2_TASK_BYTES))


def codec_parts(chain: CodecChain, sharded: bool) -> dict[str, Any]:
    """``filters``, ``serializer``, ``compressors`` (and ``index_location``) of a chain, as zarr-python splits it.

    For a sharded array they describe the inner chunks; a chain with codecs
    around the sharding codec has no such split (empty result).

    >>> from zarr3_backend.codecs.chain import CodecChain
    >>> chain = CodecChain.from_json([{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}])
    >>> codec_parts(chain, sharded=False)
    {'filters': (), 'serializer': {'name': 'bytes'}, 'compressors': ({'name': 'gzip', 'configuration': {'level': 1}},)}
    """
    parts: dict[str, Any] = {}
    if sharded:
        sharding = chain.array_bytes
        if len(chain.codecs) != 1 or not isinstance(sharding, ShardingCodec):
            return {}
        parts["index_location"] = sharding.index_location
        chain = sharding.codecs
    return {
        "filters": tuple(c.to_json() for c in chain.array_array),
        "serializer": chain.array_bytes.to_json(),
        "compressors": tuple(c.to_json() for c in chain.bytes_bytes),
        **parts,
    }


def preferred_chunks(
    array: Array, dims: tuple[str, ...], choice: PreferredChunks = "shard"
) -> dict[str, int] | dict[str, tuple[int, ...]]:
    """The dask chunk ``chunks={}`` gives ``array`` along each of its ``dims``: the ``choice`` of its chunking.

    ``"shard"``: one shard (one chunk when unsharded; Zarr v2 chunks grouped
    by `v2_task_chunks()`); ``"inner"``: one inner
    chunk; an int ``n``: ``n`` inner chunks along every dimension; a mapping:
    that many inner chunks along the dimensions it names, one along the
    others. A dask chunk never spans more than a shard along a dimension.
    ``choice`` is expected checked (`check_preferred_chunks()`).

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/preferred", shape=(100, 40), dtype="int8", chunks=(10, 10), shards=(50, 20))
    >>> preferred_chunks(a, ("t", "x")), preferred_chunks(a, ("t", "x"), "inner"), preferred_chunks(a, ("t", "x"), {"t": 3})
    ({'t': 50, 'x': 20}, {'t': 10, 'x': 10}, {'t': 30, 'x': 10})
    """
    if is_rectilinear(array):  # the grid's own boundaries, per dimension
        return rectilinear_preferred_chunks(array, dims, choice)
    outer = array.shards or array.chunks
    if choice == "shard":  # Zarr v2 has no shards: whole v2 chunks grouped into one task
        return dict(
            zip(
                dims,
                v2_task_chunks(array)
                if isinstance(array.metadata, V2ArrayMetadata)
                else shard_task_chunks(array),
            )
        )
    if isinstance(choice, str):  # "inner"
        multiples = dict.fromkeys(dims, 1)
    elif isinstance(choice, int):
        multiples = dict.fromkeys(dims, choice)
    else:
        multiples = {dim: choice.get(dim, 1) for dim in dims}
    return {dim: min(multiples[dim] * inner, shard) for dim, inner, shard in zip(dims, array.chunks, outer)}


def check_preferred_chunks(choice: object, dims: Iterable[str]) -> PreferredChunks:
    """``choice`` if it is a valid ``preferred_chunks`` option for a group with dimensions ``dims``.

    Raises `ArgumentError` naming what is wrong.

    >>> check_preferred_chunks({"time": 5}, ["time", "lat"])
    {'time': 5}
    >>> check_preferred_chunks({"tme": 5}, ["time", "lat"])
    Traceback (most recent call last):
    ...
    zarr3_backend.errors.ArgumentError: preferred_chunks={'tme': 5}: no dimension 'tme' here (dimensions: 'time', 'lat')
    """
    if choice in ("shard", "inner"):
        return cast(PreferredChunks, choice)
    known = list(dims)
    counts = choice.values() if isinstance(choice, Mapping) else [choice]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in counts):
        raise ArgumentError(
            f"preferred_chunks={choice!r}: expected 'shard', 'inner', a positive number of inner chunks per "
            "dask chunk, or a dict of them by dimension name"
        )
    if isinstance(choice, Mapping):
        for dim in choice:
            if dim not in known:
                raise ArgumentError(
                    f"preferred_chunks={dict(choice)!r}: no dimension {dim!r} here (dimensions: {', '.join(map(repr, known))})"
                )
    return cast(PreferredChunks, choice)
