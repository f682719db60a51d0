"""Absurd shapes: every operation raises a Zarr3Error naming the array and what is too large, before allocating.

Metadata beyond what any process can address (shapes of 2**63 elements, chunks beyond 2**48 bytes,
items of 2 GiB or more) is refused on open and on create (:class:`MetadataError`). Metadata a process
could address but no machine holds in one piece (a 16 TiB chunk, a shard index of 2**42 entries, a
selection of 2**62 elements) opens, reads and writes what fits, and refuses the rest with
:class:`MemoryLimitError` (a ``MemoryError``) before allocating it: the sizes below exceed any test
machine's memory, and one test lowers the limit to check a size just above it.
"""

from __future__ import annotations

import errno
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import MemoryLimitError, MetadataError, Zarr3Error
from zarr3_backend.codecs.read_plan import decode_chunk
from zarr3_backend.runtime import memory_limit
from zarr3_backend.validate import validate_store

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
UTF32 = "fixed_length_utf32"


def sharding(chunk_shape: list[int]) -> list[dict[str, Any]]:
    return [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": chunk_shape,
                "codecs": [BYTES],
                "index_codecs": [BYTES, {"name": "crc32c"}],
            },
        }
    ]


def document(
    shape: list[int], chunks: list[int], dtype: Any = "float32", codecs: Any = None, fill: Any = 0
) -> dict[str, Any]:
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill,
        "codecs": codecs or [BYTES],
    }


def write_document(root: Path, doc: dict[str, Any]) -> Path:
    zarr3_backend.create_group(root)
    (root / "a").mkdir(parents=True)
    (root / "a" / "zarr.json").write_text(json.dumps(doc))
    return root


# id: (document, text the MetadataError names: the field)
REFUSED_ON_OPEN = {
    "shape-2**63": (document([2**63], [1]), "shape"),
    "shape-product-overflows": (document([2**40, 2**40], [2**20, 2**20]), "shape"),
    "chunk-beyond-address-space": (document([2**62], [2**60]), "chunk_grid.configuration.chunk_shape"),
    "chunk-product-overflows": (document([4, 4], [2**40, 2**40]), "chunk_shape"),
    "utf32-item-of-2GiB": (
        document([4], [4], {"name": UTF32, "configuration": {"length_bytes": 2**31}}, fill=""),
        "length_bytes",
    ),
    "raw-item-of-2**40-bits": (document([4], [4], f"r{2**40}", fill=[0]), "data_type"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_ON_OPEN))
def test_metadata_beyond_the_address_space_is_refused_on_open(case: str, tmp_path: Path) -> None:
    doc, field = REFUSED_ON_OPEN[case]
    root = write_document(tmp_path / "s.zarr", doc)
    with pytest.raises(MetadataError, match=re.escape(field)) as raised:
        zarr3_backend.open_array(root, "a")
    assert "a/zarr.json" in str(raised.value)
    problems = validate_store(root)
    assert [(p.key, p.severity) for p in problems] == [("a/zarr.json", "error")] and field in problems[
        0
    ].message


def all_of(shape: str) -> str:
    return f"a selection of shape {shape}"


# id: (document, an element that reads (the fill value), {operation that must raise: what its error names})
TOO_LARGE_TO_HOLD = {
    "selection-of-2**62-elements": (
        document([2**62], [2**20]),
        (2**62 - 1,),
        {"read all": all_of("(4611686018427387904,) (float32)")},
    ),
    "chunk-of-16TiB": (
        document([2**44], [2**44], "int8"),
        None,
        {
            "read all": all_of("(17592186044416,) (int8)"),
            "read one": (
                chunk := "a chunk of shape (17592186044416,) (chunk_grid.configuration.chunk_shape) of int8"
            ),
            "write one": chunk,
        },
    ),
    "inner-chunk-of-16TiB": (
        document([2**44], [2**44], "int8", sharding([2**44])),
        None,
        {
            "read all": all_of("(17592186044416,) (int8)"),
            "read one": (
                inner
                := "a chunk of shape (17592186044416,) (sharding_indexed.configuration.chunk_shape) of int8"
            ),
            "write one": inner,
        },
    ),
    "shard-index-of-2**42-entries": (
        document([2**42], [2**42], "int8", sharding([1])),
        None,
        {
            "read all": all_of("(4398046511104,) (int8)"),
            "read one": (
                index := "the index of a shard of shape (4398046511104,) (4398046511104 inner chunks)"
            ),
            "write one": index,
        },
    ),
    "utf32-chunk-of-32TiB": (
        document([2**14], [2**14], {"name": UTF32, "configuration": {"length_bytes": 2**31 - 4}}, fill=""),
        None,
        {
            "read all": all_of("(16384,) (<U536870911)"),
            "read one": (
                utf32 := "a chunk of shape (16384,) (chunk_grid.configuration.chunk_shape) of <U536870911"
            ),
            "write one": utf32,
        },
    ),
}
OPERATIONS = {
    "read all": lambda a: a[...],
    "read one": lambda a: a[(0,) * a.ndim],
    "write one": lambda a: a.__setitem__((0,) * a.ndim, 1 if a.dtype.kind != "U" else "x"),
}


@pytest.mark.parametrize("case", sorted(TOO_LARGE_TO_HOLD))
def test_sizes_no_machine_holds_raise_memory_limit_error_naming_array_and_field(
    case: str, tmp_path: Path
) -> None:
    doc, readable, refused = TOO_LARGE_TO_HOLD[case]
    root = write_document(tmp_path / "s.zarr", doc)
    array = zarr3_backend.open_array(root, "a", mode="r+")  # opening allocates nothing of that size
    assert all(
        p.check == "integrity" for p in validate_store(root, deep=True)
    )  # valid metadata, only unchecksummed
    for operation, named in refused.items():
        with pytest.raises(MemoryLimitError) as raised:
            OPERATIONS[operation](array)
        message = str(raised.value)
        assert (
            message.startswith("array '/a': ")
            and named in message
            and "more than this machine's memory" in message
        )
        assert isinstance(raised.value, Zarr3Error) and isinstance(raised.value, MemoryError)
    if readable is not None:
        assert array[readable] == 0
        array[readable] = 5  # one 4 MiB chunk: fine
        assert array[readable] == 5 and array[readable[0] - 1] == 0


def test_create_allows_a_huge_sparse_array_and_refuses_only_what_cannot_be_held(tmp_path: Path) -> None:
    a = zarr3_backend.create_array(tmp_path / "s.zarr", shape=(2**62,), dtype="float32", chunks=(2**20,))
    a[2**61] = 1.5
    assert a[2**61] == 1.5 and a.nchunks_stored() == 1
    with pytest.raises(MemoryLimitError, match=r"array '/': a selection of shape \(4611686018427387904,\)"):
        a[...]
    with pytest.raises(MetadataError, match="chunk_shape"):
        zarr3_backend.create_array(tmp_path / "t.zarr", shape=(10,), dtype="float32", chunks=(2**62,))
    with pytest.raises(MetadataError, match="shape"):
        zarr3_backend.create_array(tmp_path / "u.zarr", shape=(2**64,), dtype="float32")


def test_create_with_2GiB_utf32_items_allocates_no_item(tmp_path: Path) -> None:
    dtype: dict[str, object] = {"name": UTF32, "configuration": {"length_bytes": 2**31 - 4}}
    a = zarr3_backend.create_array(tmp_path / "s.zarr", shape=(2**14,), dtype=dtype, chunks=(2**14,))
    assert a.fill_value == ""
    with pytest.raises(MemoryLimitError, match=r"array '/': a chunk of shape \(16384,\)"):
        a[0]


def test_just_above_the_limit_is_refused_and_at_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = zarr3_backend.create_array(tmp_path / "s.zarr", shape=(64, 64), dtype="float64", chunks=(16, 64))
    a[...] = 1.0
    monkeypatch.setattr(memory_limit, "physical_memory", lambda: 16 * 64 * 8)  # one chunk exactly
    np.testing.assert_array_equal(a[:16], np.ones((16, 64)))
    with pytest.raises(MemoryLimitError, match=r"a selection of shape \(17, 64\) \(float64\) needs 8.5 KiB"):
        a[:17]


@pytest.mark.parametrize(
    "failure",
    [MemoryError("no"), OSError(errno.ENOMEM, "Cannot allocate memory")],
    ids=["MemoryError", "ENOMEM"],
)
def test_out_of_memory_names_what_ran_out(failure: Exception) -> None:
    with pytest.raises(
        MemoryLimitError, match=r"^array '/a': reading a selection of shape \(8,\): out of memory \("
    ) as raised:
        with memory_limit.out_of_memory("array '/a': reading a selection of shape (8,)"):
            raise failure
    assert raised.value.__cause__ is failure
    with (
        pytest.raises(FileNotFoundError),
        memory_limit.out_of_memory("reading"),
    ):  # other failures pass unchanged
        raise FileNotFoundError("x")


def test_an_allocation_that_fails_anyway_raises_memory_limit_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = zarr3_backend.create_array(tmp_path / "s.zarr", shape=(8,), dtype="int32", chunks=(4,))
    a[...] = np.arange(8)

    def no_memory(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(a._chain, "update", no_memory)  # encoding a chunk runs out of memory
    with pytest.raises(
        MemoryLimitError, match=r"array '/': writing a selection of shape \(\): out of memory"
    ):
        a[5] = 1


def test_a_decoder_out_of_memory_raises_memory_limit_error_naming_the_key() -> None:
    class Greedy:
        def decode(self, data: Any, spec: Any) -> Any:
            raise MemoryError("cannot allocate 2.0 GiB")

    with pytest.raises(
        MemoryLimitError, match=r"^a/c/0: out of memory decoding the chunk \(MemoryError: cannot allocate"
    ):
        decode_chunk(Greedy(), b"", None, "a/c/0")  # type: ignore[arg-type]


def test_the_limit_is_this_machines_memory() -> None:
    pages = Path("/proc/meminfo")
    if pages.exists():  # Linux: MemTotal is the physical memory less what the kernel reserved at boot
        total_kib = int(pages.read_text().split("MemTotal:")[1].split()[0])
        assert total_kib * 1024 <= memory_limit.physical_memory() < 2 * total_kib * 1024
    assert 1 << 26 < memory_limit.physical_memory() <= 1 << 48
