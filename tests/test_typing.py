"""The package type-checks under ``mypy --strict`` with the ``[tool.mypy]`` settings in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]


def _mypy(*targets: Path, cache: Path = ROOT / ".mypy_cache") -> tuple[int, list[str], str]:
    # The package's cache sits in the repository (git-ignored): a second run only rechecks edited modules.
    stdout, stderr, status = api.run(
        [
            "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(cache),
            "--no-error-summary",
            *map(str, targets),
        ]
    )
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    return status, errors, stdout + stderr


def test_package_is_mypy_strict_clean() -> None:
    status, errors, output = _mypy(ROOT / "zarr3_backend")
    assert status == 0 and not errors, f"mypy --strict found {len(errors)} error(s):\n{output}"


def test_config_is_strict(tmp_path: Path) -> None:
    # Guards the check above against a config that quietly stops being strict.
    module = tmp_path / "untyped.py"
    module.write_text("def f(x):\n    return x\n")
    _, errors, output = _mypy(module, cache=tmp_path / "cache")
    assert any("[no-untyped-def]" in line for line in errors), output
