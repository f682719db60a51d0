"""Fixtures of the ``zarr3`` command's tests: a small store with every kind of node the commands describe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr3_backend


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A group with attributes, a sharded array with crc32c, a nested group holding a small array."""
    root = tmp_path / "s.zarr"
    group = zarr3_backend.create_group(root, attributes={"title": "test store"})
    t2m = group.create_array("t2m", shape=(8, 6), dtype="float32", chunks=(2, 3), shards=(4, 6),
                             compressors=[{"name": "zstd"}, "crc32c"], dimension_names=["time", "lat"],
                             attributes={"units": "K"}, fill_value=-1)  # fmt: skip
    t2m[:] = np.arange(48).reshape(8, 6)
    group.create_array("sub/flag", shape=(3,), dtype="bool", chunks=(3,))[:] = True
    return root
