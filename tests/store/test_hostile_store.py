"""Nothing outside the store: symbolic links, encoded dot segments, orphaned temp files, listing errors."""

from __future__ import annotations

import json
import os
import posixpath
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import fsspec
import numpy as np
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr3_backend as z3
from zarr3_backend.core.key_checks import segment_problem
from zarr3_backend.errors import InvalidKeyError, MetadataError, NodeNameError, StoreError, Zarr3Error
from zarr3_backend.nodes.paths import validate_node_name
from zarr3_backend.store import FsspecStore, LocalStore, validate_key
from zarr3_backend.store.base import TMP_PREFIX

HOSTILE_NAMES = [
    "%2e%2e",
    "%2E%2E",
    "%2e%2E",
    "..%2F",
    "..%2fsecret",
    "%2e",
    "a%5cb",
    "a%5Cb",
    "a\\b",
    "a\0b",
    "%252e%252e",
    "%2e%2e%2f",
    "x%00y",
]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the store root holding a group ``sub`` and a file."""
    target = tmp_path / "outside"
    z3.create_group(target / "sub")
    (target / "secret.txt").write_bytes(b"secret")
    return target


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    """A store root whose member ``link`` is a symbolic link to ``outside``."""
    root = tmp_path / "root"
    z3.create_group(root)
    os.symlink(outside, root / "link")
    return root


# -- symbolic links out of a local store -----------------------------------------------------------------


def test_create_array_through_link_is_refused(root: Path, outside: Path) -> None:
    before = snapshot(outside)
    with pytest.raises(InvalidKeyError, match="'link/new/zarr.json'.*outside the store root"):
        z3.create_array(root, "link/new", shape=(4,), dtype="int32")
    assert snapshot(outside) == before


def test_delete_through_link_is_refused(root: Path, outside: Path) -> None:
    group = z3.open_group(root, mode="r+")
    with pytest.raises(InvalidKeyError, match="link/sub"):
        del group["link/sub"]
    assert (outside / "sub" / "zarr.json").is_file()


def test_overwrite_through_link_is_refused(root: Path, outside: Path) -> None:
    before = snapshot(outside)
    with pytest.raises(InvalidKeyError, match="link"):
        z3.create_group(root, "link", overwrite=True)
    with pytest.raises(InvalidKeyError, match="link"):
        z3.create_group(root, "link/sub", overwrite=True)
    assert snapshot(outside) == before


def test_overwriting_the_root_removes_links_not_their_targets(root: Path, outside: Path) -> None:
    before = snapshot(outside)
    z3.create_group(root, overwrite=True)
    assert sorted(os.listdir(root)) == ["zarr.json"]
    assert snapshot(outside) == before


@pytest.mark.parametrize(
    "operation", ["get", "set", "delete", "exists", "list_prefix", "list_dir", "delete_prefix"]
)
def test_every_store_primitive_refuses_keys_through_links(root: Path, outside: Path, operation: str) -> None:
    store = LocalStore(root)
    before = snapshot(outside)
    calls: dict[str, Any] = {
        "get": lambda: store.get("link/secret.txt"),
        "set": lambda: store.set("link/new", b"x"),
        "delete": lambda: store.delete("link/secret.txt"),
        "exists": lambda: store.exists("link/secret.txt"),
        "list_prefix": lambda: list(store.list_prefix("link/")),
        "list_dir": lambda: store.list_dir("link/sub/"),
        "delete_prefix": lambda: store.delete_prefix("link/sub/"),
    }
    with pytest.raises(InvalidKeyError, match="outside the store root"):
        calls[operation]()
    assert snapshot(outside) == before


def test_file_links_out_of_the_root_are_not_read(root: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", root / "leak")
    store = LocalStore(root)
    with pytest.raises(InvalidKeyError, match="'leak'"):
        store.get("leak")
    with pytest.raises(InvalidKeyError, match="'leak'"):
        store.exists("leak")


def test_links_inside_the_root_are_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    array = z3.create_array(root, "data", shape=(4,), dtype="int16", chunks=(2,))
    array[:] = np.arange(4, dtype="int16")
    os.symlink(root / "data", root / "alias")
    os.symlink(root / "data" / "zarr.json", root / "alias.json")
    np.testing.assert_array_equal(z3.open_array(root, "alias")[:], np.arange(4))
    assert LocalStore(root).get("alias.json") == (root / "data" / "zarr.json").read_bytes()


def test_a_root_that_is_itself_a_link_works(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "via")
    array = z3.create_array(tmp_path / "via", "a", shape=(3,), dtype="uint8")
    array[:] = [1, 2, 3]
    np.testing.assert_array_equal(z3.open_array(tmp_path / "via", "a")[:], [1, 2, 3])


# -- encoded dot segments, backslashes, NUL --------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_are_refused_as_keys_and_node_names(name: str) -> None:
    with pytest.raises(InvalidKeyError):
        validate_key(f"group/{name}/zarr.json")
    with pytest.raises(NodeNameError):
        validate_node_name(name)


@pytest.mark.parametrize("name", ["50%", "a%20b", "t2m", "%41", "..a", "a.."])
def test_harmless_names_pass(name: str) -> None:
    assert validate_node_name(name) == name
    assert validate_key(f"{name}/zarr.json") == f"{name}/zarr.json"


#: Key segments for the quick check: plain ones and dot or empty ones; then also the characters it looks for.
_PLAIN_OR_DOTS = st.sampled_from(["a", "b0", "...", "a.", ".a", ".", "..", ""])
_ANY_SEGMENT = (
    _PLAIN_OR_DOTS
    | st.sampled_from(["%2e", "%", "a\\b", "a\x00"])
    | st.text(alphabet="ab.%\\\x00", max_size=3)
)


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="ab./%\\\x00", min_size=1, max_size=12)
    | st.lists(_PLAIN_OR_DOTS, min_size=1, max_size=5).map("/".join)
    | st.lists(_ANY_SEGMENT, min_size=1, max_size=5).map("/".join)
)
def test_the_quick_key_check_refuses_what_the_segment_rules_refuse(key: str) -> None:
    """Keys without ``%``, backslash, NUL or dot segments skip the per-segment rules: the verdict is the same."""
    expected = not key.startswith("/") and not key.endswith("/")
    expected = expected and all(segment_problem(part) is None for part in key.split("/"))
    try:
        validate_key(key)
        refused = False
    except InvalidKeyError:
        refused = True
    assert refused != expected


class _RecordingMemory(MemoryFileSystem):  # type: ignore[misc]
    """A memory file system that records the path of every read, write, listing and deletion."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.paths: list[str] = []

    def _record(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        self.paths.append(path)
        return getattr(super(), method)(path, *args, **kwargs)

    def cat_file(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._record("cat_file", path, *args, **kwargs)

    def pipe_file(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._record("pipe_file", path, *args, **kwargs)

    def rm_file(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._record("rm_file", path, *args, **kwargs)

    def find(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._record("find", path, *args, **kwargs)

    def ls(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._record("ls", path, *args, **kwargs)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_make_no_request(name: str) -> None:
    fs = _RecordingMemory(skip_instance_cache=True)
    root = f"/hostile/{uuid.uuid4().hex}"
    store = FsspecStore(fs, root)
    z3.create_group(store)
    fs.paths.clear()
    group = z3.open_group(store, mode="r+")
    with pytest.raises(Zarr3Error):
        group[f"{name}/secret"]
    with pytest.raises(Zarr3Error):
        z3.open_group(store, f"{name}/secret")
    with pytest.raises(Zarr3Error):
        group.create_array(name, shape=(1,), dtype="uint8")
    with pytest.raises(InvalidKeyError):
        store.get(f"{name}/zarr.json")
    assert fs.paths == [f"{root}/zarr.json"]  # only opening the group itself


@pytest.fixture
def recorded_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Request paths the test HTTP server receives."""
    from tests.servers.servers import RangeRequestHandler

    paths: list[str] = []
    send_head = RangeRequestHandler.send_head

    def recording(self: Any) -> Any:
        paths.append(self.path)
        return send_head(self)

    monkeypatch.setattr(RangeRequestHandler, "send_head", recording)
    return paths


@pytest.mark.parametrize("name", ["%2e%2e", "..%2F", "%2E%2E%2Fsecret", "..%5c"])
def test_http_store_never_requests_outside_its_root(
    http_dir: Any, recorded_paths: list[str], name: str
) -> None:
    store_dir = Path(http_dir.path) / "store.zarr"
    z3.create_array(store_dir, "a", shape=(2,), dtype="uint8")[:] = [1, 2]
    z3.consolidate_metadata(store_dir)
    (Path(http_dir.path) / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    url = f"{http_dir.url}/store.zarr"
    store_path = url.split("//", 1)[1].split("/", 1)[1]

    group = z3.open_group(url)
    with pytest.raises(Zarr3Error):
        group[name]
    with pytest.raises(Zarr3Error):
        z3.open_group(url, f"{name}/x")
    hostile = json.loads((store_dir / "zarr.json").read_text())
    hostile["consolidated_metadata"]["metadata"][f"{name}/secret"] = hostile["consolidated_metadata"][
        "metadata"
    ]["a"]
    (store_dir / "zarr.json").write_text(json.dumps(hostile))
    with pytest.raises(MetadataError, match="consolidated_metadata member"):
        z3.open_group(url)
    assert recorded_paths, "the server saw no request at all"
    resolved = [posixpath.normpath(unquote(unquote(path)).replace("\\", "/")) for path in recorded_paths]
    assert all(path.startswith(f"/{store_path}/") for path in resolved), recorded_paths


# -- orphaned temporary files ----------------------------------------------------------------------------


def _orphan(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    orphan = directory / f"{TMP_PREFIX}deadbeef"
    orphan.write_bytes(b"half a shard")
    return orphan


def test_temp_files_are_never_listed(tmp_path: Path) -> None:
    z3.create_array(tmp_path, "a", shape=(4,), dtype="uint8", chunks=(2,))[:] = 1
    _orphan(tmp_path / "a" / "c")
    _orphan(tmp_path)
    store = LocalStore(tmp_path)
    assert not any(TMP_PREFIX in key for key in store.list())
    keys, prefixes = store.list_dir("")
    assert keys == ["zarr.json"] and prefixes == ["a/"]
    memory = FsspecStore(fsspec.filesystem("memory"), "/tmp-listing")
    memory.set("a/zarr.json", b"{}")
    memory.fs.pipe_file(f"/tmp-listing/a/{TMP_PREFIX}x", b"partial")
    assert list(memory.list()) == ["a/zarr.json"]
    assert memory.list_dir("a/") == (["a/zarr.json"], [])


@pytest.mark.parametrize("path", ["", "a"])
def test_overwrites_remove_orphaned_temp_files(tmp_path: Path, path: str) -> None:
    z3.create_array(tmp_path, "a", shape=(4,), dtype="uint8", chunks=(2,))[:] = 1
    orphans = [_orphan(tmp_path / "a" / "c"), _orphan(tmp_path / "a")]
    if not path:
        orphans.append(_orphan(tmp_path))
    z3.create_array(tmp_path, path, shape=(2,), dtype="uint8", overwrite=True)
    assert not any(orphan.exists() for orphan in orphans)
    assert not list(tmp_path.rglob(f"{TMP_PREFIX}*"))


def test_overwrites_on_object_stores_remove_copied_temp_files() -> None:
    store = FsspecStore(MemoryFileSystem(skip_instance_cache=True), f"/copied-{uuid.uuid4().hex}")
    z3.create_array(store, "a", shape=(2,), dtype="uint8")[:] = 1
    store.fs.pipe_file(f"{store.root}/a/{TMP_PREFIX}x", b"partial")
    z3.create_array(store, "a", shape=(2,), dtype="uint8", overwrite=True)
    assert not store.fs.exists(f"{store.root}/a/{TMP_PREFIX}x")


def test_mode_w_removes_orphaned_temp_files(tmp_path: Path) -> None:
    z3.create_group(tmp_path)
    orphan = _orphan(tmp_path)
    z3.open_group(tmp_path, mode="w")
    assert not orphan.exists()


@pytest.mark.parametrize("group", [None, "child"])
def test_to_zarr3_mode_w_removes_orphaned_temp_files(tmp_path: Path, group: str | None) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"v": ("t", np.arange(4.0))})
    ds.to_zarr3(tmp_path / "s.zarr", group=group)
    node = tmp_path / "s.zarr" / (group or "")
    orphans = [_orphan(node), _orphan(node / "v"), _orphan(node / "v" / "c")]
    ds.to_zarr3(tmp_path / "s.zarr", group=group, mode="w")
    assert not any(orphan.exists() for orphan in orphans)
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "s.zarr", group=group, engine="zarr3").load(), ds)


# -- listing errors --------------------------------------------------------------------------------------


class _FailingListing(MemoryFileSystem):  # type: ignore[misc]
    def find(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionResetError("connection closed while listing")

    def ls(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError(5, "I/O error while listing")


def test_listing_errors_are_store_errors() -> None:
    store = FsspecStore(_FailingListing(skip_instance_cache=True), "/failing")
    with pytest.raises(StoreError, match="could not list prefix 'a/'.*ConnectionResetError"):
        list(store.list_prefix("a/"))
    with pytest.raises(StoreError, match="could not list prefix ''"):
        store.list_dir("")


def test_listing_errors_from_botocore_are_store_errors() -> None:
    botocore = pytest.importorskip("botocore.exceptions")

    class Closed(_FailingListing):
        def find(self, *args: Any, **kwargs: Any) -> Any:
            raise botocore.ConnectionClosedError(endpoint_url="http://127.0.0.1:1")

    store = FsspecStore(Closed(skip_instance_cache=True), "/closed")
    with pytest.raises(StoreError, match="ConnectionClosedError"):
        list(store.list())


def test_local_listing_errors_are_store_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path)
    store.set("a/zarr.json", b"{}")

    def failing(path: Any) -> Any:
        raise OSError(5, "I/O error", path)

    monkeypatch.setattr(os, "scandir", failing)
    with pytest.raises(StoreError, match="could not list prefix 'a/'"):
        store.list_dir("a/")
