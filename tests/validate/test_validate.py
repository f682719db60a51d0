"""zarr3_backend.validate: good stores from every writer pass; each kind of damage is reported with its key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from crc32c import crc32c

import zarr3_backend
from zarr3_backend.validate import Problem, validate_store

GOLDEN = Path(__file__).parents[1] / "interop" / "golden"
INDEX_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def only(problems: list[Problem], check: str) -> tuple[str, str]:
    """The single problem found, as ``(key, message)``, after checking its kind.

    Integrity warnings (arrays written without a checksum on purpose) are left out unless ``check`` asks for them.
    """
    problems = [p for p in problems if p.check == check or p.check != "integrity"]
    assert len(problems) == 1, problems
    assert problems[0].check == check, problems
    return problems[0].key, problems[0].message


# -- stores written by every writer validate clean ----------------------------------------


def write_core(root: Path) -> None:
    group = zarr3_backend.create_group(root, attributes={"title": "core"})
    sharded = group.create_array(
        "sharded",
        shape=(10, 9),
        dtype="float32",
        chunks=(2, 3),
        shards=(4, 6),
        compressors=[{"name": "zstd"}, "crc32c"],
        index_location="start",
    )
    sharded[:] = np.arange(90).reshape(10, 9)
    sharded[1:3, 2:4] = -1
    v2 = group.create_array("v2keys", shape=(5, 5), dtype="int16", chunks=(2, 2), chunk_key_encoding="v2")
    v2[:3] = 7
    group.create_array("scalar", shape=(), dtype="float64")[...] = 1.5
    group.create_array("sub/text", shape=(3,), dtype=str, chunks=(2,))[:] = ["a", "bb", "ccc"]
    shrunk = group.create_array("shrunk", shape=(20,), dtype="uint8", chunks=(3,))
    shrunk[:] = 1
    shrunk.resize(7)
    zarr3_backend.consolidate_metadata(root)


def write_to_zarr3(root: Path) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset(
        {"t2m": (("time", "lat"), np.random.default_rng(0).random((6, 4)).astype("float32"), {"units": "K"})},
        coords={"time": np.arange(6), "lat": [0.0, 1.0, 2.0, 3.0]},
    )
    ds.chunk({"time": 2}).to_zarr3(root, encoding={"t2m": {"chunks": (1, 4), "shards": (2, 4)}})
    ds.isel(time=slice(0, 3)).assign_coords(time=np.arange(6, 9)).to_zarr3(root, append_dim="time")


def write_zarr_python(root: Path) -> None:
    zarr = pytest.importorskip("zarr")
    group = zarr.open_group(root, mode="w", attributes={"a": 1})
    plain = group.create_array("plain", shape=(7, 5), chunks=(3, 2), dtype="int32")
    plain[:] = np.arange(35).reshape(7, 5)
    sharded = group.create_array(
        "nested/sharded", shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="float64"
    )
    sharded[:5] = 3.25
    zarr.consolidate_metadata(root)


def write_tensorstore(root: Path) -> None:
    ts = pytest.importorskip("tensorstore")
    array = ts.open(
        {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(root)},
            "metadata": {
                "shape": [9, 6],
                "data_type": "uint16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [6, 6]}},
                "codecs": [
                    {
                        "name": "sharding_indexed",
                        "configuration": {
                            "chunk_shape": [3, 2],
                            "codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "gzip"},
                            ],
                            "index_codecs": INDEX_CODECS,
                        },
                    }
                ],
            },
        },
        create=True,
    ).result()
    array[:7].write(np.arange(42, dtype="uint16").reshape(7, 6)).result()


def write_xarray_dataarray(
    root: Path,
) -> None:  # xarray's engine names an unnamed DataArray __xarray_dataarray_variable__
    xr = pytest.importorskip("xarray")
    pytest.importorskip("zarr")
    xr.DataArray(np.arange(3.0)).to_zarr(root, zarr_format=3, consolidated=True)


UNCHECKED = "no checksum, so a changed byte may read as wrong values without an error; add 'crc32c' after the compressors"


@pytest.mark.parametrize(
    ("writer", "unchecked"),
    [
        (write_core, {}),
        (write_to_zarr3, {}),
        (write_tensorstore, {}),
        (write_xarray_dataarray, {}),
        # zarr-python's default compressor is zstd without a checksum
        (
            write_zarr_python,
            {"plain/zarr.json": "its chunks carry", "nested/sharded/zarr.json": "its inner chunks carry"},
        ),
    ],
)
def test_stores_from_every_writer_have_no_problems(
    writer: Any, unchecked: dict[str, str], tmp_path: Path
) -> None:
    writer(tmp_path / "s.zarr")
    problems = validate_store(tmp_path / "s.zarr", deep=True)
    assert {
        p.key: p.message.split(": ", 1)[1].removesuffix(" (as the default codecs do)") for p in problems
    } == {key: f"{what} {UNCHECKED}" for key, what in unchecked.items()}
    assert all((p.check, p.severity) == ("integrity", "warning") for p in problems)


@pytest.mark.parametrize(
    "store", sorted(p for p in GOLDEN.glob("*/*") if p.is_dir()), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_golden_stores_have_no_problems_but_their_expected_files(store: Path) -> None:
    problems = [p for p in validate_store(store, deep=True) if p.check != "integrity"]  # those: see below
    assert all(
        p.key.startswith("expected.") and p.severity == "warning" and "stray key" in p.message
        for p in problems
    )


@pytest.mark.parametrize(
    ("codecs", "unchecked"),
    [
        ({}, None),
        ({"compressors": "zstd"}, "its chunks carry"),
        ({"compressors": None}, "its chunks carry"),
        ({"compressors": ["crc32c", "zstd"]}, None),  # a checksum before the compressor covers it too
        ({"compressors": [{"name": "zstd", "configuration": {"level": 1, "checksum": True}}]}, None),
        ({"compressors": "gzip"}, None),  # gzip's CRC-32
        ({"compressors": "blosc"}, "its chunks carry"),
        ({"compressors": "numcodecs.crc32"}, None),
        ({"compressors": "numcodecs.zlib"}, None),  # zlib's Adler-32
        ({"compressors": "numcodecs.lz4"}, "its chunks carry"),
        ({"shards": (4,)}, None),
        ({"shards": (4,), "compressors": "zstd"}, "its inner chunks carry"),
        (
            {"shards": (4,), "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]},
            "its shard index carries",
        ),
        (
            {
                "shards": (4,),
                "compressors": None,
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            },
            "its inner chunks and shard index carry",
        ),
        (
            {
                "codecs": [
                    {
                        "name": "sharding_indexed",
                        "configuration": {
                            "chunk_shape": [2],
                            "codecs": [{"name": "bytes"}],
                            "index_codecs": [{"name": "bytes"}],
                        },
                    },
                    "crc32c",
                ]
            },
            None,
        ),
    ],
)
def test_integrity_warns_per_array_without_a_checksum(
    codecs: dict[str, Any], unchecked: str | None, tmp_path: Path
) -> None:
    root = zarr3_backend.create_group(tmp_path / "s.zarr")
    root.create_array("a", shape=(8,), dtype="int32", chunks=(2,), **codecs)[:] = np.arange(8)
    root.create_array("b", shape=(8,), dtype="int32")[:] = 1  # default codecs: checked
    problems = validate_store(tmp_path / "s.zarr", deep=True)
    if unchecked is None:
        assert problems == []
    else:
        assert problems == [
            Problem(
                "a/zarr.json",
                "integrity",
                f"array '/a': {unchecked} {UNCHECKED} (as the default codecs do)",
                "warning",
            )
        ]


# -- chunks and shards (--deep) -----------------------------------------------------------


@pytest.fixture
def sharded(tmp_path: Path) -> Path:
    """``a``: 8 elements, inner chunks of 2 (each zstd + crc32c), one shard, index at the end."""
    array = zarr3_backend.create_array(
        tmp_path / "s.zarr",
        "a",
        shape=(8,),
        dtype="int32",
        chunks=(2,),
        shards=(8,),
        compressors=[{"name": "zstd"}, "crc32c"],
    )
    array[:6] = np.arange(6)
    return tmp_path / "s.zarr"


def edit_index(store: Path, edit: Any) -> None:
    """Rewrite the shard index of ``a/c/0`` (4 entries + crc32c at the end) with a valid checksum."""
    shard = store / "a" / "c" / "0"
    data = bytearray(shard.read_bytes())
    entries = np.frombuffer(bytes(data[-68:-4]), dtype="<u8").reshape(4, 2).copy()
    edit(entries)
    raw = entries.astype("<u8").tobytes()
    data[-68:] = raw + crc32c(raw).to_bytes(4, "little")
    shard.write_bytes(bytes(data))


def test_flipped_byte_in_an_inner_chunk_is_a_checksum_error(sharded: Path) -> None:
    shard = sharded / "a" / "c" / "0"
    data = bytearray(shard.read_bytes())
    data[3] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert validate_store(sharded) == []  # only --deep reads chunks
    key, message = only(validate_store(sharded, deep=True), "chunks")
    assert key == "a/c/0" and "inner chunk (0,)" in message and "crc32c checksum mismatch" in message


def test_flipped_byte_in_the_index_is_a_checksum_error(sharded: Path) -> None:
    shard = sharded / "a" / "c" / "0"
    data = bytearray(shard.read_bytes())
    data[-10] ^= 0x01
    shard.write_bytes(bytes(data))
    key, message = only(validate_store(sharded, deep=True), "chunks")
    assert key == "a/c/0" and "shard index" in message and "crc32c checksum mismatch" in message


def test_truncated_shard(sharded: Path) -> None:
    shard = sharded / "a" / "c" / "0"
    shard.write_bytes(shard.read_bytes()[:40])
    key, message = only(validate_store(sharded, deep=True), "chunks")
    assert key == "a/c/0" and "truncated" in message and "index alone needs 68" in message


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda e: e.__setitem__((1, 0), e[0, 0]), "inner chunk (1,) (bytes 0-"),
        (lambda e: e.__setitem__((2, 1), 10**6), "points past the end of the shard"),
        (lambda e: e.__setitem__((1, 0), 2**64 - 1), "only one of offset/nbytes marked empty"),
    ],
)
def test_broken_shard_index_structure(sharded: Path, edit: Any, expected: str) -> None:
    edit_index(sharded, edit)
    problems = validate_store(sharded, deep=True)
    assert problems and all(p.key == "a/c/0" and p.check == "chunks" for p in problems)
    assert any(expected in p.message for p in problems), problems


def test_overlapping_inner_chunks_are_named(sharded: Path) -> None:
    edit_index(sharded, lambda e: e.__setitem__((1, 0), e[0, 0]))
    assert any(
        "inner chunk (1,)" in p.message and "overlaps inner chunk (0,)" in p.message
        for p in validate_store(sharded, deep=True)
    )


def test_inner_chunk_inside_the_index_is_named(sharded: Path) -> None:
    size = (sharded / "a" / "c" / "0").stat().st_size
    edit_index(sharded, lambda e: e.__setitem__((0,), [size - 68, 4]))
    assert any(
        "inner chunk (0,)" in p.message and "overlaps the shard index" in p.message
        for p in validate_store(sharded, deep=True)
    )


def test_chunk_of_the_wrong_size(tmp_path: Path) -> None:
    array = zarr3_backend.create_array(
        tmp_path / "s.zarr", shape=(4,), dtype="int32", chunks=(2,), compressors=None
    )
    array[:] = 1
    (tmp_path / "s.zarr" / "c" / "1").write_bytes(b"\0" * 6)
    key, message = only(validate_store(tmp_path / "s.zarr", deep=True), "chunks")
    assert key == "c/1" and "6" in message and "8" in message


def test_progress_sees_every_chunk(sharded: Path) -> None:
    zarr3_backend.create_array(sharded, "b", shape=(5,), dtype="int8", chunks=(1,))[:] = 1
    seen: dict[str, int] = {"total": -1, "done": 0, "closed": 0}

    class Bar:
        def update(self, n: int = 1) -> None:
            seen["done"] += n

        def close(self) -> None:
            seen["closed"] += 1

    def progress(total: int) -> Bar:
        seen["total"] = total
        return Bar()

    assert validate_store(sharded, deep=True, progress=progress) == []
    assert seen == {"total": 6, "done": 6, "closed": 1}


# -- metadata documents ---------------------------------------------------------------------


def _array_document(**changes: Any) -> dict[str, Any]:
    document = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {},
    }
    document.update(changes)
    return {k: v for k, v in document.items() if v is not None}


@pytest.mark.parametrize(
    "document, expected",
    [
        ("{not json", "not valid JSON"),
        (_array_document(data_type=None), "missing required field 'data_type'"),
        (_array_document(shape="4"), "shape: expected a list of non-negative integers"),
        (_array_document(zarr_format=2), "this is Zarr v2 metadata"),
        (_array_document(extra={"x": 1}), "unknown metadata field 'extra'"),
        (
            _array_document(codecs=[{"name": "zstd"}, {"name": "bytes"}]),
            "then exactly one array->bytes codec",
        ),
        (
            _array_document(codecs=[{"name": "bytes"}, {"name": "no-such-codec"}]),
            "unknown codec 'no-such-codec'",
        ),
        (
            _array_document(codecs=[{"name": "bytes"}, {"name": "blosc", "configuration": {"clevel": 12}}]),
            "clevel",
        ),
        (
            _array_document(storage_transformers=[{"name": "unknown-transformer"}]),
            "storage transformer 'unknown-transformer'",
        ),
        (
            _array_document(codecs=[{"name": "bytes"}]),
            "configuration.endian is required for data type 'int32'",
        ),
        ({"zarr_format": 3, "node_type": "group", "attributes": []}, "attributes: expected a JSON object"),
    ],
)
def test_bad_zarr_json_is_reported_with_its_key(tmp_path: Path, document: Any, expected: str) -> None:
    zarr3_backend.create_group(tmp_path / "s.zarr")
    (tmp_path / "s.zarr" / "bad").mkdir()
    (tmp_path / "s.zarr" / "bad" / "zarr.json").write_text(
        document if isinstance(document, str) else json.dumps(document)
    )
    key, message = only(validate_store(tmp_path / "s.zarr"), "metadata")
    assert key == "bad/zarr.json" and expected in message


def test_optional_extensions_are_fine(tmp_path: Path) -> None:
    zarr3_backend.create_group(tmp_path / "s.zarr")
    (tmp_path / "s.zarr" / "ok").mkdir()
    document = _array_document(
        extra={"must_understand": False},
        codecs=[
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "no-such-codec", "must_understand": False},
        ],
    )
    (tmp_path / "s.zarr" / "ok" / "zarr.json").write_text(json.dumps(document))
    key, message = only(validate_store(tmp_path / "s.zarr"), "integrity")  # bytes alone carries no checksum
    assert key == "ok/zarr.json" and message.startswith("array '/ok': its chunks carry no checksum")


def test_hierarchy_problems(tmp_path: Path) -> None:
    root = tmp_path / "s.zarr"
    zarr3_backend.create_group(root)
    zarr3_backend.create_array(root, "g/a", shape=(2,), dtype="int8")
    (root / "g" / "zarr.json").unlink()
    for path, document in [
        ("__reserved", {"zarr_format": 3, "node_type": "group"}),
        ("..", None),
        ("g/a/inner", {"zarr_format": 3, "node_type": "group"}),
    ]:
        if document is not None:
            (root / path).mkdir(parents=True)
            (root / path / "zarr.json").write_text(json.dumps(document))
    problems = {(p.key, p.severity): p.message for p in validate_store(root)}
    assert "arrays have no children" in problems[("g/a/inner/zarr.json", "error")]
    assert "implicit group 'g'" in problems[("g/zarr.json", "warning")]
    assert len(problems) == 2  # '__reserved' belongs to extensions and is skipped


def test_invalid_node_name(tmp_path: Path) -> None:
    zarr3_backend.create_group(tmp_path / "s.zarr")
    (tmp_path / "s.zarr" / "...").mkdir()
    (tmp_path / "s.zarr" / "..." / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group"})
    )
    key, message = only(validate_store(tmp_path / "s.zarr"), "hierarchy")
    assert key == ".../zarr.json" and "must not consist only of periods" in message


def test_not_a_zarr_store(tmp_path: Path) -> None:  # Zarr v2 stores: test_validate_v2.py
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "data.bin").write_bytes(b"x")
    key, message = only(validate_store(tmp_path / "empty"), "metadata")
    assert key == "zarr.json" and message.startswith(
        "no zarr.json, .zgroup or .zarray anywhere in the store (1 other keys)"
    )


# -- consolidated metadata --------------------------------------------------------------


@pytest.fixture
def consolidated(tmp_path: Path) -> Path:
    root = tmp_path / "c.zarr"
    zarr3_backend.create_array(root, "t", shape=(4,), dtype="float32", chunks=(2,))[:] = 1
    zarr3_backend.create_array(root, "old", shape=(2,), dtype="int8")
    zarr3_backend.consolidate_metadata(root)
    assert validate_store(root) == []
    return root


def test_consolidated_entry_that_differs(consolidated: Path) -> None:
    document = json.loads((consolidated / "t" / "zarr.json").read_text())
    document["shape"] = [6]
    document["attributes"] = {"units": "K"}
    (consolidated / "t" / "zarr.json").write_text(json.dumps(document))
    key, message = only(validate_store(consolidated), "consolidated")
    assert (
        key == "zarr.json"
        and "consolidated_metadata['t'] differs from t/zarr.json in attributes, shape" in message
    )


def test_consolidated_entry_for_a_deleted_node_and_a_missing_entry(consolidated: Path) -> None:
    shutil.rmtree(consolidated / "old")
    zarr3_backend.open_group(consolidated, mode="r+")  # no library write: add a node behind its back
    (consolidated / "new").mkdir()
    (consolidated / "new" / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    messages = [p.message for p in validate_store(consolidated) if p.check == "consolidated"]
    assert any("describes 'old', which has no zarr.json" in m for m in messages)
    assert any("lacks 'new', which exists" in m for m in messages)


# -- keys ----------------------------------------------------------------------------------


def test_stray_and_out_of_grid_keys(tmp_path: Path) -> None:
    root = tmp_path / "s.zarr"
    zarr3_backend.create_array(root, "a", shape=(4, 4), dtype="int8", chunks=(2, 2))[:] = 1
    (root / "a" / "c" / "2").mkdir()
    (root / "a" / "c" / "2" / "0").write_bytes(b"x")
    (root / "a" / "notes.txt").write_text("x")
    (root / "README").write_text("x")
    (root / "__extension").mkdir()
    (root / "__extension" / "data").write_text("x")
    problems = {p.key: p for p in validate_store(root)}
    assert set(problems) == {"a/c/2/0", "a/notes.txt", "README"}
    assert (
        problems["a/c/2/0"].severity == "error"
        and "outside the chunk grid (2, 2)" in problems["a/c/2/0"].message
    )
    assert (
        problems["a/notes.txt"].severity == "warning"
        and "stray key inside array '/a'" in problems["a/notes.txt"].message
    )
    assert problems["README"].severity == "warning" and "stray key in group '/'" in problems["README"].message


def test_a_directory_of_stores_is_not_a_store(tmp_path: Path) -> None:
    zarr3_backend.create_array(tmp_path / "a" / "b.zarr", "v", shape=(2,), dtype="int8")
    zarr3_backend.create_group(tmp_path / "c.zarr")
    key, message = only(validate_store(tmp_path), "hierarchy")
    assert (
        key == "zarr.json"
        and "not the root of a Zarr store" in message
        and "further down: a/b.zarr, c.zarr" in message
    )
    zarr3_backend.create_array(tmp_path, "direct", shape=(2,), dtype="int8")
    (tmp_path / "zarr.json").unlink()
    problems = validate_store(tmp_path)  # an implicit root holding an array opens: only warnings
    assert [(p.key, p.severity) for p in problems] == [("a/zarr.json", "warning"), ("zarr.json", "warning")]
