"""Render the performance page's tables from the benchmarks' JSON results.

    python docs/render_performance.py            # rewrite docs/performance.md's results section
    python docs/render_performance.py --check    # exit 1 if the page differs from the results

Each benchmark writes its results with ``--json benchmarks/results/<name>.json``
(``benchmarks/common.py``: ``write_results``). This script turns every such
file into a section: the command, date, machine and library versions, and one
table per result table, each row a workload with every implementation's median
time and our time divided by it (below 1 favours zarr3_backend), then our CPU,
system time, page faults and peak memory. The page's prose stays as written;
only the text between the two markers is replaced.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
PAGE = REPO / "docs" / "performance.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


#: Our own resources shown after the times, where the benchmark measured them: (key, heading, digits).
RESOURCES = (
    ("cpu_s", "our CPU s", 3),
    ("system_s", "our sys s", 3),
    ("minor_faults", "our faults", 0),
    ("system_s_per_shard", "our sys s / shard", 3),
    ("minor_faults_per_shard", "our faults / shard", 0),
    ("peak_rss_mb", "our peak MB", 0),
    ("requests", "our requests", 0),
    ("rounds", "our rounds", 0),
    ("finalize_s", "dask concatenate s", 3),
)


def render_table(table: dict[str, Any]) -> list[str]:
    """One Markdown table: a row per workload, a column per implementation, then our own resources."""
    ours, others = table["ours"], list(table["baselines"])
    rows = table["workloads"]
    measured = [
        r for r in RESOURCES if any(row["results"].get(ours, {}).get(r[0]) is not None for row in rows)
    ]
    head = [
        "workload",
        f"{ours} s",
        *[f"{o}: s (ours / it)" for o in others],
        *[heading for _, heading, _ in measured],
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        results = row["results"]
        mine = results.get(ours, {})
        cells = [row["workload"], _number(mine.get("median_s"))]
        for other in others:
            theirs = results.get(other)
            cells.append(
                "-"
                if theirs is None
                else f"{_number(theirs['median_s'])} ({_number(theirs.get('ours_over_this'), 2)})"
            )
        cells += [_number(mine.get(key), digits) for key, _, digits in measured]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_results(directory: Path = RESULTS) -> str:
    """The results section: one subsection per JSON file in ``directory``, in name order."""
    out: list[str] = []
    for path in sorted(directory.glob("*.json")):
        run = json.loads(path.read_text())
        machine = run["machine"]
        versions = ", ".join(f"{name} {version}" for name, version in machine["versions"].items())
        out += [
            f"### `{run['benchmark']}`",
            "",
            f"`{run['command']}`, {run['date']}; {machine['machine']}, {machine['usable_cores']} cores, "
            f"{machine['ram_gb']} GB, Python {machine['python']}; {versions}.",
            "",
        ]
        for name, table in run["tables"].items():
            out += [f"**{name}**", "", *render_table(table), ""]
            if "load_average" in table:
                start, end = table["load_average"]
                out += [
                    f"Machine load (1-minute average): {start:.1f} before the run, {end:.1f} after it.",
                    "",
                ]
    return "\n".join(out).rstrip() + "\n"


def rendered_page(page: str, results: str) -> str:
    """``page`` with the text between its markers replaced by ``results``."""
    before, rest = page.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return f"{before}{BEGIN}\n{results}{END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is not up to date")
    args = parser.parse_args(argv)
    page = PAGE.read_text()
    new = rendered_page(page, render_results())
    if args.check:
        if new != page:
            print(f"{PAGE} is out of date: run python docs/render_performance.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
