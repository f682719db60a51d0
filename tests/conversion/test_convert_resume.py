"""A resumed ``convert`` trusts nothing it recorded: changed sources and changed or missing DST shards are copied
again, a second convert into the same DST is refused naming the first, and ``validate --deep`` checks a converted
store against the checksums convert kept."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from command import zarr3

import zarr3_backend
from zarr3_backend import conversion, convert
from zarr3_backend.conversion import shards as shard_tasks
from zarr3_backend.conversion.progress_record import DONE, PLAN_KEY, RUNNING_KEY
from zarr3_backend.coordination.records import MANIFEST_KEY
from zarr3_backend.errors import ConcurrentWriteError, MetadataError
from zarr3_backend.store import make_store
from zarr3_backend.validate import validate_store

pytestmark = pytest.mark.timeout(120)
ROWS, SHARD = 40, 10  # four shards of two source chunks each


def write_source(path: Path, values: np.ndarray) -> None:
    array = zarr3_backend.create_array(path, "x", shape=(ROWS,), dtype="int32", chunks=(5,), overwrite=True)
    array[:] = values


def interrupted(src: Path, dst: Path, monkeypatch: pytest.MonkeyPatch, *, finished: int = 2) -> None:
    """A convert that verifies the first ``finished`` shards and fails on the others (a killed run's record)."""
    original = conversion.shard_copies

    def first_only(*args: Any) -> Iterator[Any]:
        return (task for task in original(*args) if task.coords[0] < finished)

    def killed(*args: Any) -> None:
        raise RuntimeError("interrupted")

    with monkeypatch.context() as patch:
        patch.setattr(conversion, "shard_copies", first_only)
        patch.setattr(conversion, "_manifest", killed)
        with pytest.raises(RuntimeError, match="interrupted"):
            convert(src, dst, shards=(SHARD,))
    assert sorted(make_store(dst).list_prefix(DONE)) == [f"{DONE}x/c/{i}" for i in range(finished)]


def read(dst: Path) -> np.ndarray:
    return np.asarray(zarr3_backend.open_array(dst, "x")[:])


def test_a_source_rewritten_before_the_resume_is_copied_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    write_source(src, np.arange(ROWS))
    interrupted(src, dst, monkeypatch)
    write_source(src, np.arange(ROWS) * 7)  # same metadata, new values
    summary = convert(src, dst, shards=(SHARD,))
    np.testing.assert_array_equal(read(dst), np.arange(ROWS) * 7)
    assert (summary.copied, summary.skipped, summary.recopied) == (4, 0, 2)


def test_an_unchanged_resume_skips_what_was_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    write_source(src, np.arange(ROWS))
    interrupted(src, dst, monkeypatch)
    summary = convert(src, dst, shards=(SHARD,))
    np.testing.assert_array_equal(read(dst), np.arange(ROWS))
    assert (summary.copied, summary.skipped, summary.recopied) == (2, 2, 0)


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_a_verified_shard_deleted_or_replaced_before_the_resume_is_copied_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    write_source(src, np.arange(ROWS))
    interrupted(src, dst, monkeypatch)
    shard = dst / "x" / "c" / "0"
    if change == "deleted":
        shard.unlink()
    else:
        shutil.copyfile(dst / "x" / "c" / "1", shard)  # another verified shard, same size
    summary = convert(src, dst, shards=(SHARD,))
    np.testing.assert_array_equal(read(dst), np.arange(ROWS))
    assert (summary.copied, summary.recopied) == (3, 1)


def test_a_broken_done_entry_is_copied_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    write_source(src, np.arange(ROWS))
    interrupted(src, dst, monkeypatch)
    make_store(dst).set(DONE + "x/c/0", b"[" * 100_000)
    summary = convert(src, dst, shards=(SHARD,))
    np.testing.assert_array_equal(read(dst), np.arange(ROWS))
    assert (summary.copied, summary.skipped) == (3, 1)


@pytest.mark.parametrize(
    "key, raw",
    [
        (PLAN_KEY, b"[" * 100_000),
        (PLAN_KEY, b'{"source": 1e999999}'),
        (PLAN_KEY, b"\xff\xfe\x00"),
        (RUNNING_KEY, b'{"host": "h", "pid": Infinity, "since": 0, "run": "r"}'),
        (RUNNING_KEY, b'{"host": "h", "pid": 1, "since": 1e999, "run": "r"}'),
        (RUNNING_KEY, b"1" * 10_000),
    ],
)
def test_hostile_records_raise_metadata_errors_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, raw: bytes
) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    write_source(src, np.arange(ROWS))
    interrupted(src, dst, monkeypatch)
    make_store(dst).set(key, raw)
    with pytest.raises(MetadataError, match=key.replace(".", r"\.")):
        convert(src, dst, shards=(SHARD,))
    convert(src, dst, shards=(SHARD,), overwrite=True)  # the fix the message names
    np.testing.assert_array_equal(read(dst), np.arange(ROWS))


def test_a_second_convert_into_a_running_one_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    write_source(src, np.arange(ROWS))
    started, go = threading.Event(), threading.Event()
    original = shard_tasks.ShardCopy.__call__

    def held(self: shard_tasks.ShardCopy) -> int:
        started.set()
        assert go.wait(60)
        return original(self)

    monkeypatch.setattr(shard_tasks.ShardCopy, "__call__", held)
    outcome: list[object] = []
    first = threading.Thread(target=lambda: outcome.append(convert(src, dst, shards=(SHARD,))))
    first.start()
    try:
        assert started.wait(60)
        for overwrite in (False, True):
            with pytest.raises(
                ConcurrentWriteError, match=r"convert into this DST is running \(process \d+ on "
            ):
                convert(src, dst, shards=(SHARD,), overwrite=overwrite)
    finally:
        go.set()
        first.join(60)
    assert len(outcome) == 1  # the first one finished
    np.testing.assert_array_equal(read(dst), np.arange(ROWS))


HELD_CONVERT = textwrap.dedent("""
    import os, time
    from zarr3_backend.conversion import convert, shards
    original = shards.ShardCopy.__call__
    def held(self):
        while not os.path.exists({go!r}):
            time.sleep(0.02)
        return original(self)
    shards.ShardCopy.__call__ = held
    convert({src!r}, {dst!r}, shards=(10,))
""")


def test_two_cli_converts_at_once_one_wins_the_other_names_it(tmp_path: Path) -> None:
    src, dst, go = tmp_path / "src.zarr", tmp_path / "dst.zarr", tmp_path / "go"
    write_source(src, np.arange(ROWS))
    script = HELD_CONVERT.format(src=str(src), dst=str(dst), go=str(go))
    first = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not (dst / RUNNING_KEY).exists():
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.02)
        second = zarr3("convert", src, dst, "--shards", "10", "--quiet")
        go.touch()
        assert first.wait(60) == 0
    finally:
        first.kill()
    assert second.returncode == 1
    assert f"another zarr3 convert into this DST is running (process {first.pid} on " in second.stderr
    assert "Traceback" not in second.stderr
    np.testing.assert_array_equal(read(dst), np.arange(ROWS))


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_validate_deep_reports_shards_that_are_not_what_convert_wrote(tmp_path: Path, change: str) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    write_source(src, np.arange(ROWS))
    convert(src, dst, shards=(SHARD,))
    assert validate_store(dst, deep=True) == []
    assert (dst / MANIFEST_KEY).exists()
    shard = dst / "x" / "c" / "2"
    if change == "deleted":
        shard.unlink()
    else:
        shutil.copyfile(dst / "x" / "c" / "1", shard)
    problems = validate_store(dst, deep=True)
    assert [(p.key, p.check) for p in problems] == [("x/c/2", "integrity")]
    assert "not those zarr3 convert wrote and verified" in problems[0].message
