"""Concurrency has one home, ``zarr3_backend/runtime``: checks on the package's source (read with ``ast``).

- thread coordination (conditions, events, queues, semaphores, ``as_completed``, handing work to an event
  loop from another thread) appears in at most three modules, all in the runtime; dask's progress display
  on a cluster keeps its own ``as_completed`` over distributed futures;
- no module registers fork hooks (per-process state is found by a pid check on use);
- no private attribute of another library or of the standard library is read, except the few listed
  below with their reason;
- locks, timers, events and process ids (``Lock``, ``RLock``, ``Timer``, ``Event``, ``os.getpid``) appear
  only in ``runtime/`` and ``coordination/``, except the modules listed with their reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "zarr3_backend"
RUNTIME = "runtime/"
COORDINATION = {
    "Condition",
    "Event",
    "Queue",
    "SimpleQueue",
    "LifoQueue",
    "PriorityQueue",
    "Semaphore",
    "BoundedSemaphore",
    "as_completed",
    "run_coroutine_threadsafe",
    "call_soon_threadsafe",
}
#: Modules outside the runtime allowed their own coordination, with the reason.
OWN_COORDINATION = {"dask/progress.py": "the progress display on a cluster waits on distributed's futures"}
#: What a write or a run coordinates with: its home is ``runtime/`` (locks, pools) and ``coordination/`` (leases).
LOCKING = {"Lock", "RLock", "Timer", "Event", "getpid"}
HOMES = ("runtime/", "coordination/")
#: Modules outside those homes allowed one of `LOCKING`, each name with the reason.
OWN_LOCKING = {
    (
        "codecs/registry.py",
        "Lock",
    ): "a mutex over the registry's allow-list of unsafe codecs, which users change",
    ("dask/compute.py", "getpid"): "asks whether the cluster's workers are processes other than this one",
    ("nodes/read_ahead.py", "RLock"): "a scan's values fetched ahead are shared with the fetches' callbacks",
    ("nodes/read_ahead.py", "Timer"): "values fetched ahead and not taken are dropped after an idle time",
    (
        "nodes/read_ahead.py",
        "getpid",
    ): "a forked child makes its own read-ahead (the parent's fetches are not its own)",
    ("store/etags.py", "Lock"): "a mutex over a store's cache of generations",
    ("store/local.py", "Lock"): "orders creating directories and temporary files against pruning empty ones",
    ("store/obstore_store.py", "getpid"): "obstore's client is made again in a forked child",
    ("testing/stores.py", "Lock"): "the contract suite's in-memory stores guard their dict",
}
#: Private names of other libraries read on purpose, with the reason.
FOREIGN_PRIVATE = {
    "_cat_file": "fsspec's asynchronous file system API is named with a leading underscore",
    "_info": "fsspec's asynchronous file system API",
    "_pipe_file": "fsspec's asynchronous file system API",
    "_rm_file": "fsspec's asynchronous file system API",
    "_call_s3": "s3fs's call with its retry policy (the ETag of a GET is only in its answer)",
    "_strip_protocol": "fsspec's path normalisation of a file system's own paths",
    "_getframe": "the caller's frame for warnings' stack level (no public equivalent without inspect's cost)",
    "_SubParsersAction": "argparse's type of add_subparsers(), used in annotations only",
    "_replace": "namedtuple's public API (underscored to avoid field clashes)",
    "_is_open": "zarr-python's store lifecycle: it opens a store handed to it unopened the same way (no public method)",
    "_open": "zarr-python's store lifecycle (a ZipStore must be opened before its first read)",
}


def _sources() -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p)) for p in sorted(ROOT.rglob("*.py"))}


def _names(tree: ast.Module) -> set[str]:
    """Every name and attribute a module uses, including names it imports."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            found.update(alias.name for alias in node.names)
    return found


def test_thread_coordination_lives_in_at_most_three_runtime_modules() -> None:
    users = {path for path, tree in _sources().items() if _names(tree) & COORDINATION}
    inside = {path for path in users if path.startswith(RUNTIME)}
    assert users - inside == set(OWN_COORDINATION)
    assert 1 <= len(inside) <= 3, sorted(inside)


def locking_outside_homes(sources: dict[str, ast.Module]) -> set[tuple[str, str]]:
    """``(module, name)`` for each of `LOCKING` a module outside ``runtime/`` and ``coordination/`` uses."""
    return {
        (path, name)
        for path, tree in sources.items()
        if not path.startswith(HOMES)
        for name in _names(tree) & LOCKING
    }


def test_locks_timers_events_and_pids_live_in_runtime_and_coordination() -> None:
    assert locking_outside_homes(_sources()) == set(OWN_LOCKING)


def test_a_lock_outside_the_homes_would_be_found() -> None:
    tree = ast.parse("import os, threading\nLOCK = threading.RLock()\nPID = os.getpid()")
    assert locking_outside_homes({"xarray/write/x.py": tree, "runtime/y.py": tree}) == {
        ("xarray/write/x.py", "RLock"),
        ("xarray/write/x.py", "getpid"),
    }


def test_no_fork_hooks() -> None:
    assert [path for path, tree in _sources().items() if "register_at_fork" in _names(tree)] == []


def test_no_private_attribute_of_another_library() -> None:
    sources = _sources()
    ours = {
        target.id if isinstance(target, ast.Name) else target.attr
        for tree in sources.values()
        for node in ast.walk(tree)
        for target in (
            [node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else getattr(node, "targets", [getattr(node, "target", None)])
        )
        if isinstance(target, ast.Name | ast.Attribute)
    } | {
        node.name
        for tree in sources.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    foreign = {
        (path, node.lineno, node.attr)
        for path, tree in sources.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and node.attr not in ours
        and node.attr not in FOREIGN_PRIVATE
    }
    assert sorted(foreign) == []


def test_the_old_private_reads_would_be_found() -> None:
    tree = ast.parse("pool._max_workers\nos.register_at_fork(after_in_child=f)\nthreading.Condition()")
    assert {"_max_workers", "register_at_fork", "Condition"} <= _names(tree)
