"""Run the ``zarr3`` command as users run it: the installed console script.

Where the package is installed with its scripts (CI: ``pip install -e .``),
``zarr3`` sits next to the Python running the tests and is used; a checkout
without that install falls back to ``python -m zarr3_backend``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]


def zarr3_command() -> list[str]:
    """The command line that starts ``zarr3``: the console script next to ``sys.executable`` if installed."""
    script = shutil.which("zarr3", path=os.path.dirname(sys.executable))
    if script is not None:
        return [script]
    installed = distributions(path=[sysconfig.get_paths()["purelib"]], name="zarr3_backend")
    declared = [
        ep
        for dist in installed
        for ep in dist.entry_points
        if (ep.group, ep.name) == ("console_scripts", "zarr3")
    ]
    assert not declared, (
        "the installed zarr3_backend declares the zarr3 script, but it is not next to sys.executable"
    )
    return [sys.executable, "-m", "zarr3_backend"]


def zarr3(*args: Any, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``zarr3 ARGS...`` run in ``cwd`` (the checkout by default), its output captured as text."""
    return subprocess.run(
        [*zarr3_command(), *map(str, args)], check=False, capture_output=True, text=True, cwd=cwd, timeout=120
    )
