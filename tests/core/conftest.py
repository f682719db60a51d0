"""Fixtures of the core tests: a fresh local store per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from zarr3_backend.store import Store, make_store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """An empty local store under the test's ``tmp_path`` (modules that need another kind define their own)."""
    return make_store(str(tmp_path / "data.zarr"))
