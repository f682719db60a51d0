"""Results as they arrive: every call answered once, calls sent first on request, errors raised, early stops honoured."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import fsspec
import pytest

from tests.servers.latency_s3 import latency_s3_server
from zarr3_backend.runtime import Stream
from zarr3_backend.store import FsspecStore
from zarr3_backend.store.base import ByteRange, plain_values
from zarr3_backend.store.streamed_reads import stream_reads


class Calls:
    """Calls that record the order they start in; call ``held`` waits until released; call ``fails`` fails."""

    def __init__(self, held: int | None = None, fails: int | None = 3) -> None:
        self.started: list[int] = []
        self.held = held
        self.fails = fails
        self.release = threading.Event()

    def __call__(self, index: int) -> bytes:
        self.started.append(index)
        if index == self.held:
            self.release.wait(10)
        if index == self.fails:
            raise FileNotFoundError(index)
        return b"v%d" % index

    def wait_started(self, count: int) -> None:
        deadline = time.monotonic() + 10
        while len(self.started) < count:
            assert time.monotonic() < deadline
            time.sleep(0.001)


@pytest.fixture
def pool():
    with ThreadPoolExecutor(32) as pool:
        yield pool


@pytest.mark.parametrize("limit", [1, 3, 32])
def test_every_call_is_answered_once(pool, limit):
    calls = Calls(fails=None)
    assert dict(Stream(calls, 10, limit, pool)) == {i: b"v%d" % i for i in range(10)}
    assert sorted(calls.started) == list(range(10))
    with pytest.raises(FileNotFoundError):
        dict(Stream(Calls(), 10, limit, pool))  # call 3 fails: raised in its turn


def test_calls_sent_first_go_out_before_the_other_unsent_ones(pool):
    calls = Calls(held=0, fails=None)
    stream = Stream(calls, 10, 1, pool)
    calls.wait_started(1)  # the one call running waits
    stream.send_first([9, 5, 0, 9])  # 0 is started already: unaffected
    calls.release.set()
    assert sorted(dict(stream)) == list(range(10))
    assert calls.started == [0, 9, 5, 1, 2, 3, 4, 6, 7, 8]


def test_a_consumer_that_stops_early_stops_the_sending_and_waits_for_what_is_running(pool):
    calls = Calls(held=1)
    stream = Stream(calls, 10, 1, pool)
    threading.Timer(0.2, calls.release.set).start()
    start = time.monotonic()
    for index, value in stream:
        assert (index, value) == (0, b"v0")
        break
    assert time.monotonic() - start >= 0.2  # call 1 was running: the loop's end waited for it
    assert calls.started == [0, 1]  # and nothing after it started


def test_no_call_starts_while_the_results_taken_hold_the_budget(pool):
    stream = Stream(lambda i: i, 6, 6, pool, budget=2, weigh=lambda _: 1)
    taken = []
    for index, _ in stream:
        taken.append(index)
        if len(taken) == 2:
            time.sleep(0.05)
            assert len(taken) == 2  # nothing more arrived: none started
            stream.release(2)
        elif len(taken) > 2:
            stream.release(1)
    assert sorted(taken) == list(range(6))


def test_a_finished_stream_hands_out_its_results_in_order():
    stream = Stream.finished(["a", "b"])
    stream.send_first([1])
    assert list(stream) == [(0, "a"), (1, "b")]


@pytest.mark.parametrize("remote", [True, False])
def test_stream_reads_hands_out_what_get_many_versioned_returns(remote):
    s3fs = pytest.importorskip("s3fs")
    requests = [("a", None), ("missing", None), ("c", ByteRange(1, 3)), ("a", ByteRange(5, 9))]
    with latency_s3_server() as server:
        server.create_bucket("b")
        fs = (
            s3fs.S3FileSystem(**server.storage_options, skip_instance_cache=True)
            if remote
            else fsspec.filesystem("memory")
        )
        store = FsspecStore(fs, "b")
        store.set("a", b"12"), store.set("c", b"abcdef")
        expected = [b"12", None, b"bc", b""]
        assert plain_values(store.get_many_versioned(requests)) == expected
        streamed = sorted((i, read.value) for i, read in stream_reads(store, requests))
        assert [(i, None if v is None else bytes(v)) for i, v in streamed] == list(enumerate(expected))
