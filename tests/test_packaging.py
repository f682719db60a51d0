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


def admitted(extra: str, name: str, python: str, version: str) -> bool:
    """Whether ``extra`` installs release ``version`` of ``name`` on Python ``python`` (its markers evaluated)."""
    from packaging.requirements import Requirement

    env = {"python_version": python, "python_full_version": f"{python}.0", "extra": extra}
    wanted = [Requirement(r) for r in requirements(extra)]
    here = [r for r in wanted if r.name == name and (r.marker is None or r.marker.evaluate(env))]
    return bool(here) and all(r.specifier.contains(version) for r in here)


def test_the_icechunk_extra_brings_icechunk_2_where_python_allows_it() -> None:
    """Icechunk 2 (its repositories 1.x cannot open) needs Python >= 3.12; 3.11 keeps the 1.x line."""
    assert admitted("icechunk", "icechunk", "3.11", "1.1.21")
    assert not admitted("icechunk", "icechunk", "3.11", "2.3.0")
    for python in ("3.12", "3.13"):
        assert admitted("icechunk", "icechunk", python, "2.3.0"), python
        assert not admitted("icechunk", "icechunk", python, "1.1.21"), python


def test_the_test_extras_bring_the_zarr_python_oracle_each_python_can_run() -> None:
    assert admitted("test-core", "zarr", "3.11", "3.1.6") and not admitted(
        "test-core", "zarr", "3.11", "3.4.2"
    )
    assert admitted("test-core", "zarr", "3.12", "3.4.2") and not admitted(
        "test-core", "zarr", "3.12", "3.1.6"
    )
    assert admitted("test-core", "virtualizarr", "3.12", "2.8.0") and not admitted(
        "test", "virtualizarr", "3.11", "2.8.0"
    )


def test_the_classifiers_name_every_python_ci_runs() -> None:
    classifiers = tomllib.loads(PYPROJECT.read_text())["project"]["classifiers"]
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in (11, 12, 13)} <= set(classifiers)


def test_the_ml_extra_pins_ml_dtypes_and_the_tests_install_it() -> None:
    """The ML number formats need ml_dtypes; CI's test install brings it, so their tests run there."""
    assert admitted("ml", "ml_dtypes", "3.11", "0.7.0") and not admitted("ml", "ml_dtypes", "3.11", "0.8.0")
    (own,) = [r for r in requirements("test-core") if r.startswith("zarr3_backend[")]
    assert "ml" in own[own.index("[") + 1 : own.index("]")].split(",")
