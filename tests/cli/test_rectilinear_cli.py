"""``zarr3 info``, ``tree`` and ``validate`` on rectilinear grids."""

from __future__ import annotations

import json
from pathlib import Path

from command import zarr3

import zarr3_backend


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "cal.zarr"
    group = zarr3_backend.create_group(root)
    plain = group.create_array(
        "plain", shape=(59, 4), dtype="f4", chunks=[[31, 28], 2], dimension_names=["time", "x"]
    )
    plain[...] = 1
    sharded = group.create_array("sharded", shape=(59, 4), dtype="f4", chunks=[1, 4], shards=[[31, 28], 4])
    sharded[...] = 2
    return root


def test_info_reports_the_lengths_as_written(tmp_path: Path) -> None:
    root = _store(tmp_path)
    result = zarr3("info", "--json", root)
    assert result.returncode == 0, result.stderr
    entries = {e["path"]: e for e in json.loads(result.stdout)}
    assert entries["/plain"]["chunks"] == [[31, 28], 2] and entries["/plain"]["shards"] is None
    assert entries["/sharded"]["chunks"] == [1, 4] and entries["/sharded"]["shards"] == [[31, 28], 4]
    text = zarr3("info", root)
    assert "([31, 28], 4)" in text.stdout and text.returncode == 0
    tree = zarr3("tree", root)
    assert tree.returncode == 0 and "plain" in tree.stdout


def test_validate_deep_passes_and_checks_the_rules(tmp_path: Path) -> None:
    root = _store(tmp_path)
    result = zarr3("validate", "--deep", root)
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads((root / "plain" / "zarr.json").read_text())
    document["chunk_grid"]["configuration"]["chunk_shapes"] = [[31, 27], 2]
    (root / "plain" / "zarr.json").write_text(json.dumps(document))
    broken = zarr3("validate", root)
    assert broken.returncode != 0
    assert "chunk_shapes[0]: the chunk lengths add up to 58, less than the array's length 59" in broken.stdout
