"""The one table of names the library keeps beside ``zarr.json``: spelled once, documented as generated."""

from __future__ import annotations

import ast
from pathlib import Path

from zarr3_backend.coordination.records import RECORDS, markdown_table

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "zarr3_backend"
#: The modules allowed to spell a stored name: the table, and the store base below it (temporary files).
SPELLED_IN = {"coordination/records.py", "store/base.py"}
MARKERS = ("__zarr3", "_zarr3_backend_", ".__z3tmp")


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def spellers(sources: dict[str, str]) -> set[str]:
    """The modules whose code (docstrings aside) holds a string with one of the library's stored names."""
    found = set()
    for path, source in sources.items():
        tree = ast.parse(source)
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
                and any(marker in node.value for marker in MARKERS)
            ):
                found.add(path)
    return found


def test_stored_names_are_spelled_in_at_most_two_modules() -> None:
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in sorted(ROOT.rglob("*.py"))}
    assert spellers(sources) <= SPELLED_IN


def test_a_name_spelled_elsewhere_would_be_found() -> None:
    sources = {"x.py": '"""Mentions __zarr3_backend_writing.json."""\nKEY = "__zarr3_backend_writing.json"\n'}
    assert spellers(sources) == {"x.py"}
    assert spellers({"y.py": '"""Mentions __zarr3_backend_writing.json only here."""\n'}) == set()


def test_every_name_is_reserved_and_listed_once() -> None:
    names = [r.name for r in RECORDS]
    assert len(names) == len(set(names))
    assert all(name.startswith(("__", "_zarr3_backend_", ".__")) for name in names)


def test_the_architecture_page_shows_the_table_generated_from_the_records() -> None:
    assert markdown_table() in (REPO / "docs" / "architecture.md").read_text()
