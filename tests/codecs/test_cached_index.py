"""A cached shard index never locates another version's rows: under a generation that does not prove the shard
unchanged (an ETag a server keeps across rewrites, a file's size and second), the index is read again in the same
round as the chunks and compared. Inner chunks without a checksum (``compressors=[]``), so nothing fails to decode."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import clear_store_cache
from zarr3_backend.core.buffers import UniqueGeneration, Versioned
from zarr3_backend.store.base import Request
from zarr3_backend.store.local import LocalStore

BEFORE = [11, 0, 22, 0]  # inner chunks 0 and 2 stored (fill value 0)
AFTER = [11, 22, 0, 0]  # chunks 0 and 1 stored: the same size, another layout


def create(location: Any, **options: Any) -> zarr3_backend.Array:
    return zarr3_backend.create_array(
        location, shape=(4,), dtype="int64", chunks=(1,), shards=(4,), fill_value=0, compressors=[], **options
    )


@pytest.fixture(params=["per key", "mtime and size"])
def s3(request: pytest.FixtureRequest) -> Any:
    pytest.importorskip("obstore")
    from tests.servers.latency_s3 import latency_s3_server

    with latency_s3_server() as server:
        if request.param == "per key":
            server.etag_per_key = True
        else:
            server.mtime_size_etags = 1_790_000_000
        yield server


def rewrite_and_read(writer: zarr3_backend.Array, reader: zarr3_backend.Array, rewrite: Any = None) -> None:
    """Cache the index, rewrite the shard to the same size with another layout, read it whole, then in part."""
    rewrite = rewrite or writer.__setitem__
    writer[:] = BEFORE
    assert reader[:].tolist() == BEFORE  # caches the shard's index
    rewrite(slice(None), np.array(AFTER))
    assert reader[:].tolist() == AFTER  # not [11, 0, 22, 0]: the cached index is not trusted
    rewrite(slice(None), np.array(BEFORE))
    assert reader[1:3].tolist() == [0, 22]  # located by the cached index: read again, compared, read again
    assert reader[2:].tolist() == [22, 0]


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_a_same_size_rewrite_behind_an_unchanged_etag_is_read_without_checksums(
    s3: Any, backend: str
) -> None:
    url = s3.create_bucket(f"cached-{backend}") + "/a"
    writer = create(url, storage_options=s3.storage_options)
    clear_store_cache()
    reader = zarr3_backend.open_array(url, storage_options={**s3.storage_options, "backend": backend})
    rewrite_and_read(writer, reader)


def test_a_cached_index_is_checked_in_the_same_round_as_the_chunks(s3: Any) -> None:
    url = s3.create_bucket("rounds") + "/a"
    writer = create(url, storage_options=s3.storage_options)
    writer[:] = BEFORE
    clear_store_cache()
    reader = zarr3_backend.open_array(url, storage_options=s3.storage_options)
    assert reader[:].tolist() == BEFORE
    s3.latency = 0.05  # requests sent one after the other would not overlap
    s3.reset_stats()
    assert reader[2:3].tolist() == [22]
    stats = s3.stats.snapshot()
    assert (stats["requests"], stats["rounds"]) == (2, 1)  # the chunk and the index, side by side


class CoarseClock(LocalStore):
    """Local files seen through one-second timestamps and sizes only, as some file systems and tools keep them."""

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        found = super().get_many_versioned(requests)
        return [
            Versioned(v.value, None if v.generation is None else (v.generation[2], v.generation[3] // 10**9))
            for v in found
        ]


def test_a_same_second_same_size_local_rewrite_is_read_without_checksums(tmp_path: Path) -> None:
    location = tmp_path / "a.zarr"
    writer = create(str(location))
    shard = location / "c" / "0"

    def rewrite(selection: slice, values: np.ndarray) -> None:
        before = shard.stat()
        writer[selection] = values
        os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))  # within the same second

    writer[:] = 0
    rewrite_and_read(writer, zarr3_backend.open_array(CoarseClock(location)), rewrite)


class VersionIds(LocalStore):
    """Local files whose generations are unique per write, as object version ids are (counted reads)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.requests: list[Request] = []

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        self.requests.extend(requests)
        found = super().get_many_versioned(requests)
        return [
            Versioned(v.value, None if v.generation is None else UniqueGeneration(v.generation))
            for v in found
        ]


def test_an_index_under_a_version_id_is_trusted_without_reading_it_again(tmp_path: Path) -> None:
    writer = create(str(tmp_path / "a.zarr"))
    writer[:] = BEFORE
    store = VersionIds(tmp_path / "a.zarr")
    reader = zarr3_backend.open_array(store)
    assert reader[:].tolist() == BEFORE
    store.requests.clear()
    assert reader[2:3].tolist() == [22]
    assert [key for key, _ in store.requests] == ["c/0"]  # the chunk alone


def test_a_cached_index_read_again_unchanged_is_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index read along with the chunks it locates holds the cached index's bytes: it is taken as is, not
    decoded and checked again; different bytes (a rewrite) are parsed."""
    writer = create(str(tmp_path / "a.zarr"))
    writer[:] = BEFORE
    reader = zarr3_backend.open_array(str(tmp_path / "a.zarr"))
    assert reader[:].tolist() == BEFORE  # caches the index
    parsed: list[str] = []
    codec = type(reader.codecs.array_bytes)
    parse = codec._parse_index
    monkeypatch.setattr(
        codec, "_parse_index", lambda self, raw, *args: (parsed.append(args[-1]), parse(self, raw, *args))[1]
    )
    assert reader[2:3].tolist() == [22] and reader[0:1].tolist() == [11]
    assert parsed == []
    writer[:] = AFTER
    assert reader[1:2].tolist() == [22]
    assert parsed == ["c/0"]
