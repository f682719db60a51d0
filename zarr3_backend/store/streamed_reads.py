"""Reading a batch of keys with the values handed over as they arrive, and a say in what is sent next.

A reader that learns from its first values which of the other requests matter
most (a group learns the names of its coordinates from its first member
documents) calls ``send_first`` on the stream, and those requests go out
before the others not sent yet.

>>> from zarr3_backend.store import make_store
>>> store = make_store("memory://doc/streaming")
>>> store.set("a", b"1")
>>> [(index, read.value) for index, read in stream_reads(store, [("a", None), ("b", None)])]
[(0, b'1'), (1, None)]
"""

from __future__ import annotations

from collections.abc import Sequence

from ..runtime.pools import request_pool
from ..runtime.streaming import Stream
from .base import Request, Store, Versioned


def stream_reads(store: Store, requests: Sequence[Request]) -> Stream[Versioned]:
    """``(index, value)`` of each request as it is answered, by one `get_many_versioned` call each.

    On a store that keeps requests in flight (`io_concurrency` above 1), up to
    that many are sent at once on the request pool, each as the last one is
    answered; on any other store the batch is read at once by one call.
    """
    limit = store.io_concurrency
    if limit <= 1 or len(requests) <= 1:
        return Stream.finished(store.get_many_versioned(requests))
    return Stream(
        lambda index: store.get_many_versioned([requests[index]])[0], len(requests), limit, request_pool()
    )
