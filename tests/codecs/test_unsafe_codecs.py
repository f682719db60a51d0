"""Codecs that can execute code on decode are refused unless the user opts in."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numcodecs.pickles
import pytest

import zarr3_backend as z3
from zarr3_backend.codecs import codec_from_json, register_codec
from zarr3_backend.codecs.crc32c import Crc32cCodec
from zarr3_backend.codecs.registry import UNSAFE_ENV, is_unsafe
from zarr3_backend.errors import MetadataError, UnsafeCodecError
from zarr3_backend.store import LocalStore

PICKLE_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "numcodecs.pickle"}]


class _Payload:
    """Unpickling this creates the file ``marker``: stands for arbitrary code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A store whose array uses numcodecs.pickle and whose chunk runs code when unpickled.

    numcodecs' own pickle guard is switched off (as in older numcodecs, or by a user who
    needed it elsewhere in the process): zarr3_backend's refusal must hold on its own.
    """
    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True, raising=False)
    root = tmp_path / "store"
    with z3.allow_unsafe_codecs():
        z3.create_array(root, "a", shape=(4,), dtype="uint8", chunks=(4,), codecs=PICKLE_CODECS)
    marker = tmp_path / "code-ran"
    LocalStore(root).set("a/c/0", pickle.dumps(_Payload(marker)))
    return root, marker


def test_pickle_codec_is_refused_when_opening(hostile: tuple[Path, Path]) -> None:
    root, marker = hostile
    with pytest.raises(
        UnsafeCodecError, match=r"'numcodecs.pickle'.*allow_unsafe_codecs.*ZARR3_ALLOW_UNSAFE_CODECS"
    ) as info:
        z3.open_array(root, "a")
    assert "a/zarr.json" in str(info.value)
    assert isinstance(info.value, MetadataError)
    with pytest.raises(UnsafeCodecError):
        z3.open_group(root).members()
    assert not marker.exists()


def test_refused_in_short_hand_and_on_create(tmp_path: Path) -> None:
    with pytest.raises(UnsafeCodecError):
        codec_from_json("numcodecs.pickle")
    with pytest.raises(UnsafeCodecError):
        z3.create_array(tmp_path, shape=(2,), dtype="uint8", codecs=PICKLE_CODECS)


def test_opt_in_block_allows_it(hostile: tuple[Path, Path]) -> None:
    root, marker = hostile
    with z3.allow_unsafe_codecs():
        array = z3.open_array(root, "a")
        with pytest.raises(z3.CodecError):  # the payload decodes to no buffer, after running
            array[:]
    assert marker.exists(), "the opt-in really reaches the unsafe decoder"
    with pytest.raises(UnsafeCodecError):
        z3.open_array(root, "a")  # the opt-in ends with the block


def test_environment_variable_allows_it(hostile: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = hostile
    monkeypatch.setenv(UNSAFE_ENV, "1")
    assert z3.open_array(root, "a").shape == (4,)
    monkeypatch.setenv(UNSAFE_ENV, "0")
    with pytest.raises(UnsafeCodecError):
        z3.open_array(root, "a")


def test_registry_flag_for_third_party_codecs(tmp_path: Path) -> None:
    class Exec(Crc32cCodec):
        name = "test.exec-on-decode"

    register_codec(Exec, unsafe=True)
    assert is_unsafe("test.exec-on-decode") and not is_unsafe("crc32c")
    document = json.loads(
        (z3.create_array(tmp_path, shape=(2,), dtype="uint8").store.get("zarr.json") or b"").decode()
    )
    document["codecs"].append({"name": "test.exec-on-decode"})
    LocalStore(tmp_path).set("zarr.json", json.dumps(document).encode())
    with pytest.raises(UnsafeCodecError, match="test.exec-on-decode"):
        z3.open_array(tmp_path)
    with z3.allow_unsafe_codecs():
        assert z3.open_array(tmp_path)[:].tolist() == [0, 0]
