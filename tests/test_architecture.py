"""docs/architecture.md matches the package: it names no module that does not exist, and every write module."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = (REPO / "docs" / "architecture.md").read_text()
WRITE_PACKAGES = ("xarray/write", "writes", "dask")


def test_every_module_path_the_page_names_exists() -> None:
    named = set(re.findall(r"`([\w/]+\.py)", PAGE))
    missing = sorted(
        p
        for p in named
        if not any((REPO / root / p).exists() for root in ("zarr3_backend", ".", "tests", "benchmarks"))
    )
    assert missing == []


def test_every_write_module_is_named() -> None:
    modules = [p for package in WRITE_PACKAGES for p in (REPO / "zarr3_backend" / package).glob("*.py")]
    modules.append(REPO / "zarr3_backend" / "cubed.py")
    unnamed = sorted(
        str(p.relative_to(REPO))
        for p in modules
        if p.stem != "__init__" and not re.search(rf"`[\w/.]*\b{p.stem}(\.py)?\b", PAGE)
    )
    assert unnamed == []
