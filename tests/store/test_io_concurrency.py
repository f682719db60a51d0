"""Fetching decoupled from decoding: fetches in flight, the bytes budget, overlap, errors, and requests in flight on S3."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.runtime import fetch_and_work, io_concurrency
from zarr3_backend.store import FsspecStore
from zarr3_backend.store.fsspec_s3 import with_connection_pool
from zarr3_backend.testing.stores import CountingStore


class Recorder:
    """Fetches that sleep, and a log of what was running when."""

    def __init__(self, nbytes: int = 10, delay: float = 0.02, staggered: bool = False) -> None:
        self.staggered = (
            staggered  # fetches end one by one, never at once (the budget is counted as each ends)
        )
        self.lock = threading.Lock()
        self.fetching = self.max_fetching = self.held = 0
        self.nbytes, self.delay = nbytes, delay
        self.held_at_start: list[int] = []
        self.events: list[str] = []

    def fetch(self, group: int) -> tuple[list[int], int]:
        with self.lock:
            self.fetching += 1
            self.max_fetching = max(self.max_fetching, self.fetching)
            self.held_at_start.append(self.held)
            self.events.append("fetch-start")
        time.sleep(self.delay * (1 + group % 8 if self.staggered else 1))
        with self.lock:
            self.fetching -= 1
            self.held += self.nbytes
            self.events.append("fetch-end")
        return [group], self.nbytes

    def work(self, item: int) -> None:
        with self.lock:
            self.events.append("work")
        time.sleep(self.delay)
        with self.lock:
            self.held -= self.nbytes


def test_the_limit_bounds_fetches_in_flight_whatever_the_cpu_threads():
    recorder = Recorder()
    fetch_and_work(recorder.fetch, list(range(24)), recorder.work, limit=6)
    assert recorder.max_fetching == 6
    assert recorder.events.count("work") == 24


def test_no_fetch_starts_while_the_budget_is_held():
    recorder = Recorder(nbytes=100, staggered=True)
    fetch_and_work(recorder.fetch, list(range(16)), recorder.work, limit=8, max_bytes=250)
    # The recorder counts a fetch's bytes when its body ends, the stream when its result is settled an instant
    # later; a fetch started from another fetch's callback in that instant may see one group more.
    assert max(recorder.held_at_start) < 250 + recorder.nbytes
    assert recorder.events.count("work") == 16


def test_decoding_starts_before_fetching_ends():
    recorder = Recorder()
    fetch_and_work(recorder.fetch, list(range(12)), recorder.work, limit=2)
    last_fetch_end = len(recorder.events) - 1 - recorder.events[::-1].index("fetch-end")
    assert recorder.events.index("work") < last_fetch_end


@pytest.mark.parametrize("where", ["fetch", "work"])
def test_first_error_propagates_and_stops_fetching(where):
    started = []

    def fetch(group: int) -> tuple[list[int], int]:
        started.append(group)
        if where == "fetch" and group == 1:
            raise ValueError("fetch failed")
        time.sleep(0.01)
        return [group], 1

    def work(item: int) -> None:
        if where == "work" and item == 1:
            raise ValueError("work failed")

    with pytest.raises(ValueError, match=f"{where} failed"):
        fetch_and_work(fetch, list(range(200)), work, limit=2)
    assert len(started) < 200


def test_io_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("ZARR3_BACKEND_IO_CONCURRENCY", "7")
    assert io_concurrency() == 7
    assert with_connection_pool("s3", {})["config_kwargs"] == {"max_pool_connections": 7}
    assert with_connection_pool("memory", {}) == {}


@pytest.fixture
def s3(settled_heap):
    pytest.importorskip("s3fs")
    from tests.servers.latency_s3 import latency_s3_server

    with latency_s3_server() as server:
        yield server


def _write(s3, name: str, shards: int, shard_shape: tuple[int, int]) -> tuple[str, np.ndarray]:
    url = s3.create_bucket(name) + "/a"
    data = np.arange(shards * shard_shape[0] * shard_shape[1], dtype="float32").reshape(
        shards * shard_shape[0], -1
    )
    a = zarr3_backend.create_array(url, shape=data.shape, dtype="float32", chunks=(shard_shape[0], shard_shape[1] // 2),
                                   shards=shard_shape, storage_options=s3.storage_options)  # fmt: skip
    a[...] = data
    return url, data


def _full_read(s3, url: str) -> np.ndarray:
    options = {**s3.storage_options, "skip_instance_cache": True}
    array = zarr3_backend.open_array(url, storage_options=options)
    s3.latency = 0.25  # well above the client's own stagger between requests sent together
    gc.collect()  # earlier tests' file systems, collected mid-read, close their clients on the loop and stagger sends
    s3.reset_stats()
    out = array[...]
    s3.latency = 0.0
    return out


def test_large_shards_are_all_fetched_at_once(s3):
    url, data = _write(s3, "large", 12, (8, 1 << 18))  # 8 MiB per shard: one shard per fetch group
    np.testing.assert_array_equal(_full_read(s3, url), data)
    assert s3.stats.requests == 12 and s3.stats.max_in_flight == 12 and s3.stats.rounds == 1


@pytest.mark.parametrize("in_flight", [64, 32, 8])
def test_few_shards_above_16_mib_are_fetched_as_side_by_side_ranges(s3, monkeypatch, in_flight):
    url = s3.create_bucket("split") + "/a"
    data = np.random.default_rng(0).random(
        (16, 1 << 20), dtype="float32"
    )  # 2 shards of 32 MiB, barely compressible
    a = zarr3_backend.create_array(url, shape=data.shape, dtype="float32", chunks=(8, 1 << 17), shards=(8, 1 << 20),
                                   storage_options=s3.storage_options)  # fmt: skip
    a[...] = data
    monkeypatch.setenv("ZARR3_BACKEND_IO_CONCURRENCY", str(in_flight))
    np.testing.assert_array_equal(_full_read(s3, url), data)
    if (
        in_flight >= 32
    ):  # each shard: its index, then its 8 inner chunks of ~4 MiB as 8 MiB ranges, all in flight at once
        assert s3.stats.requests == 2 + 2 * 4 and s3.stats.max_in_flight == 8 and s3.stats.rounds == 2
    else:  # 2 shards are a quarter of 8 requests in flight: they fill the connections well enough by themselves
        assert s3.stats.requests == 2 and s3.stats.rounds == 1


@pytest.mark.parametrize(("shards", "split"), [(15, True), (16, False)])
def test_reads_of_a_quarter_of_the_requests_in_flight_or_more_are_not_split(s3, monkeypatch, shards, split):
    monkeypatch.setattr(
        zarr3_backend.nodes.reads, "RANGE_PART_BYTES", 64 << 10
    )  # 256 KiB shards count as large
    url = s3.create_bucket(f"split{shards}") + "/a"
    data = np.random.default_rng(0).random((shards * 8, 1 << 13), dtype="float32")  # barely compressible
    a = zarr3_backend.create_array(url, shape=data.shape, dtype="float32", chunks=(8, 1 << 10), shards=(8, 1 << 13),
                                   storage_options=s3.storage_options)  # fmt: skip
    a[...] = data
    monkeypatch.setenv("ZARR3_BACKEND_IO_CONCURRENCY", "64")  # splitting below 16 shards
    np.testing.assert_array_equal(_full_read(s3, url), data)
    if split:  # each shard: its index, then its 8 inner chunks of 32 KiB as 4 ranges of 64 KiB
        assert s3.stats.rounds == 2 and s3.stats.requests == 5 * shards
    else:
        assert s3.stats.rounds == 1 and s3.stats.requests == shards


def test_io_concurrency_setting_caps_requests_in_flight(s3, monkeypatch):
    url, data = _write(s3, "capped", 12, (8, 1 << 18))
    monkeypatch.setenv("ZARR3_BACKEND_IO_CONCURRENCY", "3")
    np.testing.assert_array_equal(_full_read(s3, url), data)
    assert s3.stats.requests == 12 and s3.stats.max_in_flight == 3


def test_more_requests_in_flight_than_the_s3fs_default_pool(s3):
    url, data = _write(s3, "small", 40, (2, 64))  # small shards: one batched round
    np.testing.assert_array_equal(_full_read(s3, url), data)
    assert s3.stats.requests == 40 and s3.stats.max_in_flight > 10


class _SlowIndexStore(CountingStore):
    """A remote-like store (4 requests in flight) where the index of shard ``c/0/0`` answers only once ``released`` is set."""

    io_concurrency = 4

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.released = threading.Event()

    def get_many_versioned(self, requests):
        if any(
            key.endswith("c/0/0") and byte_range is not None and byte_range.start < 0
            for key, byte_range in requests
        ):
            assert self.released.wait(10), "the other shards' chunks were never requested"
        versioned = super().get_many_versioned(requests)
        with self._lock:
            shards = {
                key for key, byte_range in self.requests if byte_range is not None and byte_range.start >= 0
            }
            if (
                len(shards - {"c/0/0"}) == 3
            ):  # every other shard's inner chunks: none waited for the slow index
                self.released.set()
        return versioned


def test_each_shard_of_a_remote_read_goes_on_as_soon_as_its_own_index_arrives(tmp_path):
    data = np.arange(4 * 8 * 8, dtype="float32").reshape(32, 8)
    zarr3_backend.create_array(
        str(tmp_path / "a"), shape=data.shape, dtype="float32", chunks=(4, 4), shards=(8, 8)
    )[...] = data
    store = _SlowIndexStore(zarr3_backend.store.LocalStore(str(tmp_path / "a")))
    array = zarr3_backend.open_array(store)
    np.testing.assert_array_equal(array[:, 5], data[:, 5])  # 4 shards: one inner chunk of each
    assert store.released.is_set()


class _SlowIndexS3Store(FsspecStore):
    """An S3 store whose shard ``c/0/0`` index answers only once every other shard's inner chunks were requested."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.chunks_requested: set[str] = set()
        self.lock = threading.Lock()
        self.released = threading.Event()

    def get_many_versioned(self, requests):
        with self.lock:
            self.chunks_requested |= {
                key for key, r in requests if r is not None and r.start >= 0 and key != "c/0/0"
            }
            if len(self.chunks_requested) == 3:
                self.released.set()
        if any(key == "c/0/0" and r is not None and r.start < 0 for key, r in requests):
            assert self.released.wait(10), "the other shards' chunks were never requested"
        return super().get_many_versioned(requests)


def test_a_remote_read_goes_on_with_each_shard_as_soon_as_its_own_index_arrives(s3):
    import s3fs

    url = s3.create_bucket("loop") + "/a"
    data = np.arange(32 * 8, dtype="float32").reshape(32, 8)
    zarr3_backend.create_array(url, shape=data.shape, dtype="float32", chunks=(4, 4), shards=(8, 8),
                               storage_options=s3.storage_options)[...] = data  # fmt: skip
    fs = s3fs.S3FileSystem(**s3.storage_options, skip_instance_cache=True)
    store = _SlowIndexS3Store(fs, "loop/a", read_only=True)
    np.testing.assert_array_equal(
        zarr3_backend.open_array(store)[:, 5], data[:, 5]
    )  # 4 shards: index, then 1 chunk
    assert (
        store.released.is_set()
    )  # three shards went on to their chunks while the fourth's index was held back


def test_a_corrupt_shard_read_from_s3_names_its_key(s3):
    url = s3.create_bucket("corrupt") + "/a"
    data = np.arange(32 * 8, dtype="float32").reshape(32, 8)
    zarr3_backend.create_array(url, shape=data.shape, dtype="float32", chunks=(4, 4), shards=(8, 8),
                               storage_options=s3.storage_options)[...] = data  # fmt: skip
    s3.put("corrupt", "a/c/2/0", b"\x00" * 40)  # shorter than the shard index
    array = zarr3_backend.open_array(url, storage_options={**s3.storage_options, "skip_instance_cache": True})
    with pytest.raises(zarr3_backend.CorruptShardError, match="c/2/0"):
        array[:, 5]
    np.testing.assert_array_equal(array[:16, 5], data[:16, 5])  # the other shards still read


class _CancelledStore(FsspecStore):
    """An S3 store whose reads end in ``CancelledError`` once ``fail`` is set (a ``BaseException``)."""

    fail = False

    def get_many_versioned(self, requests):
        answers = super().get_many_versioned(requests)
        if self.fail:
            raise asyncio.CancelledError  # as when fsspec's loop shuts down under a read
        return answers


def test_a_fetch_cancelled_on_the_loop_fails_the_read_instead_of_hanging(s3):
    import concurrent.futures

    import s3fs

    url = s3.create_bucket("cancelled") + "/a"
    data = np.arange(16 * 8, dtype="float32").reshape(16, 8)
    zarr3_backend.create_array(url, shape=data.shape, dtype="float32", chunks=(4, 4), shards=(8, 8),
                               storage_options=s3.storage_options)[...] = data  # fmt: skip
    fs = s3fs.S3FileSystem(**s3.storage_options, skip_instance_cache=True)
    store = _CancelledStore(fs, "cancelled/a", read_only=True)
    array = zarr3_backend.open_array(store)
    store.fail = True
    raised: list[BaseException] = []
    reader = threading.Thread(target=lambda: raised.extend(_raised(lambda: array[:, 5])), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive()
    assert [type(exc) for exc in raised] in ([asyncio.CancelledError], [concurrent.futures.CancelledError])


def _raised(call) -> list[BaseException]:
    try:
        call()
    except BaseException as exc:
        return [exc]
    return []
