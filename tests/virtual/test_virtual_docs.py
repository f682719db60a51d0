"""The "Virtual datasets" page's examples, run where VirtualiZarr installs (Python >= 3.12).

tests/test_docs.py runs them too where its S3 server (moto) is installed;
this runs them without it, as .ci/run's stage on the newer Pythons does.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from tests.test_docs import REPO, python_blocks, skip_without_requirements

PAGE = REPO / "docs" / "guide" / "virtual-datasets.md"


def test_virtual_datasets_page_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skip_without_requirements(PAGE)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    printed = io.StringIO()
    for number, block in enumerate(python_blocks(PAGE), 1):
        with contextlib.redirect_stdout(printed):
            exec(compile(block, f"{PAGE.name} example {number}", "exec"), namespace)
    assert (
        "authorize_virtual_chunk_access" in printed.getvalue()
    )  # the refusal example printed the StoreError
