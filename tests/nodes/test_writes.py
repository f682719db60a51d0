"""How a write encodes a stored chunk's inner chunks: on the CPU pool for large shards, serially for small ones."""

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.codecs.base import serial_map
from zarr3_backend.codecs.sharding import ShardingCodec
from zarr3_backend.nodes.writes import CONCURRENT_ENCODE_BYTES
from zarr3_backend.runtime import map_concurrently


@pytest.fixture
def mappers(monkeypatch):
    """The mapper each sharding update and whole-shard encode is given, in call order."""
    given: list[object] = []
    update, encode_pieces = ShardingCodec.update, ShardingCodec.encode_pieces

    def recording_update(self, *args, mapper=serial_map):
        given.append(mapper)
        return update(self, *args, mapper=mapper)

    def recording_encode_pieces(self, *args, mapper=serial_map):
        given.append(mapper)
        return encode_pieces(self, *args, mapper=mapper)

    monkeypatch.setattr(ShardingCodec, "update", recording_update)
    monkeypatch.setattr(ShardingCodec, "encode_pieces", recording_encode_pieces)
    return given


def test_a_large_shard_encodes_its_inner_chunks_on_the_cpu_pool(store, mappers):
    side = 512  # one shard of 1 MiB, 16 inner chunks
    assert side * side * 4 == CONCURRENT_ENCODE_BYTES
    a = zarr3_backend.create_array(
        store, shape=(side, side), dtype="float32", chunks=(side // 4, side // 4), shards=(side, side)
    )
    data = np.arange(side * side, dtype="float32").reshape(side, side)
    a[...] = data  # a whole shard
    a.update_chunk((0, 0), [((slice(0, 1), slice(None)), -1.0)])  # a partial one
    shard = a.read_chunk((0, 0))
    a.store_chunk((0, 0), shard)
    assert mappers == [map_concurrently] * 3
    data[0] = -1.0
    np.testing.assert_array_equal(a[...], data)


def test_a_small_shard_encodes_its_inner_chunks_on_the_calling_thread(store, mappers):
    side = 256  # shards of 64 KiB
    a = zarr3_backend.create_array(
        store,
        shape=(side, side),
        dtype="float32",
        chunks=(side // 8, side // 8),
        shards=(side // 2, side // 2),
    )
    data = np.arange(side * side, dtype="float32").reshape(side, side)
    a[...] = data
    a.store_chunk((0, 0), a.read_chunk((0, 0)))
    assert mappers == [serial_map] * 5
    np.testing.assert_array_equal(a[...], data)
