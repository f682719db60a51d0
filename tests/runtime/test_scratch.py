"""Scratch arrays: reused per thread, one loan at a time, never a view that outlives its ``with`` block."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from forking import in_forked_child

import zarr3_backend
from zarr3_backend.errors import ScratchBufferError, Zarr3Error
from zarr3_backend.runtime.scratch import borrow, in_use

INT32 = np.dtype("int32")


def test_the_same_array_is_lent_again_to_the_same_thread() -> None:
    with borrow((4, 5), INT32) as first:
        first[...] = 7
    with borrow((4, 5), INT32) as second:
        assert second is first  # no allocation per chunk
    with borrow((5, 4), INT32) as other:
        assert other is not first and other.shape == (5, 4)


def test_a_nested_borrow_raises_and_the_loan_ends_with_its_block() -> None:
    with borrow((3,), INT32):
        assert in_use()
        with pytest.raises(ScratchBufferError, match="still lent"), borrow((3,), INT32):
            pass
        with (
            pytest.raises(ScratchBufferError),
            borrow((9, 9), np.dtype("float64")),
        ):  # any shape: one loan per thread
            pass
    assert not in_use()
    assert issubclass(ScratchBufferError, Zarr3Error)


def test_an_exception_in_the_block_ends_the_loan() -> None:
    with pytest.raises(KeyError), borrow((2,), INT32):
        raise KeyError("boom")
    with borrow((2,), INT32) as chunk:
        assert chunk.shape == (2,)


def test_object_arrays_are_never_reused() -> None:
    with borrow((2,), np.dtype(object)) as first:
        first[...] = "held"
    with borrow((2,), np.dtype(object)) as second:
        assert second is not first


def test_threads_get_their_own_arrays_and_loans() -> None:
    seen: dict[str, np.ndarray] = {}
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with borrow((8,), INT32) as chunk:
            seen["thread"] = chunk
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(10)
    try:
        with borrow((8,), INT32) as mine:  # the other thread's loan does not block this one
            assert mine is not seen["thread"] and not np.shares_memory(mine, seen["thread"])
    finally:
        release.set()
        thread.join()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
def test_a_forked_child_borrows_even_when_another_thread_held_a_loan_at_fork() -> None:
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with borrow((8,), INT32):
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(10)
    with borrow((8,), INT32) as parents:
        parents[...] = 1

    def child() -> bool:  # only the forking thread exists here, with its own (free) loan state
        with borrow((8,), INT32) as chunk:
            chunk[...] = 2
            try:
                with borrow((8,), INT32):
                    return False
            except ScratchBufferError:
                pass
        return chunk is parents and not in_use()

    try:
        assert in_forked_child(child)
    finally:
        release.set()
        thread.join()
    with borrow((8,), INT32) as again:
        assert again is parents and (again == 1).all()  # the child's writes stayed in the child


@pytest.mark.parametrize(
    "codecs",
    [
        [
            {"name": "transpose", "configuration": {"order": [1, 0]}},
            "bytes",
            {"name": "zstd", "configuration": {"level": 1}},
        ],
        [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [2, 2],
                    "codecs": ["bytes", "gzip"],
                    "index_codecs": ["bytes"],
                },
            },
            "crc32c",
        ],
        [
            {"name": "transpose", "configuration": {"order": [1, 0]}},
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [2, 2],
                    "codecs": ["bytes", "zstd"],
                    "index_codecs": ["bytes", "crc32c"],
                },
            },
        ],
    ],
)
def test_partial_writes_whose_encoding_needs_a_second_temporary(codecs, tmp_path) -> None:
    """A partial write fills the thread's scratch chunk; encoding it through a transpose or a shard's
    strided inner chunks needs another contiguous copy, which must neither alias nor raise."""
    a = zarr3_backend.create_array(
        str(tmp_path / "a"), shape=(4, 4), dtype="int32", chunks=(4, 4), codecs=codecs, fill_value=-1
    )
    expected = np.full((4, 4), -1, dtype="int32")
    a[1:3, 0:3] = np.arange(6, dtype="int32").reshape(2, 3)
    expected[1:3, 0:3] = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(a[...], expected)
    a[3, :] = 9
    expected[3, :] = 9
    np.testing.assert_array_equal(a[...], expected)
