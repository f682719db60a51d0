"""MkDocs hooks: the package version in the site's title, and the notebooks' figures as site files.

The version is read from ``pyproject.toml`` (the one place it is set), so the
site always names the release it documents. The figures the notebooks save
(``notebooks/figures/*.png``) are served as ``figures/<name>.png`` without a
copy in ``docs/``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "notebooks" / "figures"


def project_version() -> str:
    """The ``version`` of ``pyproject.toml``'s ``[project]`` table."""
    with open(REPO / "pyproject.toml", "rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def on_config(config: Any) -> Any:
    config.site_name = f"zarr3_backend {project_version()}"
    return config


def on_files(files: Files, config: Any) -> Files:
    for figure in sorted(FIGURES.glob("*.png")):
        files.append(
            File(f"figures/{figure.name}", str(FIGURES.parent), config.site_dir, config.use_directory_urls)
        )
    return files
