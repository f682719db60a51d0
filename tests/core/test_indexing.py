"""Selection -> per-chunk plan: numpy (basic and orthogonal) semantics, reads and writes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr3_backend.core.indexing import (
    ArraySelector,
    IntSelector,
    SliceSelector,
    normalize_selection,
    plan_chunks,
    plan_selection,
)
from zarr3_backend.errors import BoundsError

SENTINEL = -999


# --- reference implementation: numpy, one axis at a time ---------------------------------


def _as_index(obj, n):
    """Turn one per-axis selector into an int (dropped axis) or a 1-d index array."""
    if isinstance(obj, slice):
        return np.arange(n)[obj]
    if isinstance(obj, (list, np.ndarray)):
        arr = np.asarray(obj)
        return np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.intp)
    return obj


def _ix(sel, shape):
    """The orthogonal selection as a pure numpy advanced index (np.ix_ over kept axes)."""
    full = _expand(sel, len(shape))
    parts = [_as_index(obj, n) for obj, n in zip(full, shape)]
    kept = [i for i, p in enumerate(parts) if isinstance(p, np.ndarray)]
    out = list(parts)
    for j, i in enumerate(kept):
        shape_j = [1] * len(kept)
        shape_j[j] = -1
        out[i] = parts[i].reshape(shape_j)
    return tuple(out)


def _expand(sel, ndim):
    sel = sel if isinstance(sel, tuple) else (sel,)
    if any(s is Ellipsis for s in sel):
        at = next(i for i, s in enumerate(sel) if s is Ellipsis)
        sel = sel[:at] + (slice(None),) * (ndim - len(sel) + 1) + sel[at + 1 :]
    return sel + (slice(None),) * (ndim - len(sel))


def oindex(a, sel):
    """Orthogonal indexing: numpy applied one axis at a time."""
    axis = 0
    for obj in _expand(sel, a.ndim):
        a = (
            a[(slice(None),) * axis + (obj,)]
            if not isinstance(obj, (list, np.ndarray))
            else np.take(a, _as_index(obj, a.shape[axis]), axis=axis)
        )
        axis += not isinstance(obj, (int, np.integer))
    return a


# --- a chunked copy of an array ----------------------------------------------------------


def to_chunks(a, chunk_shape):
    grid = [-(-n // c) for n, c in zip(a.shape, chunk_shape)]
    padded = np.full([g * c for g, c in zip(grid, chunk_shape)], SENTINEL, dtype=a.dtype)
    padded[tuple(slice(0, n) for n in a.shape)] = a
    return {
        coords: padded[tuple(slice(k * c, (k + 1) * c) for k, c in zip(coords, chunk_shape)) + (...,)].copy()
        for coords in itertools.product(*(range(g) for g in grid))
    }


def from_chunks(chunks, shape, chunk_shape):
    out = np.empty(shape, dtype=np.int64)
    for coords, chunk in chunks.items():
        region = tuple(slice(k * c, min((k + 1) * c, n)) for k, c, n in zip(coords, chunk_shape, shape))
        out[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
    return out


def read(selection, a, chunk_shape, orthogonal=True):
    sel = plan_selection(selection, a.shape, chunk_shape, orthogonal=orthogonal)
    chunks = to_chunks(a, chunk_shape)
    out = np.full(sel.out_shape, SENTINEL, dtype=a.dtype)
    for item in sel.chunks():
        out[item.out_selection] = chunks[item.coords][item.chunk_selection]
        _check_complete(item, a.shape, chunk_shape)
    return out


def write(selection, a, chunk_shape, value):
    sel = plan_selection(selection, a.shape, chunk_shape, orthogonal=True)
    chunks = to_chunks(a, chunk_shape)
    value = np.broadcast_to(value, sel.out_shape)
    for item in sel.chunks():
        chunks[item.coords][item.chunk_selection] = value[item.out_selection]
    return from_chunks(chunks, a.shape, chunk_shape)


def _check_complete(item, shape, chunk_shape):
    hit = np.zeros(chunk_shape, dtype=bool)
    hit[item.chunk_selection] = True
    inside = tuple(slice(0, min(c, n - k * c)) for k, c, n in zip(item.coords, chunk_shape, shape))
    assert item.is_complete == bool(hit[inside].all()), item


# --- strategies --------------------------------------------------------------------------

bound = st.none() | st.integers(-14, 14)


@st.composite
def dim_selection(draw, n, orthogonal):
    kinds = ["slice"] + (["int"] if n else []) + (["ints", "bools"] if orthogonal else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "slice":
        return slice(draw(bound), draw(bound), draw(st.none() | st.integers(-6, 6).filter(bool)))
    if kind == "bools":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    values = draw(st.lists(st.integers(-n, n - 1), max_size=7)) if n else []
    return draw(st.sampled_from([list, np.array]))(values)


@st.composite
def case(draw, orthogonal=True):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 11), min_size=ndim, max_size=ndim)))
    chunk_shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    sel = [draw(dim_selection(n, orthogonal)) for n in shape]
    if draw(st.booleans()) and sel:  # an Ellipsis replacing a run of full slices
        lo = draw(st.integers(0, ndim))
        hi = draw(st.integers(lo, ndim))
        sel = sel[:lo] + [Ellipsis] + sel[hi:]
    else:  # or trailing full slices left out
        sel = sel[: draw(st.integers(0, ndim))]
    selection = sel[0] if len(sel) == 1 and draw(st.booleans()) else tuple(sel)
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape), chunk_shape, selection


# --- properties --------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(case())
def test_orthogonal_read_matches_numpy(c):
    a, chunk_shape, selection = c
    expected = oindex(a, selection)
    np.testing.assert_array_equal(read(selection, a, chunk_shape), expected)
    np.testing.assert_array_equal(a[_ix(selection, a.shape)], expected)  # the reference agrees with itself
    assert plan_selection(selection, a.shape, chunk_shape, orthogonal=True).out_shape == expected.shape


@settings(max_examples=300, deadline=None)
@given(case(orthogonal=False))
def test_basic_read_matches_numpy(c):
    a, chunk_shape, selection = c
    np.testing.assert_array_equal(read(selection, a, chunk_shape, orthogonal=False), a[selection])


@settings(max_examples=300, deadline=None)
@given(case(), st.booleans())
def test_write_matches_numpy(c, scalar):
    a, chunk_shape, selection = c
    out_shape = plan_selection(selection, a.shape, chunk_shape, orthogonal=True).out_shape
    value = (
        np.int64(-5) if scalar else -np.arange(int(np.prod(out_shape)), dtype=np.int64).reshape(out_shape) - 1
    )
    expected = a.copy()
    expected[_ix(selection, a.shape)] = value
    np.testing.assert_array_equal(write(selection, a, chunk_shape, value), expected)


@settings(max_examples=150, deadline=None)
@given(case())
def test_orthogonal_selection_replans_inside_a_chunk(c):
    """Splitting each chunk's part again by inner chunks (sharding) gives the same data."""
    a, chunk_shape, selection = c
    chunks = to_chunks(a, chunk_shape)
    inner_shape = tuple(max(1, c // 2) for c in chunk_shape)
    for item in plan_chunks(selection, a.shape, chunk_shape, orthogonal=True):
        chunk = chunks[item.coords]
        expected = chunk[item.chunk_selection]
        got = read(item.orthogonal_selection, chunk, inner_shape)
        np.testing.assert_array_equal(got, expected)


# --- examples ----------------------------------------------------------------------------


def test_slices_stay_slices():
    items = list(plan_chunks(slice(1, 10, 2), (10,), (4,)))
    assert [i.coords for i in items] == [(0,), (1,), (2,)]
    assert [i.chunk_selection for i in items] == [(slice(1, 4, 2),), (slice(1, 4, 2),), (slice(1, 2, 2),)]
    assert [i.out_selection for i in items] == [(slice(0, 2),), (slice(2, 4),), (slice(4, 5),)]


def test_negative_step_reverses_output_positions():
    items = list(plan_chunks(slice(None, None, -1), (6,), (4,)))
    assert [i.chunk_selection for i in items] == [(slice(0, 4, 1),), (slice(0, 2, 1),)]
    assert [i.out_selection for i in items] == [(slice(5, 1, -1),), (slice(1, None, -1),)]


def test_large_step_skips_empty_chunks():
    items = list(plan_chunks(slice(0, 10**6, 300_000), (10**6,), (10,)))
    assert [i.coords for i in items] == [(0,), (30_000,), (60_000,), (90_000,)]


def test_unsorted_int_array_keeps_output_positions():
    sel = plan_selection([7, 1, 7, 0], (8,), (4,), orthogonal=True)
    items = list(sel.chunks())
    assert [i.coords for i in items] == [(0,), (1,)]
    np.testing.assert_array_equal(items[0].chunk_selection[0], [1, 0])
    np.testing.assert_array_equal(items[0].out_selection[0], [1, 3])
    np.testing.assert_array_equal(items[1].chunk_selection[0], [3, 3])


def test_sorted_int_array_gives_slice_outputs():
    items = list(plan_chunks(np.array([0, 2, 5]), (8,), (4,), orthogonal=True))
    assert [i.out_selection for i in items] == [(slice(0, 2),), (slice(2, 3),)]


def test_out_shape_and_drop_axes():
    sel = plan_selection((1, Ellipsis, [True, False, True]), (4, 5, 3), (2, 2, 2), orthogonal=True)
    assert sel.out_shape == (5, 2)
    assert sel.drop_axes == (0,)
    assert sel.shape == (4, 5, 3)


def test_zero_dimensional():
    items = list(plan_chunks((), (), ()))
    assert [(i.coords, i.chunk_selection, i.out_selection, i.is_complete) for i in items] == [
        ((), (), (), True)
    ]
    assert [i.coords for i in plan_chunks(Ellipsis, (), ())] == [()]


def test_empty_selection_has_no_chunks():
    assert list(plan_chunks(slice(3, 3), (10,), (4,))) == []
    assert list(plan_chunks(slice(None), (0, 5), (4, 4))) == []
    assert plan_selection(slice(None), (0, 5), (4, 4)).out_shape == (0, 5)


def test_edge_chunk_is_complete_when_its_in_array_part_is_covered():
    items = list(plan_chunks(slice(None), (10,), (4,)))
    assert [i.is_complete for i in items] == [True, True, True]
    assert [i.is_complete for i in plan_chunks(slice(1, None), (10,), (4,))] == [False, True, True]
    assert [i.is_complete for i in plan_chunks(slice(0, 9), (10,), (4,))] == [True, True, False]


def test_normalized_selectors():
    dims = normalize_selection((-1, slice(None, None, -2), [-1, 0]), (4, 5, 3), orthogonal=True)
    assert dims[0] == IntSelector(3, 4)
    assert dims[1] == SliceSelector(4, -2, 3, 5)
    assert isinstance(dims[2], ArraySelector) and dims[2].indices.tolist() == [2, 0]


def test_numpy_integer_scalars_and_zero_d_arrays_are_ints():
    assert normalize_selection((np.int64(2), np.array(1)), (3, 3)) == (IntSelector(2, 3), IntSelector(1, 3))


def test_basic_mode_accepts_a_single_array_like_numpy():
    a = np.arange(60).reshape(3, 4, 5)
    for selection in ([2, 0], (slice(None), [3, 1]), (1, [3, 1], slice(2, 4))):
        np.testing.assert_array_equal(read(selection, a, (2, 3, 2), orthogonal=False), a[selection])


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (12, "index 12 is out of bounds for axis 0 with size 10 of array 'temp'; valid indices are -10..9"),
        ((0, -6), "index -6 is out of bounds for axis 1 with size 5"),
        ((0, [1, 5]), "index 5 is out of bounds for axis 1 with size 5"),
        ((0, [-11]), "index -11 is out of bounds for axis 1 with size 5"),
        ((0, 0, 0), "too many indices for array of array 'temp': array is 2-dimensional, but 3 were indexed"),
        ((Ellipsis, 0, Ellipsis), "single ellipsis"),
        (1.5, "only integers, slices"),
        ("a", "only integers, slices"),
        (None, "only integers, slices"),
        (True, "only integers, slices"),
        (slice(0, 2.5), "slice indices must be integers or None"),
        (slice(None, None, 0), "slice step cannot be zero"),
        (np.array([0.5]), "integer or boolean dtype"),
        (np.zeros((2, 2), dtype=int), "index arrays must be 1-d"),
        (np.ones(9, dtype=bool), "boolean index did not match axis 0 of array 'temp': axis has size 10"),
    ],
)
def test_invalid_selections(selection, message):
    with pytest.raises(
        BoundsError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
    ):
        plan_selection(selection, (10, 5), (3, 3), orthogonal=True, where="temp")


def test_bounds_error_is_an_index_error():
    with pytest.raises(IndexError):
        normalize_selection(3, (0,))


@pytest.mark.parametrize("selection", [([0, 1], [1, 2]), (0, slice(None), [1, 2])])
def test_basic_mode_refuses_vectorized_indexing(selection):
    with pytest.raises(BoundsError, match=r"use \.oindex"):
        normalize_selection(selection, (4, 4, 4))


# --- whole arrays and large integer selections (speed lives in benchmarks/) ----------------


def test_whole_array_plan_covers_every_chunk_completely():
    items = list(plan_chunks(Ellipsis, (100, 40, 40), (10, 10, 10)))
    assert len(items) == 160 and all(i.is_complete for i in items)


def test_large_int_array_plan_groups_by_chunk():
    rng = np.random.default_rng(0)
    indices = rng.integers(0, 10**6, 10**5)
    items = list(plan_chunks(indices, (10**6,), (10**4,), orthogonal=True))
    assert len(items) == 100
    assert sum(i.chunk_selection[0].size for i in items) == indices.size
