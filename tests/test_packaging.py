"""What an install from this checkout brings: enough that a user's first commands print no dependency warning."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def requirements(extra: str | None) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return list(project["dependencies"]) + (list(project["optional-dependencies"][extra]) if extra else [])


def test_every_user_install_brings_the_checksum_library_numcodecs_asks_for() -> None:
    """numcodecs warns "crc32c usage is deprecated ... install google_crc32c" when it finds only crc32c."""
    for extra in (None, "xarray", "s3", "cloud"):
        names = [re.split(r"[<>=\[; ]", r, maxsplit=1)[0].lower() for r in requirements(extra)]
        assert "google-crc32c" in names, (extra, names)
