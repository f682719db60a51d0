"""Run the ``zarr3`` command: in this process through its ``main``, or as users run it, the console script.

``zarr3(...)`` calls ``zarr3_backend.cli.main`` with the arguments, in ``cwd``,
its standard output and error captured and any exception turned into the
traceback and status Python would print and exit with: the command's
behaviour without paying an interpreter start per call. ``zarr3_script(...)``
runs the installed console script (CI: ``pip install -e .``), which sits next
to the Python running the tests; a checkout without that install falls back
to ``python -m zarr3_backend``. Tests of the entry point itself, of process
exits and of pipes use the script.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import traceback
import warnings
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
    """``zarr3 ARGS...`` run in this process, in ``cwd`` (the checkout by default), its output captured as text."""
    from zarr3_backend.cli import main

    argv = list(map(str, args))
    out, err = io.StringIO(), io.StringIO()

    def show(message, category, filename, lineno, file=None, line=None) -> None:  # as Python's default does
        err.write(warnings.formatwarning(message, category, filename, lineno, line))

    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        with warnings.catch_warnings():
            warnings.resetwarnings()  # a fresh interpreter's filters, not pytest's
            warnings.simplefilter("default")
            for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", quiet)
            warnings.showwarning = show
            try:
                status = main(argv)
            except SystemExit as exit:  # argparse: --help, --version and usage errors
                status = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
                if isinstance(exit.code, str):
                    err.write(exit.code + "\n")
            except BaseException:  # --debug re-raises: Python prints the traceback and exits with 1
                traceback.print_exc(file=err)
                status = 1
    return subprocess.CompletedProcess(["zarr3", *argv], status, out.getvalue(), err.getvalue())


def zarr3_script(*args: Any, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``zarr3 ARGS...`` run as the console script in ``cwd`` (the checkout by default), output captured as text."""
    return subprocess.run(
        [*zarr3_command(), *map(str, args)], check=False, capture_output=True, text=True, cwd=cwd, timeout=120
    )
