"""Imports flow one way: every module sits in a layer and imports only its own layer or lower ones.

The table below is the architecture: a new module fails :func:`test_every_module_has_a_layer`
until it is placed. Imports are read with :mod:`ast` (module level, inside ``if``/``try``,
``TYPE_CHECKING`` blocks and function bodies alike; relative and absolute), so a function-level
import cannot hide an upward dependency. The last sections keep the pieces small: no adapter
module over 250 lines, no function with more than five positional parameters.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = "zarr3_backend"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Low to high. The primitives are leaves that import only errors (or each other): data types, the
# chunk grid and key encodings, selections, the value types codecs and stores exchange, and scratch
# memory, the key rules. Codecs (their chain and sans-I/O read plans included) import nothing from the
# executor or the stores. The Store interface and the storage transformer registry sit under metadata
# (which refuses unregistered transformers); the executor, owner of every thread pool, sits just under
# the concrete stores that use it.
LAYERS: list[tuple[str, list[str]]] = [
    ("errors", ["errors"]),
    ("primitives", [
        "dtypes", "dtypes.base", "dtypes.core", "dtypes.extensions", "dtypes.fill", "dtypes.parse",
        "extension", "json_types", "integers", "chunk_grid", "chunk_keys", "indexing", "keys", "scratch", "values",
        "memory_limit", "v2_dtypes", "stacklevel",
    ]),
    ("codecs", [
        "codecs", "codecs.base", "codecs.chain", "codecs.registry", "codecs.foreign", "codecs.bounded",
        "codecs.bytes", "codecs.blosc", "codecs.crc32c", "codecs.gzip", "codecs.zstd", "codecs.transpose",
        "codecs.vlen_utf8", "codecs.numcodecs_adapter", "codecs.shard_index", "codecs.sharding",
        "codecs.read_plan", "codecs.spec", "codecs.v2",
    ]),
    ("store interface", ["store.arrivals", "store.base", "storage_transformers"]),
    ("metadata", ["metadata", "v2_metadata"]),
    ("concurrency", ["executor"]),
    ("store", [
        "store", "store.local", "store.obstore_options", "store.obstore_store", "store.fsspec_store", "store.foreign",
        "store.read_ahead",
    ]),
    ("nodes", [
        "attributes", "array", "array_kinds", "node_paths", "node_lookup", "placement", "hierarchy", "opening",
        "consolidate", "creation", "consolidation", "unfinished", "reservations",
    ]),
    ("api", ["api", "validate"]),
    ("adapters", [
        "", "__main__",
        "xarray_backend", "xarray_backend.backend_array", "xarray_backend.chunk_encoding", "xarray_backend.commit", "xarray_backend.dask_slices", "xarray_backend.dims",
        "xarray_backend.encoding", "xarray_backend.entrypoint", "xarray_backend.first_write", "xarray_backend.lease", "xarray_backend.methods",
        "xarray_backend.pending", "xarray_backend.region", "xarray_backend.staged",
        "xarray_backend.root", "xarray_backend.store", "xarray_backend.stored", "xarray_backend.write_checks",
        "xarray_backend.write_data", "xarray_backend.write_encoding", "xarray_backend.write_plan", "xarray_backend.writer",
        "shard_writes", "dask_io", "dask_compute", "write_progress",
        "conversion", "conversion.plan", "conversion.record", "conversion.shards",
        "cli", "cli.check", "cli.convert", "cli.demo", "cli.info", "cli.options", "cli.survey",
        "synthetic", "synthetic.era5", "synthetic.fields", "synthetic.sentinel2",
        "testing", "testing.codecs", "testing.latency_s3", "testing.servers", "testing.stores",
    ]),
]
LAYER = {f"{PACKAGE}.{m}" if m else PACKAGE: rank for rank, (_, modules) in enumerate(LAYERS) for m in modules}
LAYER_NAME = [name for name, _ in LAYERS]
ADAPTERS = LAYER_NAME.index("adapters")
OPTIONAL = ("xarray", "dask", "distributed")

# Imports of package modules inside a function body, each with the reason it is deferred.
# A deferred import that dodges a cycle does not belong here: fix the cycle.
DEFERRED: dict[tuple[str, str], str] = {
    ("zarr3_backend.dask_io", "zarr3_backend.write_progress"):
        "write_progress imports dask at module level; dask_io stays importable without dask",
    ("zarr3_backend.dask_compute", "zarr3_backend.write_progress"):
        "write_progress imports dask at module level; dask_compute stays importable without dask",
    ("zarr3_backend.conversion.shards", "zarr3_backend.write_progress"):
        "write_progress imports dask at module level; conversion (and the zarr3 command) stay importable without dask",
}


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
        id(node) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
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


def test_every_module_has_a_layer():
    assert sorted(set(MODULES) - set(LAYER)) == [], "place new modules in LAYERS"
    assert sorted(set(LAYER) - set(MODULES)) == [], "LAYERS names modules that do not exist"


def test_imports_never_go_up_a_layer():
    upward = [
        f"{module}:{line} ({LAYER_NAME[LAYER[module]]}) imports {target} ({LAYER_NAME[LAYER[target]]})"
        for module, target, line, _ in internal_edges() if LAYER[target] > LAYER[module]
    ]
    assert upward == []


def test_no_deferred_imports_except_the_listed_ones():
    found = {(module, target) for module, target, _, deferred in internal_edges() if deferred}
    assert sorted(found - set(DEFERRED)) == [], "import at module level, or list it in DEFERRED with its reason"
    assert sorted(set(DEFERRED) - found) == [], "DEFERRED lists an import that no longer exists"


def test_core_never_imports_xarray_or_dask():
    found = [
        f"{module}:{line} imports {target}"
        for module in MODULES if LAYER[module] < ADAPTERS
        for target, line, _ in imports(module) if target.split(".")[0] in OPTIONAL
    ]
    assert found == []


def test_codecs_touch_no_store_and_no_thread_pool():
    """Codecs are pure: the read plans and value types they use live below them, not in the store or executor."""
    codecs = [m for m in MODULES if LAYER[m] == LAYER_NAME.index("codecs")]
    found = [
        f"{module}:{line} imports {target}"
        for module in codecs for target, line, _ in imports(module)
        if target.startswith((f"{PACKAGE}.store", f"{PACKAGE}.executor"))
    ]
    assert codecs and found == []


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
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


# --- module and signature size -------------------------------------------------------------------------------------------

MAX_ADAPTER_LINES = 250
# Test infrastructure shipped in the package for users' and our own tests (store and codec contract
# suites, loopback and latency-injecting servers): not adapter code a read or write runs through.
SIZE_EXEMPT = {m: "test infrastructure, not an adapter" for m in MODULES if m.startswith(f"{PACKAGE}.testing")}


def test_no_adapter_module_over_250_lines():
    sizes = {m: len(MODULES[m].read_text().splitlines()) for m in MODULES if LAYER[m] == ADAPTERS}
    assert {m: n for m, n in sizes.items() if n > MAX_ADAPTER_LINES and m not in SIZE_EXEMPT} == {}
    assert sizes.keys() - SIZE_EXEMPT.keys() >= {f"{PACKAGE}.dask_io", f"{PACKAGE}.xarray_backend.writer"}


def wide_functions(source: str) -> list[str]:
    """``line name`` of every function in ``source`` taking more than five positional parameters."""
    return [
        f"{node.lineno} {node.name}" for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and len([a for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]) > 5
    ]


def test_no_function_takes_more_than_five_positional_parameters():
    """Past five, parameters are keyword-only (after ``*``), so a call names what it passes."""
    wide = [f"{module}:{found}" for module, path in MODULES.items() for found in wide_functions(path.read_text())]
    assert wide == []


def test_wide_functions_are_found():
    source = "class C:\n    def m(self, a, b, c, d, e, /, f=1): ...\n" "def g(a, b, c, d, e, *, f): ...\n"
    assert wide_functions(source) == ["2 m"]


@pytest.mark.parametrize("source, expected", [
    ("from ..api import create_array", "zarr3_backend.api"),
    ("from .. import api", "zarr3_backend.api"),
    ("from ..api import create_array as make", "zarr3_backend.api"),
    ("from .. import __version__", "zarr3_backend"),
    ("import zarr3_backend.api", "zarr3_backend.api"),
])
def test_imports_are_resolved(monkeypatch, source, expected):
    """The checker sees relative, package-relative and absolute imports, in functions too."""
    path = ROOT / "codecs" / "probe.py"
    monkeypatch.setitem(MODULES, "zarr3_backend.codecs.probe", path)
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: f"def f():\n    {source}\n")
    assert (expected, 2, True) in set(imports("zarr3_backend.codecs.probe"))
