"""Servers whose ETags do not identify content: a long-lived reader still sees every rewrite."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import clear_store_cache
from zarr3_backend.store.etags import EtagWatch, object_generation

CHUNK = 256


@pytest.fixture
def s3() -> Any:
    pytest.importorskip("obstore")
    from tests.servers.latency_s3 import latency_s3_server

    with latency_s3_server() as server:
        server.constant_etag = '"0123456789abcdef0123456789abcdef"'
        yield server


def _shard(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.concatenate([first, second])


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_a_same_size_rewrite_behind_a_constant_etag_is_read(
    s3: Any, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = s3.create_bucket(f"poor-{backend}") + "/a"
    options = {**s3.storage_options, "backend": backend, "skip_instance_cache": True}
    writer = zarr3_backend.create_array(
        url, shape=(2 * CHUNK,), dtype="float64", chunks=(CHUNK,), shards=(2 * CHUNK,),
        storage_options=s3.storage_options,
    )  # fmt: skip
    flat = np.zeros(CHUNK)  # compresses to a few bytes
    noisy = np.random.default_rng(0).random(CHUNK)  # does not compress
    writer[:] = _shard(flat, noisy)
    clear_store_cache()
    reader = zarr3_backend.open_array(url, storage_options=options)
    with caplog.at_level(logging.DEBUG, logger="zarr3_backend.store"):
        np.testing.assert_array_equal(reader[:], _shard(flat, noisy))
        writer[:] = _shard(noisy, flat)  # the same bytes with the inner chunks swapped: the same size
        np.testing.assert_array_equal(reader[:CHUNK], noisy)
        np.testing.assert_array_equal(reader[:], _shard(noisy, flat))
    said = [r.getMessage() for r in caplog.records if "do not identify content" in r.getMessage()]
    assert len(said) == 1, said


def test_one_etag_on_two_sizes_or_two_keys_stops_the_trust() -> None:
    sizes = EtagWatch("test://sizes")
    assert sizes.check("k", '"0123456789abcdef0123456789abcdef"', 10)
    assert sizes.check("k", '"0123456789abcdef0123456789abcdef"', 10)
    assert not sizes.check("k", '"0123456789abcdef0123456789abcdef"', 11)
    assert not sizes.check("j", '"other"', 1)  # distrusted for good
    keys = EtagWatch("test://keys")
    assert keys.check("k", '"v1"', 10)
    assert not keys.check("j", '"v1"', 10)


def test_identical_objects_under_an_md5_etag_keep_the_trust() -> None:
    digest = '"0123456789abcdef0123456789abcdef"'
    watch = EtagWatch("test://md5")
    assert watch.check("k", digest, 10) and watch.check("j", digest, 10)


def test_a_generation_holds_size_and_time() -> None:
    one = object_generation("test://time", "k", etag='"a"', size=5, modified="Sat, 28 Nov 2026 10:00:00 GMT")
    later = object_generation(
        "test://time", "k", etag='"a"', size=5, modified="Sat, 28 Nov 2026 10:00:01 GMT"
    )
    assert one is not None and later is not None and one != later
