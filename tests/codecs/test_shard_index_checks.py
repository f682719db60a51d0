"""`ShardIndex.validate`: the check of a few entries as Python ints says what the numpy check says, word for word."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr3_backend.codecs import shard_index
from zarr3_backend.codecs.shard_index import ShardIndex
from zarr3_backend.errors import CorruptShardError

EMPTY = 2**64 - 1
_ENTRY = st.one_of(
    st.just(EMPTY), st.integers(0, 200), st.integers(2**64 - 300, 2**64 - 2), st.integers(0, 2**64 - 1)
)


def _verdict(index: ShardIndex, shard_size: int | None) -> str:
    try:
        index.validate("shard c/0", shard_size)
    except CorruptShardError as exc:
        return str(exc)
    return "valid"


@given(
    st.lists(st.tuples(_ENTRY, _ENTRY), min_size=1, max_size=8),
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 400)),
)
def test_few_entries_are_checked_as_numpy_checks_them(pairs, as_empty_pairs, shard_size):
    if as_empty_pairs:  # mostly well-formed: both halves empty, or neither
        pairs = [(EMPTY, EMPTY) if o == EMPTY or n == EMPTY else (o, n) for o, n in pairs]
    index = ShardIndex(np.array(pairs, dtype=np.uint64).reshape(len(pairs), 1, 2))
    as_ints = _verdict(index, shard_size)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shard_index, "_CHECKED_AS_INTS", 0)  # every index checked with numpy
        assert _verdict(index, shard_size) == as_ints


def test_an_entry_that_wraps_past_two_to_the_64_is_refused_with_its_wrapped_end():
    index = ShardIndex(np.array([[[10, 2**64 - 5]]], dtype=np.uint64))
    with pytest.raises(CorruptShardError, match="ends at byte 5, the shard has 100 bytes"):
        index.validate("shard c/0", 100)
