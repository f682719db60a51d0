"""A ranged read returns exactly its range on every transport, or a StoreError: a misbehaving server never yields wrong data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.latency_s3 import LatencyS3Server, latency_s3_server
from zarr3_backend.errors import StoreError
from zarr3_backend.store import ByteRange, make_store, plain_values

pytest.importorskip("obstore")
pytest.importorskip("s3fs")

VALUES = {f"k{i}": bytes([i]) * 50 + bytes(range(200)) for i in range(4)}
RANGES = [ByteRange(10, 20), ByteRange.suffix(8), ByteRange(0, 4), ByteRange(100, 249)]


@pytest.fixture(scope="module")
def server() -> Iterator[LatencyS3Server]:
    with latency_s3_server() as server:
        server.create_bucket("m")
        for key, value in VALUES.items():
            server.put("m", key, value)
        yield server


@pytest.fixture
def store_options(server: LatencyS3Server, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    yield {**server.storage_options, "backend": request.param}
    server.misbehave = None


BACKENDS = pytest.mark.parametrize("store_options", ["obstore", "fsspec"], indirect=True)


@BACKENDS
@pytest.mark.parametrize("fault", ["short", "shifted"])
def test_a_wrong_answer_to_a_range_request_is_a_store_error_naming_the_key(
    server: LatencyS3Server, store_options: dict[str, Any], fault: str
) -> None:
    store = make_store("s3://m", storage_options=store_options)
    server.misbehave = fault
    for byte_range in [ByteRange(10, 20), ByteRange(0, 4)]:
        with pytest.raises(StoreError, match="k1"):
            store.get("k1", byte_range)
        with pytest.raises(StoreError, match="k1"):
            store.get_many_versioned([("k0", None), ("k1", byte_range)])
    assert store.get("k2") == VALUES["k2"]  # whole values are unaffected


@BACKENDS
def test_a_whole_object_answering_a_range_request_is_refused_or_sliced(
    server: LatencyS3Server, store_options: dict[str, Any]
) -> None:
    """obstore refuses a 200 to a Range request; on S3 through fsspec the range is sliced out of the whole object."""
    store = make_store("s3://m", storage_options=store_options)
    server.misbehave = "whole"
    for byte_range in RANGES:
        if store_options["backend"] == "obstore":
            with pytest.raises(StoreError, match="k1"):
                store.get("k1", byte_range)
        else:
            assert store.get("k1", byte_range) == VALUES["k1"][byte_range.slice()]


@BACKENDS
def test_bytes_after_a_body_never_reach_another_request(
    server: LatencyS3Server, store_options: dict[str, Any]
) -> None:
    store = make_store("s3://m", storage_options=store_options)
    server.misbehave = "extra"
    answered = 0
    for byte_range in [None, *RANGES]:
        for key, value in VALUES.items():
            try:
                got = store.get(key, byte_range)
            except StoreError:
                continue
            assert got == (value if byte_range is None else value[byte_range.slice()]), (key, byte_range)
            answered += 1
    assert answered > 0


@BACKENDS
def test_every_fault_reads_right_or_fails_in_a_concurrent_batch(
    server: LatencyS3Server, store_options: dict[str, Any]
) -> None:
    store = make_store("s3://m", storage_options=store_options)
    requests = [(key, byte_range) for key in VALUES for byte_range in [None, *RANGES]]
    for fault in ["extra", "whole", "short", "shifted"]:
        server.misbehave = fault
        try:
            values = plain_values(store.get_many_versioned(requests))
        except StoreError:
            continue
        assert values == [VALUES[k] if r is None else VALUES[k][r.slice()] for k, r in requests], fault


@pytest.mark.parametrize(
    "backend, faults", [("obstore", ["whole", "short", "shifted"]), ("fsspec", ["whole", "short"])]
)
def test_over_plain_http_a_wrong_answer_is_a_store_error(
    server: LatencyS3Server, backend: str, faults: list[str]
) -> None:
    """The same faults through the http(s) stores (fsspec's hides the headers: a shifted answer of the right length is not seen there)."""
    pytest.importorskip("aiohttp")
    store = make_store(f"{server.endpoint_url}/m", storage_options={"backend": backend})
    try:
        for fault in faults:
            server.misbehave = fault
            for byte_range in [ByteRange(10, 20), ByteRange(0, 4)]:
                with pytest.raises(StoreError, match="k1"):
                    store.get("k1", byte_range)
        server.misbehave = None
        assert [store.get("k1", r) for r in RANGES] == [VALUES["k1"][r.slice()] for r in RANGES]
    finally:
        server.misbehave = None
