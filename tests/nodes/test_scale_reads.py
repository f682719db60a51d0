"""Reads over many shards: the requests and rounds the plan says, and a missing shard costs its lookup only."""

import math
import os

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.nodes import reads
from zarr3_backend.store.local import LocalStore
from zarr3_backend.testing.stores import CountingStore

STEPS = 1300  # more than two plan windows
EVERY = 10  # one step in ten is written


def hourly(root, present_every=EVERY):
    """``(STEPS, 4, 6)`` int16, one shard of 4 inner chunks per step, one step in ``present_every`` written."""
    a = zarr3_backend.create_array(
        LocalStore(root),
        shape=(STEPS, 4, 6),
        dtype="int16",
        chunks=(1, 2, 3),
        shards=(1, 4, 6),
        fill_value=-1,
    )
    expected = np.full(a.shape, -1, dtype="int16")
    for step in range(0, STEPS, present_every) if present_every else ():
        expected[step] = np.arange(24, dtype="int16").reshape(4, 6) + step
        a[step] = expected[step]
    return expected


def test_a_series_over_many_shards_sends_the_requests_and_rounds_the_plan_says(tmp_path):
    expected = hourly(tmp_path)
    counting = CountingStore(LocalStore(tmp_path))
    a = zarr3_backend.open_array(counting)
    counting.reset()
    np.testing.assert_array_equal(a[:, 3, 4], expected[:, 3, 4])
    present = range(0, STEPS, EVERY)
    windows = math.ceil(STEPS / reads.PLAN_WINDOW)
    # per window of shards: one batched round of index lookups, then one of the inner chunks found
    assert counting.counts["get_many"] == 2 * windows
    lookups = [(key, r) for key, r in counting.requests if r.is_suffix]
    assert sorted(key for key, _ in lookups) == sorted(a.chunk_key((t, 0, 0)) for t in range(STEPS))
    inner = [(key, r) for key, r in counting.requests if not r.is_suffix]
    assert sorted(key for key, _ in inner) == sorted(a.chunk_key((t, 0, 0)) for t in present)
    assert len(counting.requests) == STEPS + len(present)


def test_missing_shards_make_no_request_beyond_the_lookup(tmp_path):
    expected = hourly(tmp_path, present_every=0)
    counting = CountingStore(LocalStore(tmp_path))
    a = zarr3_backend.open_array(counting)
    counting.reset()
    np.testing.assert_array_equal(a[:, 1:3, 2], expected[:, 1:3, 2])
    assert len(counting.requests) == STEPS and all(r.is_suffix for _, r in counting.requests)
    assert counting.counts["get_many"] == math.ceil(STEPS / reads.PLAN_WINDOW)


def test_a_missing_shard_costs_the_local_store_one_lstat_and_no_realpath(tmp_path, monkeypatch):
    hourly(tmp_path, present_every=0)
    a = zarr3_backend.open_array(LocalStore(tmp_path))
    a[0, 0, 0]  # the array's own directories, resolved once
    calls = {"lstat": 0, "realpath": 0}
    lstat, realpath = os.lstat, os.path.realpath

    def counted_lstat(path, *args, **kwargs):
        calls["lstat"] += 1
        return lstat(path, *args, **kwargs)

    def counted_realpath(path, *args, **kwargs):
        calls["realpath"] += 1
        return realpath(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counted_lstat)
    monkeypatch.setattr(os.path, "realpath", counted_realpath)
    a[100:200, 0, 0]
    assert calls == {"lstat": 100, "realpath": 0}


def test_a_present_shard_costs_one_lstat_per_new_directory_and_no_stat(tmp_path, monkeypatch):
    expected = hourly(tmp_path, present_every=1)
    a = zarr3_backend.open_array(LocalStore(tmp_path))
    a[0, 0, 0]  # the array's own directories, resolved once
    calls = {"lstat": 0, "stat": 0}
    lstat, stat_ = os.lstat, os.stat

    def counted(name, call):
        def counting(path, *args, **kwargs):
            calls[name] += 1
            return call(path, *args, **kwargs)

        return counting

    monkeypatch.setattr(os, "lstat", counted("lstat", lstat))
    monkeypatch.setattr(os, "stat", counted("stat", stat_))
    np.testing.assert_array_equal(a[100:200, 0, 0], expected[100:200, 0, 0])
    # each step's shard lies in its own directory, c/<step>/0/: two new directories, and the lstat says
    # each is one (os.path.isdir's stat would say it again)
    assert calls == {"lstat": 200, "stat": 0}


def test_a_link_out_of_the_root_below_a_missing_shard_is_still_refused(tmp_path):
    outside = tmp_path / "outside"
    (outside / "0").mkdir(parents=True)
    (outside / "0" / "0").write_bytes(b"secret")
    root = tmp_path / "root"
    hourly(root, present_every=0)
    (root / "c").mkdir()
    os.symlink(outside, root / "c" / "7")
    a = zarr3_backend.open_array(LocalStore(root))
    a[3, 0, 0]  # a missing shard: nothing to resolve
    with pytest.raises(zarr3_backend.InvalidKeyError, match="outside the store root"):
        a[7, 0, 0]


class _Remote(CountingStore):
    """A counting store that declares 16 requests in flight, as object storage does."""

    @property
    def io_concurrency(self):
        return 16


def test_a_remote_store_gets_windows_of_many_requests_in_flight(tmp_path):
    expected = hourly(tmp_path)
    counting = _Remote(LocalStore(tmp_path))
    a = zarr3_backend.open_array(counting)
    counting.reset()
    np.testing.assert_array_equal(a[:, 3, 4], expected[:, 3, 4])
    window = max(reads.PLAN_WINDOW, reads.REMOTE_WINDOW_WAVES * 16)
    assert counting.counts["get_many"] == 2 * math.ceil(STEPS / window)
    assert len(counting.requests) == STEPS + len(range(0, STEPS, EVERY))


def test_a_series_over_many_shards_leaves_the_oldest_garbage_generation_alone(tmp_path):
    """The read's plans die young: few of its objects reach the collector's oldest generation, so the read
    triggers none of its full collections (each walks every object of the process)."""
    import gc

    a = zarr3_backend.create_array(
        LocalStore(tmp_path), shape=(20_000, 4, 6), dtype="int16", chunks=(1, 2, 3), shards=(1, 4, 6)
    )
    a[::1000] = 7
    a[:10, 1, 2]  # the array's directories resolved, its caches made
    gc.collect()
    oldest = len(gc.get_objects(generation=2))
    promoted = [0]

    def watch(phase, info):
        if phase == "stop" and info["generation"] == 1:
            promoted[0] = max(promoted[0], len(gc.get_objects(generation=2)) - oldest)

    gc.callbacks.append(watch)
    try:
        series = a[:, 1, 2]
    finally:
        gc.callbacks.remove(watch)
    assert (series[::1000] == 7).all() and (np.delete(series, np.s_[::1000]) == 0).all()
    # with plans made 512 shards at a time (and the pieces of the whole series held), 88,000 were
    assert promoted[0] < 10_000


def _threads_decoding(monkeypatch):
    """The threads that run a read's decode jobs, each job made slow enough for pool threads to join in."""
    import threading
    import time

    idents = set()
    run = reads._run_job

    def slow(item):
        idents.add(threading.get_ident())
        time.sleep(0.002)
        run(item)

    monkeypatch.setattr(reads, "_run_job", slow)
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", "4")
    return idents


def test_a_window_that_decodes_little_stays_on_the_reading_thread(tmp_path, monkeypatch):
    import threading

    expected = hourly(tmp_path)
    a = zarr3_backend.open_array(LocalStore(tmp_path))
    idents = _threads_decoding(monkeypatch)
    np.testing.assert_array_equal(a[:200, 3, 4], expected[:200, 3, 4])
    assert idents == {
        threading.get_ident()
    }  # 20 inner chunks of 12 bytes and 180 fills: not worth a hand-off


def test_a_window_that_decodes_much_from_few_fetched_bytes_is_shared(tmp_path, monkeypatch):
    import threading

    a = zarr3_backend.create_array(
        LocalStore(tmp_path), shape=(16, 128, 128), dtype="float64", chunks=(1, 128, 128)
    )
    a[...] = 1.5  # 16 chunks of 128 KiB, each a few dozen bytes compressed
    idents = _threads_decoding(monkeypatch)
    assert (a[...] == 1.5).all()
    assert threading.get_ident() in idents and len(idents) > 1
