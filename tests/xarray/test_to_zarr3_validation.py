"""to_zarr3 refuses damaging or malformed writes before anything is written, with messages naming the problem."""

from __future__ import annotations

import inspect
import pydoc
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend import WriteError, WriteKeyError, WriteTypeError
from zarr3_backend.xarray.write.encodings import InnerChunksWarning

pytest.importorskip("zarr")
pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::FutureWarning"),
]


def sample() -> xr.Dataset:
    return xr.Dataset(
        {
            "v": (("t", "x"), np.arange(40.0).reshape(10, 4)),
            "w": (("t",), np.arange(10.0)),
            "c": (("x",), np.ones(4)),
        },
        coords={"t": np.arange(10), "x": np.arange(4)},
    )


def written(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir()) if path.exists() else []


# --- encoding -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "exc", "message"),
    [
        (
            {"v": {"chunks": (5, 4.5)}},
            WriteTypeError,
            r"encoding\['v'\]\['chunks'\]=\(5, 4.5\): every size must be a positive integer, got 4.5",
        ),
        ({"v": {"chunks": (5, 0)}}, WriteError, r"positive integer, got 0"),
        ({"v": {"shards": (10, -2)}}, WriteError, r"\['shards'\].*positive integer, got -2"),
        ({"v": {"chunks": (5, True)}}, WriteTypeError, r"positive integer, got True"),
        ({"v": {"chunks": (5,)}}, WriteError, r"\(5,\) has 1 entries, but 'v' has 2 dimensions \('t', 'x'\)"),
        ({"v": {"shards": (10, 4, 1)}}, WriteError, r"'shards'\]=\(10, 4, 1\) has 3 entries"),
        ({"v": {"chunks": {"time": 5}}}, WriteError, r"names dimensions \['time'\] that 'v' does not have"),
        (
            {"v": {"chunks": "big"}},
            WriteTypeError,
            r"must be an int, a tuple of ints or a dict by dimension name",
        ),
        (
            {"v": "foo"},
            WriteError,
            r"encoding\['v'\] must be castable to a dict of encoding keys.*got str 'foo'",
        ),
        ("foo", WriteTypeError, r"encoding must be a dict"),
        ({"nope": {}}, WriteKeyError, r"encoding given for 'nope', which is not a variable"),
        ({"v": {"compression": "zstd"}}, WriteError, r"unexpected encoding keys for 'v': \['compression'\]"),
        (
            {"v": {"units": "K"}},
            WriteError,
            r"encoding \['units'\] of 'v' does not apply to a float64 variable",
        ),
    ],
)
def test_invalid_encodings_are_refused_before_writing(tmp_path: Path, encoding, exc, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=message):
        sample().to_zarr3(tmp_path / "a.zarr", encoding=encoding)
    assert written(tmp_path / "a.zarr") == []


def test_invalid_encoding_in_mode_w_leaves_the_old_store(tmp_path: Path) -> None:
    sample().to_zarr3(tmp_path / "a.zarr")
    with pytest.raises(WriteError):
        sample().to_zarr3(tmp_path / "a.zarr", mode="w", encoding={"v": {"chunks": (5,)}})
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), sample())


def test_chunks_and_shards_by_dimension_name(tmp_path: Path) -> None:
    sample().to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": {"t": 5}, "shards": {"t": 10, "x": -1}}})
    array = zarr3_backend.open_array(tmp_path / "a.zarr", "v")
    assert (array.chunks, array.shards) == ((5, 4), (10, 4))
    sample().to_zarr3(tmp_path / "b.zarr", encoding={"v": {"chunks": 2}})
    assert zarr3_backend.open_array(tmp_path / "b.zarr", "v").chunks == (2, 2)


def test_shards_without_chunks_warn_and_name_the_inner_chunks(tmp_path: Path) -> None:
    big = xr.Dataset({"v": (("t", "x"), np.zeros((2048, 1024)))})
    with pytest.warns(
        InnerChunksWarning,
        match=r"'v' has shards=\(2048, 1024\) but no chunks; using inner chunks \(512, 1024\)",
    ):
        big.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"shards": (2048, 1024)}})
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "v").chunks == (512, 1024)
    with pytest.warns(InnerChunksWarning, match=r"using inner chunks \(256, 512\) \(the dask chunks\)"):
        big.chunk({"t": 256, "x": 512}).to_zarr3(
            tmp_path / "b.zarr", encoding={"v": {"shards": (2048, 1024)}}
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", InnerChunksWarning)
        big.to_zarr3(tmp_path / "c.zarr", encoding={"v": {"shards": (2048, 1024), "chunks": (1024, 1024)}})


def test_codecs_that_disagree_with_compressors_are_refused(tmp_path: Path) -> None:
    sample().to_zarr3(
        tmp_path / "a.zarr",
        encoding={"v": {"compressors": [{"name": "gzip", "configuration": {"level": 1}}]}},
    )
    opened = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3")
    opened.to_zarr3(tmp_path / "b.zarr")  # codecs and compressors agree: fine
    opened.v.encoding["compressors"] = ({"name": "zstd"},)
    with pytest.raises(
        WriteError,
        match=r"has 'codecs' .* and \{'compressors': \[\{'name': 'zstd'\}\]\} that describe a different chain",
    ):
        opened.to_zarr3(tmp_path / "c.zarr")
    del opened.v.encoding["codecs"]
    opened.to_zarr3(tmp_path / "d.zarr")
    assert zarr3_backend.open_array(tmp_path / "d.zarr", "v").metadata.codecs[1]["name"] == "zstd"


# --- names, appends, regions, attributes, progress --------------------------------------------------------------------


def test_slash_in_a_variable_name_is_refused(tmp_path: Path) -> None:
    ds = xr.Dataset({"t2m/bad": ("x", np.arange(3.0))})
    with pytest.raises(
        WriteError, match=r"variable name 't2m/bad' contains '/'.*ds.rename\(\{'t2m/bad': 't2m_bad'\}\)"
    ):
        ds.to_zarr3(tmp_path / "a.zarr")
    assert written(tmp_path / "a.zarr") == []


def test_append_leaving_out_a_variable_with_the_append_dim_is_refused(tmp_path: Path) -> None:
    sample().to_zarr3(tmp_path / "a.zarr")
    before = (tmp_path / "a.zarr" / "v" / "zarr.json").read_bytes()
    with pytest.raises(WriteError, match=r"leaves out \['w'\], which have 't'.*Include them"):
        sample()[["v"]].assign_coords(t=np.arange(10, 20)).to_zarr3(tmp_path / "a.zarr", append_dim="t")
    assert (tmp_path / "a.zarr" / "v" / "zarr.json").read_bytes() == before
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), sample())
    sample().drop_vars("c").assign_coords(t=np.arange(10, 20)).to_zarr3(tmp_path / "a.zarr", append_dim="t")
    assert (
        xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").sizes["t"] == 20
    )  # 'c' has no 't': may be left out


def test_append_to_a_missing_store_says_so(tmp_path: Path) -> None:
    with pytest.raises(
        WriteError,
        match=r"append_dim='t', but there is nothing to append to.*Write the first part without append_dim",
    ):
        sample().to_zarr3(tmp_path / "new.zarr", append_dim="t")


def test_append_dim_not_stored_names_the_stored_dimensions(tmp_path: Path) -> None:
    sample().to_zarr3(tmp_path / "a.zarr")
    with pytest.raises(
        WriteError, match=r"append_dim='time' is not a dimension .*their dimensions: \['t', 'x'\]"
    ):
        sample().to_zarr3(tmp_path / "a.zarr", append_dim="time")


def test_region_past_the_end_says_so(tmp_path: Path) -> None:
    sample().to_zarr3(tmp_path / "a.zarr")
    part = sample()[["v", "w"]].isel(t=slice(0, 4)).drop_vars(["t", "x"])
    with pytest.raises(
        WriteError,
        match=r"region 't'=slice\(8, 12, None\).*runs past the end of the stored 't' \(length 10\).*append_dim='t'",
    ) as info:
        part.to_zarr3(tmp_path / "a.zarr", region={"t": slice(8, 12)})
    assert "use region or append_dim" not in str(info.value)
    with pytest.raises(
        WriteError, match=r"region 't'=slice\(0, 3, None\) selects 3 elements, but variable '[vw]' has 4"
    ):
        part.to_zarr3(tmp_path / "a.zarr", region={"t": slice(0, 3)})


def test_non_json_attribute_is_named(tmp_path: Path) -> None:
    ds = sample()
    ds.attrs["when"] = {"nested": object()}
    with pytest.raises(
        WriteTypeError, match=r"attribute 'when' of the attributes of group '/'.*is not JSON serialisable"
    ):
        ds.to_zarr3(tmp_path / "a.zarr")
    ds = sample()
    ds.v.attrs["bad"] = {1, 2}
    with pytest.raises(WriteTypeError, match=r"attribute 'bad' of variable 'v'"):
        ds.to_zarr3(tmp_path / "b.zarr")
    assert written(tmp_path / "a.zarr") == [] and written(tmp_path / "b.zarr") == []


@pytest.mark.parametrize("progress", ["rich", "yes", 1.5])
def test_progress_takes_only_documented_values(tmp_path: Path, progress) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(WriteError, match=r"progress must be False, True .* or 'tqdm'"):
        sample().to_zarr3(tmp_path / "a.zarr", progress=progress)
    assert written(tmp_path / "a.zarr") == []


# --- the API surface ----------------------------------------------------------------------------------------------


def test_to_zarr3_positional_arguments_follow_to_zarr(tmp_path: Path) -> None:
    ds_params = list(inspect.signature(xr.Dataset.to_zarr).parameters)[1:5]
    assert (
        list(inspect.signature(sample().to_zarr3).parameters)[:4]
        == ds_params
        == ["store", "mode", "group", "encoding"]
    )
    sample().to_zarr3(tmp_path / "a.zarr", "w", "child", {"v": {"chunks": (5, 4)}})
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "child/v").chunks == (5, 4)
    tree_params = [p for p in inspect.signature(xr.DataTree.to_zarr).parameters][1:8]
    assert list(inspect.signature(xr.DataTree(sample()).to_zarr3).parameters)[:7] == tree_params
    xr.DataTree(sample()).to_zarr3(tmp_path / "t.zarr", "w", {"/": {"v": {"chunks": (2, 4)}}})
    assert zarr3_backend.open_array(tmp_path / "t.zarr", "v").chunks == (2, 4)


def test_to_zarr3_shows_its_signature_and_docstring() -> None:
    text = pydoc.render_doc(sample().to_zarr3, renderer=pydoc.plaintext)
    for name in (
        "store",
        "mode",
        "group",
        "encoding",
        "append_dim",
        "region",
        "safe_chunks",
        "zarr_format",
        "progress",
    ):
        assert f"{name}" in text
    assert "Write a Dataset, DataArray or DataTree" in text and "see :func:" not in text
    assert "Parameters" in sample().to_zarr3.__call__.__doc__


def test_exported_functions(tmp_path: Path) -> None:
    zarr3_backend.to_zarr3(
        sample(), tmp_path / "a.zarr", "w", encoding={"v": {"shards": (10, 4), "chunks": (5, 4)}}
    )
    opened = zarr3_backend.open_zarr3(tmp_path / "a.zarr")
    assert opened.v.chunks == ((10,), (4,))  # chunks={}: one dask chunk per shard
    xr.testing.assert_identical(opened.load(), sample())
    assert zarr3_backend.open_zarr3(tmp_path / "a.zarr", chunks=None).v.chunks is None
    assert {"to_zarr3", "open_zarr3"} <= set(zarr3_backend.__all__)


def test_numcodecs_codec_objects_in_encoding(tmp_path: Path) -> None:
    numcodecs = pytest.importorskip("numcodecs")
    sample().to_zarr3(tmp_path / "a.zarr", encoding={"v": {"compressors": [numcodecs.Zlib(level=2)]}})
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "v").metadata.codecs[1] == {
        "name": "numcodecs.zlib",
        "configuration": {"level": 2},
    }
    for engine in ("zarr3", "zarr"):
        xr.testing.assert_identical(xr.open_dataset(tmp_path / "a.zarr", engine=engine).load(), sample())
