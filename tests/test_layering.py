"""The package's shape: import-linter's contracts hold, and the rules import-linter cannot express.

The layers themselves (integrations over nodes over codecs and stores over core) are contracts in
``pyproject.toml`` under ``[tool.importlinter]``, kept by ``lint-imports``; this module runs them and
adds what they do not say: no import cycles inside a layer, no deferred import without a reason, at
most ten modules at the package root, no module over 450 lines, ``xarray/write/`` within its caps
(modules, lines, the planner's lines), and no function with more than five positional parameters. Imports are read with :mod:`ast` (module level, inside ``if``/``try``,
``TYPE_CHECKING`` blocks and function bodies alike; relative and absolute).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = "zarr3_backend"
REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / PACKAGE

# Imports of package modules inside a function body, each with the reason it is deferred.
# A deferred import that dodges a cycle does not belong here: fix the cycle.
DEFERRED: dict[tuple[str, str], str] = {
    (
        "zarr3_backend.dask.write_graph",
        "zarr3_backend.dask.progress",
    ): "progress imports dask at module level; the write graph module stays importable without dask",
    (
        "zarr3_backend.dask.compute",
        "zarr3_backend.dask.progress",
    ): "progress imports dask at module level; compute stays importable without dask",
    (
        "zarr3_backend.dask.executor",
        "zarr3_backend.dask.progress",
    ): "progress imports dask at module level; the executor registry loads the dask executor without dask",
    (
        "zarr3_backend.xarray.write.self_read",
        "zarr3_backend.xarray.write.graph_reads",
    ): "graph_reads imports dask at module level; to_zarr3 stays importable (and writes numpy data) without dask",
    (
        "zarr3_backend.xarray.write.self_read",
        "zarr3_backend.xarray.write.opaque",
    ): "opaque imports dask at module level; to_zarr3 stays importable (and writes numpy data) without dask",
    (
        "zarr3_backend.xarray.methods",
        "zarr3_backend.xarray.write.planner",
    ): "ds.to_zarr3 loads the write wing at the first write: import zarr3_backend stays a reader's import",
}
MAX_ROOT_MODULES = 10
MAX_MODULE_LINES = 450
#: ``xarray/write/`` translates xarray to a plan and nothing else (#63): its modules and lines, and the planner's.
MAX_XARRAY_WRITE_MODULES = 16
MAX_XARRAY_WRITE_LINES = 2_900
MAX_PLANNER_LINES = 400


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports(module: str) -> Iterator[tuple[str, int, bool]]:
    """``(imported module, line, deferred)`` for every import in ``module``; deferred = inside a function."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    deferred_nodes = {
        id(node)
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(fn)
    }
    for node in ast.walk(tree):
        deferred = id(node) in deferred_nodes
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, deferred
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            if len(submodules) < len(node.names):  # names defined in ``target`` itself
                yield target, node.lineno, deferred
            for submodule in submodules:  # ``from . import blosc`` imports the module ``blosc``
                yield submodule, node.lineno, deferred


def internal_edges() -> Iterator[tuple[str, str, int, bool]]:
    for module in MODULES:
        for target, line, deferred in imports(module):
            if target in MODULES and target != module:
                yield module, target, line, deferred


def test_import_contracts_hold():
    """``lint-imports`` with the contracts of pyproject.toml: layers, a pure core, stores apart from codecs."""
    importlinter_cli = pytest.importorskip("importlinter.cli")
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 3
    assert (
        importlinter_cli.lint_imports(config_filename=str(REPO / "pyproject.toml"))
        == importlinter_cli.EXIT_STATUS_SUCCESS
    )


def test_contract_layers_name_every_subpackage():
    """A new sub-package or root module has to be placed in the layers contract."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers" and "containers" not in c]
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    top = {module.split(".")[1] for module in MODULES if module.count(".") >= 1}
    unplaced = (
        {f"{PACKAGE}.{name}" for name in top}
        - placed
        - {
            f"{PACKAGE}.__main__",
            f"{PACKAGE}.synthetic",
            f"{PACKAGE}.testing",  # above every layer: entry point, demo data, contract suites
        }
    )
    assert sorted(unplaced) == []


def test_contract_layers_place_every_module_of_their_containers():
    """A new module of a layered sub-package (``xarray.write``) has to be placed in its layers contract."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    unplaced = []
    for contract in (c for c in contracts if c["type"] == "layers" and "containers" in c):
        placed = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
        for container in contract["containers"]:
            inside = {m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == container}
            unplaced += [f"{container}.{name}" for name in sorted(inside - placed)]
    assert unplaced == []


def test_no_deferred_imports_except_the_listed_ones():
    found = {(module, target) for module, target, _, deferred in internal_edges() if deferred}
    assert sorted(found - set(DEFERRED)) == [], (
        "import at module level, or list it in DEFERRED with its reason"
    )
    assert sorted(set(DEFERRED) - found) == [], "DEFERRED lists an import that no longer exists"


def test_no_import_cycles():
    """Including the implicit import of a package's ``__init__`` when a module outside it imports a submodule."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, target, _, _ in internal_edges():
        graph[module].add(target)
        parent = target.rpartition(".")[0]
        while parent != PACKAGE and parent and not (module + ".").startswith(parent + "."):
            graph[module].add(parent)
            parent = parent.rpartition(".")[0]
    state: dict[str, int] = {}  # 1 on the DFS stack, 2 done
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


#: Sub-packages whose tests live elsewhere, with the reason.
TESTED_ELSEWHERE = {"testing": "its store and codec contract suites run in tests/store and tests/codecs"}


def test_tests_mirror_the_package():
    subpackages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    missing = sorted(
        name
        for name in subpackages - set(TESTED_ELSEWHERE)
        if not list((REPO / "tests" / name).glob("test_*.py"))
    )
    assert not missing, f"sub-packages without a tests/<name>/ folder of tests: {missing}"


def test_root_holds_at_most_ten_modules():
    root_modules = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(root_modules) <= MAX_ROOT_MODULES, root_modules


def test_no_module_over_450_lines():
    sizes = {m: len(p.read_text().splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_xarray_write_stays_a_translation():
    """What does not translate xarray into a plan lives in ``writes/`` (or below), so ``xarray/write/`` stays small."""
    modules = sorted((ROOT / "xarray" / "write").glob("*.py"))
    lines = sum(len(p.read_text().splitlines()) for p in modules)
    planner = len((ROOT / "xarray" / "write" / "planner.py").read_text().splitlines())
    assert len(modules) <= MAX_XARRAY_WRITE_MODULES, [p.name for p in modules]
    assert lines <= MAX_XARRAY_WRITE_LINES
    assert planner <= MAX_PLANNER_LINES


def wide_functions(source: str) -> list[str]:
    """``line name`` of every function in ``source`` taking more than five positional parameters."""
    return [
        f"{node.lineno} {node.name}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and len([a for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]) > 5
    ]


def test_no_function_takes_more_than_five_positional_parameters():
    """Past five, parameters are keyword-only (after ``*``), so a call names what it passes."""
    wide = [
        f"{module}:{found}" for module, path in MODULES.items() for found in wide_functions(path.read_text())
    ]
    assert wide == []


def test_wide_functions_are_found():
    source = "class C:\n    def m(self, a, b, c, d, e, /, f=1): ...\ndef g(a, b, c, d, e, *, f): ...\n"
    assert wide_functions(source) == ["2 m"]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from ..api import create_array", "zarr3_backend.api"),
        ("from .. import api", "zarr3_backend.api"),
        ("from ..api import create_array as make", "zarr3_backend.api"),
        ("from .. import __version__", "zarr3_backend"),
        ("import zarr3_backend.api", "zarr3_backend.api"),
    ],
)
def test_imports_are_resolved(monkeypatch, source, expected):
    """The checker sees relative, package-relative and absolute imports, in functions too."""
    path = ROOT / "codecs" / "probe.py"
    monkeypatch.setitem(MODULES, "zarr3_backend.codecs.probe", path)
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: f"def f():\n    {source}\n")
    assert (expected, 2, True) in set(imports("zarr3_backend.codecs.probe"))
