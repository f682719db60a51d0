"""`stored_chunk_count`: the shards a selection's pieces fall in, counted from each dimension alone."""

import bisect
import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from zarr3_backend.core.indexing import plan_selection
from zarr3_backend.nodes.read_windows import stored_chunk_count


@st.composite
def layouts(draw):
    """Per dimension: inner chunks, and the inner chunk each shard starts at (shards of 1-4 inner chunks)."""
    ndim = draw(st.integers(1, 3))
    dims = []
    for _ in range(ndim):
        inner = draw(st.integers(1, 12))
        sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=inner))
        starts = list(itertools.accumulate([0, *sizes]))
        starts = [s for s in starts if s < inner] or [0]
        dims.append((inner, starts))
    return dims


@st.composite
def selections(draw, inner: int):
    kind = draw(st.sampled_from(["int", "slice", "array"]))
    if kind == "int":
        return draw(st.integers(0, inner - 1))
    if kind == "slice":
        start, stop = draw(st.integers(0, inner)), draw(st.integers(0, inner))
        return slice(start, stop, draw(st.sampled_from([1, 2, 3, -1, -2])))
    return np.array(draw(st.lists(st.integers(0, inner - 1), max_size=6)), dtype=np.intp)


@given(layouts(), st.data())
def test_the_count_is_that_of_the_distinct_shards_the_pieces_lie_in(dims, data):
    selection = tuple(data.draw(selections(inner)) for inner, _ in dims)  # one element per inner chunk
    shape = tuple(inner for inner, _ in dims)
    plan = plan_selection(selection, shape, (1,) * len(dims), orthogonal=True)

    def locate(coords):
        outer = tuple(bisect.bisect_right(starts, k) - 1 for k, (_, starts) in zip(coords, dims))
        return outer, tuple(k - starts[o] for k, o, (_, starts) in zip(coords, outer, dims))

    shards = {locate(piece.coords)[0] for piece in plan.chunks()}
    assert stored_chunk_count(plan, locate) == len(shards)
