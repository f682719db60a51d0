"""Writes covering part of a shard re-encode only the inner chunks they touch and keep the others' bytes.

Checked against numpy (values), against the shard's bytes before the write
(every inner chunk the write does not touch keeps its encoded bytes, located
through the index), against zarr-python and tensorstore (they read the
result), and by counting inner-chunk encodes and decodes.
"""

from __future__ import annotations

import contextlib
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interop_cases import tensorstore_spec

import zarr3_backend
from zarr3_backend.codecs.chain import CodecChain
from zarr3_backend.codecs.sharding import ShardingCodec
from zarr3_backend.nodes.array import Array
from zarr3_backend.nodes.shard_writes import whole_shard_view, write_block, write_numpy
from zarr3_backend.store.local import LocalStore

pytestmark = pytest.mark.validate_stores

ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def inner_bytes(array: Array) -> dict[tuple[int, ...], bytes]:
    """Every stored inner chunk's encoded bytes, keyed by its global inner-chunk coordinates."""
    codec = array.codecs.array_bytes
    assert isinstance(codec, ShardingCodec)
    found = {}
    for coords in array.metadata.chunk_grid.chunk_coords(array.shape):
        data = array.store.get(array.chunk_key(coords))
        if data is None:
            continue
        index = codec.decode_index(data, array.chunk_spec)
        ratio = index.chunks_per_shard
        for inner in np.ndindex(*ratio):
            byte_range = index.chunk_range(inner)
            if byte_range is not None:
                start, end = byte_range
                found[tuple(c * r + i for c, r, i in zip(coords, ratio, inner))] = bytes(data[start:end])
    return found


def touches(
    coords: tuple[int, ...], chunks: tuple[int, ...], start: tuple[int, ...], stop: tuple[int, ...]
) -> bool:
    return all(c * n < e and (c + 1) * n > s for c, n, s, e in zip(coords, chunks, start, stop))


@st.composite
def partial_writes(draw: Any) -> dict[str, Any]:
    ndim = draw(st.integers(1, 3))
    chunks = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    shape = tuple(draw(st.integers(1, 2 * s + 1)) for s in shards)  # edge shards cut by the array's end
    start = tuple(draw(st.integers(0, n - 1)) for n in shape)
    stop = tuple(draw(st.integers(s + 1, n)) for s, n in zip(start, shape))
    return {
        "chunks": chunks,
        "shards": shards,
        "shape": shape,
        "start": start,
        "stop": stop,
        "compressors": draw(st.sampled_from([[], ["crc32c"], [ZSTD, "crc32c"]])),
        "index_codecs": draw(st.sampled_from([[BYTES], [BYTES, "crc32c"]])),
        "index_location": draw(st.sampled_from(["start", "end"])),
        "seed": draw(st.integers(0, 2**16)),
        "zeros": draw(st.booleans()),
        "view": draw(st.booleans()),  # through whole_shard_view (as region writes with lock=)
    }


def rewritten_shards(case: dict[str, Any]) -> list[tuple[int, ...]]:
    """The shards whose whole part inside the array's shape the write's box covers."""
    found = []
    for shard in np.ndindex(*(-(-n // s) for n, s in zip(case["shape"], case["shards"]))):
        lo = [i * s for i, s in zip(shard, case["shards"])]
        hi = [min(n, o + s) for n, o, s in zip(case["shape"], lo, case["shards"])]
        if all(a <= o and b >= h for a, b, o, h in zip(case["start"], case["stop"], lo, hi)):
            found.append(shard)
    return found


def initial_values(case: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Random small integers; about a third of the inner chunks all fill (0), so shards have empty entries."""
    values = rng.integers(1, 4, case["shape"]).astype("int16")
    grid = tuple(-(-n // c) for n, c in zip(case["shape"], case["chunks"]))
    empty = rng.random(grid) < 0.35
    for coords in zip(*np.nonzero(empty)):
        values[tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, case["chunks"]))] = 0
    return values


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=partial_writes())
def test_partial_writes_match_numpy_keep_untouched_bytes_and_interoperate(case: dict[str, Any]) -> None:
    zarr = pytest.importorskip("zarr")
    ts = pytest.importorskip("tensorstore")
    rng = np.random.default_rng(case["seed"])
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "a"
        array = zarr3_backend.create_array(
            str(path),
            shape=case["shape"],
            dtype="int16",
            chunks=case["chunks"],
            shards=case["shards"],
            fill_value=0,
            compressors=case["compressors"],
            index_codecs=case["index_codecs"],
            index_location=case["index_location"],
        )
        whole = whole_shard_view(array)  # values beyond the edge too: rows another writer is appending
        expected = initial_values({**case, "shape": whole.shape}, rng)
        whole[...] = expected
        before = inner_bytes(whole)
        box = tuple(slice(s, e) for s, e in zip(case["start"], case["stop"]))
        shape = expected[box].shape
        update = np.zeros(shape, "int16") if case["zeros"] else rng.integers(0, 3, shape).astype("int16")
        with counted_encodes(case["chunks"]) as encodes:
            write_numpy(whole if case["view"] else array, case["start"], update)
        expected[box] = update
        rewritten = [] if case["view"] else rewritten_shards(case)
        for shard in rewritten:  # a block covering a shard's part inside the shape writes the shard anew
            region = tuple(slice(i * n, (i + 1) * n) for i, n in zip(shard, case["shards"]))
            inside = expected[region].copy()[
                tuple(slice(0, max(0, n - r.start)) for n, r in zip(case["shape"], region))
            ]
            expected[region] = 0
            expected[region][tuple(slice(0, m) for m in inside.shape)] = inside

        np.testing.assert_array_equal(whole[...], expected)
        after = inner_bytes(whole)
        ratio = tuple(s // c for s, c in zip(case["shards"], case["chunks"]))
        touched = [c for c in np.ndindex(*(n // c for n, c in zip(whole.shape, case["chunks"])))]
        touched = [
            c
            for c in touched
            if touches(c, case["chunks"], case["start"], case["stop"])
            or tuple(i // r for i, r in zip(c, ratio)) in rewritten
        ]
        for coords, data in before.items():
            if coords not in touched:
                assert after.get(coords) == data, f"untouched inner chunk {coords} changed"
        assert {c for c in after if c not in touched} <= set(before)
        inner = [tuple(slice(i * n, (i + 1) * n) for i, n in zip(c, case["chunks"])) for c in touched]
        assert len(encodes) == sum(bool(expected[region].any()) for region in inner)  # each touched one, once
        expected = expected[tuple(slice(0, n) for n in case["shape"])]
        np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], expected)
        np.testing.assert_array_equal(
            ts.open(tensorstore_spec(path), open=True).result().read().result(), expected
        )


def test_a_partial_write_into_a_missing_shard_stores_only_its_inner_chunks(tmp_path: Path) -> None:
    array = zarr3_backend.create_array(
        str(tmp_path / "a"), shape=(8, 8), dtype="int16", chunks=(2, 2), shards=(4, 8)
    )
    write_block(array, (1, 3), np.full((2, 2), 5, "int16"))
    assert sorted(inner_bytes(array)) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    expected = np.zeros((8, 8), "int16")
    expected[1:3, 3:5] = 5
    np.testing.assert_array_equal(array[...], expected)


@pytest.mark.parametrize("write_empty_chunks", [False, True])
def test_a_partial_write_leaving_only_fill_deletes_the_shard_unless_asked(
    tmp_path: Path, write_empty_chunks: bool
) -> None:
    array = zarr3_backend.create_array(
        str(tmp_path / "a"), shape=(8, 8), dtype="int16", chunks=(2, 2), shards=(4, 8)
    )
    array[1:3, 3:5] = 5
    write_block(array, (0, 2), np.zeros((4, 4), "int16"), write_empty_chunks=write_empty_chunks)
    assert array.store.exists(array.chunk_key((0, 0))) == write_empty_chunks
    np.testing.assert_array_equal(array[...], np.zeros((8, 8)))


@pytest.mark.parametrize(
    ("start", "size", "whole"),
    [((0, 0), (2, 1), False), ((0, 4), (2, 1), False), ((0, 0), (4, 5), True)],
    ids=["inside", "edge-chunk", "in-bounds-part-through-whole-shard-view"],
)
def test_a_partial_write_keeps_what_lies_beyond_the_arrays_edge(
    tmp_path: Path, start: tuple[int, int], size: tuple[int, int], whole: bool
) -> None:
    """Rows beyond the shape a writer planned from may be another writer's append: a write never resets them."""
    wide = zarr3_backend.create_array(
        str(tmp_path / "a"), shape=(8, 8), dtype="int16", chunks=(2, 2), shards=(4, 8)
    )
    wide[...] = 7
    before = inner_bytes(wide)
    narrow = Array(wide.store, wide.path, wide.metadata.with_shape((8, 5)))  # planned before an append to 8
    write_block(whole_shard_view(narrow) if whole else narrow, start, np.ones(size, "int16"))
    stop = (start[0] + size[0], start[1] + size[1])
    expected = np.full((8, 8), 7)
    expected[start[0] : stop[0], start[1] : stop[1]] = 1
    np.testing.assert_array_equal(wide[...], expected)
    after = inner_bytes(wide)
    assert {c for c in before if after[c] != before[c]} == {
        (r, c) for r in range(4) for c in range(4) if touches((r, c), (2, 2), start, stop)
    }


def test_a_grow_resets_what_an_interrupted_append_left_beyond_the_edge(tmp_path: Path) -> None:
    wide = zarr3_backend.create_array(
        str(tmp_path / "a"), shape=(10, 3), dtype="int16", chunks=(2, 3), shards=(4, 3)
    )
    wide[...] = 7
    array = Array(wide.store, wide.path, wide.metadata.with_shape((5, 3)))  # rows 5..9 were never published
    array.write_metadata(array.metadata)
    array.resize((9, 3))
    expected = np.zeros((9, 3))
    expected[:5] = 7
    np.testing.assert_array_equal(array[...], expected)
    assert not array.store.exists(array.chunk_key((2, 0)))  # wholly beyond the old shape: deleted
    array.resize((12, 3))
    np.testing.assert_array_equal(array[9:], 0)


@contextlib.contextmanager
def counted_encodes(chunks: tuple[int, ...]) -> Iterator[list[tuple[int, ...]]]:
    """The shapes of the inner chunks encoded in the ``with`` block (shard indexes not counted)."""
    encodes: list[tuple[int, ...]] = []
    encode = CodecChain.encode

    def counted(self: CodecChain, chunk: np.ndarray, spec: Any) -> Any:
        if spec.shape == chunks:
            encodes.append(spec.shape)
        return encode(self, chunk, spec)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CodecChain, "encode", counted)
        yield encodes


@pytest.fixture
def inner_codec_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[int, ...]]]:
    """Every codec chain encode and decode, with the shape of what it coded."""
    calls: list[tuple[str, tuple[int, ...]]] = []
    encode, decode = CodecChain.encode, CodecChain.decode

    def counted_encode(self: CodecChain, chunk: np.ndarray, spec: Any) -> Any:
        calls.append(("encode", spec.shape))
        return encode(self, chunk, spec)

    def counted_decode(self: CodecChain, data: Any, spec: Any) -> np.ndarray:
        calls.append(("decode", spec.shape))
        return decode(self, data, spec)

    monkeypatch.setattr(CodecChain, "encode", counted_encode)
    monkeypatch.setattr(CodecChain, "decode", counted_decode)
    return calls


@pytest.fixture
def stored_keys(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys every local-store ``set`` writes."""
    keys: list[str] = []
    original = LocalStore.set

    def counted(self: LocalStore, key: str, value: Any) -> None:
        keys.append(key)
        original(self, key, value)

    monkeypatch.setattr(LocalStore, "set", counted)
    return keys


@pytest.mark.parametrize("backing", ["numpy", "dask"])
def test_a_month_rewrite_of_a_year_shard_codes_only_the_inner_chunks_it_touches(
    tmp_path: Path, backing: str, inner_codec_calls: list[tuple[str, tuple[int, ...]]], stored_keys: list[str]
) -> None:
    time = pd.date_range("2021-01-01", periods=730, freq="D")
    values = np.random.default_rng(0).normal(size=(730, 8, 8)).astype("float32")
    ds = xr.Dataset(
        {n: (("time", "y", "x"), values + i) for i, n in enumerate(["a", "b"])}, coords={"time": time}
    )
    encoding = {n: {"chunks": (73, 4, 4), "shards": (365, 8, 8)} for n in ["a", "b"]}
    ds.to_zarr3(tmp_path / "s.zarr", encoding=encoding)
    before = {n: inner_bytes(zarr3_backend.open_array(tmp_path / "s.zarr", n)) for n in ["a", "b"]}
    month = (
        ds.sel(time="2021-03") + 1
    )  # days 59-89: inner time chunks 0 and 1 of the first shard, both in part
    month = month.chunk() if backing == "dask" else month
    inner_codec_calls.clear()
    stored_keys.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        month.to_zarr3(tmp_path / "s.zarr", region="auto")
    coded = sorted(c for c in inner_codec_calls if c[1] == (73, 4, 4))
    assert (
        coded == [("decode", (73, 4, 4))] * 16 + [("encode", (73, 4, 4))] * 16
    )  # 2 x 2 x 2 per variable, each once
    assert sorted(k for k in stored_keys if "/c/" in k) == ["a/c/0/0/0", "b/c/0/0/0"]  # one put per shard
    expected = ds.copy(deep=True)
    expected.loc[{"time": month.time}] = month
    got = xr.open_dataset(tmp_path / "s.zarr", engine="zarr3").load()
    xr.testing.assert_identical(got, expected)
    for name in ["a", "b"]:
        after = inner_bytes(zarr3_backend.open_array(tmp_path / "s.zarr", name))
        changed = {c for c in before[name] if after[c] != before[name][c]}
        assert changed == {(t, y, x) for t in (0, 1) for y in (0, 1) for x in (0, 1)}


@pytest.mark.parametrize("backing", ["numpy", "dask"])
def test_a_month_rewrite_on_181_latitudes_encodes_only_the_inner_chunks_it_touches(
    tmp_path: Path, backing: str
) -> None:
    """A 1-degree grid: the last row of inner latitude chunks (91..181 of 182) straddles the array's edge."""
    time = pd.date_range("2021-01-01", periods=365, freq="D")
    values = np.random.default_rng(0).normal(size=(365, 181, 36)).astype("float32")
    ds = xr.Dataset({"t2m": (("time", "lat", "lon"), values)}, coords={"time": time})
    ds.to_zarr3(tmp_path / "s.zarr", encoding={"t2m": {"chunks": (73, 91, 9), "shards": (365, 182, 36)}})
    before = inner_bytes(zarr3_backend.open_array(tmp_path / "s.zarr", "t2m"))
    month = ds.sel(time="2021-03") + 1  # days 59-89: inner time chunks 0 and 1, both in part
    month = month.chunk() if backing == "dask" else month
    with counted_encodes((73, 91, 9)) as encodes:
        month.to_zarr3(tmp_path / "s.zarr", region="auto")
    touched = {(t, y, x) for t in (0, 1) for y in (0, 1) for x in range(4)}
    assert len(encodes) == len(touched)  # today's edge re-encoding: 28, the 16 plus 12 more edge chunks
    after = inner_bytes(zarr3_backend.open_array(tmp_path / "s.zarr", "t2m"))
    assert {c for c in before if after[c] != before[c]} == touched
    expected = ds.copy(deep=True)
    expected.loc[{"time": month.time}] = month
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "s.zarr", engine="zarr3").load(), expected)
