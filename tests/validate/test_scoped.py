"""``validate_store(arrays=...)``: only the named arrays, their keys listed under their own prefix in batches;
and the listing's progress (``listed``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.cli.check import Listing
from zarr3_backend.store import make_store
from zarr3_backend.testing.stores import CountingStore
from zarr3_backend.validate import validate_store


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
