"""Array reads and writes through the public API, against numpy as the model."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr3_backend
from zarr3_backend import BoundsError, ReadOnlyError
from zarr3_backend.store import make_store
from zarr3_backend.testing.stores import CountingStore

pytestmark = pytest.mark.validate_stores


def test_roundtrip_with_edge_chunks(store):
    data = np.arange(10 * 13, dtype="int32").reshape(10, 13)
    a = zarr3_backend.create_array(store, "a", shape=data.shape, dtype="int32", chunks=(3, 4))
    a[...] = data
    np.testing.assert_array_equal(zarr3_backend.open_array(store, "a")[...], data)
    np.testing.assert_array_equal(a[2:9:3, ::-2], data[2:9:3, ::-2])
    assert a[4, 5] == data[4, 5]


def test_unwritten_array_reads_fill_value(store):
    a = zarr3_backend.create_array(store, shape=(5, 5), dtype="float64", chunks=(2, 2), fill_value=np.nan)
    assert np.isnan(a[...]).all()
    assert a.nchunks_stored() == 0


def test_fill_chunks_are_not_stored_and_are_deleted(store):
    a = zarr3_backend.create_array(store, shape=(8,), dtype="uint8", chunks=(4,), fill_value=7)
    a[:] = 7
    assert a.nchunks_stored() == 0
    a[:2] = 1
    assert a.nchunks_stored() == 1
    a[:] = 7
    assert a.nchunks_stored() == 0


def test_partial_chunk_write_keeps_neighbours(store):
    a = zarr3_backend.create_array(store, shape=(6, 6), dtype="int16", chunks=(4, 4))
    a[...] = 1
    a[1:3, 2:5] = 9
    expected = np.ones((6, 6), "int16")
    expected[1:3, 2:5] = 9
    np.testing.assert_array_equal(a[...], expected)


def test_complete_chunk_write_does_not_read(store):
    counting = CountingStore(store)
    a = zarr3_backend.create_array(counting, shape=(8, 8), dtype="float32", chunks=(4, 4), shards=(8, 8))
    counting.reset()
    a[...] = np.ones((8, 8), "float32")
    assert counting.counts["get_many"] == 0  # no chunk is partial: no lookup at all
    assert counting.requests == []


def test_orthogonal_selection(store):
    data = np.arange(7 * 9 * 4).reshape(7, 9, 4)
    a = zarr3_backend.create_array(
        store, shape=data.shape, dtype=data.dtype, chunks=(2, 4, 3), shards=(4, 8, 3)
    )
    a[...] = data
    rows, cols = np.array([6, 0, 3, 3]), np.array([True, False] * 4 + [True])
    np.testing.assert_array_equal(a.oindex[rows, cols, 1:], data[rows][:, cols][:, :, 1:])
    a.oindex[[0, 2], [1, 8], :] = -1
    data[np.ix_([0, 2], [1, 8])] = -1
    np.testing.assert_array_equal(a[...], data)


def test_zero_dimensional_array(store):
    a = zarr3_backend.create_array(store, shape=(), dtype="complex128", fill_value=1 + 2j)
    assert a[()] == 1 + 2j
    a[()] = 3 - 1j
    assert zarr3_backend.open_array(store)[()] == 3 - 1j
    assert store.get("c") is not None


def test_out_of_bounds_selection_names_array(store):
    a = zarr3_backend.create_array(store, "temp", shape=(4,), dtype="int8", chunks=(2,))
    with pytest.raises(BoundsError, match="temp"):
        a[4]
    with pytest.raises(IndexError):
        a[:, 1]


def test_read_only_array_refuses_writes(store):
    zarr3_backend.create_array(store, shape=(4,), dtype="int8", chunks=(2,))
    a = zarr3_backend.open_array(store.__class__(store.root, read_only=True))
    with pytest.raises(ReadOnlyError):
        a[0] = 1


def test_resize_shrink_then_grow_shows_fill(store):
    a = zarr3_backend.create_array(store, shape=(10,), dtype="int32", chunks=(4,), fill_value=-1)
    a[:] = np.arange(10)
    a.resize(5)
    assert a.nchunks_stored() == 2
    a.resize(12)
    expected = np.full(12, -1)
    expected[:5] = np.arange(5)
    np.testing.assert_array_equal(zarr3_backend.open_array(store)[...], expected)


def test_attributes_persist(store):
    a = zarr3_backend.create_array(store, "x", shape=(2,), dtype="int8", attributes={"units": "K"})
    a.attrs["long_name"] = "air temperature"
    assert zarr3_backend.open_array(store, "x").attrs.asdict() == {
        "units": "K",
        "long_name": "air temperature",
    }


def test_strings_roundtrip(store):
    words = np.array(["", "α", "hello", "zarr"] * 3, dtype=object)
    a = zarr3_backend.create_array(store, shape=(12,), dtype=str, chunks=(5,))
    a[...] = words
    np.testing.assert_array_equal(zarr3_backend.open_array(store)[...], words)


def test_datetime_roundtrip(store):
    times = np.array(["2020-01-01", "NaT", "2021-06-30T12:00"], dtype="datetime64[ns]")
    a = zarr3_backend.create_array(store, shape=(3,), dtype=times.dtype, chunks=(2,))
    a[...] = times
    np.testing.assert_array_equal(a[...], times)


def test_array_pickles(store):
    import pickle

    a = zarr3_backend.create_array(store, shape=(4,), dtype="int8", chunks=(2,))
    a[...] = [1, 2, 3, 4]
    b = pickle.loads(pickle.dumps(a))
    assert b[...].tolist() == [1, 2, 3, 4]


#: What an array builds for reads only: the read unit its selections are planned on, and the read-ahead.
READ_MACHINERY = {"_read_unit", "_read_ahead"}


def test_writes_build_no_read_machinery():
    """Whole shards, partial shards and a write task's unpickled copy encode through the codec chain alone;
    the chain itself is built when the array first codes, and the read machinery on the first read."""
    import pickle

    from zarr3_backend.nodes.shard_writes import write_block

    a = zarr3_backend.create_array(
        "memory://nodes/write_only", shape=(8, 6), dtype="int16", chunks=(2, 3), shards=(4, 6)
    )
    assert "_chain" not in vars(a)  # created or planned: nothing built yet
    a[...] = np.arange(48).reshape(8, 6)  # whole shards, encoded without a read
    write_block(a, (4, 0), np.ones((2, 6), "int16"))  # part of a shard: merged into the stored bytes
    assert "_chain" in vars(a) and READ_MACHINERY.isdisjoint(vars(a))
    task_copy = pickle.loads(pickle.dumps(a))  # what a write task receives
    write_block(task_copy, (0, 0), np.zeros((4, 6), "int16"))
    assert READ_MACHINERY.isdisjoint(vars(task_copy))
    expected = np.arange(48).reshape(8, 6)
    expected[:4] = 0
    expected[4:6] = 1
    np.testing.assert_array_equal(a[...], expected)
    assert READ_MACHINERY <= set(vars(a))


def test_opening_still_checks_the_codec_chain():
    """The chain is built on first use, but opening builds it at once: an unknown codec is refused at open."""
    import json

    store = make_store("memory://nodes/unknown_codec")
    zarr3_backend.create_array(store, "a", shape=(4,), dtype="int8", chunks=(2,))
    document = json.loads(store.get("a/zarr.json") or b"")
    document["codecs"].append({"name": "no-such-codec"})
    store.set("a/zarr.json", json.dumps(document).encode())
    with pytest.raises(zarr3_backend.UnknownExtensionError, match=r"no-such-codec"):
        zarr3_backend.open_array(store, "a")


shapes = st.lists(st.integers(0, 9), min_size=1, max_size=3)


@st.composite
def array_and_selection(draw):
    shape = tuple(draw(shapes))
    chunks = tuple(draw(st.integers(1, 4)) for _ in shape)
    factors = tuple(draw(st.integers(1, 3)) for _ in shape)
    selection = tuple(
        slice(
            draw(st.integers(-n - 1, n + 1)),
            draw(st.integers(-n - 1, n + 1)),
            draw(st.sampled_from([1, 2, 3, -1])),
        )
        for n in shape
    )
    return shape, chunks, factors, selection


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=array_and_selection(), sharded=st.booleans())
def test_read_and_write_match_numpy(tmp_path_factory, case, sharded):
    shape, chunks, factors, selection = case
    store = make_store("memory://" + str(tmp_path_factory.mktemp("h")))
    shards = tuple(c * f for c, f in zip(chunks, factors)) if sharded else None
    data = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    a = zarr3_backend.create_array(
        store, shape=shape, dtype="int32", chunks=chunks, shards=shards, fill_value=-5
    )
    a[...] = data
    np.testing.assert_array_equal(a[selection], data[selection])
    data[selection] = -data[selection] - 1
    a[selection] = data[selection]
    np.testing.assert_array_equal(zarr3_backend.open_array(store)[...], data)


def test_values_that_do_not_fit_the_selection_are_refused_by_array_name(tmp_path):
    array = zarr3_backend.create_array(tmp_path, "a", shape=(4, 4), dtype="f8", chunks=(2, 2))
    with pytest.raises(
        zarr3_backend.ArgumentError,
        match=r"array '/a': cannot write a value of shape \(3,\) into a selection of shape \(2, 4\)",
    ):
        array[0:2] = np.ones(3)
    with pytest.raises(ValueError, match=r"array '/a'.*data type float64"):
        array[0, 0] = "x"
    with pytest.raises(zarr3_backend.ArgumentTypeError, match=r"array '/a'"):
        array[0, 0] = object()
    assert not array[...].any()  # nothing was written


@pytest.mark.parametrize("opener", [zarr3_backend.open, zarr3_backend.open_group, zarr3_backend.open_array])
def test_unknown_modes_are_refused(tmp_path, opener):
    zarr3_backend.create_array(tmp_path, "a", shape=(2,), dtype="f8")
    with pytest.raises(
        zarr3_backend.ArgumentError, match=r"mode must be one of 'r', 'r\+', 'a', 'w', 'w-', got 'rw'"
    ):
        opener(tmp_path, "a" if opener is zarr3_backend.open_array else "", mode="rw")
