"""`SliceItems` (a slice's per-chunk pieces, made as asked for) and `c_order` (their combinations in C order)."""

import itertools
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr3_backend.core import dim_chunk
from zarr3_backend.core.dim_chunk import c_order
from zarr3_backend.core.indexing import plan_selection
from zarr3_backend.core.slice_items import SliceItems


@st.composite
def progressions(draw):
    dim_len = draw(st.integers(1, 60))
    chunk_len = draw(st.integers(1, 12))
    start = draw(st.integers(0, dim_len - 1))
    step = draw(st.integers(1, 15))
    count = draw(st.integers(1, len(range(start, dim_len, step))))
    return start, step, count, chunk_len, dim_len, draw(st.booleans())


@given(progressions())
def test_the_pieces_cover_the_progression_chunk_by_chunk(p):
    start, step, count, chunk_len, dim_len, reverse = p
    items = SliceItems(start, step, count, chunk_len, dim_len, reverse=reverse)
    positions = start + step * np.arange(count)
    out_of = np.arange(count)[::-1] if reverse else np.arange(count)  # output position of each element
    expected_chunks = sorted(set((positions // chunk_len).tolist()))
    assert [item.chunk_index for item in items] == expected_chunks and len(items) == len(expected_chunks)
    for item in items:
        k = item.chunk_index
        mine = positions // chunk_len == k
        assert item.chunk_sel.step > 0
        assert (np.arange(chunk_len)[item.chunk_sel] + k * chunk_len).tolist() == positions[mine].tolist()
        assert np.arange(count)[item.out_sel].tolist() == out_of[mine].tolist()
        in_array = min(chunk_len, dim_len - k * chunk_len)
        assert item.complete == (sorted((positions[mine] - k * chunk_len).tolist()) == list(range(in_array)))


@given(progressions(), st.data())
def test_pieces_are_a_sequence(p, data):
    start, step, count, chunk_len, dim_len, reverse = p
    items = SliceItems(start, step, count, chunk_len, dim_len, reverse=reverse)
    listed = list(items)
    position = data.draw(st.integers(-len(listed), len(listed) - 1))
    assert items[position] == listed[position]
    cut = slice(
        *data.draw(st.tuples(st.integers(-5, 5), st.integers(-5, 5), st.sampled_from([None, 1, 2, -1])))
    )
    assert items[cut] == listed[cut]
    assert list(items) == listed  # iterated again: equal pieces
    for bad in (len(listed), -len(listed) - 1):
        with pytest.raises(IndexError):
            items[bad]


def test_a_progression_needs_a_positive_step_and_an_element():
    for step, count in ((0, 3), (-1, 3), (1, 0)):
        with pytest.raises(ValueError, match="ascending progression"):
            SliceItems(0, step, count, 4, 10, reverse=False)


@given(st.lists(st.lists(st.integers(0, 9), max_size=4), max_size=4), st.integers(0, 6))
def test_c_order_is_the_product_whatever_it_holds(columns, held):
    original = dim_chunk.HELD_COMBINATIONS
    dim_chunk.HELD_COMBINATIONS = held  # 0: the later columns are made again for every item of the first
    try:
        assert list(c_order(columns)) == list(itertools.product(*columns))
    finally:
        dim_chunk.HELD_COMBINATIONS = original


def test_the_pieces_of_a_long_series_are_not_held():
    plan = plan_selection((slice(None), 3, 5), (1_000_000, 8, 8), (1, 4, 4))
    tracemalloc.start()
    try:
        count = sum(1 for _ in plan.chunks())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 1_000_000
    assert peak < 1 << 20  # held as lists, the pieces alone are 1,000,000 tuples and 2,000,000 slices
