"""Values as they arrive: every request answered once, preferred ones sent first, errors raised, early stops honoured."""

from __future__ import annotations

import asyncio
import threading
import time

import fsspec
import pytest
from fsspec.asyn import get_loop

from tests.servers.latency_s3 import latency_s3_server
from zarr3_backend.errors import StoreError
from zarr3_backend.store import FsspecStore
from zarr3_backend.store.arrivals import Answer, LaneArrivals
from zarr3_backend.store.base import ByteRange


class Requests:
    """Fetches that record the order they start in; request ``held`` waits until released."""

    def __init__(self, held: int | None = None) -> None:
        self.started: list[int] = []
        self.held = held
        self.release = threading.Event()

    async def fetch(self, index: int) -> bytes:
        self.started.append(index)
        while index == self.held and not self.release.is_set():
            await asyncio.sleep(0.001)
        if index == 3:
            raise FileNotFoundError(index)
        return b"v%d" % index

    def wait_started(self, count: int) -> None:
        deadline = time.monotonic() + 10
        while len(self.started) < count:
            assert time.monotonic() < deadline
            time.sleep(0.001)


def outcome(index: int, answer: Answer) -> bytes | None:
    if isinstance(answer, FileNotFoundError):
        return None
    if isinstance(answer, Exception):
        raise StoreError(f"request {index}: {answer}")
    return answer


@pytest.mark.parametrize("lanes", [1, 3, 32])
def test_every_request_is_answered_once_with_its_outcome(lanes):
    requests = Requests()
    arrived = dict(LaneArrivals(get_loop(), requests.fetch, 10, lanes, outcome))
    assert arrived == {i: (None if i == 3 else b"v%d" % i) for i in range(10)}
    assert sorted(requests.started) == list(range(10))


def test_preferred_requests_go_out_before_the_other_unsent_ones():
    requests = Requests(held=0)
    arrivals = LaneArrivals(get_loop(), requests.fetch, 10, 1, outcome)
    requests.wait_started(1)  # the one lane waits on request 0
    arrivals.prefer([9, 5, 0, 9])  # 0 is sent already: unaffected
    requests.release.set()
    assert sorted(dict(arrivals)) == list(range(10))
    assert requests.started == [0, 9, 5, 1, 2, 3, 4, 6, 7, 8]


def test_a_consumer_that_stops_early_stops_the_sending_and_waits_for_what_is_in_flight():
    requests = Requests(held=1)
    arrivals = LaneArrivals(get_loop(), requests.fetch, 10, 1, outcome)
    threading.Timer(0.2, requests.release.set).start()
    start = time.monotonic()
    for index, value in arrivals:
        assert (index, value) == (0, b"v0")
        break
    assert time.monotonic() - start >= 0.2  # request 1 was in flight: the loop's end waited for it
    assert requests.started == [0, 1]  # and nothing after it went out


def test_an_error_is_raised_for_its_request():
    async def fetch(index: int) -> bytes:
        raise OSError("connection reset")

    with pytest.raises(StoreError, match="request 0: connection reset"):
        list(LaneArrivals(get_loop(), fetch, 1, 4, outcome))


def test_senders_that_die_raise_instead_of_hanging():
    async def fetch(index: int) -> bytes:
        if index == 2:
            raise asyncio.CancelledError  # not an Exception: it ends the senders
        return b"x"

    with pytest.raises(StoreError, match="fetching stopped before every request was answered"):
        list(LaneArrivals(get_loop(), fetch, 5, 1, outcome))


@pytest.mark.parametrize("remote", [True, False])
def test_a_store_hands_out_what_get_many_returns(remote):
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
        assert sorted(store.fetch_each(requests)) == list(enumerate(store.get_many(requests)))
        assert store.get_many(requests) == [b"12", None, b"bc", b""]
