"""sharding_indexed: layout, partial reads (request counts), corruption errors, nesting."""

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import ChecksumError, CodecError, CorruptShardError
from zarr3_backend.testing.stores import CountingStore

BLOSC = [
    {
        "name": "blosc",
        "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle", "typesize": 4, "blocksize": 0},
    }
]


def sharded(store, location="end", **kwargs):
    data = np.random.default_rng(0).normal(size=(8, 12, 6)).astype("float32")
    a = zarr3_backend.create_array(
        store,
        shape=data.shape,
        dtype="float32",
        chunks=(2, 3, 6),
        shards=(4, 6, 6),
        index_location=location,
        compressors=BLOSC,
        **kwargs,
    )
    a[...] = data
    return a, data


@pytest.mark.parametrize("location", ["start", "end"])
def test_index_location_layout(store, location):
    a, data = sharded(store, location)
    raw = store.get(a.chunk_key((0, 0, 0)))
    index_size = 2 * 2 * 1 * 16 + 4
    index_bytes = raw[:index_size] if location == "start" else raw[-index_size:]
    entries = np.frombuffer(index_bytes[:-4], "<u8").reshape(2, 2, 1, 2)
    offsets, nbytes = entries[..., 0], entries[..., 1]
    body_start = index_size if location == "start" else 0
    assert offsets.min() == body_start
    assert (offsets + nbytes).max() == (len(raw) if location == "start" else len(raw) - index_size)
    np.testing.assert_array_equal(zarr3_backend.open_array(store)[...], data)


def test_point_read_requests_index_then_chunk_then_cached(store):
    a, data = sharded(store)
    counting = CountingStore(store)
    b = zarr3_backend.open_array(counting)
    counting.reset()
    np.testing.assert_array_equal(b[:, 1, 2], data[:, 1, 2])
    shards_touched = 2
    assert counting.counts["get_many"] == 2  # one batched round for indexes, one for inner chunks
    assert len(counting.requests) == 2 * shards_touched
    assert all(r.is_suffix for _, r in counting.requests[:shards_touched])
    counting.reset()
    np.testing.assert_array_equal(b[:, 1, 3], data[:, 1, 3])
    # the cached indexes are read again beside the chunks they locate (their generation proves nothing): one round
    assert counting.counts["get_many"] == 1 and len(counting.requests) == 2 * shards_touched
    assert sum(r.is_suffix for _, r in counting.requests) == shards_touched


def test_whole_shard_read_is_one_request(store):
    a, data = sharded(store)
    counting = CountingStore(store)
    b = zarr3_backend.open_array(counting)
    counting.reset()
    np.testing.assert_array_equal(b[:4, :6], data[:4, :6])
    assert counting.requests == [(a.chunk_key((0, 0, 0)), None)]


def test_adjacent_inner_chunks_are_coalesced(store):
    a, data = sharded(store)
    counting = CountingStore(store)
    b = zarr3_backend.open_array(counting)
    b[0, 0, 0]  # warm the index of shard (0, 0, 0)
    counting.reset()
    np.testing.assert_array_equal(b[:4, :3], data[:4, :3])  # two inner chunks of one shard
    chunks = [r for _, r in counting.requests if not r.is_suffix]  # and the index, checked
    assert len(counting.requests) == 2 and len(chunks) == 1 and chunks[0] is not None


def test_empty_inner_chunks_are_marked_and_read_as_fill(store):
    a = zarr3_backend.create_array(
        store, shape=(4, 4), dtype="int32", chunks=(2, 2), shards=(4, 4), fill_value=-1
    )
    a[:2, :2] = 5
    raw = store.get(a.chunk_key((0, 0)))
    entries = np.frombuffer(raw[-(4 * 16 + 4) : -4], "<u8").reshape(2, 2, 2)
    assert (entries[0, 1] == 2**64 - 1).all() and (entries[1, :] == 2**64 - 1).all()
    expected = np.full((4, 4), -1)
    expected[:2, :2] = 5
    np.testing.assert_array_equal(a[...], expected)


def test_partial_edge_shard(store):
    data = np.arange(7 * 5).reshape(7, 5).astype("uint16")
    a = zarr3_backend.create_array(store, shape=(7, 5), dtype="uint16", chunks=(2, 2), shards=(4, 4))
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5:, 3:], data[5:, 3:])


def test_nested_sharding(store):
    inner = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2, 2],
            "codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "gzip", "configuration": {"level": 1}},
            ],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "start",
        },
    }
    outer = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [4, 4],
            "codecs": [inner],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        },
    }
    data = np.arange(64, dtype="int64").reshape(8, 8)
    a = zarr3_backend.create_array(store, shape=(8, 8), dtype="int64", chunks=(8, 8), codecs=[outer])
    a[...] = data
    np.testing.assert_array_equal(zarr3_backend.open_array(store)[...], data)
    np.testing.assert_array_equal(zarr3_backend.open_array(store)[5, 1:7], data[5, 1:7])


def test_index_checksum_mismatch_names_key(store):
    a, _ = sharded(store)
    key = a.chunk_key((1, 0, 0))
    raw = bytearray(store.get(key))
    raw[-10] ^= 0xFF
    store.set(key, bytes(raw))
    with pytest.raises(ChecksumError, match=key.replace("/", ".")):
        zarr3_backend.open_array(store)[4:, :6]
    with pytest.raises(ChecksumError, match="c/1/0/0"):
        zarr3_backend.open_array(store)[5, 1, 1]


def test_truncated_shard_is_an_error_not_fill(store):
    a, _ = sharded(store)
    key = a.chunk_key((0, 1, 0))
    raw = store.get(key)
    store.set(key, raw[:-200] + raw[-68:])  # body cut short, index intact
    with pytest.raises(CorruptShardError, match="c/0/1/0"):
        zarr3_backend.open_array(store)[:4, 6:]
    with pytest.raises(CorruptShardError, match="truncated"):
        zarr3_backend.open_array(store)[3, 11, 5]
    store.set(key, raw[:20])
    with pytest.raises(CorruptShardError, match="truncated"):
        zarr3_backend.open_array(store)[:4, 6:]


def test_corrupt_inner_chunk_names_key(store):
    a, _ = sharded(store)
    key = a.chunk_key((0, 0, 0))
    raw = bytearray(store.get(key))
    raw[0:16] = b"\xff" * 16  # the blosc header of the first inner chunk
    store.set(key, bytes(raw))
    with pytest.raises(CodecError, match="c/0/0/0"):
        zarr3_backend.open_array(store)[:4, :6]


def test_shard_not_divisible_by_inner_chunk_is_explained(store):
    with pytest.raises(zarr3_backend.MetadataError, match="not divisible .* dimension 1"):
        zarr3_backend.create_array(store, shape=(64, 60), dtype="int8", chunks=(32, 32), shards=(64, 60))


def test_index_pointing_past_the_end_is_an_error(store):
    a = zarr3_backend.create_array(
        store,
        shape=(4,),
        dtype="int32",
        chunks=(2,),
        shards=(4,),
        index_codecs=[{"name": "bytes", "configuration": {"endian": "little"}}],
    )
    a[...] = [1, 2, 3, 4]
    key = a.chunk_key((0,))
    raw = bytearray(store.get(key))
    entries = np.frombuffer(raw[-32:], "<u8").copy()
    entries[2] = len(raw) * 10  # offset of the second inner chunk, far outside the shard
    raw[-32:] = entries.tobytes()
    store.set(key, bytes(raw))
    with pytest.raises(CorruptShardError, match=f"{key}.*past the end"):
        zarr3_backend.open_array(store)[...]


def test_chunk_checksum_mismatch_names_key(store):
    a = zarr3_backend.create_array(
        store, "v", shape=(6,), dtype="float64", chunks=(3,), compressors=[{"name": "crc32c"}]
    )
    a[...] = np.arange(6.0)
    raw = bytearray(store.get("v/c/1"))
    raw[0] ^= 1
    store.set("v/c/1", bytes(raw))
    with pytest.raises(ChecksumError, match="v/c/1: crc32c checksum mismatch"):
        zarr3_backend.open_array(store, "v")[...]
    assert zarr3_backend.open_array(store, "v")[:3].tolist() == [0.0, 1.0, 2.0]


def test_cached_shard_index_does_not_pin_the_shard_bytes(store):
    a, data = sharded(store)
    b = zarr3_backend.open_array(store)
    np.testing.assert_array_equal(b[...], data)  # whole-shard reads parse the index out of the shard value
    indexes = list(b._index_cache.values())
    assert len(indexes) == 4
    index_size = b.codecs.array_bytes.index_size(b.chunk_spec)
    for index in indexes:  # each holds its own encoded bytes (the entries are theirs, or a view of them)
        assert isinstance(index.encoded, bytes) and len(index.encoded) == index_size
        assert index.entries.nbytes == 2 * 2 * 1 * 16
        assert index.entries.flags.owndata or _memory_owner(index.entries) is index.encoded


def _memory_owner(array: np.ndarray) -> object:
    """The object whose memory ``array`` views: through numpy bases and memoryviews."""
    owner: object = array
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    while isinstance(owner, memoryview):
        owner = owner.obj
    return owner


def test_a_whole_shard_is_stored_as_its_pieces_not_joined(store, monkeypatch):
    a, data = sharded(store)
    stored: list[object] = []
    set_value = store.set
    monkeypatch.setattr(store, "set", lambda key, value: (stored.append(value), set_value(key, value)))
    shard = a.read_chunk((1, 0, 0))
    shard[0, 0, 0] = 42.0
    a.store_chunk((1, 0, 0), shard)
    (value,) = stored
    assert isinstance(value, tuple) and len(value) == 2 * 2 * 1 + 1  # four inner chunks, then the index
    assert b"".join(value) == a.codecs.encode(shard, a.chunk_spec)
    expected = data.copy()
    expected[4, 0, 0] = 42.0
    np.testing.assert_array_equal(a[...], expected)
