"""Copies between sharded arrays of one layout re-encode each shard inner chunk by inner chunk.

The oracle is the copy through memory, ``dst[...] = src[...]``: the same stored bytes when the
codecs match, the same values when they differ. Whether a copy read blocks of its source is
recorded on `Array.planned_read` (every read of a box goes through it): a copy between one layout
reads none, and the copies that cannot re-encode (other layouts, moved pieces) still copy right,
through blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr3_backend
from zarr3_backend.nodes.array import Array

pytestmark = pytest.mark.validate_stores

SHAPE = (12, 10)
#: Shards of the (4, 10) chunks transposed first: an array -> array codec outside the shards.
TRANSPOSED_SHARDS = [
    {"name": "transpose", "configuration": {"order": [1, 0]}},
    {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [5, 2],
            "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes"}],
        },
    },
]


def make(root: Path, name: str, data: np.ndarray | None = None, **options: Any) -> Array:
    options = {"shape": SHAPE, "dtype": "int16", "chunks": (2, 5), "shards": (4, 10), **options}
    array = zarr3_backend.create_array(root / name, **options)
    if data is not None:
        array[...] = data
    return array


def patterned(shape: tuple[int, ...] = SHAPE, seed: int = 0) -> np.ndarray:
    """Random values, with one inner chunk and one whole shard (rows 4-7) of fill (zero)."""
    data = np.random.default_rng(seed).integers(-500, 500, size=shape).astype("int16")
    data[:2, :5] = 0
    data[4:8] = 0
    return data


def stored(array: Array) -> dict[str, bytes | None]:
    coords = list(np.ndindex(*(len(sizes) for sizes in array.chunk_sizes)))
    return dict(zip(map(array.chunk_key, coords), array.stored_bytes(coords), strict=True))


@pytest.fixture
def block_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the arrays whose boxes were read, one entry per read."""
    reads: list[str] = []
    original = Array.planned_read

    def recording(self: Array, *args: Any, **kwargs: Any) -> Any:
        reads.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Array, "planned_read", recording)
    yield reads


def test_a_copy_between_one_layout_stores_what_a_copy_through_memory_stores(
    tmp_path: Path, block_reads: list[str]
) -> None:
    src = make(tmp_path, "src", patterned())
    through_memory = make(tmp_path, "through_memory")
    through_memory[...] = src[...]
    dst = make(
        tmp_path, "dst", np.full(SHAPE, 7, dtype="int16")
    )  # every shard stored: the copy replaces them
    block_reads.clear()
    zarr3_backend.copy_array(src, dst)
    assert block_reads == []
    assert stored(dst) == stored(through_memory)
    assert stored(dst)[dst.chunk_key((1, 0))] is None  # the all-fill shard is deleted, not stored
    np.testing.assert_array_equal(dst[...], patterned())


def test_other_inner_codecs_and_index_placement_are_re_encoded(
    tmp_path: Path, block_reads: list[str]
) -> None:
    src = make(tmp_path, "src", patterned(seed=1), compressors=[{"name": "zstd"}, "crc32c"])
    options: dict[str, Any] = {
        "compressors": [
            {"name": "zstd", "configuration": {"level": 5}}
        ],  # no crc32c; gzip would record the time
        "index_location": "start",
        "chunk_key_encoding": "v2",
    }
    through_memory = make(tmp_path, "through_memory", src[...], **options)
    dst = make(tmp_path, "dst", **options)
    block_reads.clear()
    dst[...] = src
    assert block_reads == []
    assert stored(dst) == stored(through_memory)
    np.testing.assert_array_equal(dst[...], patterned(seed=1))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 13),
    inner=st.integers(1, 4),
    per_shard=st.integers(1, 3),
    fill=st.sampled_from([0, -3]),
    zero_rows=st.sets(st.integers(0, 12)),
    write_empty=st.booleans(),
    compressor=st.sampled_from([None, "zstd"]),  # gzip is left out: its header records the time
)
def test_any_layout_copies_as_through_memory(
    tmp_path_factory: pytest.TempPathFactory,
    rows: int,
    inner: int,
    per_shard: int,
    fill: int,
    zero_rows: set[int],
    write_empty: bool,
    compressor: str | None,
) -> None:
    root = tmp_path_factory.mktemp("layout")
    data = np.arange(rows * 3, dtype="int16").reshape(rows, 3) % 7 - 3
    data[[r for r in zero_rows if r < rows]] = fill
    options: dict[str, Any] = {
        "shape": (rows, 3),
        "chunks": (inner, 3),
        "shards": (inner * per_shard, 3),
        "fill_value": fill,
    }
    src = make(root, "src", data, **options)
    codecs = {} if compressor is None else {"compressors": [{"name": compressor}]}
    through_memory = make(root, "through_memory", **options, **codecs)
    through_memory.set(Ellipsis, src[...], write_empty_chunks=write_empty)
    dst = make(root, "dst", np.full((rows, 3), 5, dtype="int16"), **options, **codecs)
    zarr3_backend.copy_array(src, dst, write_empty_chunks=write_empty)
    assert stored(dst) == stored(through_memory)
    np.testing.assert_array_equal(dst[...], data)


@pytest.mark.parametrize(
    "change",
    [
        {"chunks": (4, 5)},  # other inner chunks
        {"fill_value": 1},  # another fill value: the inner chunks left out differ
        {"dtype": "int32"},  # another data type: values are cast
        {"shards": None, "chunks": (4, 10)},  # not sharded
        {"shards": None, "chunks": (4, 10), "codecs": TRANSPOSED_SHARDS},  # a codec outside the shards
    ],
)
def test_copies_between_other_layouts_go_through_blocks(
    tmp_path: Path, block_reads: list[str], change: dict[str, Any]
) -> None:
    src = make(tmp_path, "src", patterned())
    dst = make(tmp_path, "dst", **change)
    block_reads.clear()
    dst[...] = src
    assert block_reads
    np.testing.assert_array_equal(dst[...], patterned())


def test_a_moved_copy_goes_through_blocks(tmp_path: Path, block_reads: list[str]) -> None:
    src = make(tmp_path, "src", patterned())
    dst = make(tmp_path, "dst")
    block_reads.clear()
    dst[::-1] = src
    assert block_reads
    np.testing.assert_array_equal(dst[...], patterned()[::-1])


@pytest.mark.invalid_store  # the source is damaged on purpose
def test_a_flipped_byte_in_the_source_raises_naming_it_and_leaves_that_shard(tmp_path: Path) -> None:
    src = make(tmp_path, "src", patterned())
    dst = make(tmp_path, "dst", np.full(SHAPE, 7, dtype="int16"))
    before = stored(dst)
    shard = tmp_path / "src" / "c" / "2" / "0"
    raw = bytearray(shard.read_bytes())
    raw[3] ^= 0x40  # inside the first stored inner chunk of shard (2, 0)
    shard.write_bytes(bytes(raw))
    with pytest.raises(zarr3_backend.ChecksumError, match=r"c/2/0 inner chunk \(0, 0\)"):
        dst[...] = src
    assert stored(dst)[dst.chunk_key((2, 0))] == before[dst.chunk_key((2, 0))]


def test_inner_chunks_another_writer_stored_as_fill_are_left_out(
    tmp_path: Path, block_reads: list[str]
) -> None:
    zarr = pytest.importorskip("zarr")
    data = patterned()
    with zarr.config.set({"array.write_empty_chunks": True}):  # zarr-python then stores fill inner chunks too
        written = zarr.create_array(
            tmp_path / "zarr_python", shape=SHAPE, dtype="int16", chunks=(2, 5), shards=(4, 10)
        )
        written[...] = data
    src = zarr3_backend.open_array(tmp_path / "zarr_python")
    through_memory = make(tmp_path, "through_memory", data)
    dst = make(tmp_path, "dst")
    block_reads.clear()
    dst[...] = src
    assert block_reads == []
    assert stored(dst) == stored(through_memory)
    assert stored(src)[src.chunk_key((1, 0))] is not None  # the fill shard is stored there, and not here
