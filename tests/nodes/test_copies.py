"""Array-to-array copies stream: ``out[...] = array`` and `copy_array` write each shard once from its own box.

Checked against numpy (values), by recording the store's writes per key and the source's reads,
and by the peak of Python-visible allocations (``tracemalloc`` sees numpy's buffers) against the
array's size.
"""

from __future__ import annotations

import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.core.buffers import Value
from zarr3_backend.nodes.writes import is_array_source
from zarr3_backend.store.local import LocalStore
from zarr3_backend.testing.stores import CountingStore

pytestmark = pytest.mark.validate_stores


class WritesByKey(CountingStore):
    """A `CountingStore` that also counts ``set`` calls per key."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.sets: Counter[str] = Counter()

    def set(self, key: str, value: Value) -> None:
        self.sets[key] += 1
        super().set(key, value)


class Boxes:
    """An array source that is not ours: a numpy array behind ``__getitem__``, recording every box read."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.shape = data.shape
        self.dtype = data.dtype
        self.reads: list[tuple[slice, ...]] = []

    def __getitem__(self, selection: tuple[slice, ...]) -> np.ndarray:
        self.reads.append(selection)
        return self.data[selection]


def values(shape: tuple[int, ...]) -> np.ndarray:
    return (np.arange(np.prod(shape), dtype=np.int64) % 1000).reshape(shape).astype("int16")


def test_copy_array_between_different_grids(tmp_path: Path) -> None:
    data = values((13, 22))
    src = zarr3_backend.create_array(
        tmp_path / "src", shape=data.shape, dtype="int16", chunks=(2, 5), shards=(4, 10)
    )
    src[...] = data
    dst = zarr3_backend.create_array(
        tmp_path / "dst", shape=data.shape, dtype="int32", chunks=(3, 3), shards=(6, 9)
    )
    zarr3_backend.copy_array(src, dst)
    np.testing.assert_array_equal(dst[...], data)


def test_each_destination_shard_is_written_once_from_its_own_box(tmp_path: Path) -> None:
    data = values((10, 12))
    store = WritesByKey(LocalStore(tmp_path / "dst"))
    dst = zarr3_backend.create_array(store, shape=data.shape, dtype="int16", chunks=(2, 2), shards=(4, 6))
    source = Boxes(data)
    dst[...] = source
    np.testing.assert_array_equal(dst[...], data)
    shard_keys = {k for k in store.sets if not k.endswith("zarr.json")}
    assert len(shard_keys) == 3 * 2 and all(store.sets[k] == 1 for k in shard_keys)
    assert sorted((s[0].start, s[1].start) for s in source.reads) == [
        (r, c) for r in (0, 4, 8) for c in (0, 6)
    ]
    assert all(s[0].stop - s[0].start <= 4 and s[1].stop - s[1].start <= 6 for s in source.reads)


def test_a_region_written_from_an_array_keeps_the_rest(tmp_path: Path) -> None:
    dst = zarr3_backend.create_array(
        tmp_path / "dst", shape=(9, 9), dtype="int16", chunks=(2, 2), shards=(4, 4)
    )
    dst[...] = 7
    src = zarr3_backend.create_array(tmp_path / "src", shape=(5, 4), dtype="int16", chunks=(3, 3))
    src[...] = values((5, 4))
    dst[2:7, 3:7] = src
    expected = np.full((9, 9), 7, dtype="int16")
    expected[2:7, 3:7] = values((5, 4))
    np.testing.assert_array_equal(dst[...], expected)


def test_a_source_of_another_shape_is_refused(tmp_path: Path) -> None:
    dst = zarr3_backend.create_array(tmp_path / "dst", shape=(4, 4), dtype="int16", chunks=(2, 2))
    with pytest.raises(zarr3_backend.ArgumentError, match=r"shape \(4, 3\).*no broadcasting"):
        dst[...] = Boxes(values((4, 3)))
    assert dst.nchunks_stored() == 0


def test_a_zarr_python_array_is_a_source(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    data = values((8, 8))
    src = zarr.create_array(tmp_path / "zp", shape=data.shape, dtype="int16", chunks=(3, 3))
    src[...] = data
    dst = zarr3_backend.create_array(tmp_path / "dst", shape=data.shape, dtype="int16", chunks=(4, 4))
    zarr3_backend.copy_array(src, dst)
    np.testing.assert_array_equal(dst[...], data)


def test_in_memory_values_are_not_sources() -> None:
    assert not is_array_source(np.zeros((2, 2)))
    assert not is_array_source(np.float32(1))
    assert not is_array_source([[1, 2]])
    assert is_array_source(Boxes(np.zeros(2)))


def test_copy_peak_memory_is_a_few_shards(tmp_path: Path) -> None:
    shape, shards = (64, 128, 128), (4, 128, 128)  # 16 shards of 128 KiB as int16, 2 MiB in all
    data = values(shape)
    src = zarr3_backend.create_array(
        tmp_path / "src", shape=shape, dtype="int16", chunks=(4, 64, 64), shards=shards
    )
    src[...] = data
    dst = zarr3_backend.create_array(
        tmp_path / "dst", shape=shape, dtype="int16", chunks=(4, 64, 64), shards=shards
    )
    del data
    tracemalloc.start()
    try:
        dst[...] = src
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    whole = 64 * 128 * 128 * 2
    assert peak < whole / 3, f"peak {peak} bytes for a copy of {whole} bytes"
    np.testing.assert_array_equal(dst[...], values(shape))


def test_dask_store_on_shards_writes_each_shard_once(tmp_path: Path) -> None:
    da = pytest.importorskip("dask.array")
    data = values((12, 10))
    store = WritesByKey(LocalStore(tmp_path / "dst"))
    dst = zarr3_backend.create_array(store, shape=data.shape, dtype="int16", chunks=(2, 5), shards=(4, 5))
    src = zarr3_backend.create_array(tmp_path / "src", shape=data.shape, dtype="int16", chunks=(4, 5))
    src[...] = data
    da.store(da.from_array(src, chunks=(4, 5)), dst)
    np.testing.assert_array_equal(dst[...], data)
    shard_keys = [k for k in store.sets if not k.endswith("zarr.json")]
    assert len(shard_keys) == 3 * 2 and all(store.sets[k] == 1 for k in shard_keys)
    read = Counter(key for key, _ in store.requests if key.startswith("c/"))
    assert read == Counter(
        dict.fromkeys(shard_keys, 1)
    )  # the check's read only: no write read its shard to merge
