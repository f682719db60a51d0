"""Read the committed golden stores (tests/interop/golden/) with zarr3_backend alone.

Each ``tests/interop/golden/<writer>/<case>/`` holds a store written by zarr-python,
tensorstore or by hand from the spec (see ``tests/interop/golden/make_golden.py``),
with the expected data in ``expected.npz`` and, for hierarchies, the
expected nodes and attributes in ``expected.json``.  Besides the data, every
``zarr.json`` must survive our parse + re-serialise unchanged in meaning.
Sharded and consolidated stores are also read over a loopback HTTP server,
where only ranged GETs (no listing) are available.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from interop_cases import canonical_codecs, canonical_key_encoding, check_reads, fill_from_json

import zarr3_backend

GOLDEN = Path(__file__).parent / "golden"
STORES = sorted(p.parent for p in GOLDEN.glob("*/*/expected.npz"))
METADATA_FILES = sorted(p for store in STORES for p in store.rglob("zarr.json"))


def _store_id(path: Path) -> str:
    return str(path.relative_to(GOLDEN))


def _expected(store: Path) -> dict[str, np.ndarray]:
    with np.load(store / "expected.npz") as npz:
        return {key: (a.astype(object) if a.dtype.kind == "U" else a) for key, a in npz.items()}


def test_golden_stores_exist() -> None:
    writers = {p.parent.name for p in STORES}
    assert writers == {"zarr_python", "tensorstore", "handwritten"}
    assert len(STORES) >= 30


@pytest.mark.parametrize("store", [p for p in STORES if not (p / "expected.json").exists()], ids=_store_id)
def test_golden_array(store: Path) -> None:
    expected = _expected(store)["root"]
    array = zarr3_backend.open_array(str(store))
    assert array.shape == expected.shape
    check_reads(array, expected, f"golden {_store_id(store)}")


SHARDED = [p for p in STORES if "shard" in p.name]


@pytest.mark.parametrize("store", SHARDED, ids=_store_id)
def test_golden_sharded_over_http(store: Path, http_dir: Any) -> None:
    """The same bytes through fsspec's HTTP filesystem: ranged reads of shard indexes and inner chunks."""
    shutil.copytree(store, http_dir.path, dirs_exist_ok=True)
    array = zarr3_backend.open_array(http_dir.url)
    check_reads(array, _expected(store)["root"], f"golden {_store_id(store)} over HTTP")


HIERARCHIES = [p for p in STORES if (p / "expected.json").exists()]


@pytest.mark.parametrize("store", HIERARCHIES, ids=_store_id)
def test_golden_hierarchy(store: Path) -> None:
    _check_hierarchy(store, zarr3_backend.open_group(str(store)))


@pytest.mark.parametrize("store", [p for p in HIERARCHIES if "consolidated" in p.name], ids=_store_id)
def test_golden_consolidated_over_http(store: Path, http_dir: Any) -> None:
    """Over HTTP nothing can be listed: the hierarchy must come from the consolidated metadata."""
    shutil.copytree(store, http_dir.path, dirs_exist_ok=True)
    _check_hierarchy(store, zarr3_backend.open_group(http_dir.url))


def _check_hierarchy(store: Path, root: Any) -> None:
    nodes = json.loads((store / "expected.json").read_text())
    expected = _expected(store)
    for path, node in nodes.items():
        opened = root if not path else root[path]
        assert ("array" if isinstance(opened, zarr3_backend.Array) else "group") == node["node_type"], path
        assert dict(opened.attrs) == node["attributes"], path
        if node["node_type"] == "array":
            check_reads(opened, expected[path], f"golden {_store_id(store)}/{path}")
        else:
            assert set(opened.members()) == _children(nodes, path), path


def _children(nodes: dict[str, Any], parent: str) -> set[str]:
    prefix = f"{parent}/" if parent else ""
    return {
        p[len(prefix) :]
        for p in nodes
        if p.startswith(prefix) and p != parent and "/" not in p[len(prefix) :]
    }


@pytest.mark.parametrize("zarr_json", METADATA_FILES, ids=_store_id)
def test_golden_metadata_round_trip(zarr_json: Path) -> None:
    """Our parsed metadata, re-serialised, equals the stored document semantically."""
    stored = json.loads(zarr_json.read_text())
    store = next(s for s in STORES if zarr_json.is_relative_to(s))
    path = str(zarr_json.parent.relative_to(store)) if zarr_json.parent != store else ""
    node = zarr3_backend.open(str(store), path)
    assert canonical_metadata(node.metadata.to_json()) == canonical_metadata(stored)


def canonical_metadata(doc: dict[str, Any]) -> dict[str, Any]:
    """A metadata document with spelling-only differences removed.

    Empty optional fields are dropped, defaults spelled out, float fill
    values compared by bit pattern, and extensions marked
    ``must_understand: false`` (which a reader may ignore) removed.
    """
    doc = json.loads(json.dumps(doc))
    for key in [k for k, v in doc.items() if isinstance(v, dict) and v.get("must_understand") is False]:
        del doc[key]
    doc["storage_transformers"] = [
        t for t in doc.get("storage_transformers", []) if t.get("must_understand", True)
    ]
    for key in ("attributes", "storage_transformers", "dimension_names"):
        if doc.get(key) in ({}, [], None):
            doc.pop(key, None)
    if doc["node_type"] == "group":
        consolidated = doc.get("consolidated_metadata")
        if consolidated:
            consolidated["metadata"] = {k: canonical_metadata(v) for k, v in consolidated["metadata"].items()}
        return doc
    dtype = _dtype_name(doc["data_type"])
    doc["codecs"] = canonical_codecs(doc["codecs"], dtype)
    doc["chunk_key_encoding"] = canonical_key_encoding(doc["chunk_key_encoding"])
    doc["fill_value"] = _canonical_fill(doc["fill_value"], dtype)
    return doc


def _dtype_name(data_type: Any) -> str:
    if isinstance(data_type, dict) and data_type["name"].startswith("numpy."):
        return f"{data_type['name'][6:]}[{data_type['configuration']['unit']}]"
    return data_type if isinstance(data_type, str) else data_type["name"]


def _canonical_fill(value: Any, dtype: str) -> Any:
    if dtype.startswith(("float", "complex")):
        bits = np.asarray(fill_from_json(value, dtype))
        return (
            bits.reshape(1)
            .view(f"u{bits.dtype.itemsize // (2 if dtype.startswith('complex') else 1)}")
            .tolist()
        )
    return value
