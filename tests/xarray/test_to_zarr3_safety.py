"""to_zarr3 never damages a store: refused writes change no byte, first writes are marked until finished.

- every refusal (bad names, encodings, attributes, modes, regions, appends,
  DataTree groups, a non-empty target) leaves every key and value as it was,
  and the store still opens with both engine="zarr3" and open_group;
- mode="w" and overwrite=True replace a store whose metadata or pending
  record is broken (how a user recovers);
- a tampered pending record is refused whole, before anything is published;
- mode="w-" writes only into an empty location (as engine="zarr");
- an interrupted first write is reported on open and by validate, and the
  same write again completes it; a compute=False template warns until filled.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend import MetadataError, NodeExistsError, UnfinishedWriteError, Zarr3Error
from zarr3_backend.coordination.records import PENDING_KEY
from zarr3_backend.coordination.unfinished import MARK_ATTRIBUTE, UnfinishedWriteWarning
from zarr3_backend.validate import validate_store

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::FutureWarning")


def dataset() -> xr.Dataset:
    return xr.Dataset(
        {"t2m": (("time", "x"), np.arange(20.0).reshape(5, 4), {"units": "K"})},
        coords={"time": np.arange(5), "x": [10.0, 20.0, 30.0, 40.0]},
        attrs={"title": "stored"},
    )


def snapshot(path: Path) -> dict[str, bytes]:
    """Every key of a local store with its value."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def assert_opens_as_stored(path: Path) -> None:
    expected = dataset()
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3").load(), expected)
    group = zarr3_backend.open_group(path)
    assert sorted(group.arrays()) == ["t2m", "time", "x"]
    np.testing.assert_array_equal(group["t2m"][...], expected.t2m.values)


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "stored.zarr"
    dataset().to_zarr3(path, encoding={"t2m": {"chunks": (2, 4)}})
    return path


def renamed(name: str, coordinate: bool = False) -> xr.Dataset:
    if coordinate:
        return dataset().assign_coords({name: ("x", np.arange(4))})
    return dataset().assign({name: ("x", np.arange(4.0))})


def bad_tree() -> xr.DataTree:
    return xr.DataTree.from_dict({"/": dataset(), "/first": dataset(), "/second": renamed("..")})


REFUSED: list[tuple[str, Callable[[Path], Any], type[Exception]]] = [
    *[
        (f"mode=w, variable {n!r}", lambda p, n=n: renamed(n).to_zarr3(p, mode="w"), Zarr3Error)
        for n in ("..", ".", "%2e%2e", "%2E%2e", "a\\b", "a\0b", "__reserved", "...", "a%2Fb")
    ],
    *[
        (
            f"mode=w, coordinate {n!r}",
            lambda p, n=n: renamed(n, coordinate=True).to_zarr3(p, mode="w"),
            Zarr3Error,
        )
        for n in ("..", "%2e%2e", "a\\b", "a\0b")
    ],
    ("mode=a, variable '..'", lambda p: renamed("..").to_zarr3(p, mode="a"), Zarr3Error),
    (
        "mode=w, DataArray named '..'",
        lambda p: xr.DataArray(np.arange(3.0), dims="y", name="..").to_zarr3(p, mode="w"),
        Zarr3Error,
    ),
    (
        "mode=w, chunks (5, 4.5)",
        lambda p: dataset().to_zarr3(p, mode="w", encoding={"t2m": {"chunks": (5, 4.5)}}),
        Zarr3Error,
    ),
    (
        "mode=w, wrong-rank chunks",
        lambda p: dataset().to_zarr3(p, mode="w", encoding={"t2m": {"chunks": (5, 4, 1)}}),
        Zarr3Error,
    ),
    (
        "mode=w, encoding 'foo'",
        lambda p: dataset().to_zarr3(p, mode="w", encoding={"t2m": "foo"}),
        Zarr3Error,
    ),
    (
        "mode=w, encoding of no variable",
        lambda p: dataset().to_zarr3(p, mode="w", encoding={"nope": {}}),
        Zarr3Error,
    ),
    (
        "mode=w, unknown codec",
        lambda p: dataset().to_zarr3(p, mode="w", encoding={"t2m": {"compressors": [{"name": "nope"}]}}),
        Zarr3Error,
    ),
    (
        "mode=w, non-JSON attribute",
        lambda p: dataset().assign_attrs(bad=object()).to_zarr3(p, mode="w"),
        Zarr3Error,
    ),
    (
        "mode=w, non-JSON variable attribute",
        lambda p: dataset().assign(t2m=dataset().t2m.assign_attrs(bad={1, 2})).to_zarr3(p, mode="w"),
        Zarr3Error,
    ),
    ("mode='x'", lambda p: dataset().to_zarr3(p, mode="x"), Zarr3Error),  # type: ignore[arg-type]
    ("mode=w with append_dim", lambda p: dataset().to_zarr3(p, mode="w", append_dim="time"), Zarr3Error),
    (
        "mode=w with region",
        lambda p: dataset().to_zarr3(p, mode="w", region={"time": slice(0, 5)}),
        Zarr3Error,
    ),
    ("zarr_format=2", lambda p: dataset().to_zarr3(p, mode="w", zarr_format=2), Zarr3Error),
    ("progress='bad'", lambda p: dataset().to_zarr3(p, mode="w", progress="bad"), Zarr3Error),  # type: ignore[arg-type]
    (
        "append leaving out a variable",
        lambda p: dataset().drop_vars("t2m").to_zarr3(p, append_dim="time"),
        Zarr3Error,
    ),
    (
        "append along a dimension not stored",
        lambda p: dataset().expand_dims("new").to_zarr3(p, append_dim="new"),
        Zarr3Error,
    ),
    ("region past the end", lambda p: dataset().to_zarr3(p, region={"time": slice(3, 8)}), Zarr3Error),
    ("region with a step", lambda p: dataset().to_zarr3(p, region={"time": slice(0, 5, 2)}), Zarr3Error),
    (
        "mode=r+ with a new variable",
        lambda p: dataset().assign(new=("x", np.ones(4))).to_zarr3(p, mode="r+"),
        Zarr3Error,
    ),
    (
        "mode=a with encoding of a stored variable",
        lambda p: dataset().to_zarr3(p, mode="a", encoding={"t2m": {"chunks": (1, 4)}}),
        Zarr3Error,
    ),
    ("mode=w-, the default, on the store", lambda p: dataset().to_zarr3(p), NodeExistsError),
    ("mode=w, DataTree with a bad second group", lambda p: bad_tree().to_zarr3(p, mode="w"), Zarr3Error),
    (
        "mode=w, DataTree with a bad encoding in a later group",
        lambda p: xr.DataTree.from_dict({"/": dataset(), "/child": dataset()}).to_zarr3(
            p, mode="w", encoding={"/child": {"t2m": {"chunks": (1, 2, 3)}}}
        ),
        Zarr3Error,
    ),
    (
        "mode=w, DataTree encoding for no group",
        lambda p: xr.DataTree.from_dict({"/": dataset()}).to_zarr3(p, mode="w", encoding={"/nope": {}}),
        Zarr3Error,
    ),
    ("mode=w, group '..'", lambda p: dataset().to_zarr3(p, mode="w", group=".."), Zarr3Error),
    ("mode=w, a variable named zarr.json", lambda p: renamed("zarr.json").to_zarr3(p, mode="w"), Zarr3Error),
    ("mode=w, a variable named .zattrs", lambda p: renamed(".zattrs").to_zarr3(p, mode="w"), Zarr3Error),
    (
        "mode=w, a variable with our temporary prefix",
        lambda p: renamed(".__z3tmp.t2m").to_zarr3(p, mode="w"),
        Zarr3Error,
    ),
    ("mode=w, a 300-character name", lambda p: renamed("t" * 300).to_zarr3(p, mode="w"), Zarr3Error),
    ("mode=w, a 300-character group", lambda p: dataset().to_zarr3(p, mode="w", group="g" * 300), Zarr3Error),
    (
        "mode=w, group below an array",
        lambda p: dataset().to_zarr3(p, mode="w", group="t2m/inner"),
        Zarr3Error,
    ),
]


@pytest.mark.parametrize(
    ("write", "exc"), [(w, e) for _, w, e in REFUSED], ids=[name for name, _, _ in REFUSED]
)
def test_a_refused_write_changes_no_byte_and_the_store_still_opens(stored: Path, write, exc) -> None:  # type: ignore[no-untyped-def]
    before = snapshot(stored)
    with pytest.raises(exc):
        write(stored)
    assert snapshot(stored) == before
    assert_opens_as_stored(stored)


def test_a_refused_datatree_write_leaves_every_group(tmp_path: Path) -> None:
    path = tmp_path / "tree.zarr"
    xr.DataTree.from_dict({"/": dataset(), "/first": dataset(), "/second": dataset()}).to_zarr3(path)
    before = snapshot(path)
    with pytest.raises(Zarr3Error, match=r"\.\."):
        bad_tree().to_zarr3(path, mode="w")
    assert snapshot(path) == before
    tree = xr.open_datatree(path, engine="zarr3")
    xr.testing.assert_identical(tree["second"].to_dataset().load(), dataset())


# --- recovering a broken store ----------------------------------------------------------------------------------------


BRICKED_ROOT = {  # what the old writer left after a refused name: a root naming '..' as a consolidated member
    "zarr_format": 3,
    "node_type": "group",
    "attributes": {},
    "consolidated_metadata": {
        "kind": "inline",
        "must_understand": False,
        "metadata": {"..": {"zarr_format": 3, "node_type": "group", "attributes": {}}},
    },
}


@pytest.mark.parametrize(
    "root", [json.dumps(BRICKED_ROOT), "{not json", '{"zarr_format": 3, "node_type": "array"}']
)
def test_mode_w_and_overwrite_replace_a_store_with_invalid_root_metadata(stored: Path, root: str) -> None:
    (stored / "zarr.json").write_text(root)
    with pytest.raises(MetadataError):
        zarr3_backend.open_group(stored)
    dataset().to_zarr3(stored, mode="w")
    assert_opens_as_stored(stored)
    (stored / "zarr.json").write_text(root)
    assert zarr3_backend.create_group(stored, overwrite=True).attrs == {}
    (stored / "zarr.json").write_text(root)
    assert zarr3_backend.create_array(stored, shape=(2,), dtype="int8", overwrite=True).shape == (2,)


def test_mode_w_replaces_a_group_whose_own_metadata_is_invalid(stored: Path) -> None:
    dataset().to_zarr3(stored, group="child")
    (stored / "child" / "t2m" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "array"}')
    dataset().to_zarr3(stored, group="child", mode="w")
    xr.testing.assert_identical(xr.open_dataset(stored, group="child", engine="zarr3").load(), dataset())
    assert [p for p in validate_store(stored) if p.severity == "error"] == []


# --- the pending record -----------------------------------------------------------------------------------------------


def record(documents: Any = None, **fields: Any) -> str:
    base: dict[str, Any] = {
        "token": "t",
        "consolidate": True,
        "documents": {} if documents is None else documents,
    }
    return json.dumps({**base, **fields})


GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {}}
TAMPERED = {
    "not JSON": "{not json",
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "a list": "[1, 2]",
    "a string": '"documents"',
    "token a number": record(token=5),
    "documents a list": record(documents=[GROUP]),
    "consolidate a string": record(consolidate="yes"),
    "no documents": json.dumps({"token": "t", "consolidate": True}),
    "path ..": record({"..": GROUP}),
    "path ../outside": record({"../outside": GROUP}),
    "absolute path": record({"/etc": GROUP}),
    "path with a backslash": record({"a\\b": GROUP}),
    "path %2e%2e": record({"%2e%2e": GROUP}),
    "trailing slash": record({"child/": GROUP}),
    "document a list": record({"child": [1]}),
    "document a number": record({"child": 1}),
    "document not metadata": record({"child": {"node_type": "array"}}),
    "document v2": record({"child": {"zarr_format": 2}}),
    "document naming '..' as a consolidated member": record({"": BRICKED_ROOT}),
    "attributes a list": record({"child": {**GROUP, "attributes": [1]}}),
    "deep document": record({"child": {**GROUP, "attributes": {"a": "DEEP"}}}).replace(
        '"DEEP"', "[" * 50_000 + "]" * 50_000
    ),
}


@pytest.mark.parametrize("content", list(TAMPERED.values()), ids=list(TAMPERED))
def test_a_tampered_pending_record_is_refused_before_anything_is_published(
    stored: Path, content: str
) -> None:
    (stored / PENDING_KEY).write_text(content)
    before = snapshot(stored)
    with pytest.raises(MetadataError) as raised:
        dataset().to_zarr3(stored, append_dim="time")
    message = str(raised.value)
    assert message.startswith(PENDING_KEY) and "Delete it" in message and "mode='w'" in message
    assert snapshot(stored) == before
    with pytest.raises(MetadataError, match=PENDING_KEY):
        zarr3_backend.finish_pending_write(stored)
    assert snapshot(stored) == before
    dataset().to_zarr3(stored, mode="w")  # a broken record never blocks mode="w"
    assert not (stored / PENDING_KEY).exists()
    assert_opens_as_stored(stored)


def test_a_broken_pending_record_does_not_block_mode_w_on_a_group(stored: Path) -> None:
    (stored / PENDING_KEY).write_text(record({"..": GROUP}))
    dataset().to_zarr3(stored, group="child", mode="w")
    xr.testing.assert_identical(xr.open_dataset(stored, group="child", engine="zarr3").load(), dataset())


def test_a_valid_pending_record_is_completed_first(stored: Path) -> None:
    grown = json.loads((stored / "t2m" / "zarr.json").read_text())
    grown["attributes"]["comment"] = "published from the record"
    (stored / PENDING_KEY).write_text(record({"t2m": grown}))
    dataset().to_zarr3(stored, group="child")
    assert zarr3_backend.open_array(stored, "t2m").attrs["comment"] == "published from the record"
    assert not (stored / PENDING_KEY).exists()


# --- mode="w-" writes only into an empty location ---------------------------------------------------------------------


def v2_store(path: Path) -> Path:
    pytest.importorskip("zarr")
    dataset().to_zarr(path, zarr_format=2)
    return path


def project(path: Path) -> Path:
    (path / "notes").mkdir(parents=True)
    (path / "notes" / "readme.txt").write_text("mine")
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            v2_store,
            r"is a Zarr v2 store \(\.zgroup found, no zarr\.json\).*mode='w' to delete the Zarr v2 store",
        ),
        (
            project,
            r"is not empty \(it holds 'notes/readme\.txt', but no zarr\.json\).*mode='w' to delete everything there",
        ),
    ],
)
def test_mode_w_minus_refuses_a_non_empty_location_as_engine_zarr_does(tmp_path: Path, make, message) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path / "target")
    before = snapshot(path)
    pytest.importorskip("zarr")
    with pytest.raises(FileExistsError):
        dataset().to_zarr(path, mode="w-")
    with pytest.raises(NodeExistsError, match=message):
        dataset().to_zarr3(path)
    assert snapshot(path) == before
    if make is project:  # a new group in a folder is fine: nothing is hidden (in a v2 store, see below)
        dataset().to_zarr3(path, group="new")
        xr.testing.assert_identical(xr.open_dataset(path, group="new", engine="zarr3").load(), dataset())


def test_no_write_hides_a_zarr_v2_store(tmp_path: Path) -> None:
    path = v2_store(tmp_path / "v2.zarr")
    before = snapshot(path)
    for write in (
        lambda: dataset().to_zarr3(path, mode="a"),
        lambda: dataset().to_zarr3(path, append_dim="time"),
        lambda: dataset().to_zarr3(path, group="child"),
        lambda: dataset().to_zarr3(path, group="child", mode="w"),
        lambda: dataset().to_zarr3(path, region={"time": slice(0, 5)}),
    ):
        with pytest.raises(Zarr3Error, match="Zarr v2 store") as raised:
            write()
        assert "mode='w-'" not in str(raised.value)
    assert snapshot(path) == before
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr").load(), dataset())


def test_existing_store_message_says_mode_w_deletes(stored: Path) -> None:
    with pytest.raises(
        NodeExistsError, match=r"mode='w' to replace it \(this deletes it and everything below it\)"
    ):
        dataset().to_zarr3(stored)
    with pytest.raises(NodeExistsError, match="this deletes it"):
        zarr3_backend.create_group(stored)


# --- unfinished first writes ------------------------------------------------------------------------------------------


class Interrupt(KeyboardInterrupt):
    """Ctrl-C, raised by one data task."""


def interrupted(ds: xr.Dataset, name: str) -> xr.Dataset:
    """``ds`` with ``name`` dask-backed, its third block raising :class:`Interrupt`."""

    def stop(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
        if block_info and block_info[None]["chunk-location"][0] == 2:
            raise Interrupt
        return block

    data = da.map_blocks(stop, da.asarray(ds[name].values, chunks=1), dtype=ds[name].dtype)
    return ds.assign({name: (ds[name].dims, data, ds[name].attrs)})


def lazy() -> xr.Dataset:
    ds = dataset().assign(rain=dataset().t2m * 2)
    return ds.chunk({"time": 1})


def assert_unfinished(path: Path, group: str = "") -> None:
    with pytest.raises(
        UnfinishedWriteError,
        match=r"did not finish.*Re-run the same write.*mode='w' to replace it \(which deletes",
    ):
        xr.open_dataset(path, engine="zarr3", group=group or None)
    with pytest.raises(UnfinishedWriteError, match=MARK_ATTRIBUTE):
        zarr3_backend.open_group(path, group)
    with pytest.raises(UnfinishedWriteError):
        xr.open_datatree(path, engine="zarr3")
    errors = [p for p in validate_store(path, deep=True) if p.severity == "error"]
    key = f"{group}/zarr.json" if group else "zarr.json"
    assert key in [p.key for p in errors] and all("did not finish" in p.message for p in errors)


def test_an_interrupted_first_write_is_reported_and_the_same_write_completes_it(tmp_path: Path) -> None:
    path = tmp_path / "x.zarr"
    with pytest.raises(Interrupt):
        interrupted(lazy(), "rain").to_zarr3(path)
    assert_unfinished(path)
    with pytest.raises(UnfinishedWriteError, match="a different write than the unfinished one"):
        lazy().drop_vars("rain").to_zarr3(path)
    before = snapshot(path)
    with pytest.raises(UnfinishedWriteError, match="did not finish"):
        lazy().to_zarr3(path, append_dim="time")
    assert snapshot(path) == before
    lazy().to_zarr3(path)  # the same write again (mode="w-") completes it
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3").load(), lazy().load())
    assert validate_store(path, deep=True) == []
    assert MARK_ATTRIBUTE not in (path / "zarr.json").read_text()


def test_removing_the_mark_keeps_an_interrupted_write_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "x.zarr"
    with pytest.raises(Interrupt):
        interrupted(lazy(), "rain").to_zarr3(path)
    with pytest.raises(UnfinishedWriteError, match=r"del zarr3_backend.open_group\(store, '', mode='r\+'\)"):
        zarr3_backend.open_group(path)
    with pytest.warns(UnfinishedWriteWarning, match="did not finish"):
        group = zarr3_backend.open_group(path, mode="r+")  # opened to repair it: a warning
    del group.attrs[MARK_ATTRIBUTE]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_dataset(path, engine="zarr3").load()
    assert np.isnan(ds.rain.values).any()  # what the interrupted write left, now read as it is
    assert validate_store(path) == []


def test_mode_w_replaces_an_interrupted_write(tmp_path: Path) -> None:
    path = tmp_path / "x.zarr"
    with pytest.raises(Interrupt):
        interrupted(lazy(), "rain").to_zarr3(path)
    dataset().to_zarr3(path, mode="w")
    assert_opens_as_stored(path)


def test_an_interrupted_mode_w_of_a_group_marks_that_group(stored: Path) -> None:
    with pytest.raises(Interrupt):
        interrupted(lazy(), "rain").to_zarr3(stored, group="child", mode="w")
    assert_opens_as_stored(stored)  # the root is complete
    assert_unfinished(stored, "child")
    lazy().to_zarr3(stored, group="child")
    xr.testing.assert_identical(xr.open_dataset(stored, group="child", engine="zarr3").load(), lazy().load())


def test_an_interrupted_datatree_write_marks_every_group(tmp_path: Path) -> None:
    path = tmp_path / "tree.zarr"
    tree = xr.DataTree.from_dict({"/": dataset(), "/child": interrupted(lazy(), "rain")})
    with pytest.raises(Interrupt):
        tree.to_zarr3(path)
    assert_unfinished(path)
    with pytest.raises(UnfinishedWriteError):
        xr.open_dataset(path, group="child", engine="zarr3")
    xr.DataTree.from_dict({"/": dataset(), "/child": lazy()}).to_zarr3(path)  # the same write again
    reopened = xr.open_datatree(path, engine="zarr3")
    xr.testing.assert_identical(reopened["child"].to_dataset().load(), lazy().load())
    assert validate_store(path) == []


def test_the_cli_validate_reports_an_unfinished_write(tmp_path: Path) -> None:
    from command import zarr3

    path = tmp_path / "x.zarr"
    with pytest.raises(Interrupt):
        interrupted(lazy(), "rain").to_zarr3(path)
    result = zarr3("validate", path, "--deep")
    assert result.returncode == 1
    assert "ERROR    zarr.json: group '/'" in result.stdout and "did not finish" in result.stdout


def test_a_template_warns_until_its_data_is_written(tmp_path: Path) -> None:
    path = tmp_path / "template.zarr"
    delayed = lazy().to_zarr3(path, compute=False)
    with pytest.warns(UnfinishedWriteWarning, match="template written by to_zarr3.*compute=False") as caught:
        xr.open_dataset(path, engine="zarr3")
    assert caught[0].filename == __file__  # points at the user's line
    with pytest.warns(UnfinishedWriteWarning):
        assert MARK_ATTRIBUTE not in xr.open_dataset(path, engine="zarr3").attrs
    pytest.importorskip("zarr")
    assert (
        xr.open_dataset(path, engine="zarr").attrs[MARK_ATTRIBUTE]["template"] is True
    )  # engine="zarr" users see the mark
    with pytest.warns(UnfinishedWriteWarning):
        zarr3_backend.open_group(path)
    assert [(p.key, p.severity) for p in validate_store(path)] == [("zarr.json", "warning")]
    delayed.compute()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3").load(), lazy().load())
    assert validate_store(path, deep=True) == []


def test_a_region_write_takes_a_template_over(tmp_path: Path) -> None:
    path = tmp_path / "template.zarr"
    lazy().to_zarr3(path, compute=False)
    for start in range(0, 5, 1):
        part = lazy().isel(time=slice(start, start + 1)).drop_vars("x")
        part.to_zarr3(path, region={"time": slice(start, start + 1)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3").load(), lazy().load())


def test_a_finished_write_leaves_no_marker(tmp_path: Path) -> None:
    path = tmp_path / "x.zarr"
    lazy().to_zarr3(path)
    xr.DataTree.from_dict({"/a": dataset()}).to_zarr3(path, group="tree")
    dataset().to_zarr3(path, group="tree/a", mode="w")
    assert not [p for p in path.rglob("zarr.json") if MARK_ATTRIBUTE in p.read_text()]
    assert validate_store(path) == []
