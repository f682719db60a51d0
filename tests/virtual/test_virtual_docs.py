"""The "Virtual datasets" page's examples, run as scripts where VirtualiZarr installs (Python >= 3.12).

tests/test_docs.py runs them too where its S3 server (moto) is installed;
this runs them without it, as .ci/run's stage on the newer Pythons does.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_docs import REPO, run_page, skip_without_requirements

PAGE = REPO / "docs" / "guide" / "virtual-datasets.md"


def test_virtual_datasets_page_examples_run_as_scripts(tmp_path: Path) -> None:
    skip_without_requirements(PAGE)
    runs = run_page(PAGE, tmp_path)
    failed = [
        f"script {n}, exit {r.returncode}:\n{r.stderr[-4000:]}" for n, r in enumerate(runs, 1) if r.returncode
    ]
    assert not failed, "\n".join(failed)
    assert "authorize_virtual_chunk_access" in "".join(
        r.stdout for r in runs
    )  # the refusal example printed it
