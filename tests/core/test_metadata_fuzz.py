"""Mutational fuzzing of ``zarr.json``: every hostile document gives a Zarr3Error, nothing else.

Seeds are the documents of the golden stores (written by zarr-python,
tensorstore and by hand) plus stores this package writes. Each case copies
one seed store into memory, mutates one ``zarr.json`` (structurally, or as
raw text for what JSON values cannot express), then opens it with
``open``/``open_array``/``open_group``, lists groups and reads a corner of
arrays. Only :class:`Zarr3Error` subclasses may escape. The mutator is
seeded, so a failure names a reproducible case; ``ZARR3_FUZZ_CASES`` runs
more of them.
"""

from __future__ import annotations

import copy
import json
import os
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

import zarr3_backend as z3
from zarr3_backend.core.metadata import parse_node_metadata
from zarr3_backend.errors import MetadataError, Zarr3Error
from zarr3_backend.store import FsspecStore

GOLDEN = Path(__file__).parents[1] / "interop" / "golden"
CASES = int(os.environ.get("ZARR3_FUZZ_CASES", "1000"))

HOSTILE_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    1,
    2**31,
    2**48,
    2**62,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    1e308,
    -1e308,
    0.5,
    float("nan"),
    float("inf"),
    "",
    "\0",
    "a\0b",
    "%2e%2e",
    "..%2F",
    "..",
    "/",
    "\\",
    "x" * 10_000,
    [],
    {},
    [0],
    [2**63],
    [2**40, 2**40],
    [-1],
    [1] * 64,
    {"name": "x"},
    {"must_understand": False},
    "NaN",
    "Infinity",
    "0x7fc00000",
    [[]],
    "r1" + "0" * 40,
    "r8",
    "r0",
    "r7",
    {"name": "numpy.datetime64", "configuration": {"unit": 5, "scale_factor": 1}},
    {"name": "numpy.datetime64", "configuration": {"unit": ["s"], "scale_factor": 1}},
    {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 2**70}},
    {"name": "numpy.datetime64", "configuration": {"unit": {"s": 1}, "scale_factor": 1}},
    {"name": "numpy.timedelta64", "configuration": {"unit": "generic", "scale_factor": 1}},
    {"name": "fixed_length_utf32", "configuration": {"length_bytes": 2**62}},
    {"name": "null_terminated_bytes", "configuration": {"length_bytes": -3}},
    {
        "name": "sharding_indexed",
        "configuration": {"chunk_shape": [2**62], "codecs": ["bytes"], "index_codecs": ["bytes"]},
    },
    {
        "name": "blosc",
        "configuration": {"typesize": 2**40, "cname": "lz4", "clevel": 5, "shuffle": "shuffle"},
    },
    {"name": "transpose", "configuration": {"order": [2**63]}},
    {"name": "numcodecs.pickle"},
    "crc32c",
    "gzip",
]

RAW_MUTATIONS: list[str] = [
    "[" * 100_000 + "]" * 100_000,
    '{"a": ' * 5_000 + "1" + "}" * 5_000,
    "1" * 5_000,
    "-" + "9" * 4_400,
    "1e99999",
    '"\\ud800"',
    '"\\u0000"',
]


def seed_stores(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, bytes]]:
    """Every golden store and a few stores written here, as ``{key: bytes}``."""
    roots = [
        p for kind in ("zarr_python", "tensorstore", "handwritten") for p in sorted((GOLDEN / kind).iterdir())
    ]
    written = tmp_path_factory.mktemp("fuzz-seeds")
    group = z3.create_group(written, attributes={"title": "seed", "nested": {"a": [1, 2, {"b": None}]}})
    group.create_array("plain", shape=(5, 4), dtype="float32", chunks=(2, 3), dimension_names=["y", "x"])[
        :
    ] = 1.5
    group.create_array(
        "sharded",
        shape=(8,),
        dtype="int16",
        chunks=(2,),
        shards=(4,),
        compressors=[{"name": "gzip", "configuration": {"level": 1}}],
    )[:] = 3
    group.create_array(
        "blosc_t",
        shape=(4, 6),
        dtype="uint8",
        chunks=(2, 3),
        filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
        compressors=[{"name": "blosc", "configuration": {"cname": "lz4"}}],
    )[:] = 7
    group.create_array("when", shape=(3,), dtype="datetime64[s]", chunks=(3,))[:] = np.datetime64(
        "2020-01-01", "s"
    )
    group.create_array("text", shape=(2,), dtype=str, chunks=(2,))[:] = ["a", "bc"]
    z3.consolidate_metadata(written)
    roots.append(written)
    return [
        {
            str(f.relative_to(root)).replace(os.sep, "/"): f.read_bytes()
            for f in sorted(root.rglob("*"))
            if f.is_file() and f.name != "expected.npz"
        }
        for root in roots
    ]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, bytes]]:
    return seed_stores(tmp_path_factory)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every location (tuple of keys / indexes) inside a JSON document, the root excluded."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key))


def _mutate(document: Any, rng: random.Random) -> str:
    """One to three mutations of ``document`` (a parsed zarr.json), returned as JSON text."""
    document = copy.deepcopy(document)
    roll = rng.random()
    if roll < 0.1:
        return json.dumps(document)[: rng.randrange(1, 200)]  # truncated
    paths = list(_paths(document))
    if not paths or roll < 0.2:
        raw = rng.choice(RAW_MUTATIONS)
        if not paths:
            return raw
        text = json.dumps(document)
        marker = json.dumps(_get(document, rng.choice(paths)))
        return text.replace(marker, raw, 1) if marker in text else raw
    for _ in range(rng.choice((1, 1, 2, 3))):
        paths = list(_paths(document))
        if paths:
            _mutate_at(document, rng.choice(paths), rng)
    return json.dumps(document)


def _mutate_at(document: Any, path: tuple[Any, ...], rng: random.Random) -> None:
    parent = _get(document, path[:-1])
    roll = rng.random()
    if roll < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif roll < 0.2 and isinstance(parent, dict):
        parent[rng.choice(["extra", "must_understand", "\0"])] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    elif roll < 0.3 and isinstance(parent, dict):
        parent[rng.choice(HOSTILE_VALUES[18:24])] = parent.pop(path[-1])  # hostile member name
    elif roll < 0.4 and isinstance(parent[path[-1]], int) and not isinstance(parent[path[-1]], bool):
        parent[path[-1]] = rng.choice([-1, 0, 2**31, 2**62, 2**63, 10**18]) * rng.choice(
            [1, parent[path[-1]]]
        )
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(HOSTILE_VALUES))


def _get(document: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        document = document[key]
    return document


def _exercise(store: FsspecStore) -> None:
    """What a reader does: open the root both ways, list groups, read a corner of every array found."""
    for opener in (z3.open, z3.open_array, z3.open_group):
        try:
            node = opener(store)
        except Zarr3Error:
            continue
        _touch(node)
        if isinstance(node, z3.Group):
            for _, child in node.walk():
                _touch(child)


def _touch(node: Any) -> None:
    if isinstance(node, z3.Array):
        try:
            node[tuple(slice(0, 2) for _ in node.shape)]
        except Zarr3Error:
            pass


def _run_case(seed: dict[str, bytes], rng: random.Random) -> None:
    metadata_keys = [key for key in seed if key.endswith("zarr.json")]
    key = rng.choice(metadata_keys)
    try:
        document = json.loads(seed[key])
    except ValueError:
        document = None
    files = dict(seed)
    files[key] = _mutate(document, rng).encode("utf-8", "surrogatepass")
    store = FsspecStore(fsspec.filesystem("memory"), f"/fuzz/{uuid.uuid4().hex}")
    store.set_many(files)
    try:
        _exercise(store)
    finally:
        store.fs.rm(store.root, recursive=True)


def test_fuzzed_documents_raise_only_zarr3_errors(seeds: list[dict[str, bytes]]) -> None:
    escaped: list[str] = []
    for case in range(CASES):
        rng = random.Random(case)
        seed = rng.choice(seeds)
        try:
            _run_case(seed, rng)
        except Zarr3Error:
            pass
        except Exception as exc:  # noqa: BLE001 - collected: the assertion names every escape
            escaped.append(f"case {case}: {type(exc).__name__}: {str(exc)[:200]}")
    assert not escaped, "\n".join(escaped)


@pytest.mark.parametrize(
    "text", RAW_MUTATIONS[:4], ids=["deep-list", "deep-object", "long-int", "long-negative"]
)
def test_parse_limits(text: str) -> None:
    document = f'{{"zarr_format": 3, "node_type": "group", "attributes": {{"x": {text}}}}}'
    with pytest.raises(MetadataError):
        parse_node_metadata(document.encode(), "g/zarr.json")


HOSTILE_ARRAYS: dict[str, Callable[[dict[str, Any]], None]] = {
    "shape-2**63": lambda d: d.update(shape=[2**63]),
    "shape-product-2**63": lambda d: d.update(shape=[2**32, 2**32]),
    "chunk-bytes-beyond-address-space": lambda d: d["chunk_grid"]["configuration"].update(
        chunk_shape=[2**61]
    ),
    "raw-huge": lambda d: d.update(data_type="r" + "8" * 30),
    "datetime-unit-not-a-string": lambda d: d.update(
        data_type={"name": "numpy.datetime64", "configuration": {"unit": ["s"], "scale_factor": 1}}
    ),
    "dimension-name-nul": lambda d: d.update(dimension_names=["x\0"]),
    "int-fill-value-out-of-range": lambda d: d.update(data_type="int64", fill_value=2**64),
    "int-literal-41-digits": lambda d: d.update(fill_value=10**40),
}


@pytest.mark.parametrize("mutation", sorted(HOSTILE_ARRAYS))
def test_hostile_array_documents(mutation: str) -> None:
    document = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    HOSTILE_ARRAYS[mutation](document)
    with pytest.raises(MetadataError):
        parse_node_metadata(json.dumps(document).encode(), "a/zarr.json")
