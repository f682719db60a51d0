"""zarr-python >= 3.2 (Python 3.12) as the rectilinear oracle, in its own cached venv, run by subprocess.

The venv lives at ``~/.cache/zarr3_backend/oracle-zarr32`` (or ``$ZARR3_RECTILINEAR_ORACLE``, a python
executable). When missing it is built from pyenv's ``python3.12`` with ``pip install "zarr>=3.2"``;
where that cannot be done, :func:`oracle_python` returns ``None`` and the tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

VENV = Path.home() / ".cache" / "zarr3_backend" / "oracle-zarr32"
PYENV_PYTHONS = sorted((Path.home() / ".pyenv" / "versions").glob("3.1[2-9]*/bin/python"))


def _works(python: Path) -> bool:
    check = "import zarr, sys; v = tuple(map(int, zarr.__version__.split('.')[:2])); sys.exit(v < (3, 2))"
    try:
        return subprocess.run([str(python), "-c", check], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def oracle_python() -> Path | None:
    """A python with zarr-python >= 3.2, found or built once; ``None`` when there is none."""
    if given := os.environ.get("ZARR3_RECTILINEAR_ORACLE"):
        return Path(given) if _works(Path(given)) else None
    python = VENV / "bin" / "python"
    if python.exists() and _works(python):
        return python
    if not PYENV_PYTHONS:
        return None
    try:
        subprocess.run(
            [str(PYENV_PYTHONS[0]), "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=300
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "zarr>=3.2"],
            check=True,
            capture_output=True,
            timeout=900,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return python if _works(python) else None


def run_oracle(python: Path, script: str, **arguments: Any) -> Any:
    """Run ``script`` under the oracle with ``ARGS`` (a dict from ``arguments``); it prints its JSON answer last."""
    prelude = "import json, sys, numpy as np, zarr\nzarr.config.set({'array.rectilinear_chunks': True})\n"
    prelude += f"ARGS = json.loads({json.dumps(json.dumps(arguments))})\n"
    result = subprocess.run(
        [str(python), "-c", prelude + script], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def oracle_or_skip() -> Path:
    """`oracle_python()`, or skip the test when there is none."""
    import pytest

    python = oracle_python()
    if python is None:
        pytest.skip(
            "no zarr-python >= 3.2 oracle (needs Python 3.12 with it; ZARR3_RECTILINEAR_ORACLE names one)"
        )
    return python
