"""The climate-like workload layout and the floor: no zarr logic, just bytes and numcodecs.

The floor reads the stored shard files and decodes every inner chunk with
numcodecs Blosc on 2 threads into one preallocated output (and, for writes,
encodes and writes shards the same way). Every benchmark prints it in the
same run, so ratios against it are comparable across noisy machines.
"""

from __future__ import annotations

import collections
import mmap
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numcodecs import Blosc

FULL_SHAPE = (730, 361, 720)
QUICK_SHAPE = (146, 361, 720)
SHARDS = (73, 364, 720)
CHUNKS = (73, 91, 180)
POINT = (slice(None), 180, 360)
BLOSC_JSON = {
    "name": "blosc",
    "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle", "typesize": 4, "blocksize": 0},
}


@dataclass(frozen=True)
class Layout:
    """Shape, shard and inner-chunk grid of the benchmark array."""

    shape: tuple[int, ...]
    shards: tuple[int, ...] = SHARDS
    chunks: tuple[int, ...] = CHUNKS

    @property
    def per_shard(self) -> tuple[int, ...]:
        return tuple(s // c for s, c in zip(self.shards, self.chunks))

    @property
    def n_inner(self) -> int:
        return int(np.prod(self.per_shard))

    def shard_coords(self) -> list[tuple[int, ...]]:
        grid = tuple(-(-n // s) for n, s in zip(self.shape, self.shards))
        return list(np.ndindex(grid))

    def shard_path(self, root: Path, coords: tuple[int, ...]) -> Path:
        return root.joinpath("c", *map(str, coords))

    def chunk_region(self, shard: tuple[int, ...], inner: tuple[int, ...]) -> tuple[slice, ...]:
        """The slice of the array covered by an inner chunk (clipped at the array edge)."""
        starts = [s * sh + i * c for s, sh, i, c in zip(shard, self.shards, inner, self.chunks)]
        return tuple(slice(a, min(a + c, n)) for a, c, n in zip(starts, self.chunks, self.shape))


# ---------------------------------------------------------------- the floor

_POOL = ThreadPoolExecutor(2, thread_name_prefix="floor")
_SCRATCH = threading.local()
_MISSING = np.uint64(2**64 - 1)


def _scratch(shape: tuple[int, ...]) -> np.ndarray:
    """A per-thread reusable decode buffer (no allocation churn)."""
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.shape != shape:
        buf = _SCRATCH.buf = np.empty(shape, dtype="<f4")
    return buf


def parse_shard_index(tail: bytes, layout: Layout) -> np.ndarray:
    """(offset, nbytes) pairs per inner chunk from the index at the end; the crc32c is ignored."""
    n = layout.n_inner
    return np.frombuffer(tail, dtype="<u8", count=2 * n, offset=len(tail) - 16 * n - 4).reshape(
        layout.per_shard + (2,)
    )


def _decode_into(chunk: memoryview, out: np.ndarray, region: tuple[slice, ...]) -> None:
    buf = _scratch(CHUNKS)
    Blosc().decode(chunk, out=buf)
    out[region] = buf[tuple(slice(0, r.stop - r.start) for r in region)]


def empty_output(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 output on an anonymous memory map: plain pages, faulted in by the decoding threads.

    ``np.empty`` asks for transparent huge pages on big arrays; with the
    kernel's THP ``defrag=madvise`` setting that stalls a 760 MB allocation
    for up to seconds now and then (seen here: 0.13 s usually, 1.6 s at times,
    vs a steady 0.38 s on plain pages), which made the floor erratic.
    """
    return np.frombuffer(mmap.mmap(-1, int(np.prod(shape)) * 4), dtype="<f4").reshape(shape)


def floor_read(root: Path, layout: Layout) -> np.ndarray:
    """Read shard files in order while 2 threads decode their inner chunks into one output.

    At most two shards' bytes are held at a time.
    """
    out = empty_output(layout.shape)
    pending: collections.deque = collections.deque()
    for shard in layout.shard_coords():
        data = layout.shard_path(root, shard).read_bytes()
        view = memoryview(data)
        for inner, (offset, nbytes) in _present(parse_shard_index(data, layout)):
            region = layout.chunk_region(shard, inner)
            pending.append(_POOL.submit(_decode_into, view[offset : offset + nbytes], out, region))
        while len(pending) > layout.n_inner:
            pending.popleft().result()
    for future in pending:
        future.result()
    return out


def _present(index: np.ndarray):
    for inner in np.ndindex(index.shape[:-1]):
        offset, nbytes = index[inner]
        if offset != _MISSING:
            yield inner, (int(offset), int(nbytes))


def _point_shard(root: Path, layout: Layout, shard, out: np.ndarray, index: np.ndarray | None) -> None:
    inner = (0, POINT[1] // CHUNKS[1] % layout.per_shard[1], POINT[2] // CHUNKS[2] % layout.per_shard[2])
    with open(layout.shard_path(root, shard), "rb") as f:
        if index is None:
            f.seek(-(16 * layout.n_inner + 4), 2)
            index = parse_shard_index(f.read(), layout)
        offset, nbytes = (int(v) for v in index[inner])
        f.seek(offset)
        chunk = f.read(nbytes)
    region = layout.chunk_region(shard, inner)
    buf = _scratch(CHUNKS)
    Blosc().decode(chunk, out=buf)
    out[region[0]] = buf[
        : region[0].stop - region[0].start, POINT[1] - region[1].start, POINT[2] - region[2].start
    ]


def point_shards(layout: Layout) -> list[tuple[int, ...]]:
    """Shards holding the point series (all time shards at one lat/lon)."""
    return [
        s for s in layout.shard_coords() if s[1] == POINT[1] // SHARDS[1] and s[2] == POINT[2] // SHARDS[2]
    ]


def floor_point(root: Path, layout: Layout, indexes: dict | None = None) -> np.ndarray:
    """Point series: per shard read the index (unless given) and one inner chunk, decode on 2 threads."""
    out = np.empty(layout.shape[0], dtype="<f4")
    shards = point_shards(layout)
    futures = [_POOL.submit(_point_shard, root, layout, s, out, (indexes or {}).get(s)) for s in shards]
    for future in futures:
        future.result()
    return out


def read_indexes(root: Path, layout: Layout) -> dict:
    """Every shard index of the point series, parsed once (the floor's 'warm' cache)."""
    indexes = {}
    for shard in point_shards(layout):
        with open(layout.shard_path(root, shard), "rb") as f:
            f.seek(-(16 * layout.n_inner + 4), 2)
            indexes[shard] = parse_shard_index(f.read(), layout)
    return indexes


def shard_slices(layout: Layout, shard: tuple[int, ...]) -> tuple[slice, ...]:
    """The slice of the array a shard covers (clipped at the array edge)."""
    return tuple(
        slice(s * n, min((s + 1) * n, size)) for s, n, size in zip(shard, layout.shards, layout.shape)
    )


def encode_shard_block(root: Path, layout: Layout, block: np.ndarray, shard: tuple[int, ...]) -> None:
    """Encode the inner chunks of one shard from ``block`` (the shard's part of the array), write its file."""
    import crc32c

    codec = Blosc(cname="zstd", clevel=3, shuffle=Blosc.SHUFFLE, blocksize=0)
    origin = [s.start for s in shard_slices(layout, shard)]
    pieces, index, offset = [], np.empty(layout.per_shard + (2,), dtype="<u8"), 0
    for inner in np.ndindex(layout.per_shard):
        region = layout.chunk_region(shard, inner)
        chunk = _scratch(CHUNKS)
        valid = tuple(slice(0, r.stop - r.start) for r in region)
        if chunk[valid].shape != chunk.shape:
            chunk[...] = 0
        chunk[valid] = block[tuple(slice(r.start - o, r.stop - o) for r, o in zip(region, origin))]
        encoded = codec.encode(chunk)
        index[inner] = offset, len(encoded)
        pieces.append(encoded)
        offset += len(encoded)
    raw = index.tobytes()
    path = layout.shard_path(root, shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.writelines(pieces + [raw, crc32c.crc32c(raw).to_bytes(4, "little")])


def _encode_shard(root: Path, layout: Layout, data: np.ndarray, shard) -> None:
    encode_shard_block(root, layout, data[shard_slices(layout, shard)], shard)


def floor_write(root: Path, layout: Layout, data: np.ndarray, metadata: bytes) -> None:
    """Encode all inner chunks (2 threads, one shard per task), assemble shards, write files."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "zarr.json").write_bytes(metadata)
    futures = [_POOL.submit(_encode_shard, root, layout, data, s) for s in layout.shard_coords()]
    for future in futures:
        future.result()
