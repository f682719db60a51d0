"""A newer zarr-python (Python 3.12) as a test oracle, in its own cached venv, run by subprocess.

Used for what zarr-python 3.1 (our in-process oracle) cannot do: rectilinear chunk grids (zarr >= 3.2)
and the ``scale_offset`` / ``cast_value`` codecs and ``struct`` data type (zarr >= 3.4; ``cast_value``
needs the ``cast-value-rs`` package too). The interpreter is ``$ZARR3_ZARR_ORACLE`` (or the older
``$ZARR3_RECTILINEAR_ORACLE``), else the venv ``~/.cache/zarr3_backend/oracle-zarr``, built once from
pyenv's ``python3.12`` with ``pip install "zarr>=3.4" cast-value-rs zfpy`` (zfpy for ``numcodecs.zfpy``). Where there is none,
:func:`oracle_python` returns ``None`` and the tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

VENV = Path.home() / ".cache" / "zarr3_backend" / "oracle-zarr"
PYENV_PYTHONS = sorted((Path.home() / ".pyenv" / "versions").glob("3.1[2-9]*/bin/python"))


@cache
def _works(python: Path, minimum: tuple[int, int], modules: tuple[str, ...]) -> bool:
    check = (
        "import zarr, sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + f"sys.exit(tuple(map(int, zarr.__version__.split('.')[:2])) < {minimum!r})"
    )
    try:
        return subprocess.run([str(python), "-c", check], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def oracle_python(minimum: tuple[int, int] = (3, 2), modules: tuple[str, ...] = ()) -> Path | None:
    """A python with zarr-python >= ``minimum`` that imports ``modules``, found or built once; else ``None``."""
    if given := os.environ.get("ZARR3_ZARR_ORACLE") or os.environ.get("ZARR3_RECTILINEAR_ORACLE"):
        return Path(given) if _works(Path(given), minimum, modules) else None
    python = VENV / "bin" / "python"
    if python.exists() and _works(python, minimum, modules):
        return python
    if not PYENV_PYTHONS:
        return None
    try:
        subprocess.run(
            [str(PYENV_PYTHONS[0]), "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=300
        )
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "zarr>=3.4",
                "cast-value-rs",
                "zfpy>=1.0.1,!=1.0.1.post0,<1.1",
            ],
            check=True,
            capture_output=True,
            timeout=900,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    _works.cache_clear()
    return python if _works(python, minimum, modules) else None


def run_oracle(python: Path, script: str, **arguments: Any) -> Any:
    """Run ``script`` under the oracle with ``ARGS`` (a dict from ``arguments``); it prints its JSON answer last."""
    prelude = "import json, sys, numpy as np, zarr\nzarr.config.set({'array.rectilinear_chunks': True})\n"
    prelude += f"ARGS = json.loads({json.dumps(json.dumps(arguments))})\n"
    result = subprocess.run(
        [str(python), "-c", prelude + script], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def oracle_or_skip(minimum: tuple[int, int] = (3, 2), modules: tuple[str, ...] = ()) -> Path:
    """`oracle_python()`, or skip the test when there is none."""
    import pytest

    python = oracle_python(minimum, modules)
    if python is None:
        pytest.skip(
            f"no zarr-python >= {minimum[0]}.{minimum[1]} oracle (needs Python 3.12 with it; "
            "ZARR3_ZARR_ORACLE names one)"
        )
    return python
