"""`write_guard`: what a write holds is taken at its start and released on every path; the write wing's shape."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

from zarr3_backend.coordination.guards import write_guard
from zarr3_backend.coordination.records import LEASE_KEY, PENDING_KEY, REGIONS_PREFIX
from zarr3_backend.runtime.locks import LOCAL_LOCKS
from zarr3_backend.store import make_store

ROOT = Path(__file__).resolve().parents[2] / "zarr3_backend"


def test_an_append_holds_the_lease_and_releases_it_when_the_write_fails(tmp_path: Path) -> None:
    store = make_store(str(tmp_path / "a.zarr"))
    with pytest.raises(RuntimeError, match="task failed"):
        with write_guard(store, "a", None, "time", None) as guard:
            assert store.exists(LEASE_KEY)
            assert guard.locks == LOCAL_LOCKS and guard.serialised
            raise RuntimeError("task failed")
    assert not store.exists(LEASE_KEY)


def test_a_region_write_holds_a_mark_and_releases_it_when_the_write_fails(tmp_path: Path) -> None:
    store = make_store(str(tmp_path / "r.zarr"))
    with pytest.raises(KeyboardInterrupt):
        with write_guard(store, "r+", None, None, {"x": slice(0, 2)}) as guard:
            assert len(list(store.list_prefix(REGIONS_PREFIX))) == 1
            assert guard.unguarded_region
            raise KeyboardInterrupt
    assert list(store.list_prefix(REGIONS_PREFIX)) == []


def test_the_users_lock_is_held_by_an_append_and_while_a_region_write_plans(tmp_path: Path) -> None:
    store = make_store(str(tmp_path / "l.zarr"))
    keys: list[str] = []
    lock = threading.Lock()

    def per_key(key: str) -> threading.Lock:
        keys.append(key)
        return lock

    with write_guard(store, "a", per_key, "time", None) as guard:
        assert lock.locked() and keys == [PENDING_KEY] and not store.exists(LEASE_KEY)
        assert guard.locks.given is per_key
    assert not lock.locked()
    with write_guard(store, "r+", lock, None, {"x": slice(0, 2)}) as guard:
        assert not lock.locked() and list(store.list_prefix(REGIONS_PREFIX)) == []
        with guard.planning():
            assert lock.locked()
        assert not lock.locked() and not guard.unguarded_region


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_the_user_lock_is_taken_in_two_modules_and_os_kill_in_one() -> None:
    taking = {
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*.py")
        for f in _functions(p)
        if any(a.arg == "lock" for a in [*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs])
    }
    assert taking == {"xarray/write/planner.py", "coordination/guards.py"}
    killing = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if "os.kill(" in p.read_text()}
    assert killing == {"coordination/lease.py"}


def test_to_zarr3_reads_on_one_screen() -> None:
    (to_zarr3,) = [f for f in _functions(ROOT / "xarray/write/planner.py") if f.name == "to_zarr3"]
    docstring = to_zarr3.body[0]
    assert (to_zarr3.end_lineno or 0) - to_zarr3.lineno + 1 - (
        (docstring.end_lineno or 0) - docstring.lineno + 1
    ) <= 60


def test_module_docstrings_state_contracts_in_a_few_lines() -> None:
    long = []
    for path in ROOT.rglob("*.py"):
        body = ast.parse(path.read_text()).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if (body[0].end_lineno or 0) - body[0].lineno + 1 > 20:
                long.append(str(path.relative_to(ROOT)))
    assert len(long) <= 8, sorted(long)
