"""Our own records are hostile input: reservation lists, leases, pending-write records, convert plans,
``_FillValue`` attributes and v2 codec configurations, whatever they hold, parse or raise a ``MetadataError``
naming them, and a broken record never makes a store unopenable."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr3_backend
from zarr3_backend.conversion.progress_record import PLAN_KEY, Record
from zarr3_backend.coordination.lease import LEASE_KEY, StoreLease, parse_lease
from zarr3_backend.coordination.pending import parse_pending
from zarr3_backend.coordination.reservations import APPENDING, HINT, Reservation, parse_reservations
from zarr3_backend.coordination.unfinished import UnfinishedWriteWarning
from zarr3_backend.errors import MetadataError, Zarr3Error
from zarr3_backend.store import make_store
from zarr3_backend.validate import validate_store
from zarr3_backend.xarray.read_encoding import decode_fill_value

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
HOSTILE = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
)
#: Byte strings no JSON encoder writes: deep nesting, huge literals, bad encodings, truncations.
RAW = st.sampled_from(
    [
        b"[" * 100_000,
        b'{"a": ' * 5_000,
        b"9" * 100_000,
        b"\xff\xfe\xfd",
        b"\x00",
        b"",
        b"{",
        b'{"appends": [{"id": "a", "dim": "t", "start": 1e999, "stop": 1e999}]}',
        b"NaN",
        b"-Infinity",
        '"\ud800"'.encode("utf-8", "surrogatepass"),
    ]
)


def _near(fields: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """Valid-looking records with any field replaced by a hostile value (or dropped)."""
    replaced = st.fixed_dictionaries({k: st.just(v) | HOSTILE for k, v in fields.items()})
    return st.one_of(
        replaced.map(lambda r: json.dumps(r).encode()),
        HOSTILE.map(lambda r: json.dumps(r).encode()),
        RAW,
    )


RESERVATION = {"id": "a1", "dim": "time", "start": 5, "stop": 7}
RESERVATIONS = st.one_of(
    _near({"appends": [RESERVATION]}),
    st.fixed_dictionaries({k: st.just(v) | HOSTILE for k, v in RESERVATION.items()}).map(
        lambda e: json.dumps({"appends": [e]}).encode()
    ),
)
LEASE = {"host": "h", "pid": 12345, "since": 1.7e9, "id": "x"}
PENDING = {"token": "t", "consolidate": True, "documents": {"": {"zarr_format": 3, "node_type": "group"}}}
PLAN = {"source": "/src", "groups": {}, "arrays": {}}
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(RESERVATIONS)
def test_a_reservation_list_parses_or_raises_naming_it(raw: bytes) -> None:
    try:
        found = parse_reservations(raw, "g/" + APPENDING)
    except MetadataError as exc:
        assert str(exc).startswith("g/" + APPENDING + ": ")
        return
    for r in found:
        assert isinstance(r, Reservation) and isinstance(r.start, int) and 0 <= r.start <= r.stop


@FAST
@given(_near(LEASE))
def test_a_lease_parses_or_raises_naming_it(raw: bytes) -> None:
    try:
        holder = parse_lease(raw)
    except MetadataError as exc:
        assert str(exc).startswith(LEASE_KEY + ": ")
        return
    assert isinstance(holder["pid"], int) and math.isfinite(holder["since"])  # type: ignore[arg-type]


@FAST
@given(_near(PENDING))
def test_a_pending_record_parses_or_raises_naming_it(raw: bytes) -> None:
    try:
        parse_pending(raw)
    except MetadataError as exc:
        assert str(exc).startswith("__zarr3_backend_pending.json: ")


@FAST
@given(_near(PLAN))
def test_a_convert_plan_parses_or_raises_naming_it(raw: bytes) -> None:
    store = make_store("memory://hostile/plan")
    store.set(PLAN_KEY, raw)
    try:
        plan = Record(store).plan()
    except MetadataError as exc:
        assert str(exc).startswith(PLAN_KEY + ": ")
        return
    assert isinstance(plan, dict)


@FAST
@given(HOSTILE)
def test_a_fill_value_attribute_decodes_or_raises_naming_the_array(value: Any) -> None:
    for dtype in ("float64", "float32", "complex128", "int16", "bool"):
        array = zarr3_backend.create_array(
            f"memory://hostile/fill-{dtype}", "v", shape=(1,), dtype=dtype, overwrite=True
        )
        try:
            decode_fill_value(value, array)
        except MetadataError as exc:
            assert "array '/v' (v/zarr.json): its _FillValue attribute" in str(exc)


def test_a_float_fill_value_that_is_not_8_bytes_of_base64_names_the_array(tmp_path: Path) -> None:
    xr.Dataset({"v": ("x", np.arange(3.0))}).to_zarr(tmp_path / "s.zarr", zarr_format=3, consolidated=False)
    array = zarr3_backend.open_array(tmp_path / "s.zarr", "v", mode="r+")
    for bad in ("AAAA", "!!", "AAAAAAAAAAAAAAAA"):
        array.replace_attributes({**array.attrs, "_FillValue": bad})
        with pytest.raises(MetadataError, match=r"array '/v' \(v/zarr.json\): its _FillValue attribute"):
            xr.open_dataset(tmp_path / "s.zarr", engine="zarr3")


BLOSC = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
COMPRESSORS = st.one_of(
    st.fixed_dictionaries({k: st.just(v) if k == "id" else st.just(v) | HOSTILE for k, v in BLOSC.items()}),
    st.fixed_dictionaries({"id": st.just("zstd"), "level": HOSTILE, "checksum": HOSTILE}),
    st.fixed_dictionaries({"id": st.just("gzip"), "level": HOSTILE}),
    st.fixed_dictionaries({"id": st.sampled_from(["lz4", "zlib", "bz2", "lzma"]), "level": HOSTILE}),
)


@FAST
@given(COMPRESSORS)
def test_a_v2_compressor_configuration_opens_or_raises_a_metadata_error(compressor: dict[str, Any]) -> None:
    store = make_store("memory://hostile/v2")
    store.delete_prefix("")
    zarray = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "compressor": compressor,
              "fill_value": None, "order": "C", "filters": None}  # fmt: skip
    try:
        store.set(".zarray", json.dumps(zarray).encode())
    except ValueError:  # not JSON-encodable as given (a lone surrogate): no store can hold it
        return
    try:
        zarr3_backend.open_array(store)[:]
    except Zarr3Error:
        pass


def test_blosc_shuffle_that_is_not_a_mode_names_the_document() -> None:
    store = make_store("memory://hostile/shuffle")
    zarray = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "compressor": {**BLOSC, "shuffle": [None]},
              "fill_value": None, "order": "C", "filters": None}  # fmt: skip
    store.set(".zarray", json.dumps(zarray).encode())
    with pytest.raises(MetadataError, match=r"\.zarray: compressor blosc: 'shuffle' must be"):
        zarr3_backend.open_array(store)


def _reserved_store(path: Path, raw: bytes) -> None:
    xr.Dataset({"v": ("time", np.arange(3.0))}).to_zarr3(path)
    group = zarr3_backend.open_group(path, mode="r+")
    group.replace_attributes({**group.attrs, HINT: True})
    (path / APPENDING).write_bytes(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"appends": [{"id": "a", "dim": "time", "start": Infinity, "stop": 4}]}',
        b'{"appends": [{"id": "a", "dim": "time", "start": 1e308, "stop": 4}]}',
        b"[" * 100_000,
        b"\xff\xfe",
        b'{"appends": [1]}',
        b'{"appends": []}',
    ],
)
def test_a_broken_reservation_list_warns_on_open_and_never_blocks_it(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "s.zarr"
    _reserved_store(path, raw)
    with pytest.warns(UnfinishedWriteWarning, match=rf"{APPENDING}: .*delete it") as caught:
        opened = xr.open_dataset(path, engine="zarr3")
    assert caught[0].filename == __file__  # names the user's line
    np.testing.assert_array_equal(opened.v.values, np.arange(3.0))
    problems = [p for p in validate_store(path) if p.key == APPENDING]
    assert [p.severity for p in problems] == ["warning"] and "delete it" in problems[0].message


@pytest.fixture(scope="module")
def reserved_group(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reserved") / "s.zarr"
    _reserved_store(path, b"")
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(RESERVATIONS)
def test_validate_reports_any_reservation_list_and_never_raises(reserved_group: Path, raw: bytes) -> None:
    (reserved_group / APPENDING).write_bytes(raw)
    problems = [p for p in validate_store(reserved_group) if p.key == APPENDING]
    assert [p.severity for p in problems] == ["warning"]
    assert "delete" in problems[0].message


def test_an_append_onto_a_broken_reservation_list_names_it(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    _reserved_store(path, b'{"appends": [{"id": "a", "dim": "time", "start": Infinity, "stop": 4}]}')
    more = xr.Dataset({"v": ("time", np.arange(3.0, 5.0))}).chunk()
    with pytest.raises(MetadataError, match=APPENDING):
        more.to_zarr3(path, append_dim="time", compute=False)


@pytest.mark.parametrize(
    "raw", [b'{"host": "h", "pid": 1e999, "since": 0, "id": "x"}', b"[" * 100_000, b'{"since": Infinity}']
)
def test_a_broken_lease_is_named_at_once(raw: bytes) -> None:
    store = make_store("memory://hostile/lease")
    store.set(LEASE_KEY, raw)
    with pytest.raises(MetadataError, match=rf"{LEASE_KEY}: .*delete it"), StoreLease(store, wait=600):
        pass


@pytest.mark.parametrize("raw", [b"[" * 100_000, b'{"token": 1e999}', b"\xff\xfe", b'{"token": "t"}'])
def test_a_broken_pending_record_warns_on_open_and_never_blocks_it(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "s.zarr"
    xr.Dataset({"v": ("time", np.arange(3.0))}).to_zarr3(path, consolidated=False)
    (path / "__zarr3_backend_pending.json").write_bytes(raw)
    with pytest.warns(UnfinishedWriteWarning, match=r"broken pending-write record.*Delete it") as caught:
        opened = xr.open_dataset(path, engine="zarr3")
    assert caught[0].filename == __file__
    np.testing.assert_array_equal(opened.v.values, np.arange(3.0))


def test_a_valid_pending_record_still_refuses_the_open(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    xr.Dataset({"v": ("time", np.arange(3.0))}).to_zarr3(path, consolidated=False)
    record = {"token": "t", "consolidate": False, "documents": {}}
    (path / "__zarr3_backend_pending.json").write_bytes(json.dumps(record).encode())
    with pytest.raises(MetadataError, match="was interrupted while publishing"):
        xr.open_dataset(path, engine="zarr3")
