"""Read-ahead for scans: dask's ``chunks={}`` keeps more requests in flight than it has threads, within bounds."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from forking import in_forked_child
from zarr3_backend import readahead
from zarr3_backend.readahead import ReadAhead
from zarr3_backend.store import make_store

xr = pytest.importorskip("xarray")
dask = pytest.importorskip("dask")
pytest.importorskip("s3fs")


@pytest.fixture
def s3(settled_heap: None) -> Any:
    from zarr3_backend.testing.latency_s3 import latency_s3_server

    with latency_s3_server() as server:
        yield server


def _write_shards(s3: Any, bucket: str, shards: int) -> tuple[str, np.ndarray]:
    data = np.random.default_rng(0).random((shards * 4, 16, 16)).astype("f4")
    url = s3.create_bucket(bucket) + "/g"
    encoding = {"v": {"chunks": (2, 8, 8), "shards": (4, 16, 16)}}
    xr.Dataset({"v": (("t", "y", "x"), data)}).to_zarr3(url, storage_options=s3.storage_options, encoding=encoding)
    return url, data


def _load_with_two_threads(s3: Any, url: str) -> np.ndarray:
    ds = xr.open_dataset(url, engine="zarr3", chunks={}, storage_options={**s3.storage_options, "skip_instance_cache": True})
    assert ds.v.data.numblocks[0] > 1  # one dask task per shard
    s3.latency = 0.2  # well above the client's own stagger, also on a busy machine
    s3.reset_stats()
    with dask.config.set(scheduler="threads", num_workers=2):
        values = ds.v.values
    s3.latency = 0.0
    return values


def test_chunks_dask_keeps_more_requests_in_flight_than_threads(s3):
    url, data = _write_shards(s3, "scan", 12)
    np.testing.assert_array_equal(_load_with_two_threads(s3, url), data)
    stats = s3.stats
    assert stats.requests == 12  # one GET per shard, read ahead or not: nothing fetched twice
    assert stats.max_in_flight > 2  # 2 scheduler threads, more shards in flight
    assert stats.rounds < 6  # without read-ahead: 12 shards / 2 threads = 6 rounds


def test_a_second_scan_right_after_the_first_reads_ahead_too(s3):
    url, data = _write_shards(s3, "twice", 12)
    ds = xr.open_dataset(url, engine="zarr3", chunks={}, storage_options={**s3.storage_options, "skip_instance_cache": True})
    s3.latency = 0.2
    for _ in range(2):  # within IDLE_SECONDS of each other; the second uses the cached shard indexes
        s3.reset_stats()
        with dask.config.set(scheduler="threads", num_workers=2):
            np.testing.assert_array_equal(ds.v.values, data)
        assert s3.stats.requests == 12 and s3.stats.max_in_flight > 2
    s3.latency = 0.0


def test_read_ahead_stays_within_the_bytes_bound(s3, monkeypatch):
    url, data = _write_shards(s3, "bounded", 12)
    monkeypatch.setenv("ZARR3_BACKEND_IO_BYTES", "1000")  # less than one shard (4 KiB decoded, ~4 KiB stored)
    np.testing.assert_array_equal(_load_with_two_threads(s3, url), data)
    assert s3.stats.requests == 12 and s3.stats.max_in_flight <= 2


def test_read_ahead_on_a_dask_cluster(s3, client):
    url, data = _write_shards(s3, "cluster", 8)
    ds = xr.open_dataset(url, engine="zarr3", chunks={}, storage_options=s3.storage_options)
    s3.reset_stats()
    np.testing.assert_array_equal(ds.v.compute().values, data)
    assert s3.stats.requests == 8


class Counting:
    """A memory store that counts whole-value reads per key."""

    def __init__(self, n: int) -> None:
        self.store = make_store(f"memory://readahead-{id(self)}")
        self.store.set_many({f"c/{i}": bytes([i]) * 10 for i in range(n)})
        self.reads: list[str] = []
        get_many_versioned = self.store.get_many_versioned

        def counted(requests: Any) -> Any:
            self.reads += [key for key, _ in requests]
            return get_many_versioned(requests)

        self.store.get_many_versioned = counted  # type: ignore[method-assign]

    def ahead(self, n: int, lanes: int = 32, max_bytes: int = 1 << 20) -> ReadAhead:
        return ReadAhead(self.store, (n,), (1,), lambda c: f"c/{c[0]}", itemsize=10, lanes=lanes, max_bytes=max_bytes)


def _read(ahead: ReadAhead, i: int) -> bytes | None:
    with ahead.reading((i,)) as view:
        return view.get(f"c/{i}")


def _settle(ahead: ReadAhead) -> None:
    for entry in list(ahead._entries.values()):
        entry.future.exception()


def test_a_scan_that_stops_early_fetched_few_and_keeps_nothing(monkeypatch):
    monkeypatch.setattr(readahead, "IDLE_SECONDS", 0.05)
    counting = Counting(100)
    ahead = counting.ahead(100)
    assert [_read(ahead, i) for i in (0, 1)] == [b"\0" * 10, b"\1" * 10]
    _settle(ahead)
    assert len(counting.reads) <= 2 + 2 * readahead.WINDOW_PER_READ  # the window grows with the reads
    time.sleep(0.3)
    assert ahead._entries == {} and ahead._reserved == 0


def test_window_follows_the_scan_backwards_and_respects_lanes():
    counting = Counting(20)
    ahead = counting.ahead(20, lanes=3)
    for i in (15, 14, 13, 12, 11):
        assert _read(ahead, i) == bytes([i]) * 10
        _settle(ahead)
        assert len(ahead._entries) <= 3
    assert ahead.fetched_ahead >= 2  # 13, 12 and 11 were fetched ahead, downwards
    assert all(key in {f"c/{i}" for i in range(6, 16)} for key in counting.reads)
    assert sorted(counting.reads) == sorted(set(counting.reads))  # nothing fetched twice


def test_a_write_discards_the_value_read_ahead():
    counting = Counting(4)
    ahead = counting.ahead(4)
    _read(ahead, 0), _read(ahead, 1)
    _settle(ahead)
    counting.store.set("c/2", b"new")
    ahead.discard("c/2")
    assert _read(ahead, 2) == b"new"


def test_ranges_are_served_from_the_value_read_ahead():
    counting = Counting(4)
    ahead = counting.ahead(4)
    _read(ahead, 0), _read(ahead, 1)
    _settle(ahead)
    before = len(counting.reads)
    with ahead.reading((2,)) as view:
        got = view.get_many_versioned([("c/2", zarr3_backend.store.ByteRange.suffix(3)), ("c/3", None)])
    assert [g.value for g in got] == [b"\2" * 3, b"\3" * 10]
    assert counting.reads[before:].count("c/2") == 0


def test_whole_chunk_reads_after_the_array_grew(s3):
    url = s3.create_bucket("grow") + "/a"
    options = {**s3.storage_options, "skip_instance_cache": True}
    a = zarr3_backend.create_array(url, shape=(4, 2), dtype="int16", chunks=(1, 2), shards=(2, 2), storage_options=options)
    a[...] = np.arange(8).reshape(4, 2)
    assert a[0:2].tolist() == [[0, 1], [2, 3]] and a[2:4].tolist() == [[4, 5], [6, 7]]  # a scan: reads ahead
    a.resize((6, 2))
    a[4:6] = 9  # written through the same array: nothing stale is served
    assert a[2:4].tolist() == [[4, 5], [6, 7]] and a[4:6].tolist() == [[9, 9], [9, 9]]


def test_a_long_scan_remembers_a_bounded_number_of_chunks(monkeypatch):
    monkeypatch.setattr(readahead, "REMEMBERED", 16)
    counting = Counting(200)
    ahead = counting.ahead(200, lanes=4)
    for i in range(200):
        assert _read(ahead, i) == bytes([i % 256]) * 10
        assert len(ahead._taken) <= 16 + 1 + 4 and len(ahead._read) <= 16 + 1
        _settle(ahead)
    assert ahead.fetched_ahead > 150
    assert len(counting.reads) <= 200 + 4  # forgetting may fetch a few chunks twice, near the end at most


def test_a_forked_child_reads_what_the_parent_was_still_fetching_ahead():
    counting = Counting(4)
    parent, release = os.getpid(), threading.Event()
    get_many_versioned = counting.store.get_many_versioned

    def held_in_the_parent(requests: Any) -> Any:
        if os.getpid() == parent and any(key in ("c/2", "c/3") for key, _ in requests):
            release.wait(30)  # the fetches ahead are still running when we fork
        return get_many_versioned(requests)

    counting.store.get_many_versioned = held_in_the_parent  # type: ignore[method-assign]
    ahead = counting.ahead(4)
    _read(ahead, 0), _read(ahead, 1)
    assert len(ahead._entries) == 2

    def child_reads() -> bool:
        signal.alarm(10)  # the parent's fetch threads do not exist here: waiting on them would never end
        return _read(ahead, 2) == b"\2" * 10 and _read(ahead, 3) == b"\3" * 10

    try:
        assert in_forked_child(child_reads)
    finally:
        release.set()
    assert _read(ahead, 2) == b"\2" * 10  # the parent still takes its value fetched ahead


def test_fetches_ahead_are_re_estimated_from_the_sizes_the_reads_ask_for():
    counting = Counting(20)
    held = threading.Event()
    get_many_versioned = counting.store.get_many_versioned

    def ahead_held(requests: Any) -> Any:
        if any(key not in ("c/0", "c/1") for key, _ in requests):
            held.wait(30)  # no fetch ahead ends: only the reads' own sizes can re-estimate
        return get_many_versioned(requests)

    counting.store.get_many_versioned = ahead_held  # type: ignore[method-assign]
    # decoded, a chunk is 1000 bytes: room for 2 ahead; stored it is 10, so the window's 8 fit
    ahead = ReadAhead(counting.store, (20,), (1,), lambda c: f"c/{c[0]}", itemsize=1000, lanes=32, max_bytes=2500)
    try:
        assert [_read(ahead, i) for i in (0, 1)] == [b"\0" * 10, b"\1" * 10]
        assert len(ahead._entries) == 2 * readahead.WINDOW_PER_READ
        assert ahead._reserved == 10 * len(ahead._entries)
    finally:
        held.set()
    assert [_read(ahead, i) for i in range(2, 10)] == [bytes([i]) * 10 for i in range(2, 10)]
    assert ahead.fetched_ahead == 8


def test_a_chunk_at_the_arrays_edge_is_estimated_as_a_whole_one():
    store = make_store(f"memory://edge-{id(object())}")
    ahead = ReadAhead(store, (10,), (4,), lambda c: f"c/{c[0]}", itemsize=1, lanes=4, max_bytes=1 << 20)
    ahead._learn(2, 10)  # chunk 2 holds elements 8 and 9 of its 4
    assert ahead._estimate == 20
    ahead._learn(0, 12)
    assert ahead._estimate == 20  # the largest seen
    ahead._learn(1, 30)
    assert ahead._estimate == 30


@pytest.mark.parametrize("index_location", ["end", "start"])
def test_a_scan_read_from_s3_tells_the_stored_chunk_size(s3, monkeypatch, index_location):
    url = s3.create_bucket(f"measured-{index_location}") + "/a"
    options = {**s3.storage_options, "skip_instance_cache": True}
    a = zarr3_backend.create_array(url, shape=(8, 64), dtype="f8", chunks=(1, 64), shards=(4, 64),
                                   index_location=index_location, storage_options=options)  # fmt: skip
    a[...] = np.arange(8 * 64).reshape(8, 64)
    a = zarr3_backend.open_array(url, storage_options=options)
    monkeypatch.setattr("zarr3_backend.array.RANGE_PART_BYTES", 256)  # the index, then the chunks' ranges
    learned: list[int] = []
    learn = a._scan()._learn
    monkeypatch.setattr(a._scan(), "_learn", lambda index, nbytes: (learned.append(nbytes), learn(index, nbytes)))
    assert (a[4:8] == np.arange(4 * 64, 8 * 64).reshape(4, 64)).all()  # one whole shard: a read the read-ahead sees
    stored = len(a.store.get(a.chunk_key((1, 0))))
    index_bytes = 4 * 16 + 4  # 4 chunks' offsets and sizes, and a crc32c
    assert learned and all(stored - index_bytes <= nbytes <= stored for nbytes in learned)  # the data, never the index
    assert a._scan()._estimate == max(learned)


def test_an_array_gets_its_read_ahead_from_its_first_scan_read_only(s3):
    url = s3.create_bucket("lazy") + "/a"
    options = {**s3.storage_options, "skip_instance_cache": True}
    a = zarr3_backend.create_array(url, shape=(8, 4), dtype="int16", chunks=(1, 4), shards=(2, 4), storage_options=options)
    a[...] = np.arange(32).reshape(8, 4)
    a = zarr3_backend.open_array(url, mode="r+", storage_options=options)
    a[0:2, 1:3] = 0  # writes and partial reads make none: opening a 200-variable group makes 200 arrays
    assert a[0:3].sum() == np.arange(32)[:12].sum() - np.array([1, 2, 5, 6]).sum() and a._readahead is None
    assert a[2:4].tolist() == np.arange(8, 16).reshape(2, 4).tolist()  # one whole shard: a scan read
    made = a._readahead
    assert made is not None and a[4:6].tolist() == np.arange(16, 24).reshape(2, 4).tolist() and a._readahead is made
    a.resize((10, 4))
    assert a._readahead is None  # the grid changed: the next scan read makes a new one
