"""A storage server's error answer reaches the user as its code and message, then the key: never raw XML."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import zarr3_backend
from tests.servers.latency_s3 import LatencyS3Server, latency_s3_server
from zarr3_backend.errors import StoreError

pytest.importorskip("s3fs")


@pytest.fixture
def denying_server() -> Iterator[LatencyS3Server]:
    with latency_s3_server() as server:
        server.create_bucket("b")
        zarr3_backend.create_array(
            "s3://b/a", shape=(4,), chunks=(2,), dtype="int16", storage_options=server.storage_options
        )[:] = np.arange(4)
        server.denied_prefix = "a/"
        yield server


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_a_403_names_its_code_and_message_then_the_key(denying_server: LatencyS3Server, backend: str) -> None:
    options = {**denying_server.storage_options, "backend": backend}
    with pytest.raises(StoreError) as caught:
        zarr3_backend.open_array("s3://b/a", storage_options=options)
    message = str(caught.value)
    assert message.startswith("AccessDenied (HTTP 403): Access Denied -- could not read key 'zarr.json'")
    assert "s3://b/a" in message and "<" not in message


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_a_refused_write_names_its_code_and_key(denying_server: LatencyS3Server, backend: str) -> None:
    denying_server.denied_prefix = None
    array = zarr3_backend.open_array(
        "s3://b/a", mode="r+", storage_options={**denying_server.storage_options, "backend": backend}
    )
    denying_server.denied_prefix = "a/"
    with pytest.raises(
        StoreError, match=r"^AccessDenied \(HTTP 403\): Access Denied -- could not write key 'c/0'"
    ):
        array[:2] = 7
