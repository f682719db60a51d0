"""``zarr3 info`` and ``tree`` read metadata alone: no listing of an array's chunks unless ``--stored``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.cli.info import print_info
from zarr3_backend.cli.survey import BATCH, count_stored, survey
from zarr3_backend.store import make_store
from zarr3_backend.testing.stores import CountingStore

LISTINGS = ("list", "list_prefix", "list_dir")


def many_shards(root: Path, n: int = 40) -> Path:
    """A group holding ``v`` with ``n`` stored shards and a nested group holding a small array."""
    group = zarr3_backend.create_group(root)
    v = group.create_array("v", shape=(n, 4), dtype="float32", chunks=(1, 2), shards=(1, 4))
    v[:] = np.arange(n * 4, dtype="float32").reshape(n, 4)
    group.create_array("sub/w", shape=(3,), dtype="int8", chunks=(3,))[:] = 1
    return root


def listings(store: CountingStore) -> dict[str, int]:
    return {name: store.counts[name] for name in LISTINGS if store.counts[name]}


def test_info_of_an_array_makes_no_listing_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = CountingStore(make_store(str(many_shards(tmp_path / "s.zarr")), read_only=True))
    print_info(store, "v")
    assert listings(store) == {}
    assert "shards not counted (use --stored)" in capsys.readouterr().out
    assert store.counts["get"] + store.counts["get_many"] + store.counts["exists"] <= 2  # v/zarr.json


def test_info_of_a_group_lists_one_directory_per_group_never_the_chunks(tmp_path: Path) -> None:
    store = CountingStore(make_store(str(many_shards(tmp_path / "s.zarr")), read_only=True))
    found = survey(store, "")
    assert sorted(found.nodes) == ["", "sub", "sub/w", "v"] and found.implicit == frozenset()
    assert listings(store) == {"list_dir": 2} and found.stored is None  # the root and sub, not v


def test_info_of_a_consolidated_group_makes_no_listing_call(tmp_path: Path) -> None:
    root = many_shards(tmp_path / "s.zarr")
    zarr3_backend.consolidate_metadata(root)
    store = CountingStore(make_store(str(root), read_only=True))
    assert sorted(survey(store, "").nodes) == ["", "sub", "sub/w", "v"]
    assert listings(store) == {}


def test_stored_counts_and_sizes_each_array_with_one_streamed_listing(tmp_path: Path) -> None:
    root = many_shards(tmp_path / "s.zarr")
    store = CountingStore(make_store(str(root), read_only=True))
    seen: list[tuple[str, int]] = []
    found = survey(store, "", stored=True, progress=lambda path, n: seen.append((path, n)))
    assert found.stored is not None
    assert found.stored["v"].chunks == 40 and found.stored["sub/w"].chunks == 1
    assert found.stored["v"].nbytes == sum(
        p.stat().st_size for p in (root / "v" / "c").rglob("*") if p.is_file()
    )
    assert store.counts["list_prefix"] == 2 and seen == [("sub/w", 1), ("v", 40)]


def test_stored_reports_progress_per_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = many_shards(tmp_path / "s.zarr", n=25)
    monkeypatch.setattr("zarr3_backend.cli.survey.BATCH", 10)
    seen: list[int] = []
    stored = count_stored(
        make_store(str(root), read_only=True),
        zarr3_backend.open_array(root, "v"),
        lambda _, n: seen.append(n),
    )
    assert stored.chunks == 25 and seen == [10, 20, 25] and BATCH > 10


def test_tree_finds_implicit_groups_without_listing_chunks(tmp_path: Path) -> None:
    root = many_shards(tmp_path / "s.zarr")
    (root / "sub" / "zarr.json").unlink()
    store = CountingStore(make_store(str(root), read_only=True))
    found = survey(store, "")
    assert found.implicit == frozenset({"sub"}) and sorted(found.nodes) == ["", "sub/w", "v"]
    assert set(listings(store)) == {"list_dir"}
