"""Codec laws (CodecContract) for every codec, plus byte-level and interop checks."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
import warnings
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import EntryPoint
from pathlib import Path

import numcodecs
import numcodecs.blosc
import numpy as np
import pytest

from zarr3_backend.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    VLenBytesCodec,
    VLenUTF8Codec,
    ZstdCodec,
    codec_from_json,
    get_codec_class,
    numcodecs_codec_class,
    register_codec,
    registry,
)
from zarr3_backend.codecs.sharding import ShardingCodec
from zarr3_backend.codecs.zstd import decompress_bounded, frame_content_size
from zarr3_backend.errors import ChecksumError, CodecError, MetadataError, UnknownExtensionError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec

DATETIME = {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}
FIXED = [
    "bool",
    "int8",
    "uint16",
    "int32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "r24",
    DATETIME,
]


def _id(value: object) -> str:
    return value["name"] if isinstance(value, dict) else str(value)


def numcodec(name: str, **configuration: object):
    return numcodecs_codec_class(f"numcodecs.{name}").from_json(configuration)


# -- contract runs ---------------------------------------------------------------------------


class TestBytesContract(CodecContract):
    @pytest.fixture(params=["little", "big"])
    def codec(self, request):
        return BytesCodec(request.param)

    @pytest.fixture(params=FIXED, ids=_id)
    def spec(self, request):
        return chunk_spec(request.param, (3, 5))


class TestTransposeContract(CodecContract):
    @pytest.fixture(params=[(2, 0, 1), (0, 1, 2), (1, 2, 0)])
    def codec(self, request):
        return TransposeCodec(request.param)

    @pytest.fixture(params=["uint8", "float64", "string"])
    def spec(self, request):
        return chunk_spec(request.param, (2, 3, 4))


BYTES_CODECS = [
    GzipCodec(0),
    GzipCodec(6),
    ZstdCodec(),
    ZstdCodec(level=-3, checksum=True),
    Crc32cCodec(),
    BloscCodec(),
    BloscCodec(cname="lz4", clevel=1, shuffle="noshuffle"),
    BloscCodec(typesize=3, cname="blosclz", shuffle="bitshuffle", blocksize=256),
    BloscCodec(cname="zlib", shuffle="shuffle"),
    numcodec("bz2", level=5),
    numcodec("zlib", level=1),
    numcodec("lz4"),
    numcodec("shuffle"),
    numcodec("crc32"),
    numcodec("adler32"),
    numcodec("fletcher32"),
    numcodec("zstd", level=1),
]


class TestBytesBytesContract(CodecContract):
    @pytest.fixture(params=BYTES_CODECS, ids=lambda c: c.name)
    def codec(self, request):
        return request.param

    @pytest.fixture(params=["uint8", "float64"])
    def spec(self, request):
        return chunk_spec(request.param, (7, 9))


class TestVLenUTF8Contract(CodecContract):
    @pytest.fixture
    def codec(self):
        return VLenUTF8Codec()

    @pytest.fixture(params=[(6,), (2, 3), (0,)])
    def spec(self, request):
        return chunk_spec("string", request.param)


class TestVLenBytesContract(CodecContract):
    @pytest.fixture
    def codec(self):
        return VLenBytesCodec()

    @pytest.fixture
    def spec(self):
        return chunk_spec("variable_length_bytes", (3, 2))


class TestNumcodecsFiltersContract(CodecContract):
    @pytest.fixture(
        params=[
            ("delta", "int32", {"dtype": "<i4"}),
            ("packbits", "bool", {}),
            ("astype", "int16", {"encode_dtype": "<i8"}),
        ],
        ids=lambda p: p[0],
    )
    def case(self, request):
        return request.param

    @pytest.fixture
    def codec(self, case):
        return numcodec(case[0], **case[2])

    @pytest.fixture
    def spec(self, case):
        return chunk_spec(case[1], (4, 5))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numcodecs warns on NaN / overflow inputs
class TestLossyNumcodecsFiltersContract(CodecContract):
    lossless = False

    @pytest.fixture(
        params=[
            (
                "quantize",
                {"digits": 2},
            ),  # numcodecs.bitround is our own codec now: tests/codecs/test_bitround.py
            ("fixedscaleoffset", {"offset": 1, "scale": 10, "astype": "<i8"}),
        ],
        ids=lambda p: p[0],
    )
    def codec(self, request):
        return numcodec(request.param[0], **request.param[1])

    @pytest.fixture
    def spec(self):
        return chunk_spec("float32", (3, 4))


# -- bytes -----------------------------------------------------------------------------------


def test_bytes_layout_little_and_big_endian():
    spec = chunk_spec("int16", (2,))
    chunk = np.array([1, 0x0203], dtype="int16")
    assert bytes(BytesCodec("little").encode(chunk, spec)) == b"\x01\x00\x03\x02"
    assert bytes(BytesCodec("big").encode(chunk, spec)) == b"\x00\x01\x02\x03"
    complex_spec = chunk_spec("complex64", (1,))
    encoded = bytes(BytesCodec("big").encode(np.array([1 + 2j], "complex64"), complex_spec))
    assert encoded == np.array([1, 2], ">f4").tobytes()


def test_bytes_decode_is_a_view_in_native_order_and_native_after_swap():
    spec = chunk_spec("float32", (2, 2))
    data = bytearray(np.arange(4, dtype="<f4").tobytes())
    little = BytesCodec("little").decode(data, spec)
    assert np.shares_memory(little, np.frombuffer(data, np.uint8))
    big = BytesCodec("big").decode(np.arange(4, dtype=">f4").tobytes(), spec)
    assert big.dtype == np.dtype("float32") and big.dtype.isnative
    np.testing.assert_array_equal(big, np.arange(4).reshape(2, 2))


def test_bytes_json_and_evolve_match_zarr_python_conventions():
    assert BytesCodec().to_json() == {"name": "bytes"}
    assert BytesCodec("big").to_json() == {"name": "bytes", "configuration": {"endian": "big"}}
    assert BytesCodec().evolve(chunk_spec("float64", (1,))) == BytesCodec("little")
    assert BytesCodec("little").evolve(chunk_spec("uint8", (1,))) == BytesCodec()
    assert BytesCodec("big").evolve(chunk_spec("r24", (1,))) == BytesCodec()
    assert codec_from_json({"name": "bytes"}) == BytesCodec()


def test_bytes_rejects_bad_endian_missing_endian_variable_types_and_wrong_sizes():
    with pytest.raises(MetadataError, match="endian"):
        BytesCodec("middle")  # type: ignore[arg-type]
    with pytest.raises(CodecError, match="endian is required"):
        BytesCodec().validate(chunk_spec("int32", (2,)))
    with pytest.raises(CodecError, match="vlen-utf8"):
        BytesCodec().validate(chunk_spec("string", (2,)))
    with pytest.raises(CodecError, match="expected 8 bytes .* got 7"):
        BytesCodec("little").decode(b"\x00" * 7, chunk_spec("int32", (2,)))


# -- transpose -------------------------------------------------------------------------------


def test_transpose_shape_views_and_json():
    spec = chunk_spec("int32", (2, 3, 4))
    codec = TransposeCodec([2, 0, 1])
    assert codec.resolve_spec(spec).shape == (4, 2, 3)
    chunk = np.arange(24, dtype="int32").reshape(2, 3, 4)
    encoded = codec.encode(chunk, spec)
    assert encoded.shape == (4, 2, 3) and np.shares_memory(encoded, chunk)
    assert encoded[3, 1, 2] == chunk[1, 2, 3]
    assert codec.to_json() == {"name": "transpose", "configuration": {"order": [2, 0, 1]}}


@pytest.mark.parametrize(
    "order, match",
    [
        ("C", "no longer allowed"),
        ("F", "no longer allowed"),
        ([0, 0], "permutation"),
        ([1, 2], "permutation"),
        ([0, True], "list of integers"),
        (None, "list of integers"),
    ],
)
def test_transpose_rejects_invalid_orders(order, match):
    with pytest.raises(MetadataError, match=match):
        codec_from_json({"name": "transpose", "configuration": {"order": order}})


def test_transpose_order_must_match_chunk_rank():
    with pytest.raises(CodecError, match="2 entries but the chunk has 3 dimensions"):
        TransposeCodec((1, 0)).validate(chunk_spec("int8", (1, 2, 3)))


# -- gzip / zstd / crc32c --------------------------------------------------------------------


def test_gzip_writes_gzip_format_and_rejects_corrupt_data():
    spec = chunk_spec("uint8", (10,))
    encoded = bytes(GzipCodec(1).encode(b"hello world", spec))
    assert encoded[:2] == b"\x1f\x8b"
    assert bytes(numcodecs.GZip().decode(encoded)) == b"hello world"
    with pytest.raises(CodecError, match="gzip"):
        GzipCodec().decode(encoded[:-5], spec)
    with pytest.raises(CodecError, match="gzip"):
        GzipCodec().decode(b"not gzip at all", spec)


@pytest.mark.parametrize("level", [-1, 10, True, 1.5, "5"])
def test_gzip_rejects_bad_levels(level):
    with pytest.raises(
        MetadataError, match=r"codec 'gzip': configuration.level: expected an integer in 0..9"
    ):
        GzipCodec(level)


def test_zstd_interoperates_with_numcodecs_and_decodes_into_buffers():
    spec = chunk_spec("uint8", (1000,))
    raw = np.arange(1000, dtype="uint16").tobytes()
    ours = bytes(ZstdCodec(level=3).encode(raw, spec))
    assert bytes(numcodecs.Zstd().decode(ours)) == raw
    theirs = numcodecs.Zstd(level=5, checksum=True).encode(raw)
    assert bytes(ZstdCodec().decode(theirs, spec)) == raw
    assert frame_content_size(ours) == len(raw)
    out = bytearray(len(raw))
    assert ZstdCodec().decode_into(theirs, spec, memoryview(out)) and bytes(out) == raw
    assert not ZstdCodec().decode_into(theirs, spec, memoryview(bytearray(len(raw) + 1)))
    with pytest.raises(CodecError, match="zstd"):
        ZstdCodec().decode(ours[:-3], spec)


def test_zstd_frame_without_content_size_is_decoded_but_not_in_place():
    # magic, descriptor (no content size, not single segment), window byte, one last raw block of 5 bytes
    frame = b"\x28\xb5\x2f\xfd" + b"\x00\x00" + (1 | 5 << 3).to_bytes(3, "little") + b"hello"
    spec = chunk_spec("uint8", (5,))
    assert frame_content_size(frame) is None
    assert bytes(ZstdCodec().decode(frame, spec)) == b"hello"
    assert not ZstdCodec().decode_into(frame, spec, memoryview(bytearray(5)))


def test_crc32c_known_vector_layout_and_zero_copy_decode():
    spec = chunk_spec("uint8", (9,))
    encoded = bytes(Crc32cCodec().encode(b"123456789", spec))
    assert encoded == b"123456789" + (0xE3069283).to_bytes(4, "little")
    decoded = Crc32cCodec().decode(encoded, spec)
    assert isinstance(decoded, memoryview) and decoded.obj is encoded and bytes(decoded) == b"123456789"
    assert Crc32cCodec().compute_encoded_size(9, spec) == 13
    assert Crc32cCodec().to_json() == {"name": "crc32c"}


def test_crc32c_reports_mismatch_and_truncation():
    spec = chunk_spec("uint8", (9,))
    corrupt = b"123456780" + (0xE3069283).to_bytes(4, "little")
    with pytest.raises(
        ChecksumError, match=r"^crc32c checksum mismatch: stored 0xe3069283, computed 0x[0-9a-f]{8}$"
    ):
        Crc32cCodec().decode(corrupt, spec)
    with pytest.raises(CodecError, match="too short"):
        Crc32cCodec().decode(b"abc", spec)


# -- blosc -----------------------------------------------------------------------------------


def test_blosc_evolve_records_typesize_and_shuffle():
    assert BloscCodec().evolve(chunk_spec("int32", (2,))) == BloscCodec(typesize=4, shuffle="shuffle")
    assert BloscCodec().evolve(chunk_spec("uint8", (2,))) == BloscCodec(typesize=1, shuffle="bitshuffle")
    assert BloscCodec().evolve(chunk_spec("string", (2,))) == BloscCodec(typesize=1, shuffle="bitshuffle")
    explicit = BloscCodec(typesize=2, shuffle="noshuffle")
    assert explicit.evolve(chunk_spec("float64", (2,))) is explicit
    assert BloscCodec().to_json() == {
        "name": "blosc",
        "configuration": {"cname": "zstd", "clevel": 5, "blocksize": 0},
    }


def test_blosc_shuffles_with_the_recorded_typesize():
    spec = chunk_spec("float64", (100,))
    raw = np.linspace(0, 1, 100).tobytes()
    for typesize in (8, 3):
        encoded = bytes(BloscCodec(typesize=typesize, shuffle="shuffle").encode(raw, spec))
        assert encoded[3] == typesize  # header byte 3 is the typesize blosc shuffled with
        assert bytes(numcodecs.Blosc().decode(encoded)) == raw
    theirs = numcodecs.Blosc(cname="lz4", clevel=9, shuffle=numcodecs.Blosc.BITSHUFFLE).encode(raw)
    assert bytes(BloscCodec().decode(theirs, spec)) == raw


@pytest.mark.parametrize(
    "config, match",
    [
        ({"cname": "lzma"}, "cname"),
        ({"clevel": 10}, "clevel"),
        ({"shuffle": 1}, "shuffle"),
        ({"typesize": 0}, "typesize"),
        ({"blocksize": -1}, "blocksize"),
    ],
)
def test_blosc_rejects_invalid_configuration(config, match):
    with pytest.raises(MetadataError, match=f"codec 'blosc': configuration.{match}"):
        codec_from_json({"name": "blosc", "configuration": config})


def test_blosc_rejects_corrupt_data_and_wrong_output_sizes():
    spec = chunk_spec("float64", (100,))
    codec = BloscCodec(typesize=8, shuffle="shuffle")
    encoded = bytes(codec.encode(np.arange(100.0).tobytes(), spec))
    for bad, match in [
        (b"", "too short"),
        (encoded[:-1], "truncated"),
        (encoded + b"x", "truncated"),
        (bytes(16), "0 compressed bytes"),
    ]:
        with pytest.raises(CodecError, match=match):
            codec.decode(bad, spec)
    garbage = encoded[:16] + bytes(len(encoded) - 16)
    with pytest.raises(CodecError, match="corrupt"):
        codec.decode(garbage, spec)
    with pytest.raises(CodecError, match="800 decoded bytes, but 799 were expected"):
        codec.decode_into(encoded, spec, memoryview(bytearray(799)))


def test_blosc_decodes_in_parallel_worker_threads():
    spec = chunk_spec("int64", (1 << 16,))
    raws = [np.arange(1 << 16, dtype="int64") * i for i in range(8)]
    codec = BloscCodec().evolve(spec)
    encoded = [bytes(codec.encode(raw.tobytes(), spec)) for raw in raws]

    def decode(data: bytes) -> np.ndarray:
        out = np.empty(1 << 16, dtype="int64")
        assert codec.decode_into(data, spec, memoryview(out).cast("B"))
        return out

    with ThreadPoolExecutor(4) as pool:
        for raw, decoded in zip(raws, pool.map(decode, encoded)):
            np.testing.assert_array_equal(decoded, raw)


# -- vlen ------------------------------------------------------------------------------------


def test_vlen_utf8_byte_layout_and_numcodecs_interop():
    spec = chunk_spec("string", (2,))
    chunk = np.array(["a", "hé"], dtype=object)
    encoded = bytes(VLenUTF8Codec().encode(chunk, spec))
    assert encoded == b"\x02\x00\x00\x00" + b"\x01\x00\x00\x00a" + b"\x03\x00\x00\x00h\xc3\xa9"
    assert numcodecs.VLenUTF8().decode(encoded).tolist() == ["a", "hé"]
    theirs = numcodecs.VLenUTF8().encode(np.array(["x", "", "zz", "q"], dtype=object))
    assert VLenUTF8Codec().decode(theirs, chunk_spec("string", (2, 2))).tolist() == [["x", ""], ["zz", "q"]]
    assert VLenUTF8Codec().to_json() == {"name": "vlen-utf8", "configuration": {}}
    assert VLenBytesCodec().to_json() == {"name": "vlen-bytes", "configuration": {}}


def test_vlen_rejects_corrupt_data_wrong_counts_and_fixed_types():
    spec = chunk_spec("string", (3,))
    with pytest.raises(CodecError, match="corrupt"):
        VLenUTF8Codec().decode(b"\x05\x00", spec)
    with pytest.raises(CodecError, match="corrupt"):
        VLenUTF8Codec().decode(b"\x01\x00\x00\x00\x02\x00\x00\x00\xff\xfe", chunk_spec("string", (1,)))
    with pytest.raises(CodecError, match="holds 1 items, expected 3"):
        VLenUTF8Codec().decode(b"\x01\x00\x00\x00\x01\x00\x00\x00a", spec)
    with pytest.raises(CodecError, match="not 'int32'"):
        VLenUTF8Codec().validate(chunk_spec("int32", (3,)))


# -- numcodecs adapter -----------------------------------------------------------------------


def test_numcodecs_kinds_mirror_zarr_python():
    kinds = {
        name: numcodecs_codec_class(f"numcodecs.{name}").kind
        for name in (
            "delta",
            "packbits",
            "fixedscaleoffset",
            "quantize",
            "bitround",
            "astype",
            "bz2",
            "shuffle",
            "crc32",
            "lz4",
            "zlib",
            "blosc",
        )
    }
    assert {k for k, v in kinds.items() if v == "array_to_array"} == {
        "delta",
        "packbits",
        "fixedscaleoffset",
        "quantize",
        "bitround",
        "astype",
    }
    assert numcodec("crc32").compute_encoded_size(10, chunk_spec("uint8", (10,))) == 14
    with pytest.raises(UnknownExtensionError, match="numcodecs.nope"):
        get_codec_class("numcodecs.nope")


def test_numcodecs_configuration_errors_name_the_codec():
    codec = numcodec("delta", dtype="<i4", bogus=1)
    with pytest.raises(MetadataError, match="codec 'numcodecs.delta': numcodecs rejects"):
        codec.validate(chunk_spec("int32", (2,)))
    with pytest.raises(CodecError, match="requires data type 'bool'"):
        numcodec("packbits").validate(chunk_spec("int32", (2,)))


# -- registry --------------------------------------------------------------------------------


def test_registry_accepts_short_hand_names_objects_and_codecs():
    assert codec_from_json("crc32c") == Crc32cCodec()
    assert codec_from_json({"name": "crc32c"}) == Crc32cCodec()
    assert codec_from_json(
        {"name": "gzip", "configuration": {"level": 2}, "must_understand": True}
    ) == GzipCodec(2)
    codec = ZstdCodec()
    assert codec_from_json(codec) is codec
    assert codec_from_json({"name": "zstd", "must_understand": False}) == ZstdCodec()


def test_registry_skips_unknown_codecs_only_when_allowed():
    assert codec_from_json({"name": "https://example.com/my-codec", "must_understand": False}) is None
    with pytest.raises(UnknownExtensionError, match="unknown codec 'urn:x-example:codec'"):
        codec_from_json({"name": "urn:x-example:codec"})
    with pytest.raises(UnknownExtensionError, match="unknown codec 'my-codec'"):
        codec_from_json({"name": "my-codec", "configuration": {}})
    with pytest.raises(UnknownExtensionError, match="unknown codec 'my-codec'"):
        codec_from_json("my-codec")


@pytest.mark.parametrize(
    "obj, match",
    [
        (3, "expected a name or an object"),
        ({"configuration": {}}, "no 'name'"),
        ({"name": 3}, "expected a string"),
        ({"name": "Gzip"}, "not a valid extension name"),
        ({"name": "foo/bar"}, "not a valid extension name"),
        ("foo bar", "not a valid extension name"),
        ("foo:bar", "not a valid extension name"),
        (
            {"name": "gzip", "configuration": [1]},
            r"codec.configuration: expected an object, got \[1\] in .*'gzip'",
        ),
        ({"name": "gzip", "level": 1}, r"codec: unexpected members \['level'\] in .*'gzip'"),
        (
            {"name": "gzip", "must_understand": "no"},
            "codec.must_understand: expected true or false, got 'no'",
        ),
    ],
)
def test_registry_rejects_malformed_codec_objects(obj, match):
    with pytest.raises(MetadataError, match=match):
        codec_from_json(obj)


def test_every_built_in_codec_module_is_in_the_lazy_table():
    """``registry.BUILT_IN`` names every codec a module of the package registers, and only those."""
    package = Path(registry.__file__).parent
    registered = {}
    for module in sorted(package.glob("*.py")):
        if "register_codec(" in module.read_text() and module.stem != "registry":
            for cls in vars(importlib.import_module(f"zarr3_backend.codecs.{module.stem}")).values():
                if (
                    isinstance(cls, type)
                    and cls.__module__.endswith(f".{module.stem}")
                    and "name" in vars(cls)
                ):
                    registered[cls.name] = module.stem
    assert registered == registry.BUILT_IN
    for name in registry.BUILT_IN:
        assert get_codec_class(name).name == name


def test_register_codec_rejects_non_codecs():
    with pytest.raises(TypeError, match="Codec subclass"):
        register_codec(dict)  # type: ignore[arg-type]


def test_third_party_codecs_load_from_entry_points(tmp_path, monkeypatch):
    (tmp_path / "my_plugin_codec.py").write_text(
        textwrap.dedent("""
        from dataclasses import dataclass
        from zarr3_backend.codecs import BytesBytesCodec

        @dataclass(frozen=True)
        class Reverse(BytesBytesCodec):
            name = "reverse-bytes"
            def encode(self, data, spec):
                return bytes(data)[::-1]
            def decode(self, data, spec):
                return bytes(data)[::-1]
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint(name="reverse-bytes", value="my_plugin_codec:Reverse", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        registry, "entry_points", lambda group: [ep] if group == registry.ENTRY_POINT_GROUP else []
    )
    registry._entry_points.cache_clear()
    monkeypatch.delitem(registry._codecs, "reverse-bytes", raising=False)
    try:
        codec = codec_from_json({"name": "reverse-bytes"})
        assert codec.encode(b"abc", chunk_spec("uint8", (3,))) == b"cba"
    finally:
        registry._entry_points.cache_clear()
        sys.modules.pop("my_plugin_codec", None)


# -- zarr-python compatibility ---------------------------------------------------------------


@pytest.fixture
def zarr_python():
    """zarr-python, with numcodecs' blosc thread setting (which importing zarr changes) restored."""
    before = numcodecs.blosc.use_threads
    zarr = pytest.importorskip("zarr")
    yield zarr
    numcodecs.blosc.use_threads = before


def _zarr_python_codecs(zarr, path, **kwargs) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.create_array(str(path), shape=(20,), chunks=(10,), **kwargs)
        array[:] = np.arange(20).astype(array.dtype) if array.dtype != object else [str(i) for i in range(20)]
    return json.loads((path / "zarr.json").read_text())["codecs"]


def _decode_stored_chunk(codecs: list[dict], data: bytes, spec):
    objects = [codec_from_json(c) for c in codecs]
    specs = [spec]
    for codec in objects[:-1]:
        if codec.kind == "array_to_array":
            specs.append(codec.resolve_spec(specs[-1]))
    n_aa = sum(c.kind == "array_to_array" for c in objects)
    for codec in reversed(objects[n_aa + 1 :]):
        data = codec.decode(data, specs[-1])
    chunk = objects[n_aa].decode(data, specs[-1])
    for codec, codec_spec in zip(reversed(objects[:n_aa]), reversed(specs[:n_aa])):
        chunk = codec.decode(chunk, codec_spec)
    return chunk


@pytest.mark.parametrize(
    "settings, data_type",
    [
        ({}, "int32"),
        ({}, "uint8"),
        ({"cname": "lz4", "clevel": 1, "shuffle": "noshuffle"}, "float64"),
        ({"typesize": 2, "shuffle": "bitshuffle", "blocksize": 512}, "int16"),
    ],
)
def test_blosc_json_identical_to_zarr_python(zarr_python, tmp_path, settings, data_type):
    codecs = _zarr_python_codecs(
        zarr_python, tmp_path / "a", dtype=data_type, compressors=zarr_python.codecs.BloscCodec(**settings)
    )
    ours = BloscCodec(**settings).evolve(chunk_spec(data_type, (10,))).to_json()
    assert json.dumps(ours) == json.dumps(codecs[-1])


@pytest.mark.parametrize(
    "kwargs, data_type, expected",
    [
        ({}, "float64", [BytesCodec("little"), ZstdCodec()]),
        ({}, "uint8", [BytesCodec(), ZstdCodec()]),
        ({}, "string", [VLenUTF8Codec(), ZstdCodec()]),
        ({"compressors": "gzip-placeholder"}, "int16", [BytesCodec("little"), GzipCodec()]),
        ({"compressors": "crc32c-placeholder"}, "int16", [BytesCodec("little"), Crc32cCodec()]),
    ],
)
def test_zarr_python_json_and_chunks_are_ours(zarr_python, tmp_path, kwargs, data_type, expected):
    placeholders = {
        "gzip-placeholder": zarr_python.codecs.GzipCodec(),
        "crc32c-placeholder": zarr_python.codecs.Crc32cCodec(),
    }
    kwargs = {k: placeholders.get(v, v) for k, v in kwargs.items()}
    codecs = _zarr_python_codecs(zarr_python, tmp_path / "a", dtype=data_type, **kwargs)
    spec = chunk_spec(data_type, (10,))
    assert codecs == [c.evolve(spec).to_json() for c in expected]
    chunk = _decode_stored_chunk(codecs, (tmp_path / "a" / "c" / "1").read_bytes(), spec)
    assert (
        chunk.tolist()
        == (
            np.arange(10, 20).astype(spec.dtype)
            if data_type != "string"
            else np.array([str(i) for i in range(10, 20)], dtype=object)
        ).tolist()
    )


@pytest.mark.parametrize(
    "name, kwargs, location",
    [
        ("Delta", {"dtype": "<i8"}, "filters"),
        ("FixedScaleOffset", {"offset": 0, "scale": 10, "astype": "<i4"}, "filters"),
        ("Quantize", {"digits": 3}, "filters"),
        ("Shuffle", {}, "compressors"),
        ("BZ2", {"level": 5}, "compressors"),
        ("CRC32", {}, "compressors"),
    ],
)
def test_numcodecs_json_and_chunks_match_zarr_python(zarr_python, tmp_path, name, kwargs, location):
    import zarr.codecs.numcodecs as zarr_numcodecs

    data_type = "int64" if name == "Delta" else "float64"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(zarr_numcodecs, name)(**kwargs)
    codecs = _zarr_python_codecs(zarr_python, tmp_path / "a", dtype=data_type, **{location: [theirs]})
    spec = chunk_spec(data_type, (10,))
    ours = numcodec(name.lower(), **kwargs)
    chain_position = 0 if location == "filters" else 1
    assert codecs[chain_position] == ours.evolve(spec).to_json()
    chunk = _decode_stored_chunk(codecs, (tmp_path / "a" / "c" / "1").read_bytes(), spec)
    np.testing.assert_array_equal(chunk, np.arange(10, 20).astype(spec.dtype))


def test_zstd_frame_without_content_size_below_and_at_the_bound():
    """No recorded size: decoded into a bounded buffer; fewer bytes than the bound are decoded again unbounded."""
    frame = b"\x28\xb5\x2f\xfd" + b"\x00\x00" + (1 | 5 << 3).to_bytes(3, "little") + b"hello"
    assert bytes(decompress_bounded(frame, 5)) == b"hello"
    assert bytes(decompress_bounded(frame, 100)) == b"hello"
    with pytest.raises(CodecError, match="more than the 4 bytes allowed"):
        decompress_bounded(frame, 4)


@pytest.mark.parametrize("index_codecs, size", [(["bytes", "crc32c"], 6 * 16 + 4), (["bytes"], 6 * 16)])
def test_sharding_index_size_is_public(index_codecs, size):
    """validate.py checks shard layouts with it: 16 bytes per inner chunk, plus what the index codecs add."""
    sharding = ShardingCodec.from_json(
        {"chunk_shape": [2, 2], "codecs": ["bytes"], "index_codecs": index_codecs}
    )
    assert sharding.index_size(chunk_spec("int8", (4, 6))) == size
