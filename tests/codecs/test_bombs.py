"""Bounded memory on hostile chunks: decompression bombs fail fast with a CodecError naming the key.

Each test stores a small hostile value under a chunk key, reads it back and
measures the peak of Python-visible allocations (``tracemalloc`` sees numpy,
bytes and bytearray buffers, so also the buffers numcodecs allocates). The
peak must stay within a small multiple of the chunk's decoded size plus the
stored bytes themselves; before the bounds, each of these reads allocated
0.5-2 GiB.
"""

from __future__ import annotations

import bz2
import lzma
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numcodecs.blosc
import numcodecs.zstd
import numpy as np
import pytest
from crc32c import crc32c

import zarr3_backend as z3
from zarr3_backend.codecs import codec_from_json
from zarr3_backend.errors import CodecError
from zarr3_backend.store import LocalStore

CHUNK = (64, 64)  # float64: 32 KiB decoded
CHUNK_BYTES = 64 * 64 * 8


def gzip_bomb(size: int = 1 << 20) -> bytes:
    """About ``size`` bytes of concatenated gzip members, each inflating 1 MiB of zeros (~1000x)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    member = deflate.compress(bytes(1 << 20)) + deflate.flush()
    return member * (size // len(member))


def zstd_frame_without_size(decoded: int = 16 << 20) -> bytes:
    """A zstd frame of ``decoded`` zeros whose header records no content size (as streaming writers make)."""
    frame = numcodecs.zstd.compress(bytes(decoded), 19, False)
    descriptor = frame[4]
    fcs_bytes = {0: 1 if descriptor & 0x20 else 0, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
    header = 5 + (0 if descriptor & 0x20 else 1) + fcs_bytes
    window = (20 - 10) << 3  # 1 MiB window
    return frame[:4] + bytes([descriptor & 0x1F & ~0x20, window]) + frame[header:]


def zstd_bomb(size: int = 32 << 10) -> bytes:
    """About ``size`` bytes of zstd frames without content size, inflating to ~1 GiB."""
    frame = zstd_frame_without_size()
    return frame * (size // len(frame))


def zstd_claiming(decoded: int = 16 << 20) -> bytes:
    """A real zstd frame whose header records ``decoded`` bytes."""
    return numcodecs.zstd.compress(bytes(decoded), 19, False)


def blosc_claiming(decoded: int = numcodecs.blosc.MAX_BUFFERSIZE) -> bytes:
    """A blosc value whose 16-byte header claims ``decoded`` bytes (about 2 GiB); the rest is garbage."""
    body = bytes(range(256)) * 4
    total = 16 + len(body)
    header = bytes([2, 1, 0x01, 8]) + decoded.to_bytes(4, "little") + (1 << 16).to_bytes(4, "little")
    return header + total.to_bytes(4, "little") + body


def peak_allocation(read: Callable[[], Any]) -> int:
    """Peak bytes traced while ``read()`` runs (it must raise CodecError)."""
    tracemalloc.start()
    try:
        with pytest.raises(CodecError) as info:
            read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    peak_allocation.message = str(info.value)  # type: ignore[attr-defined]
    return peak


def assert_bounded(peak: int, stored: int) -> None:
    limit = 2 * stored + 8 * CHUNK_BYTES + (512 << 10)
    assert peak < limit, f"peak allocation {peak >> 10} KiB exceeds {limit >> 10} KiB"


def _array(tmp_path: Path, codecs: list[Any], **kwargs: Any) -> z3.Array:
    array = z3.create_array(
        tmp_path, "a", shape=(128, 64), dtype="float64", chunks=CHUNK, codecs=codecs, **kwargs
    )
    array[:] = 1.0
    return array


BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
TRANSPOSE = {"name": "transpose", "configuration": {"order": [1, 0]}}
BLOSC = {"name": "blosc", "configuration": {"typesize": 8, "cname": "lz4", "clevel": 5, "shuffle": "shuffle"}}
CASES = {
    "gzip-1MiB": ([BYTES, {"name": "gzip", "configuration": {"level": 5}}], gzip_bomb),
    "zstd-32KiB-no-content-size": ([BYTES, "zstd"], zstd_bomb),
    "zstd-header-16MiB": ([BYTES, "zstd"], zstd_claiming),
    "blosc-header-2GiB": ([BYTES, BLOSC], blosc_claiming),
    "blosc-header-2GiB-transposed": ([TRANSPOSE, BYTES, BLOSC], blosc_claiming),
    "gzip-transposed": ([TRANSPOSE, BYTES, {"name": "gzip", "configuration": {"level": 5}}], gzip_bomb),
    "zstd-then-crc32c": ([BYTES, "zstd", "crc32c"], lambda: _with_crc(zstd_bomb())),
    "numcodecs-zstd": ([BYTES, {"name": "numcodecs.zstd", "configuration": {"level": 1}}], zstd_bomb),
    "numcodecs-gzip": ([BYTES, {"name": "numcodecs.gzip", "configuration": {"level": 1}}], gzip_bomb),
    "numcodecs-bz2": (
        [BYTES, {"name": "numcodecs.bz2", "configuration": {"level": 1}}],
        lambda: bz2.compress(bytes(1 << 20)) * 1024,
    ),
    "numcodecs-lzma": (
        [BYTES, {"name": "numcodecs.lzma", "configuration": {}}],
        lambda: lzma.compress(bytes(4 << 20), preset=0),
    ),
}


def _with_crc(data: bytes) -> bytes:
    return data + crc32c(data).to_bytes(4, "little")


@pytest.mark.parametrize("case", sorted(CASES))
def test_bomb_chunk_fails_within_bounded_memory(tmp_path: Path, case: str) -> None:
    codecs, make_bomb = CASES[case]
    array = _array(tmp_path, codecs)
    bomb = make_bomb()
    LocalStore(tmp_path).set("a/c/0/0", bomb)
    peak = peak_allocation(
        lambda: array[:64]
    )  # only the hostile chunk (a valid lzma chunk alone holds 8 MiB)
    assert "a/c/0/0" in peak_allocation.message and str(CHUNK_BYTES) in peak_allocation.message  # type: ignore[attr-defined]
    assert_bounded(peak, len(bomb))
    np.testing.assert_array_equal(array[64:], 1.0)  # the other chunk still reads


def _shard_with(inner: bytes) -> bytes:
    """A shard of two (64, 64) inner chunks: ``inner`` first, the second empty; index at the end with crc32c."""
    empty = 2**64 - 1
    index = np.array([[[0, len(inner)]], [[empty, empty]]], dtype="<u8").tobytes()
    return inner + index + crc32c(index).to_bytes(4, "little")


@pytest.mark.parametrize("case", ["gzip-1MiB", "zstd-32KiB-no-content-size", "blosc-header-2GiB"])
@pytest.mark.parametrize("selection", [np.s_[:], np.s_[:64]], ids=["whole-shard", "partial"])
def test_bomb_as_inner_chunk_of_a_shard(tmp_path: Path, case: str, selection: Any) -> None:
    inner_codecs, make_bomb = CASES[case]
    array = z3.create_array(
        tmp_path,
        "a",
        shape=(256, 64),
        dtype="float64",
        chunks=CHUNK,
        shards=(128, 64),
        serializer=inner_codecs[0],
        compressors=inner_codecs[1:],
    )
    array[:] = 1.0
    shard = _shard_with(make_bomb())
    LocalStore(tmp_path).set("a/c/0/0", shard)
    peak = peak_allocation(lambda: array[selection])
    assert "a/c/0/0 inner chunk (0, 0)" in peak_allocation.message  # type: ignore[attr-defined]
    assert_bounded(peak, len(shard))
    np.testing.assert_array_equal(array[128:], 1.0)


@pytest.mark.parametrize(
    "compressor",
    [
        "gzip",
        "zstd",
        "blosc",
        "numcodecs.zlib",
        "numcodecs.bz2",
        "numcodecs.lzma",
        "numcodecs.lz4",
        "numcodecs.zstd",
        "numcodecs.blosc",
    ],
)
def test_valid_chunks_decode_under_the_bounds(tmp_path: Path, compressor: str) -> None:
    array = _array(tmp_path, [TRANSPOSE, BYTES, compressor, "crc32c"])
    data = np.random.default_rng(1).standard_normal((128, 64))
    array[:] = data
    np.testing.assert_array_equal(z3.open_array(tmp_path, "a")[:], data)


def test_valid_chunks_without_content_size_still_decode(tmp_path: Path) -> None:
    """zstd frames from streaming writers (no recorded size) decode when they fit the chunk."""
    array = _array(tmp_path, [BYTES, "zstd"])
    frame = zstd_frame_without_size(CHUNK_BYTES)
    LocalStore(tmp_path).set("a/c/0/0", frame)
    np.testing.assert_array_equal(array[:64], 0.0)


def test_chained_compressors_get_a_bound_too(tmp_path: Path) -> None:
    """zstd after gzip: the gzip stage may produce at most zstd's worst case for one chunk."""
    array = _array(tmp_path, [BYTES, "zstd", {"name": "gzip", "configuration": {"level": 1}}])
    np.testing.assert_array_equal(array[:], 1.0)
    LocalStore(tmp_path).set("a/c/0/0", gzip_bomb())
    assert_bounded(peak_allocation(lambda: array[:64]), 1 << 20)


def test_bounds_follow_the_chunk_spec() -> None:
    from zarr3_backend.codecs.base import ChunkSpec
    from zarr3_backend.codecs.chain import CodecChain
    from zarr3_backend.core.dtypes import parse_data_type

    spec = ChunkSpec(CHUNK, parse_data_type("float64"), np.float64(0))
    chain = CodecChain.from_json([BYTES, "zstd", "crc32c"])
    assert chain._limits(spec)[0] == CHUNK_BYTES
    assert chain._limits(spec)[1] > CHUNK_BYTES
    assert CodecChain.from_json([{"name": "vlen-utf8"}, "zstd"])._limits(
        ChunkSpec((4,), parse_data_type("string"), "")
    ) == [None]
    gzip = codec_from_json({"name": "gzip", "configuration": {"level": 9}})
    payload = np.random.default_rng(0).bytes(100_000)  # incompressible: the worst case
    assert len(gzip.encode(payload, spec)) <= gzip.max_encoded_size(len(payload), spec)
    zstd = codec_from_json("zstd")
    assert len(zstd.encode(payload, spec)) <= zstd.max_encoded_size(len(payload), spec)


def test_a_chunk_spec_counts_the_elements_of_an_absurd_shape_exactly():
    from zarr3_backend.codecs.spec import ChunkSpec
    from zarr3_backend.core.dtypes import parse_data_type

    spec = ChunkSpec((2**40, 2**40, 16), parse_data_type("uint8"), np.uint8(0))
    assert (
        spec.size == 2**84
    )  # as int64 the product wraps to 0, and a bound of 0 bytes would be no bound at all
