"""The output of reads: a plain numpy array, whose memory goes back when it is released; reads see completed writes."""

from __future__ import annotations

import gc
import sys
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.store import make_store


def test_outputs_are_plain_numpy(tmp_path):
    data = np.arange(64 * 4096, dtype="float32").reshape(64, -1)
    a = zarr3_backend.create_array(str(tmp_path / "a"), shape=data.shape, dtype="float32", chunks=(16, 1024))
    a[...] = data
    out = zarr3_backend.open_array(str(tmp_path / "a"))[...]
    np.testing.assert_array_equal(out, data)
    assert type(out) is np.ndarray and out.base is None and out.flags.owndata


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_the_memory_of_a_released_output_is_returned_at_once(tmp_path):
    shape = (64, 256, 1024)  # 64 MiB of float32
    a = zarr3_backend.create_array(str(tmp_path / "a"), shape=shape, dtype="float32", chunks=(16, 256, 1024))
    a[...] = 1.0
    reader = zarr3_backend.open_array(str(tmp_path / "a"))
    for selection in (slice(None), slice(0, 32)):  # a second read of another size keeps nothing of the first
        gc.collect()
        before = _rss()
        out = reader[selection]
        assert float(out[-1, -1, -1]) == 1.0
        del out
        gc.collect()
        assert _rss() - before < 16 << 20  # an output kept for reuse would hold 32-64 MiB here


def test_a_read_that_starts_after_a_write_sees_it(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    """Whole-shard reads one after another (a ``chunks={}`` scan) on object storage, then a write, then a read."""
    store = make_store(f"{s3_url}/raw.zarr", storage_options=s3_storage_options)
    a = zarr3_backend.create_array(store, shape=(8, 4), dtype="int32", chunks=(2, 4))
    a[...] = 0
    reader = zarr3_backend.open_array(make_store(f"{s3_url}/raw.zarr", storage_options=s3_storage_options))
    writer = zarr3_backend.open_array(store, mode="r+")
    for shard in range(3):
        assert reader[2 * shard : 2 * shard + 2].tolist() == [[0] * 4] * 2
    writer[6:8] = 7
    assert reader[6:8].tolist() == [[7] * 4] * 2
