"""The package type-checks under ``mypy --strict`` with the ``[tool.mypy]`` settings in pyproject.toml.

mypy comes with the ``lint`` extra (.ci/run installs it and runs this module); without it the two
mypy tests skip and the checks of public signatures still run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mypy(*targets: Path, cache: Path = ROOT / ".mypy_cache") -> tuple[int, list[str], str]:
    # The package's cache sits in the repository (git-ignored): a second run only rechecks edited modules.
    api = pytest.importorskip("mypy.api", reason="mypy comes with the lint extra")
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(cache),
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


# -- no Any at module boundaries ----------------------------------------------------------------

# Forms of Any that say something precise: numpy's generic parameters (``np.dtype[Any]``,
# ``NDArray[Any]``, ``np.ndarray[Any, ...]``, ``np.integer[Any]``) and the JSON object ``dict[str, Any]``.
ALLOWED_FORMS = re.compile(r"\bnp\.\w+\[Any\]|\bNDArray\[Any\]|\bndarray\[Any, |\b(dict|Mapping)\[str, Any\]")

# Public signatures that keep a bare Any, each with the third-party type or protocol that forces it.
ALLOWED_ANY: dict[tuple[str, str], str] = {
    (
        "zarr3_backend.writes.executor",
        "Forked.finish",
    ): "each executor's own deferred write (dask's Delayed, which dask leaves unannotated) comes back to it",
    **{
        (
            "zarr3_backend.nodes.attributes",
            f"Attributes.{name}",
        ): "attribute values are the values of the JSON object dict[str, Any] (numpy values are encoded on write)"
        for name in ("__getitem__", "__setitem__", "update")
    },
    **{
        (
            module,
            f"{cls}.__reduce__",
        ): "the pickle protocol: typeshed types object.__reduce__ as str | tuple[Any, ...]"
        for module, cls in [
            ("zarr3_backend.nodes.array", "Array"),
            ("zarr3_backend.nodes.array_kinds", "ConsolidatedArray"),
            ("zarr3_backend.nodes.array_kinds", "V2Array"),
            ("zarr3_backend.nodes.hierarchy", "Group"),
            ("zarr3_backend.nodes.hierarchy", "V2Group"),
        ]
    },
    (
        "zarr3_backend.xarray.entrypoint",
        "Zarr3BackendEntrypoint.open_groups_as_dict",
    ): "xarray's decoding keywords, passed to StoreBackendEntrypoint.open_dataset, which leaves them unannotated",
    (
        "zarr3_backend.xarray.entrypoint",
        "Zarr3BackendEntrypoint.open_datatree",
    ): "keywords passed on to open_groups_as_dict, xarray's unannotated decoding keywords among them",
    (
        "zarr3_backend.xarray.dask_slices",
        "PushSelections.__call__",
    ): "dask's array_optimize protocol: its graphs, keys and keywords are unannotated in dask",
    (
        "zarr3_backend.xarray.dask_slices",
        "push_selections",
    ): "a dask graph and its keys, which dask leaves unannotated",
    (
        "zarr3_backend.xarray.methods",
        "open_zarr3",
    ): "keywords passed on to xarray.open_dataset, each of its own type",
    **{
        (
            "zarr3_backend.xarray.axis_index",
            name,
        ): "xarray's CoordinateTransform and Index protocols, typed with Any"
        for name in (
            "AxisTransform.forward",
            "AxisTransform.reverse",
            "AxisTransform.equals",
            "AxisIndex.sel",
            "AxisIndex.isel",
        )
    },
}
UNCHECKED = ("testing", "synthetic")  # test helpers and data generators, not the package's interface


def _annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[str, ast.expr]]:
    arguments = function.args
    for argument in [
        *arguments.posonlyargs,
        *arguments.args,
        *arguments.kwonlyargs,
        arguments.vararg,
        arguments.kwarg,
    ]:
        if argument is not None and argument.annotation is not None:
            yield argument.arg, argument.annotation
    if function.returns is not None:
        yield "return", function.returns


def _public_functions(
    node: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
            yield from _public_functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            dunder = child.name.startswith("__") and child.name.endswith("__")
            if dunder or not child.name.startswith("_"):
                yield prefix + child.name, child


def _is_bare_any(value: ast.expr | None) -> bool:
    return (
        isinstance(value, ast.Name)
        and value.id == "Any"
        or (isinstance(value, ast.Constant) and value.value == "Any")
    )


def any_at_boundaries(package: Path) -> list[str]:
    """``module:line name(argument): annotation`` for every public signature mentioning Any outside the allowed forms,
    and every module-level alias of bare Any (which would hide it from this check)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[1] in UNCHECKED:
            continue
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and _is_bare_any(node.value):
                found.append(f"{module}:{node.lineno} aliases Any")
        for name, function in _public_functions(tree):
            if (module, name) in ALLOWED_ANY:
                continue
            for argument, annotation in _annotations(function):
                text = ast.unparse(annotation)
                if re.search(r"\bAny\b", ALLOWED_FORMS.sub("", text)):
                    found.append(f"{module}:{function.lineno} {name}({argument}): {text}")
    return found


def test_no_any_at_module_boundaries() -> None:
    # Untrusted input is ``object`` (narrowed by the parser), documents are JSON, stores StoreLike,
    # selections SelectionLike, fill values Scalar: Any is left only where a third party forces it.
    found = any_at_boundaries(ROOT / "zarr3_backend")
    assert found == [], (
        "Any in public signatures (type them, or allow-list the third-party reason):\n" + "\n".join(found)
    )


def test_allow_list_names_real_signatures() -> None:
    # A stale entry would quietly allow Any in a function of the same name added later.
    functions = set()
    for path in (ROOT / "zarr3_backend").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        functions |= {(module, name) for name, _ in _public_functions(ast.parse(path.read_text()))}
    assert set(ALLOWED_ANY) <= functions, sorted(set(ALLOWED_ANY) - functions)


def test_any_check_catches_any(tmp_path: Path) -> None:
    # Guards the check above: it sees parameters, returns, methods and aliases, and skips private names.
    package = tmp_path / "zarr3_backend"
    package.mkdir()
    (package / "mod.py").write_text(
        "from typing import Any\n"
        "Hidden = Any\n"
        "def parse(value: Any) -> int: ...\n"
        "def read() -> list[Any]: ...\n"
        "def shape(dtype: np.dtype[Any], doc: dict[str, Any]) -> NDArray[Any]: ...\n"
        "def _private(value: Any) -> Any: ...\n"
        "class Thing:\n"
        "    def get(self, *args: Any) -> None: ...\n"
        "    def __getitem__(self, key: str) -> Any: ...\n"
    )
    assert any_at_boundaries(package) == [
        "zarr3_backend.mod:2 aliases Any",
        "zarr3_backend.mod:3 parse(value): Any",
        "zarr3_backend.mod:4 read(return): list[Any]",
        "zarr3_backend.mod:8 Thing.get(args): Any",
        "zarr3_backend.mod:9 Thing.__getitem__(return): Any",
    ]
