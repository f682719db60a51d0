"""Run a local benchmark once per transparent-huge-page setting (needs root; Linux).

Issue #13 asks that local reads hold "whatever the transparent-huge-page
settings are": this sets ``/sys/kernel/mm/transparent_hugepage/{enabled,defrag}``
to each pair in turn, runs the benchmark command, prints its output under a
heading, and restores the settings it found (also after a failure or Ctrl-C).

    sudo python benchmarks/thp_matrix.py -- python benchmarks/bench_core.py --only read --repeats 5 --profile no
    sudo python benchmarks/thp_matrix.py --settings never:madvise,always:always -- python benchmarks/bench_xarray_open.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

THP = Path("/sys/kernel/mm/transparent_hugepage")
#: (enabled, defrag) pairs: off, the common default, on for every mapping, and on with direct compaction.
DEFAULT_SETTINGS = "never:madvise,madvise:madvise,always:madvise,always:always"


def current(name: str) -> str:
    """The bracketed choice of a THP setting file, e.g. ``madvise`` in ``always [madvise] never``."""
    text = (THP / name).read_text()
    return text[text.index("[") + 1 : text.index("]")]


def apply(enabled: str, defrag: str) -> None:
    (THP / "enabled").write_text(enabled)
    (THP / "defrag").write_text(defrag)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--settings", default=DEFAULT_SETTINGS, help=f"enabled:defrag pairs (default {DEFAULT_SETTINGS})"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the benchmark command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the benchmark command after --")
    settings = [pair.split(":") for pair in args.settings.split(",")]
    found = current("enabled"), current("defrag")
    status = 0
    try:
        for enabled, defrag in settings:
            apply(enabled, defrag)
            print(f"=== THP enabled={enabled} defrag={defrag}", flush=True)
            status |= subprocess.run(command).returncode
    finally:
        apply(*found)
    return status


if __name__ == "__main__":
    sys.exit(main())
