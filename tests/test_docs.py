"""The README and the documentation: every Python example runs, the pages stay what they promise.

Each page's ```` ```python ```` blocks run in order, in one namespace, in a
fresh working directory, with the loopback S3 server (moto) standing in for
AWS: the standard AWS environment variables point at it and a bucket named
``bucket`` exists, empty, so ``s3://bucket/...`` examples run as written.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers.servers import S3Endpoint, patched_env

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
README_LIMIT = 16_000
#: A timing figure: a number with a unit of time or a speed ratio ("0.8x", "12 ms", "1.5 s").
TIMING = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|s|x)\b(?![\w/])")


def python_blocks(page: Path) -> list[str]:
    """The page's Python examples, in order."""
    return BLOCK.findall(page.read_text())


#: A page's ``<!-- requires: virtualizarr kerchunk -->``: modules its examples need that some Python lacks.
REQUIRES = re.compile(r"^<!-- requires: (.+?) -->$", re.MULTILINE)


def skip_without_requirements(page: Path) -> None:
    """Skip the test where a module the page requires does not import (VirtualiZarr on Python 3.11)."""
    for line in REQUIRES.findall(page.read_text()):
        for module in line.split():
            pytest.importorskip(module)


@pytest.fixture
def aws_bucket(s3_server: S3Endpoint) -> Iterator[None]:
    """The AWS environment pointing at the loopback server, with an empty bucket named ``bucket``."""
    import s3fs

    fs = s3fs.S3FileSystem(**s3_server.storage_options)
    if fs.exists("bucket"):
        fs.rm("bucket", recursive=True)
    fs.mkdir("bucket")
    env = {
        "AWS_ENDPOINT_URL": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "foo",
        "AWS_SECRET_ACCESS_KEY": "foo",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
    with patched_env(env):
        yield


@pytest.mark.parametrize(
    "page", [p for p in PAGES if python_blocks(p)], ids=lambda p: str(p.relative_to(REPO))
)
def test_examples_run(page: Path, aws_bucket: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skip_without_requirements(page)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for number, block in enumerate(python_blocks(page), 1):
        code = compile(block, f"{page.name} example {number}", "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)


def test_readme_is_a_short_user_guide() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme) <= README_LIMIT, f"README.md has {len(readme)} characters; at most {README_LIMIT}"
    figures = TIMING.findall(readme)
    assert not figures, (
        f"README.md holds timing figures {figures}: measurements belong on docs/performance.md"
    )


def test_performance_page_is_rendered_from_the_results() -> None:
    """docs/performance.md's tables are exactly what the benchmarks' JSON results render to."""
    assert runpy.run_path(str(REPO / "docs" / "render_performance.py"))["main"](["--check"]) == 0


def test_every_page_is_in_the_navigation() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    pages = [p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")]
    assert [p for p in pages if p not in nav] == []


#: A measurement log in prose: a timing reported as taken or compared, or a before -> after pair of numbers.
MEASUREMENT = re.compile(
    r"\b(?:took|takes|measured|faster|slower|against|versus)\b[^.]{0,80}?\b\d+(?:\.\d+)?\s?(?:ms|µs|s|x)\b"
    r"|\b\d+(?:\.\d+)?\s?(?:ms|µs|s)?\s?->\s?\d+(?:\.\d+)?\s?(?:ms|µs|s)\b"
)


def test_no_docstring_holds_a_measurement_log() -> None:
    """Docstrings state contracts; timings live in the benchmarks' output and the performance page."""
    import ast

    found = []
    for path in sorted((REPO / "zarr3_backend").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node) or ""
                found += [f"{path.relative_to(REPO)}: {m.group(0)!r}" for m in MEASUREMENT.finditer(doc)]
    assert found == []


@pytest.mark.parametrize("page", ["reading.md", "writing.md"])
def test_quickstart_says_first_why_the_import_is_needed(page: str) -> None:
    """xarray gives no hook for a hint in ``ds.to_zarr3``'s AttributeError, so the quickstart's first lines say it."""
    text = (REPO / "docs" / "quickstart" / page).read_text()
    first = text.split("\n\n")[1]  # the paragraph under the title
    assert "import zarr3_backend" in first and "AttributeError" in first and "to_zarr3" in first, first


FIRST_PAGES = [
    REPO / "README.md",
    REPO / "docs" / "index.md",
    *sorted((REPO / "docs" / "quickstart").glob("*.md")),
]


@pytest.mark.parametrize(
    "page",
    [p for p in FIRST_PAGES if python_blocks(p)],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_first_examples_print_no_warning_of_ours(
    page: Path, aws_bucket: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a new user runs first shows no warning of ours (ShardAlignmentWarning ...) nor numcodecs' crc32c one."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number, block in enumerate(python_blocks(page), 1):
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(block, f"{page.name} example {number}", "exec"), namespace)
    ours = [
        f"{w.category.__name__}: {w.message}"
        for w in caught
        if w.category.__module__.startswith("zarr3_backend") or "crc32c" in str(w.message)
    ]
    assert not ours, ours


#: ``pip install`` of the package by name: it is not on PyPI, so such a line fails.
PIP_BY_NAME = re.compile(r"pip install\s+[\"']?zarr3_backend(?![^\n]*git\+)")


def test_install_instructions_work_from_a_clone() -> None:
    """Every install of the package is from a clone (``-e .``) or its git URL: it is not on the package index."""
    found = {str(p.relative_to(REPO)): PIP_BY_NAME.findall(p.read_text()) for p in PAGES}
    assert not {page: lines for page, lines in found.items() if lines}


def test_code_blocks_wrap_long_lines() -> None:
    """Wide example lines wrap on the site instead of being cut off (home and quickstart pages)."""
    config = (REPO / "mkdocs.yml").read_text()
    sheets = re.findall(r"^extra_css:\n((?:\s+- .+\n)+)", config, re.MULTILINE)
    assert sheets, "mkdocs.yml names no extra_css"
    css = "".join((REPO / "docs" / line.strip()[2:]).read_text() for line in sheets[0].splitlines())
    assert re.search(r"pre > code\s*\{[^}]*white-space:\s*pre-wrap", css), css


#: Sphinx roles that MkDocs leaves as literal text.
SPHINX_ROLE = re.compile(r":(?:meth|func|class|mod|attr|data|exc):")


@pytest.mark.timeout(300)
def test_built_site_shows_no_sphinx_roles(tmp_path: Path) -> None:
    """The site as ``mkdocs build`` renders it: no ``:meth:``/``:func:``/``:class:`` text reaches a page.

    Needs the ``docs`` extra (README command 2 installs ``test`` only; ``.ci/run`` checks the site it builds too).
    """
    pytest.importorskip("mkdocstrings_handlers.python")
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(tmp_path / "site")],
        cwd=REPO,
        check=True,
        capture_output=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    roles = {
        str(page.relative_to(tmp_path / "site")): len(SPHINX_ROLE.findall(page.read_text()))
        for page in (tmp_path / "site").rglob("*.html")
    }
    assert not {page: n for page, n in roles.items() if n}
