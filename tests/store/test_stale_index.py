"""A checksum that fails under a cached shard index means "stale" first: the reader drops its cached indexes and
reads once more, and only a failure then is corruption. Servers that keep one ETag per key across rewrites
(obstore and fsspec), and a same-second same-size local rewrite a coarse clock cannot see."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import clear_store_cache
from zarr3_backend.codecs.read_plan import StaleIndexError
from zarr3_backend.core.buffers import Versioned
from zarr3_backend.store.local import LocalStore

CHUNK = 256
FLAT = np.ones(CHUNK)  # compresses to a few bytes (and is stored: not the fill value)
NOISY = np.random.default_rng(0).random(CHUNK)  # does not compress


@pytest.fixture
def s3() -> Any:
    pytest.importorskip("obstore")
    from tests.servers.latency_s3 import latency_s3_server

    with latency_s3_server() as server:
        server.etag_per_key = True
        yield server


def swap_and_read(writer: zarr3_backend.Array, reader: zarr3_backend.Array, rewrite=None) -> None:
    """Fill the reader's index cache, rewrite the shard with its inner chunks swapped (same size), read again."""
    writer[:] = np.concatenate([FLAT, NOISY])
    np.testing.assert_array_equal(reader[:], np.concatenate([FLAT, NOISY]))  # caches the shard's index
    (rewrite or writer.__setitem__)(slice(None), np.concatenate([NOISY, FLAT]))
    np.testing.assert_array_equal(reader[:CHUNK], NOISY)  # located by the stale index: fails its crc32c
    np.testing.assert_array_equal(reader[CHUNK:], FLAT)
    np.testing.assert_array_equal(reader[:], np.concatenate([NOISY, FLAT]))


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_a_rewrite_behind_a_per_key_etag_is_read_after_one_retry(s3: Any, backend: str) -> None:
    url = s3.create_bucket(f"stale-{backend}") + "/a"
    options = {**s3.storage_options, "backend": backend, "skip_instance_cache": True}
    writer = zarr3_backend.create_array(
        url, shape=(2 * CHUNK,), dtype="float64", chunks=(CHUNK,), shards=(2 * CHUNK,),
        storage_options=s3.storage_options,
    )  # fmt: skip
    clear_store_cache()
    reader = zarr3_backend.open_array(url, storage_options=options)
    swap_and_read(writer, reader)


class CoarseClock(LocalStore):
    """Local files seen through one-second timestamps and sizes only, as some file systems and tools keep them."""

    def get_many_versioned(self, requests: Any) -> list[Versioned]:
        found = super().get_many_versioned(requests)
        return [
            Versioned(v.value, None if v.generation is None else (v.generation[2], v.generation[3] // 10**9))
            for v in found
        ]


def rewrite_in_the_same_second(writer: zarr3_backend.Array, shard: Path):
    def rewrite(selection: slice, values: np.ndarray) -> None:
        before = shard.stat()
        writer[selection] = values
        os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))  # within the same second

    return rewrite


def test_a_same_second_same_size_local_rewrite_is_read_after_one_retry(tmp_path: Path) -> None:
    location = tmp_path / "a.zarr"
    writer = zarr3_backend.create_array(
        str(location), shape=(2 * CHUNK,), dtype="float64", chunks=(CHUNK,), shards=(2 * CHUNK,)
    )
    reader = zarr3_backend.open_array(CoarseClock(location))
    writer[:] = 0.0
    swap_and_read(writer, reader, rewrite_in_the_same_second(writer, location / "c" / "0"))


def test_a_corrupt_chunk_under_a_cached_index_still_raises_a_checksum_error(tmp_path: Path) -> None:
    location = tmp_path / "a.zarr"
    writer = zarr3_backend.create_array(
        str(location), shape=(2 * CHUNK,), dtype="float64", chunks=(CHUNK,), shards=(2 * CHUNK,)
    )
    writer[:] = np.concatenate([NOISY, NOISY])
    reader = zarr3_backend.open_array(CoarseClock(location))
    np.testing.assert_array_equal(reader[:], np.concatenate([NOISY, NOISY]))  # caches the index
    shard = location / "c" / "0"
    before = shard.stat()
    raw = bytearray(shard.read_bytes())
    raw[10] ^= 0xFF  # inside the first inner chunk
    shard.write_bytes(bytes(raw))
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(zarr3_backend.ChecksumError, match=r"c/0 inner chunk \(0,\)") as raised:
        reader[:CHUNK]
    assert not isinstance(raised.value, StaleIndexError)  # read again from a fresh index: corrupt, not stale
    assert "cached" not in str(raised.value)
