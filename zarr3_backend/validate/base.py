"""What the validators share: the `Problem` they report, key ownership, and the chunk checks.

A chunk check decodes a stored chunk (a shard: its index, then every inner
chunk) through the array's codec chain, and reports whatever decoding
raises or a shape other than the chunk's, never stopping at it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from ..codecs.base import Buffer, ChunkSpec
from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from ..errors import InvalidKeyError, Zarr3Error
from ..nodes.array import Array
from ..store.base import Store, plain_values
from ..store.storage_transformers import apply_storage_transformers

Severity = Literal["error", "warning"]
Check = Literal["metadata", "hierarchy", "consolidated", "keys", "integrity", "chunks"]
CHECKS: tuple[Check, ...] = ("metadata", "hierarchy", "consolidated", "keys", "integrity", "chunks")
FETCH_BATCH = 32


@dataclass(frozen=True)
class Problem:
    """One finding: the store ``key`` it concerns, which check found it, what is wrong, how bad it is."""

    key: str
    check: Check
    message: str
    severity: Severity = "error"


class Progress(Protocol):
    """What ``validate_store`` reports chunk progress to (``tqdm`` fits)."""

    def update(self, n: int = 1) -> object: ...

    def close(self) -> object: ...


def describe_error(exc: BaseException) -> str:
    """The message of ``exc``, prefixed with its type unless it is one of ours."""
    return str(exc) if isinstance(exc, Zarr3Error) else f"{type(exc).__name__}: {exc}"


def is_reserved(path: str) -> bool:
    return any(part.startswith("__") for part in path.split("/"))


def assign_keys(keys: Iterable[str], node_paths: Iterable[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Non-metadata keys by the nearest node above them, and the keys below no node at all."""
    paths = set(node_paths)
    owned: dict[str, list[str]] = defaultdict(list)
    stray = []
    for key in keys:
        parts = key.split("/")
        ancestors = ("/".join(parts[:i]) for i in range(len(parts) - 1, -1, -1))
        owner = next((a for a in ancestors if a in paths), None)
        if owner is None:
            stray.append(key)
        else:
            owned[owner].append(key)
    return owned, stray


def check_chunk_keys(array: Array, keys: list[str], problems: list[Problem]) -> list[str]:
    """The keys of ``array`` that are chunk keys inside its grid; the rest become problems."""
    grid = array.metadata.chunk_grid.grid_shape(array.shape)
    prefix = f"{array.path}/" if array.path else ""
    found = []
    for key in keys:
        try:
            coords = array.metadata.chunk_key_encoding.decode_chunk_key(key[len(prefix) :], array.ndim)
        except InvalidKeyError as exc:
            problems.append(Problem(key, "keys", f"stray key inside array {array.name!r}: {exc}", "warning"))
            continue
        if any(c >= n for c, n in zip(coords, grid)):
            message = (
                f"chunk {coords} lies outside the chunk grid {grid} of array {array.name!r} "
                f"(shape {array.shape}): left over from a larger shape, never read"
            )
            problems.append(Problem(key, "keys", message))
        else:
            found.append(key)
    return found


def check_chunks(
    store: Store,
    nodes: dict[str, Any],
    chunk_keys: dict[str, list[str]],
    progress: Callable[[int], Progress] | None,
) -> list[Problem]:
    problems: list[Problem] = []
    bar = progress(sum(len(v) for v in chunk_keys.values())) if progress else None
    for path, found in chunk_keys.items():
        array: Array = nodes[path]
        chunk_store = apply_storage_transformers(store, array.metadata.storage_transformers)
        for start in range(0, len(found), FETCH_BATCH):
            batch = found[start : start + FETCH_BATCH]
            for key, data in zip(
                batch, plain_values(chunk_store.get_many_versioned([(k, None) for k in batch]))
            ):
                if data is not None:
                    messages = check_chunk(array.codecs, data, _spec_of(array, key))
                    problems += [Problem(key, "chunks", message) for message in messages]
            if bar is not None:
                bar.update(len(batch))
    if bar is not None:
        bar.close()
    return problems


def _spec_of(array: Array, key: str) -> ChunkSpec:
    """The spec of the stored chunk at ``key`` (its declared shape, on a rectilinear grid)."""
    if array.metadata.chunk_grid.is_regular:
        return array.chunk_spec
    prefix = f"{array.path}/" if array.path else ""
    return array.chunk_spec_at(
        array.metadata.chunk_key_encoding.decode_chunk_key(key[len(prefix) :], array.ndim)
    )


def check_chunk(chain: CodecChain, data: Buffer, spec: ChunkSpec) -> list[str]:
    """What is wrong with one stored chunk (a shard: its index and every inner chunk); ``[]`` if nothing."""
    try:
        if not isinstance(chain.array_bytes, ShardingCodec):
            decoded = chain.decode(data, spec)
            if decoded.shape != spec.shape:
                return [f"decodes to shape {decoded.shape}, expected {spec.shape}"]
            return []
        for array_codec in chain.array_array:
            spec = array_codec.resolve_spec(spec)
        for bytes_codec in reversed(chain.bytes_bytes):
            data = bytes_codec.decode(data, spec)
        return _check_shard(chain.array_bytes, data, spec)
    except Exception as exc:  # a validator reports whatever decoding raises, it never stops at it
        return [describe_error(exc)]


def _check_shard(sharding: ShardingCodec, data: Buffer, spec: ChunkSpec) -> list[str]:
    index = sharding.decode_index(data, spec)  # size, checksum, bounds, paired empty markers
    index_size = sharding.index_size(spec)
    body = (index_size, len(data)) if sharding.index_location == "start" else (0, len(data) - index_size)
    inner_spec = spec.with_shape(sharding.chunk_shape)
    messages: list[str] = []
    previous: tuple[tuple[int, ...], int] | None = None
    located = sorted(
        (rng, coords)
        for coords in np.ndindex(*index.chunks_per_shard)
        if (rng := index.chunk_range(coords)) is not None
    )
    for (start, end), coords in located:
        where = f"inner chunk {coords} (bytes {start}-{end})"
        if start < body[0] or end > body[1]:
            messages.append(f"{where} overlaps the shard index")
        if previous is not None and start < previous[1]:
            messages.append(f"{where} overlaps inner chunk {previous[0]}")
        previous = (coords, max(end, previous[1] if previous else 0))
        messages += [
            f"{where}: {m}" for m in check_chunk(sharding.codecs, memoryview(data)[start:end], inner_spec)
        ]
    return messages
