"""Groups: create/open/list/walk/erase, implicit groups, node names, consolidated metadata."""

import json

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import NodeExistsError, NodeNameError, NodeNotFoundError
from zarr3_backend.testing.stores import CountingStore

pytestmark = pytest.mark.validate_stores


@pytest.mark.parametrize("name", ["", "a/b/", "..", ".", "__zarr", "__x"])
def test_invalid_node_names_are_refused(store, name):
    root = zarr3_backend.create_group(store)
    with pytest.raises(NodeNameError):
        root.create_group(name if name != "a/b/" else "a//b")


def test_tree_creation_listing_and_walk(store):
    root = zarr3_backend.create_group(store, attributes={"title": "era5"})
    root.create_array("t2m", shape=(4,), dtype="float32")
    sub = root.create_group("pressure")
    sub.create_array("z", shape=(2, 2), dtype="int8")
    reopened = zarr3_backend.open_group(store)
    assert reopened.attrs["title"] == "era5"
    assert sorted(reopened.members()) == ["pressure", "t2m"]
    assert [p for p, _ in reopened.walk()] == ["pressure", "pressure/z", "t2m"]
    assert isinstance(reopened["pressure/z"], zarr3_backend.Array)


def test_members_use_one_listing_and_one_batched_fetch(store):
    root = zarr3_backend.create_group(store)
    for i in range(20):
        root.create_array(f"v{i}", shape=(2,), dtype="int8")
    counting = CountingStore(store)
    group = zarr3_backend.open_group(counting)
    counting.reset()
    assert len(group.members()) == 20
    assert counting.counts["list_dir"] == 1 and counting.counts["get_many"] == 1


def test_creating_an_array_writes_ancestor_groups(store):
    zarr3_backend.create_array(store, "a/b/c", shape=(1,), dtype="int8")
    for key in ["zarr.json", "a/zarr.json", "a/b/zarr.json"]:
        assert json.loads(store.get(key))["node_type"] == "group"
    with pytest.raises(NodeExistsError, match="ancestor"):
        zarr3_backend.create_array(store, "a/b/c/d", shape=(1,), dtype="int8")


def test_implicit_groups(store):
    zarr3_backend.create_array(store, "x/y/data", shape=(3,), dtype="int8")
    store.delete("x/zarr.json")
    store.delete("x/y/zarr.json")
    root = zarr3_backend.open_group(store)
    assert isinstance(root["x"], zarr3_backend.Group)
    assert list(root.members()) == ["x"]
    assert [p for p, _ in root.walk()] == ["x", "x/y", "x/y/data"]


def test_existing_nodes_and_overwrite(store):
    zarr3_backend.create_array(store, "a", shape=(2,), dtype="int8")[...] = 1
    with pytest.raises(NodeExistsError, match="overwrite=True"):
        zarr3_backend.create_array(store, "a", shape=(2,), dtype="int8")
    fresh = zarr3_backend.create_array(store, "a", shape=(3,), dtype="int8", overwrite=True)
    assert fresh.nchunks_stored() == 0


def test_erase_node(store):
    root = zarr3_backend.create_group(store)
    root.create_array("gone", shape=(2,), dtype="int8")[...] = 3
    del root["gone"]
    assert "gone" not in root
    assert list(store.list_prefix("gone/")) == []
    with pytest.raises(NodeNotFoundError):
        del root["gone"]


def test_open_missing_node(store):
    with pytest.raises(
        NodeNotFoundError, match=r"zarr.json not found \(nor a Zarr v2 \.zarray or \.zgroup\)"
    ):
        zarr3_backend.open_group(store)
    with pytest.raises(FileNotFoundError):
        zarr3_backend.open_array(store, "nope")


def test_modes(store):
    group = zarr3_backend.open_group(store, mode="a")
    group.attrs["k"] = 1
    assert zarr3_backend.open_group(store, mode="r").attrs["k"] == 1
    with pytest.raises(NodeExistsError):
        zarr3_backend.open_group(store, mode="w-")
    assert dict(zarr3_backend.open_group(store, mode="w").attrs) == {}
    with pytest.raises(zarr3_backend.ReadOnlyError):
        zarr3_backend.open_group(store, mode="r").attrs["k"] = 2


def test_consolidated_metadata_avoids_listing(store):
    root = zarr3_backend.create_group(store)
    root.create_group("g").create_array("a", shape=(3,), dtype="int8")[...] = 4
    root.create_array("b", shape=(2,), dtype="float32")
    zarr3_backend.consolidate_metadata(store)
    counting = CountingStore(store)
    group = zarr3_backend.open_group(counting)
    counting.reset()
    paths = [p for p, _ in group.walk()]
    assert paths == ["b", "g", "g/a"]
    assert counting.counts["list_dir"] == 0 and counting.counts["get_many"] == 0
    assert group["g/a"][...].tolist() == [4, 4, 4]


def test_reads_consolidated_metadata_written_by_zarr_python(tmp_path):
    zarr = pytest.importorskip("zarr")
    root = zarr.open_group(str(tmp_path / "zp.zarr"), mode="w", zarr_format=3)
    root.create_group("sub").create_array("x", shape=(4,), dtype="int32")[:] = np.arange(4)
    zarr.consolidate_metadata(str(tmp_path / "zp.zarr"))
    group = zarr3_backend.open_group(str(tmp_path / "zp.zarr"))
    assert group.metadata.consolidated is not None
    assert group["sub/x"][...].tolist() == [0, 1, 2, 3]
    assert [p for p, _ in group.walk()] == ["sub", "sub/x"]


def test_zarr_python_reads_our_consolidated_metadata(store):
    zarr = pytest.importorskip("zarr")
    root = zarr3_backend.create_group(store)
    root.create_array("v", shape=(2,), dtype="int16")[...] = [1, 2]
    zarr3_backend.consolidate_metadata(store)
    group = zarr.open_consolidated(store.root, zarr_format=3)
    assert group["v"][:].tolist() == [1, 2]


def test_non_json_attributes_are_refused_by_name_and_nothing_is_written(tmp_path):
    array = zarr3_backend.create_array(tmp_path, "a", shape=(2,), dtype="f8", attributes={"units": "m"})
    with pytest.raises(
        zarr3_backend.ArgumentTypeError, match=r"attribute 'bad': .*set is not JSON serialisable"
    ):
        array.attrs["bad"] = {1, 2}
    with pytest.raises(TypeError, match=r"attribute 'when'"):
        zarr3_backend.open_group(tmp_path, mode="r+").attrs.update(when=object())
    with pytest.raises(zarr3_backend.ArgumentTypeError, match=r"attribute 'bad'"):
        zarr3_backend.create_array(
            tmp_path, "b", shape=(2,), dtype="f8", attributes={"ok": 1, "bad": object()}
        )
    assert dict(zarr3_backend.open_array(tmp_path, "a").attrs) == {"units": "m"} == dict(array.attrs)
    assert "b" not in zarr3_backend.open_group(tmp_path)


def test_require_group_returns_the_existing_group_or_creates_one(store):
    root = zarr3_backend.create_group(store)
    made = root.require_group("a/b")
    assert isinstance(made, zarr3_backend.Group) and made.path == "a/b"
    made.attrs["k"] = 1
    assert root.require_group("a/b").attrs["k"] == 1  # the existing group, not a new empty one
    assert sorted(zarr3_backend.open_group(store).members()) == ["a"]
    assert root.require_group("a/b", overwrite=True).attrs.asdict() == {}


def test_require_group_refuses_an_array_and_read_only_creation(store):
    root = zarr3_backend.create_group(store)
    root.create_array("x", shape=(2,), dtype="int8")
    root.create_group("g")
    with pytest.raises(NodeExistsError, match="'x' is an array, not a group"):
        root.require_group("x")
    reader = zarr3_backend.open_group(store, mode="r")
    assert reader.require_group("g").path == "g"  # an existing group needs no write
    with pytest.raises(zarr3_backend.ReadOnlyError):
        reader.require_group("missing")


def test_require_array_like_zarr_python(store):
    root = zarr3_backend.create_group(store)
    made = root.require_array("x", shape=(4,), dtype="int16", chunks=(2,), attributes={"u": "K"})
    assert (made.shape, made.chunks, made.attrs["u"]) == ((4,), (2,), "K")
    again = root.require_array("x", shape=4, dtype="int32")  # int16 casts safely to int32
    assert again.dtype == np.int16 and again.path == "x"
    with pytest.raises(NodeExistsError, match=r"exists with shape \(4,\), not \(5,\)"):
        root.require_array("x", shape=(5,), dtype="int16")
    with pytest.raises(NodeExistsError, match="dtype int16, which does not cast safely to int8"):
        root.require_array("x", shape=(4,), dtype="int8")
    with pytest.raises(NodeExistsError, match="dtype int16, which is not int32"):
        root.require_array("x", shape=(4,), dtype="int32", exact=True)
    root.create_group("g")
    with pytest.raises(NodeExistsError, match="'g' is a group, not an array"):
        root.require_array("g", shape=(1,), dtype="int8")


def test_require_matches_zarr_python_on_the_same_store(tmp_path):
    zarr = pytest.importorskip("zarr")
    ours = zarr3_backend.create_group(str(tmp_path / "ours"))
    theirs = zarr.create_group(str(tmp_path / "theirs"))
    for group in (ours, theirs):
        group.require_group("a").attrs["k"] = 1
        group.require_array("x", shape=(3,), dtype="int16")
    for group in (ours, theirs):
        assert dict(group.require_group("a").attrs) == {"k": 1}
        assert group.require_array("x", shape=(3,), dtype="float64").dtype == np.int16
    with pytest.raises(TypeError):
        theirs.require_group("x")
    with pytest.raises(NodeExistsError):
        ours.require_group("x")
