"""The rectilinear chunk grid: metadata rules, grid arithmetic, every selection kind, sharding, resize."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interop_cases import check_reads

import zarr3_backend
from zarr3_backend.core.chunk_grid import parse_chunk_grid
from zarr3_backend.core.metadata import ArrayMetadata
from zarr3_backend.core.rectilinear_grid import ChunkLengths, RectilinearChunkGrid
from zarr3_backend.errors import ArgumentError, MetadataError, UnknownExtensionError

MONTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def grid_json(shapes, kind="inline"):
    return {"name": "rectilinear", "configuration": {"kind": kind, "chunk_shapes": shapes}}


def array_doc(shape, shapes, codecs=None):
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": "int32",
        "chunk_grid": grid_json(shapes),
        "chunk_key_encoding": {"name": "default"},
        "fill_value": -1,
        "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}],
    }


def test_run_length_and_mixed_forms_mean_the_same_lengths():
    grid = parse_chunk_grid(grid_json([[[1, 3], 3], 4]))
    assert isinstance(grid, RectilinearChunkGrid)
    assert grid.dims == (ChunkLengths((1, 1, 1, 3)), 4)
    assert grid.grid_shape((6, 9)) == (4, 3)
    assert grid.sizes((6, 9)) == ((1, 1, 1, 3), (4, 4, 1))


def test_written_compactly():
    grid = parse_chunk_grid(grid_json([MONTHS, 90]))
    assert grid.to_json()["configuration"]["chunk_shapes"] == [
        [31, 28, 31, 30, 31, 30, [31, 2], 30, 31, 30, 31],
        90,
    ]
    assert parse_chunk_grid(grid.to_json()) == grid


def test_element_belongs_to_first_chunk_whose_running_sum_exceeds_it():
    grid = parse_chunk_grid(grid_json([[2, 3, 1]]))
    owners = [grid.locate_inner((i,), (1,))[0][0] for i in range(6)]
    assert owners == [0, 0, 1, 1, 1, 2]
    assert [grid.chunk_origin((k,)) for k in range(3)] == [(0,), (2,), (5,)]
    assert grid.chunk_shape_at((1,)) == (3,)


@pytest.mark.parametrize(
    ("shapes", "field"),
    [
        ([[0, 2]], r"chunk_shapes\[0\]\[0\]: expected a positive"),
        ([[[2, 0]]], r"chunk_shapes\[0\]\[0\]\[1\] \(count\)"),
        ([[[0, 2]]], r"chunk_shapes\[0\]\[0\]\[0\] \(length\)"),
        ([[[2, 1, 1]]], "expected a pair"),
        ([0], "chunk_shapes\\[0\\]: expected a positive integer"),
        ([[2.5]], "chunk_shapes\\[0\\]\\[0\\]"),
        ("x", "expected a list with one entry per dimension"),
    ],
)
def test_bad_lengths_name_the_field(shapes, field):
    with pytest.raises(MetadataError, match=field):
        parse_chunk_grid(grid_json(shapes))


def test_kind_other_than_inline_is_refused_by_name():
    with pytest.raises(UnknownExtensionError, match="kind: 'external' is not supported"):
        parse_chunk_grid(grid_json([3], kind="external"))
    with pytest.raises(MetadataError, match="kind: required"):
        parse_chunk_grid({"name": "rectilinear", "configuration": {"chunk_shapes": [3]}})


def test_lengths_must_cover_the_axis_and_may_overshoot():
    with pytest.raises(
        MetadataError, match=r"chunk_shapes\[0\]: the chunk lengths add up to 5, less than .* 6"
    ):
        ArrayMetadata.from_json(array_doc([6], [[2, 3]]))
    metadata = ArrayMetadata.from_json(array_doc([6], [[2, 3, 10]]))
    assert metadata.chunk_grid.grid_shape((6,)) == (3,)
    assert metadata.to_json()["chunk_grid"] == grid_json([[2, 3, 10]])


def test_hostile_run_lengths_stay_runs_or_are_refused():
    grid = parse_chunk_grid(grid_json([[[1, 10**12]]] * 32))  # 32 dimensions of 10**12 chunks: 32 runs
    assert grid.dims[0].runs == ((1, 10**12),) and grid.grid_shape((5,) * 32) == (5,) * 32
    assert grid.dims[0].start(10**12 - 1) == 10**12 - 1 and grid.dims[0].index_of(123456789) == 123456789
    with pytest.raises(
        MetadataError, match=r"chunk_shapes\[0\]\[1\]: the chunk lengths .* not below 2\*\*63"
    ):
        parse_chunk_grid(grid_json([[[2**62, 1], [2**62, 1]]]))
    with pytest.raises(
        MetadataError, match=r"chunk_shapes\[0\]\[0\]: expected a positive integer below 2\*\*63"
    ):
        parse_chunk_grid(grid_json([[2**63]]))
    with pytest.raises(MetadataError, match=r"chunk_shapes\[0\]\[0\]\[1\] \(count\): .*below 2\*\*63"):
        parse_chunk_grid(grid_json([[[1, 2**64]]]))


def test_rectilinear_inner_chunks_in_sharding_are_refused():
    codecs = [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": [[2, 3]],
                "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes"}],
            },
        }
    ]
    store = zarr3_backend.open_group("memory://rect/refuse", mode="w").store
    store.set("a/zarr.json", json.dumps(array_doc([6], [[6]], codecs)).encode())
    with pytest.raises(MetadataError, match="rectilinear inner chunks"):
        zarr3_backend.open_array(store, "a")  # the chain is built (and checked) when the array opens
    with pytest.raises(MetadataError, match="rectilinear inner chunks"):
        zarr3_backend.Array(store, "a", ArrayMetadata.from_json(array_doc([6], [[6]], codecs))).check_codecs()
    with pytest.raises(MetadataError, match="rectilinear inner chunks"):
        zarr3_backend.create_array("memory://rect/r2", shape=(6,), dtype="i4", chunks=[[2, 4]], shards=[6])


@pytest.fixture
def data():
    return np.arange(59 * 7, dtype="int32").reshape(59, 7)


@pytest.mark.parametrize(
    ("chunks", "shards"),
    [
        ([[31, 28], 3], None),
        ([[5, 1, 20, 33], [2, 5]], None),
        ([[1, 2, 70], 7], None),
        ([1, 7], [[31, 28], 7]),
    ],
    ids=["months", "mixed", "overshoot", "sharded"],
)
def test_every_selection_kind(data, chunks, shards):
    a = zarr3_backend.create_array(
        "memory://rect/sel",
        shape=data.shape,
        dtype="int32",
        chunks=chunks,
        shards=shards,
        fill_value=-1,
        overwrite=True,
    )
    a[...] = data
    check_reads(a, data, f"rectilinear {chunks} {shards}")
    part = data.copy()
    a[3:40:3, 1] = 0
    part[3:40:3, 1] = 0
    a.oindex[[58, 0], [6, 0]] = 9
    part[np.ix_([58, 0], [6, 0])] = 9
    np.testing.assert_array_equal(a[...], part)


def test_missing_chunks_read_the_fill_value():
    a = zarr3_backend.create_array(
        "memory://rect/miss", shape=(10,), dtype="int32", chunks=[[3, 3, 4]], fill_value=5
    )
    a[3:6] = 1
    assert a.nchunks_stored() == 1
    assert a[:].tolist() == [5, 5, 5, 1, 1, 1, 5, 5, 5, 5]


def test_chunks_are_stored_at_their_declared_lengths():
    a = zarr3_backend.create_array(
        "memory://rect/len", shape=(6,), dtype="int8", chunks=[[2, 10]], compressors=None, fill_value=0
    )
    a[:] = 1
    assert (
        len(a.store.get(a.chunk_key((1,)))) == 10
    )  # the last chunk overshoots the array: full declared length
    assert a.chunk_sizes == ((2, 4),)


def test_chunks_property_refuses_and_chunk_sizes_answers():
    a = zarr3_backend.create_array("memory://rect/prop", shape=(59, 4), dtype="int8", chunks=[[31, 28], 4])
    with pytest.raises(ArgumentError, match="chunk_sizes"):
        a.chunks  # noqa: B018
    assert a.chunk_sizes == ((31, 28), (4,))
    s = zarr3_backend.create_array(
        "memory://rect/prop2", shape=(59, 4), dtype="int8", chunks=[1, 4], shards=[[31, 28], 4]
    )
    assert s.chunks == (1, 4) and s.sharded and s.chunk_sizes == ((31, 28), (4,))


def test_inner_chunks_must_divide_every_shard():
    with pytest.raises(MetadataError, match="not divisible"):
        zarr3_backend.create_array(
            "memory://rect/div", shape=(59,), dtype="int8", chunks=[2], shards=[[30, 29]]
        )


def test_growing_extends_the_declaration_and_shrinking_keeps_it():
    a = zarr3_backend.create_array(
        "memory://rect/grow", shape=(5,), dtype="int32", chunks=[[2, 4]], fill_value=0
    )
    a[:] = 1
    a.resize(6)  # within the declared overshoot
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == [[2, 4]]
    a.resize(9)
    assert a.chunk_sizes == ((2, 4, 3),)
    a[6:] = 2
    assert a[:].tolist() == [1, 1, 1, 1, 1, 0, 2, 2, 2]
    a.resize(3)
    a.resize(9)
    assert a[:].tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 0]
    reopened = zarr3_backend.open_array("memory://rect/grow")
    assert json.loads(a.store.get("zarr.json"))["chunk_grid"]["configuration"]["chunk_shapes"] == [[2, 4, 3]]
    assert reopened.chunk_sizes == ((2, 4, 3),)


@st.composite
def _lengths_and_selection(draw):
    n = draw(st.integers(0, 40))
    lengths = draw(st.lists(st.integers(1, 9), min_size=1, max_size=12).filter(lambda ls: sum(ls) >= n))
    start = draw(st.none() | st.integers(-n - 2, n + 2))
    stop = draw(st.none() | st.integers(-n - 2, n + 2))
    step = draw(st.none() | st.integers(-7, 7).filter(lambda s: s != 0))
    indices = draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=8)) if n else []
    return n, lengths, slice(start, stop, step), indices


@settings(max_examples=150, deadline=None)
@given(_lengths_and_selection())
def test_selections_match_numpy_on_any_lengths(case):
    n, lengths, sel, indices = case
    data = np.arange(n * 3, dtype="int32").reshape(n, 3)
    a = zarr3_backend.create_array(
        "memory://rect/prop/a",
        shape=(n, 3),
        dtype="int32",
        chunks=[lengths, 2],
        fill_value=-1,
        overwrite=True,
    )
    a[...] = data
    np.testing.assert_array_equal(a[sel, 1:], data[sel, 1:])
    np.testing.assert_array_equal(a.oindex[indices, [2, 0]], data[np.ix_(indices, [2, 0])])
    a[sel, 0] = -7
    data[sel, 0] = -7
    np.testing.assert_array_equal(a[...], data)
