"""``zarr3 validate``: check a store against the Zarr v3 (or v2) spec, print every problem and a summary table."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import asdict
from typing import cast

from ..validate import CHECKS, Problem, Progress, validate_store
from .options import open_store


def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], store_options: argparse.ArgumentParser
) -> None:
    parser = commands.add_parser(
        "validate",
        parents=[store_options],
        help="check a store against the Zarr v3 (or v2) spec",
        description="Check every zarr.json (required fields, types, extensions, must_understand, codec chains), "
        "node names, consolidated metadata, and that every other key is a chunk inside its array's "
        "grid. --deep also reads every chunk: shard indexes, checksums, and that each chunk decodes "
        "to its expected shape. A Zarr v2 store gets the same checks (.zgroup, .zarray, .zattrs, "
        ".zmetadata). Exits with status 1 if any error is found.",
    )
    parser.add_argument("store", metavar="STORE")
    parser.add_argument(
        "--deep", action="store_true", help="also read and check every stored chunk and shard"
    )
    parser.add_argument(
        "--array",
        action="append",
        metavar="PATH",
        dest="arrays",
        help="check only this array (repeatable): its zarr.json, its keys and, with --deep, its chunks; "
        "only its own keys are listed",
    )
    parser.add_argument("--strict", action="store_true", help="exit with status 1 on warnings too")
    parser.add_argument("--json", action="store_true", help="print the problems as JSON")
    parser.set_defaults(run=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    store = open_store(args)
    listing = Listing()
    problems = validate_store(
        store,
        deep=args.deep,
        progress=progress_bar if args.deep else None,
        arrays=args.arrays,
        listed=listing,
    )
    listing.close()
    if args.json:
        print(json.dumps([asdict(p) for p in problems], indent=2))
    else:
        scope = f", arrays {', '.join(args.arrays)}" if args.arrays else ""
        print(f"validating {args.store}{scope}" + (" (deep)" if args.deep else ""))
        for problem in problems:
            print(f"{problem.severity.upper():8} {problem.key}: {problem.message}")
        print()
        print(summary_table(problems, deep=args.deep))
    failing = [p for p in problems if p.severity == "error" or args.strict]
    return 1 if failing else 0


def summary_table(problems: list[Problem], *, deep: bool) -> str:
    """Errors and warnings per check, then a verdict line."""
    rows = ["check         errors  warnings"]
    for check in CHECKS:
        found = [p for p in problems if p.check == check]
        if check == "chunks" and not deep:
            rows.append(f"{check:<12} {'(not run: use --deep)':>17}")
            continue
        errors = sum(p.severity == "error" for p in found)
        rows.append(f"{check:<12} {errors:>7} {len(found) - errors:>9}")
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    verdict = "valid" if not errors else "INVALID"
    rows.append(f"{verdict}: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}")
    return "\n".join(rows)


def progress_bar(total: int) -> Progress:
    """A tqdm bar on stderr when tqdm is installed, else a plain counter."""
    if importlib.util.find_spec("tqdm") is not None:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="chunk", desc="checking chunks", file=sys.stderr, leave=False)
        return cast(Progress, bar)  # tqdm ships no type information
    return Counter(total)


class Listing:
    """``listed n keys`` on stderr, rewritten as the listing streams in (every 10,000 keys)."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, listed: int) -> None:
        self.shown = True
        print(f"\rlisted {listed} keys", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown:
            print(file=sys.stderr)


class Counter:
    """``checked n/total chunks`` on stderr, rewritten at most every 1%."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.shown = total, 0, -1

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.total and (self.done * 100 // self.total) != self.shown:
            self.shown = self.done * 100 // self.total
            print(f"\rchecked {self.done}/{self.total} chunks", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown >= 0:
            print(file=sys.stderr)
