"""Execute the notebooks headlessly and save them with their outputs.

    python notebooks/execute.py                 # every notebook, small sizes
    python notebooks/execute.py climate         # one notebook
    python notebooks/execute.py --size full     # the real scale (hours, tens of GB)

Each notebook runs in a fresh kernel of *this* interpreter, with ``notebooks/``
as its working directory, as Jupyter starts it (the notebooks then write their
stores to a temporary directory), importing only the installed package and
public libraries. The saved notebook records the SHA-256 of its code cells in
``metadata["zarr3_backend"]["code_sha256"]``; ``tests/test_notebooks.py`` fails
when a committed notebook's code no longer matches the code it was run with
(edit a cell, then re-run this script). Figures the notebooks save go to
``notebooks/figures/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent

NOTEBOOKS = ("climate", "remote_sensing")
KERNEL = "zarr3-notebooks"


def code_sha256(nb: nbformat.NotebookNode) -> str:
    """SHA-256 of the notebook's code cells' sources, in order (outputs and markdown excluded)."""
    sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    return hashlib.sha256(json.dumps(sources).encode()).hexdigest()


def _kernel_manager(kernel_dir: Path) -> KernelManager:
    """A kernel manager whose only kernel is ipykernel on this interpreter."""
    spec = kernel_dir / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"})
    )
    specs = KernelSpecManager(kernel_dirs=[str(kernel_dir)], ensure_native_kernel=False)
    return KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)


def execute(
    name: str, workdir: str | os.PathLike[str], *, size: str = "small", figures: str | None = None,
    env: dict[str, str] | None = None, timeout: int = 600,
) -> nbformat.NotebookNode:  # fmt: skip
    """Run ``notebooks/<name>.ipynb`` from ``notebooks/``; return it with outputs and its code hash.

    ``workdir`` holds the kernel's spec.

    Raises ``nbclient.exceptions.CellExecutionError`` (naming the cell) if any cell fails.
    """
    nb = nbformat.read(HERE / f"{name}.ipynb", as_version=4)
    values = {"ZARR3_NOTEBOOK_SIZE": size, **(env or {})}
    if figures is not None:
        values["ZARR3_NOTEBOOK_FIGURES"] = str(figures)
    with mock.patch.dict(os.environ, values):
        km = _kernel_manager(Path(workdir) / ".kernels")
        client = NotebookClient(
            nb, km=km, timeout=timeout, coalesce_streams=True, resources={"metadata": {"path": str(HERE)}}
        )
        client.execute()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["zarr3_backend"] = {"code_sha256": code_sha256(nb), "size": size}
    return nb


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "names", nargs="*", default=NOTEBOOKS, help=f"notebooks to run (default: {' '.join(NOTEBOOKS)})"
    )
    parser.add_argument("--size", default="small", choices=["small", "full"])
    args = parser.parse_args(argv)
    figures = HERE / "figures"
    figures.mkdir(exist_ok=True)
    for name in args.names:
        with tempfile.TemporaryDirectory(prefix=f"{name}-") as workdir:
            nb = execute(name, workdir, size=args.size, figures=str(figures))
        nbformat.write(nb, HERE / f"{name}.ipynb")
        print(f"{name}.ipynb: executed and saved ({nb.metadata['zarr3_backend']['code_sha256'][:12]})")


if __name__ == "__main__":
    main(sys.argv[1:])
