"""The notebooks run headlessly, and the committed ones were executed with the code they show.

Executing uses ``notebooks/execute.py`` (a kernel of this interpreter started in ``notebooks/``,
as Jupyter starts one, small sizes, matplotlib's Agg backend). After editing a notebook, re-run
``python notebooks/execute.py`` to refresh its outputs and code hash.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")
pytest.importorskip("xarray")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ["climate", "remote_sensing"]


def _execute_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebooks_execute", NOTEBOOKS / "execute.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


execute = _execute_module()


def test_every_notebook_is_covered() -> None:
    assert (
        sorted(path.stem for path in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES) == sorted(execute.NOTEBOOKS)
    )


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_was_executed_with_its_code(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    recorded = nb.metadata.get("zarr3_backend", {}).get("code_sha256")
    assert recorded == execute.code_sha256(nb), (
        f"{name}.ipynb: its code cells differ from the code its outputs came from; "
        f"run `python notebooks/execute.py {name}` and commit the result"
    )
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code), f"{name}.ipynb has unexecuted cells"
    assert not [o for cell in code for o in cell.outputs if o.output_type == "error"], (
        f"{name}.ipynb has errors"
    )
    images = [o for cell in code for o in cell.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 5, f"{name}.ipynb shows only {len(images)} plots"
    assert (NOTEBOOKS / "figures" / f"{name}.png").stat().st_size > 10_000


#: A line of an HTTP server's access log (moto's werkzeug server logs one per request).
ACCESS_LOG = re.compile(r'"(?:GET|PUT|HEAD|POST|DELETE) /\S* HTTP/1\.[01]" \d{3}')


@pytest.mark.parametrize("name", NAMES)
def test_notebook_outputs_hold_no_server_access_log(name: str) -> None:
    """What a reader sees is the analysis: the loopback S3 server's per-request log stays out of the outputs."""
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    streams = [o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    logged = [line for text in streams for line in text.splitlines() if ACCESS_LOG.search(line)]
    assert not logged, f"{name}.ipynb shows {len(logged)} access-log lines, e.g. {logged[0]!r}"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_imports_only_the_package_and_public_libraries(name: str) -> None:
    # Jupyter starts the kernel in notebooks/, where the repository's tests/ is not importable.
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    imported = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            tree = ast.parse(
                "\n".join(line for line in cell.source.splitlines() if not line.startswith(("%", "!")))
            )
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module:
                    imported.add(node.module.split(".")[0])
    assert imported and not imported & {"tests", "servers", "conftest", "benchmarks"}, sorted(imported)


def test_code_hash_changes_with_code_only() -> None:
    nb = nbformat.read(NOTEBOOKS / "climate.ipynb", as_version=4)
    before = execute.code_sha256(nb)
    nb.cells[0].source += "\nmore words"  # markdown
    next(cell for cell in nb.cells if cell.cell_type == "code").outputs = []
    assert execute.code_sha256(nb) == before
    next(cell for cell in nb.cells if cell.cell_type == "code").source += "\nx = 1"
    assert execute.code_sha256(nb) != before


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_and_checks_itself(name: str, tmp_path: Path) -> None:
    # Any failing cell (an assertion against engine="zarr", numpy or a request count) raises here.
    nb = execute.execute(name, tmp_path, size="small", figures=str(tmp_path), env={"MPLBACKEND": "Agg"})
    assert nb.metadata["zarr3_backend"]["code_sha256"] == execute.code_sha256(nb)
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
