"""The README and the documentation: every Python example runs, the pages stay what they promise.

Each page's ```` ```python ```` blocks run as a reader pastes them into a
file: in order, as one script (`page_script()`), run by ``python file.py`` in
a fresh working directory. A block with an ``if __name__ == "__main__":``
guard is a complete program of its own (a `dask.distributed` cluster's worker
processes import the script that started them, so such a program must be
self-contained and guarded): it runs as its own script file, after the page's
script. The loopback S3 server (moto) stands in for AWS: the standard AWS
environment variables point at it and a bucket named ``bucket`` exists,
empty, so ``s3://bucket/...`` examples run as written.

To run a page's scripts from another environment (another venv's Python, as
a CI stage for a newer Python does): ``DOCS_PYTHON=/path/to/python pytest
tests/test_docs.py -k "examples_run and <page name>"``, or call `run_page()`.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

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


#: A complete program: a block that guards its work for the processes a cluster starts.
MAIN_GUARD = re.compile(r"^if __name__ == [\"']__main__[\"']:", re.MULTILINE)
#: Seconds one script may take (a page with a cluster starts worker processes).
SCRIPT_TIMEOUT = 240


def page_scripts(page: Path) -> list[str]:
    """What a reader pastes into files: the page's blocks as one script, then each guarded program alone."""
    blocks = python_blocks(page)
    together = "\n\n".join(block for block in blocks if not MAIN_GUARD.search(block))
    return [script for script in (together, *(b for b in blocks if MAIN_GUARD.search(b))) if script]


def run_page(page: Path, workdir: Path, python: str | None = None) -> list[subprocess.CompletedProcess[str]]:
    """Run each of `page_scripts()` as ``python <file>.py`` in ``workdir`` (in order; output captured).

    ``python``: the interpreter, default ``$DOCS_PYTHON`` or this one. The
    environment is this process's, with this checkout first on ``PYTHONPATH``
    and every warning printed once per place (``PYTHONWARNINGS=default``).
    """
    python = python or os.environ.get("DOCS_PYTHON") or sys.executable
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "default"}  # every warning, once per place
    results = []
    for number, script in enumerate(page_scripts(page), 1):
        path = workdir / f"{page.stem}_{number}.py"
        path.write_text(script)
        results.append(
            subprocess.run([python, path.name], cwd=workdir, env=env, capture_output=True, text=True,
                           timeout=SCRIPT_TIMEOUT)
        )  # fmt: skip
    return results


FIRST_PAGES = [
    REPO / "README.md",
    REPO / "docs" / "index.md",
    *sorted((REPO / "docs" / "quickstart").glob("*.md")),
]


#: Our warning classes, by name (a script's stderr names a warning's category, not its module).
OUR_WARNINGS = frozenset(
    name for path in (REPO / "zarr3_backend").rglob("*.py")
    for name in re.findall(r"^class (\w+Warning)\(", path.read_text(), re.MULTILINE)
)  # fmt: skip
#: A warning as Python prints it: ``<file>:<line>: <Category>: <message>``.
PRINTED_WARNING = re.compile(r"^\S.*?:\d+: (\w+): (.*)$", re.MULTILINE)


@pytest.mark.parametrize(
    "page", [p for p in PAGES if python_blocks(p)], ids=lambda p: str(p.relative_to(REPO))
)
def test_examples_run_as_scripts(page: Path, aws_bucket: None, tmp_path: Path) -> None:
    """Every script of the page exits 0; on the pages a new user reads first, none prints a warning of ours.

    (ShardAlignmentWarning ..., nor numcodecs' crc32c one.) One test per page, so that each page runs once
    whichever pytest-xdist worker takes it.
    """
    skip_without_requirements(page)
    runs = run_page(page, tmp_path)
    failed = [
        f"{page.name} script {n} ({r.args[1]}), exit {r.returncode}:\n{r.stderr[-4000:]}"
        for n, r in enumerate(runs, 1)
        if r.returncode
    ]
    assert not failed, "\n".join(failed)
    if page in FIRST_PAGES:
        printed = [w for run in runs for w in PRINTED_WARNING.findall(run.stderr)]
        assert OUR_WARNINGS and not [w for w in printed if w[0] in OUR_WARNINGS or "crc32c" in w[1]], printed


def test_readme_is_a_short_user_guide() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme) <= README_LIMIT, f"README.md has {len(readme)} characters; at most {README_LIMIT}"
    figures = TIMING.findall(readme)
    assert not figures, (
        f"README.md holds timing figures {figures}: measurements belong on docs/performance.md"
    )


def test_readme_says_how_long_the_tests_take() -> None:
    """A newcomer knows before running it whether the suite takes a minute or an hour (roughly, no measurement)."""
    readme = (REPO / "README.md").read_text()
    assert re.search(r"test suite takes (?:roughly|about) \d+ minutes on \d+ cores", readme), (
        "README.md should say how long the test suite takes, e.g. 'takes about 10 minutes on 2 cores'"
    )


def test_to_zarr3_documents_calendar_chunks_and_shards() -> None:
    """The API entry of ``to_zarr3`` (its docstring) says how to ask for calendar (nested) chunks or shards."""
    import zarr3_backend

    doc = zarr3_backend.to_zarr3.__doc__ or ""
    encoding = doc.split("encoding : dict", 1)[1].split("compute : bool", 1)[0]
    for words in ("rectilinear", "sequence of lengths", '"dask"', "calendar chunks guide"):
        assert words in encoding, f"to_zarr3's encoding entry does not mention {words}"
    assert '"shards": ((1, 3),)' in doc  # and an example that runs (doctest)


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
def test_built_site_shows_no_sphinx_roles_nor_build_scripts(tmp_path: Path) -> None:
    """The site as ``mkdocs build`` renders it: no ``:meth:``/``:func:``/``:class:`` text reaches a page,
    and the build's own scripts (``docs/hooks.py``, ``docs/render_performance.py``) are not published.

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
    published = sorted(str(p.relative_to(tmp_path / "site")) for p in (tmp_path / "site").rglob("*.py"))
    assert published == [], f"the site publishes the build's scripts {published}: exclude them (exclude_docs)"
