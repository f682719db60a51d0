"""``validate_store(arrays=...)``: only the named arrays, their keys listed under their own prefix in batches;
and the listing's progress (``listed``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.cli.check import Listing
from zarr3_backend.store import make_store
from zarr3_backend.testing.stores import CountingStore
from zarr3_backend.validate import validate_store
from zarr3_backend.validate.base import check_chunk_keys


def two_arrays(root: Path) -> Path:
    """``v`` (25 shards) and ``w``, each with a key that is not a chunk."""
    group = zarr3_backend.create_group(root)
    v = group.create_array("v", shape=(25, 4), dtype="float32", chunks=(1, 2), shards=(1, 4))
    v[:] = np.arange(100, dtype="float32").reshape(25, 4)
    group.create_array("w", shape=(4,), dtype="int8", chunks=(2,))[:] = 1
    (root / "v" / "c" / "99").mkdir()
    (root / "v" / "c" / "99" / "0").write_bytes(b"left over")  # outside v's grid
    (root / "w" / "notes.txt").write_text("not a chunk")
    return root


def test_only_the_named_arrays_keys_are_listed_and_checked(tmp_path: Path) -> None:
    store = CountingStore(make_store(str(two_arrays(tmp_path / "s.zarr")), read_only=True))
    problems = validate_store(store, arrays=["v"])
    assert [(p.key, p.check) for p in problems] == [("v/c/99/0", "keys")]
    assert store.counts["list"] == 0 and store.counts["list_prefix"] == 1
    assert [(p.key, p.severity) for p in validate_store(store, arrays=["w"])] == [("w/notes.txt", "warning")]


def test_the_listing_streams_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = two_arrays(tmp_path / "s.zarr")
    monkeypatch.setattr("zarr3_backend.validate.scoped.BATCH", 10)
    seen: list[int] = []
    validate_store(root, arrays=["v"], listed=seen.append)
    assert seen == [10, 20, 26]  # 25 shards and the left-over key, counted as they arrive


def test_the_whole_store_listing_reports_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listing = Listing()
    validate_store(two_arrays(tmp_path / "s.zarr"), listed=listing)
    listing.close()
    assert capsys.readouterr().err == "\rlisted 32 keys\n"  # 3 zarr.json; v: 25 shards, 1 left over; w: 2, 1


def test_deep_checks_the_named_arrays_chunks(tmp_path: Path) -> None:
    root = two_arrays(tmp_path / "s.zarr")
    shard = root / "v" / "c" / "3" / "0"
    shard.write_bytes(shard.read_bytes()[:-3] + b"xyz")  # the crc32c of the index no longer matches
    assert "v/c/3/0" in {p.key for p in validate_store(root, arrays=["v"], deep=True) if p.check == "chunks"}
    assert [p.check for p in validate_store(root, arrays=["w"], deep=True)] == ["keys"]


def test_a_name_that_is_no_array_is_a_problem(tmp_path: Path) -> None:
    root = two_arrays(tmp_path / "s.zarr")
    problems = validate_store(root, arrays=["missing", ""])
    assert [(p.key, p.check) for p in problems] == [
        ("missing/zarr.json", "metadata"),
        ("zarr.json", "metadata"),
    ]
    assert "not found" in problems[0].message and "is a group, not an array" in problems[1].message


def test_the_command_checks_named_arrays(tmp_path: Path) -> None:
    from command import zarr3

    root = two_arrays(tmp_path / "s.zarr")
    result = zarr3("validate", root, "--array", "w")
    assert result.returncode == 0, result.stdout + result.stderr  # a warning only
    assert f"validating {root}, arrays w" in result.stdout and "w/notes.txt" in result.stdout
    assert "v/c/99" not in result.stdout and result.stderr.split() == ["listed", "3", "keys"]
    assert zarr3("validate", root, "--array", "v").returncode == 1  # the chunk outside the grid


def test_the_whole_store_listing_is_checked_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys are checked as the listing streams in: never more than a batch listed and not yet checked."""
    array = zarr3_backend.create_array(tmp_path / "s.zarr", "v", shape=(50,), dtype="int8", chunks=(1,))
    array[:] = 1
    store = make_store(tmp_path / "s.zarr", read_only=True)
    pulled, checked, waiting = [0], [0], []
    listing = store.list

    def counting_list() -> Iterator[str]:
        pulled[0] = 0  # counted per listing
        for key in listing():
            pulled[0] += 1
            yield key

    def counting_check(array: Any, keys: list[str], problems: list[Any]) -> list[str]:
        waiting.append(pulled[0] - checked[0])
        checked[0] += len(keys)
        return check_chunk_keys(array, keys, problems)

    monkeypatch.setattr(store, "list", counting_list)
    monkeypatch.setattr("zarr3_backend.validate.BATCH", 10)
    monkeypatch.setattr("zarr3_backend.validate.KEPT", 20, raising=False)  # past 20 keys, listed again
    monkeypatch.setattr("zarr3_backend.validate.check_chunk_keys", counting_check)
    assert validate_store(store, deep=True) == []
    assert checked[0] == 50 and len(waiting) == 5 and max(waiting) <= 10 + 2  # 2 zarr.json may go by too


def test_a_store_of_fewer_keys_than_kept_is_listed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zarr3_backend.create_array(tmp_path / "s.zarr", "v", shape=(50,), dtype="int8", chunks=(1,))[:] = 1
    store = make_store(tmp_path / "s.zarr", read_only=True)
    calls: list[int] = []
    listing = store.list

    def counted() -> Iterator[str]:
        calls.append(1)
        return listing()

    monkeypatch.setattr(store, "list", counted)
    monkeypatch.setattr("zarr3_backend.validate.KEPT", 50)
    assert validate_store(store, deep=True) == [] and calls == [1]
    monkeypatch.setattr("zarr3_backend.validate.KEPT", 49)
    assert validate_store(store, deep=True) == [] and calls == [1, 1, 1]
