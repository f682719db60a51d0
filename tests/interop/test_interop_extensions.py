"""``scale_offset``, ``cast_value`` and ``struct`` against zarr-python >= 3.4, both directions, and our
value casts against ``cast-value-rs`` (the package zarr-python's ``cast_value`` runs on).

The oracle runs in its own Python 3.12 venv (``zarr_oracle.py``); without it these tests skip, and
the committed golden stores (``golden/zarr_python/{scale_offset,cast_value,struct}_*``) still check
our reads. Where zarr-python disagrees with the extension's specification, the spec wins and the
case is marked with the reason.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from interop_cases import assert_same
from zarr_oracle import oracle_python, run_oracle

import zarr3_backend
from zarr3_backend.codecs.casting import OUT_OF_RANGE, ROUNDINGS, cast_array
from zarr3_backend.errors import Zarr3Error


def _oracle(modules: tuple[str, ...] = ()) -> Path:
    python = oracle_python((3, 4), modules)
    if python is None:
        pytest.skip(
            f"no zarr-python >= 3.4 oracle with {modules or 'zarr'} (needs Python 3.12 and pip access once)"
        )
    return python


@pytest.fixture(scope="session")
def oracle() -> Path:
    return _oracle()


@pytest.fixture(scope="session")
def cast_oracle() -> Path:
    return _oracle(("cast_value_rs",))


NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}
POINT = {"name": "struct", "configuration": {"fields": [
    {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}  # fmt: skip
RECORD = {"name": "struct", "configuration": {"fields": [
    {"name": "id", "data_type": "int64"},
    {"name": "point", "data_type": POINT},
    {"name": "flag", "data_type": "uint8"},
    {"name": "time", "data_type": {"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 1}}},
]}}  # fmt: skip


def scale_offset(**configuration: Any) -> dict[str, Any]:
    return {"name": "scale_offset", "configuration": configuration}


def cast_value(data_type: str, **configuration: Any) -> dict[str, Any]:
    return {"name": "cast_value", "configuration": {"data_type": data_type, **configuration}}


def _floats(n: int, scale: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.normal(0, scale, n)
    values[::7] = np.round(values[::7]) + 0.5  # ties
    values[3::11] = np.nan
    return values


def _records() -> np.ndarray:
    dtype = np.dtype(
        [("id", "i8"), ("point", [("x", "f4"), ("y", "f4")]), ("flag", "u1"), ("time", "M8[ms]")]
    )
    out = np.zeros(10, dtype)
    out["id"] = np.arange(10) * -(2**40)
    out["point"]["x"], out["point"]["y"] = np.linspace(-2, 2, 10), -0.0
    out["flag"] = np.arange(10) * 25
    out["time"] = np.datetime64("2026-03-01", "ms") + np.arange(10) * 3_600_000
    out["time"][4] = np.datetime64("NaT")
    return out


def _record_fill() -> np.void:
    return np.array((-1, (np.nan, 0.0), 0, np.datetime64("NaT", "ms")), _records().dtype)[()]


#: name -> (data_type, data, fill value, array -> array codecs, serializer, needs cast-value-rs)
CASES: dict[str, tuple[Any, np.ndarray, Any, list[Any], Any, bool]] = {
    "climate_uint8": (
        "float64", np.abs(_floats(60, 800, 1)), np.nan,
        [scale_offset(offset=-10, scale=0.1), cast_value("uint8", out_of_range="clamp", scalar_map=NAN_MAP)],
        {"name": "bytes"}, True,
    ),
    "fixedscaleoffset_int16_wrap": (
        "float32", _floats(60, 5000, 2).astype("float32"), np.nan,
        [scale_offset(offset=10, scale=10), cast_value("int16", out_of_range="wrap", scalar_map=NAN_MAP)],
        {"name": "bytes", "configuration": {"endian": "big"}}, True,
    ),
    **{
        f"rounding_{mode}": (
            "float64", _floats(40, 150, 3), np.nan,
            [cast_value("int8", rounding=mode, out_of_range="clamp", scalar_map=NAN_MAP)],
            {"name": "bytes"}, True,
        )
        for mode in ROUNDINGS
    },
    "float16_nearest_away_clamp": (
        "float64", _floats(40, 1e5, 4), -0.0, [cast_value("float16", rounding="nearest-away", out_of_range="clamp")],
        {"name": "bytes", "configuration": {"endian": "little"}}, True,
    ),
    "int64_to_float32_towards_positive": (
        "int64", np.random.default_rng(5).integers(-(2**63), 2**63 - 1, 40, dtype="int64"), 7,
        [cast_value("float32", rounding="towards-positive")],
        {"name": "bytes", "configuration": {"endian": "little"}}, True,
    ),
    "uint16_offset_to_uint8": (
        "uint16", np.arange(1000, 1256, 4, dtype="uint16"), 1000,
        [scale_offset(offset=1000), cast_value("uint8")], {"name": "bytes"}, True,
    ),
    "int32_scale_offset_negative_scale": (
        "int32", np.arange(-300, 300, 7, dtype="int32"), 5, [scale_offset(offset=5, scale=-3)],
        {"name": "bytes", "configuration": {"endian": "little"}}, False,
    ),
    "float32_scale_offset": (
        "float32", _floats(50, 100, 6).astype("float32"), np.nan, [scale_offset(offset=0.25, scale=3.5)],
        {"name": "bytes", "configuration": {"endian": "big"}}, False,
    ),
    "climate_uint8_in_shards": (
        "float64", np.abs(_floats(60, 800, 7)), np.nan, [],
        {"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2],
            "codecs": [scale_offset(offset=-10, scale=0.1), cast_value("uint8", out_of_range="clamp", scalar_map=NAN_MAP),
                       {"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}},
        True,
    ),
    "struct_nested_big_endian": (
        RECORD, _records(), _record_fill(), [], {"name": "bytes", "configuration": {"endian": "big"}}, False,
    ),
    "struct_in_shards": (
        RECORD, _records(), _record_fill(), [],
        {"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}},
        False,
    ),
}  # fmt: skip

ORACLE = """
if ARGS.get("path"):  # write the case
    data = np.load(ARGS["data"])
    codecs = ARGS["codecs"]
    a = zarr.create_array(ARGS["path"], shape=data.shape, chunks=(ARGS["chunk"],), dtype=ARGS["dtype"],
                          fill_value=np.load(ARGS["fill"])[()], filters=codecs[:-1] or None, serializer=codecs[-1],
                          compressors=None)
    a[: ARGS["written"]] = data[: ARGS["written"]]
if ARGS.get("read"):  # then read a store
    np.save(ARGS["out"], zarr.open_array(ARGS["read"], mode="r")[...])
print(json.dumps(None))
"""


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _case_args(tmp_path: Path, name: str) -> tuple[dict[str, Any], Any]:
    data_type, data, fill, filters, serializer, _ = CASES[name]
    np.save(tmp_path / "data.npy", data)
    fill_array = np.asarray(fill, data.dtype)
    np.save(tmp_path / "fill.npy", fill_array)
    arguments = {
        "data": str(tmp_path / "data.npy"), "fill": str(tmp_path / "fill.npy"), "dtype": data_type,
        "codecs": [*filters, serializer], "chunk": 4 if "shard" in serializer["name"] else 3,
        "written": len(data) - len(data) // 4,
    }  # fmt: skip
    return arguments, fill_array[()]


def _oracle_for(name: str, request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue("cast_oracle" if CASES[name][5] else "oracle")


@pytest.mark.parametrize("name", CASES)
def test_zarr_python_writes_we_read(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    python = _oracle_for(name, request)
    arguments, _ = _case_args(tmp_path, name)
    theirs = str(tmp_path / "theirs.zarr")
    run_oracle(python, ORACLE, path=theirs, read=theirs, out=str(tmp_path / "theirs.npy"), **arguments)
    ours = zarr3_backend.open_array(str(tmp_path / "theirs.zarr"))[...]
    assert_same(ours, np.load(tmp_path / "theirs.npy"), name)


@pytest.mark.parametrize("name", CASES)
def test_we_write_zarr_python_reads_the_same_bytes(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Our chunks are byte for byte zarr-python's, and zarr-python reads them as we do."""
    python = _oracle_for(name, request)
    arguments, fill = _case_args(tmp_path, name)
    data = np.load(arguments["data"])
    ours = zarr3_backend.create_array(
        str(tmp_path / "ours.zarr"), shape=data.shape, chunks=(arguments["chunk"],), dtype=arguments["dtype"],
        fill_value=fill, codecs=arguments["codecs"],
    )  # fmt: skip
    ours[: arguments["written"]] = data[: arguments["written"]]
    theirs, read = str(tmp_path / "theirs.zarr"), str(tmp_path / "ours.zarr")
    run_oracle(python, ORACLE, path=theirs, read=read, out=str(tmp_path / "read.npy"), **arguments)
    assert_same(np.load(tmp_path / "read.npy"), ours[...], name)
    chunks = {k: v for k, v in _files(tmp_path / "ours.zarr").items() if k != "zarr.json"}
    assert chunks == {k: v for k, v in _files(tmp_path / "theirs.zarr").items() if k != "zarr.json"}


SPEC_WINS = {
    "fill_lost_in_the_cast": (
        "float64", 0.5, [cast_value("uint8")], [1.0, 2.0],
        "spec wins: zarr-python 3.4 accepts a fill value the cast cannot carry (0.5 -> 0 -> 0.0); "
        "cast_value says implementations MUST treat this as an error",
    ),
    "fill_mapped_to_another_value": (
        "float64", 0.0, [cast_value("uint8", scalar_map=NAN_MAP)], [1.0, 2.0],
        "spec wins: zarr-python 3.4 accepts fill value 0.0, which the scalar_map decodes as NaN; cast_value "
        "says a fill value that does not survive the round trip MUST be an error",
    ),
    "intermediate_overflow": (
        "int8", 0, [scale_offset(offset=-1, scale=-1)], [127, 2],
        "spec wins: zarr-python 3.4 computes (127 + 1) * -1 and -128 / -1 - 1 in int64; scale_offset says an "
        "intermediate value outside int8 (128) MUST be an error",
    ),
}  # fmt: skip

WRITE_SMALL = """
a = zarr.create_array(ARGS["path"], shape=(2,), chunks=(2,), dtype=ARGS["dtype"], fill_value=ARGS["fill"],
                      filters=ARGS["filters"], compressors=None)
a[...] = np.array(ARGS["data"], ARGS["dtype"])
print(json.dumps(zarr.open_array(ARGS["path"], mode="r")[...].tolist()))
"""


@pytest.mark.parametrize("name", SPEC_WINS)
def test_where_zarr_python_leaves_the_spec_we_refuse(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Each case is marked with the reason in ``SPEC_WINS``: zarr-python writes and reads it, we refuse it."""
    data_type, fill, filters, data, reason = SPEC_WINS[name]
    python = request.getfixturevalue("cast_oracle" if "cast" in str(filters) else "oracle")
    path = str(tmp_path / "s.zarr")
    read = run_oracle(python, WRITE_SMALL, path=path, dtype=data_type, fill=fill, filters=filters, data=data)
    assert read == data, reason  # zarr-python round-trips it
    with pytest.raises(Zarr3Error, match="cast_value|scale_offset"):
        zarr3_backend.open_array(path)[...]
    with pytest.raises(Zarr3Error, match="cast_value|scale_offset"):
        zarr3_backend.create_array(
            str(tmp_path / "ours.zarr"),
            shape=(2,),
            dtype=data_type,
            fill_value=fill,
            codecs=[*filters, {"name": "bytes"}],
        )[...] = np.array(data, data_type)


READ_ONLY = """
print(json.dumps(zarr.open_array(ARGS["path"], mode="r")[...].tolist()))
"""


def test_a_repeated_scalar_map_input_reads_its_first_pair_and_we_never_write_one(
    tmp_path: Path, cast_oracle: Path
) -> None:
    """Spec wins: "readers MUST use the first occurrence" of a repeated input; zarr-python 3.4 uses the last
    (5.0 here, 7.0 there). Arrays we write carry the first pair alone, so both read them alike."""
    repeated = [cast_value("uint8", scalar_map={"decode": [[1, 5.0], [1, 7.0]]})]
    ours = zarr3_backend.create_array(
        str(tmp_path / "ours.zarr"), shape=(2,), dtype="float64", fill_value=0.0, filters=repeated,
        compressors=[],
    )  # fmt: skip
    ours[...] = [1.0, 2.0]  # 1.0 is stored as 1, which the map decodes as 5.0
    assert ours[...].tolist() == [5.0, 2.0]
    assert run_oracle(cast_oracle, READ_ONLY, path=str(tmp_path / "ours.zarr")) == [5.0, 2.0]
    document = json.loads((tmp_path / "ours.zarr" / "zarr.json").read_text())
    scalar_map = document["codecs"][0]["configuration"]["scalar_map"]
    scalar_map["decode"] = [[1, 5.0], [1, 7.0]]  # as another writer may write it
    (tmp_path / "ours.zarr" / "zarr.json").write_text(json.dumps(document))
    assert zarr3_backend.open_array(str(tmp_path / "ours.zarr"))[...].tolist() == [5.0, 2.0]
    theirs = run_oracle(cast_oracle, READ_ONLY, path=str(tmp_path / "ours.zarr"))
    assert theirs == [7.0, 2.0], "zarr-python 3.4 takes the last pair (the spec: the first); spec wins"


CAST = """
from cast_value_rs import cast_array
values = dict(np.load(ARGS["values"]))
answers = {}
for key, (source, target, rounding, out_of_range) in ARGS["runs"].items():
    try:
        answers[key] = cast_array(values[source], target_dtype=target, rounding_mode=rounding,
                                  out_of_range_mode=out_of_range)
    except ValueError:
        pass
np.savez(ARGS["out"], **answers)
print(json.dumps(sorted(answers)))
"""


def _edge_values() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(56)
    out = {}
    for name in ("float16", "float32", "float64"):
        info = np.finfo(name)
        special = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            127.5,
            128.0,
            -128.5,
            255.5,
            65519.0,
            65520.0,
            2.0**31,
            2.0**63,
        ]
        special += [float(info.max), -float(info.max), float(info.smallest_subnormal), np.inf, -np.inf]
        with np.errstate(over="ignore"):
            values = np.concatenate([np.array(special, name), rng.normal(0, 300, 200).astype(name)])
            values = np.concatenate([values, (rng.standard_cauchy(200) * 1e3).astype(name)])
        out[name] = values
        out[name + "_nan"] = np.array([np.nan, 1.0], name)
    for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        info = np.iinfo(name)
        edges = [info.min, info.max, 0, 1, 255, 256, 65504, 65520, 2**24 + 1, 2**53 + 1, 2**63 - 1, 2**62 + 3]
        edges = [e for e in edges if info.min <= e <= info.max]
        out[name] = np.concatenate(
            [np.array(edges, name), rng.integers(info.min, info.max, 300, dtype=name, endpoint=True)]
        )
    return out


def test_casts_match_cast_value_rs(cast_oracle: Path, tmp_path: Path) -> None:
    """Every source, target, rounding and out-of-range mode on edge values: the same bits, or both refuse."""
    values = _edge_values()
    np.savez(tmp_path / "values.npz", **values)
    types = [
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
    ]
    runs = {}
    for source, target, rounding, out_of_range in itertools.product(
        list(values), types, ROUNDINGS, (None, *OUT_OF_RANGE)
    ):
        if source.split("_")[0] != target and not (out_of_range == "wrap" and target.startswith("float")):
            runs[f"r{len(runs)}"] = (source, target, rounding, out_of_range)
    answered = set(
        run_oracle(
            cast_oracle, CAST, values=str(tmp_path / "values.npz"), runs=runs, out=str(tmp_path / "out.npz")
        )
    )
    theirs = np.load(tmp_path / "out.npz")
    for key, (source, target, rounding, out_of_range) in runs.items():
        what = f"{source} -> {target}, {rounding}, {out_of_range}"
        try:
            ours = cast_array(values[source], np.dtype(target), rounding, out_of_range)  # type: ignore[arg-type]
        except Zarr3Error:
            assert key not in answered, f"{what}: cast-value-rs casts what we refuse"
            continue
        assert key in answered, f"{what}: we cast what cast-value-rs refuses"
        assert ours.dtype == theirs[key].dtype and _bits_equal(ours, theirs[key]), what


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":  # NaN payloads need not be kept (the spec); everything else is bit for bit
        same_nan = np.isnan(a) == np.isnan(b)
        return bool(
            same_nan.all() and (a.view(f"u{a.itemsize}") == b.view(f"u{a.itemsize}"))[~np.isnan(a)].all()
        )
    return bool((a == b).all())
