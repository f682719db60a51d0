"""The ``reshape`` codec: the registry document's example, its constraints as errors, stores through the
whole chain, and round-trip properties. Only zarrs implements it (no Python writer), so the golden case is
hand-made from the spec's example: ``ravel(B) == ravel(A)``, so the stored bytes equal those without it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr3_backend
from zarr3_backend.codecs import ReshapeCodec, codec_from_json
from zarr3_backend.errors import CodecError, MetadataError
from zarr3_backend.testing.codecs import CodecContract, chunk_spec


def reshape(shape: list) -> ReshapeCodec:
    codec = codec_from_json({"name": "reshape", "configuration": {"shape": shape}})
    assert isinstance(codec, ReshapeCodec)
    return codec


class TestReshapeContract(CodecContract):
    @pytest.fixture(params=[[-1], [[0, 1], [2]], [2, -1, [2]]])
    def codec(self, request):
        return reshape(request.param)

    @pytest.fixture
    def spec(self):
        return chunk_spec("int16", (2, 3, 4))


def test_the_spec_example() -> None:
    assert reshape([[0, 1], [2], 3]).output_shape((100, 50, 64, 3)) == (5000, 64, 3)
    assert reshape([[0, 1], [2], 3]).to_json() == {
        "name": "reshape",
        "configuration": {"shape": [[0, 1], [2], 3]},
    }


def test_a_store_with_reshape_holds_the_bytes_of_the_plain_chunks(tmp_path: Path) -> None:
    """Golden from the spec text: reshape keeps the C-order element sequence, so the chunk bytes are those of
    the same array written without it; and the array reads back."""
    data = np.arange(4 * 6 * 3, dtype="<u2").reshape(4, 6, 3)
    codecs = [
        {"name": "reshape", "configuration": {"shape": [[0, 1], -1]}},
        {"name": "bytes", "configuration": {"endian": "little"}},
    ]
    array = zarr3_backend.create_array(
        str(tmp_path / "r.zarr"), shape=data.shape, chunks=(2, 3, 3), dtype="uint16", codecs=codecs
    )
    array[...] = data
    assert (tmp_path / "r.zarr" / "c" / "1" / "1" / "0").read_bytes() == data[2:, 3:, :].tobytes()
    assert np.array_equal(zarr3_backend.open_array(str(tmp_path / "r.zarr"))[1:4, 2:5, 1], data[1:4, 2:5, 1])


@settings(max_examples=200, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_round_trip_and_the_element_order(shape: list[int], data: st.DataObject) -> None:
    """For any grouping of consecutive input dimensions, ``ravel(B) == ravel(A)`` and decode undoes encode."""
    cuts = (
        sorted(data.draw(st.sets(st.integers(1, len(shape) - 1), max_size=len(shape) - 1)))
        if len(shape) > 1
        else []
    )
    groups = [list(range(a, b)) for a, b in zip([0, *cuts], [*cuts, len(shape)])]
    configuration = [data.draw(st.sampled_from([g, math.prod(shape[d] for d in g)])) for g in groups]
    if data.draw(st.booleans()):
        configuration[data.draw(st.integers(0, len(configuration) - 1))] = -1
    codec, spec = reshape(configuration), chunk_spec("float32", tuple(shape))
    chunk = np.arange(math.prod(shape), dtype="float32").reshape(shape)
    encoded = codec.encode(chunk, spec)
    assert (
        encoded.shape == codec.resolve_spec(spec).shape and encoded.ravel().tolist() == chunk.ravel().tolist()
    )
    assert np.array_equal(codec.decode(encoded, spec), chunk)


@pytest.mark.parametrize(
    ("shape", "chunk", "match"),
    [
        ([7], (2, 3), "cannot hold the 6 elements"),
        ([4, -1], (2, 3), "cannot hold the 6 elements"),
        ([[0], 4], (2, 3), "cannot hold"),
        ([[0, 5]], (2, 3), "names input dimensions"),
        ([[1], -1], (2, 2, 3), "does not line up"),
    ],
)
def test_a_reshape_that_does_not_fit_the_chunk_is_a_codec_error(
    shape: list, chunk: tuple, match: str
) -> None:
    with pytest.raises(CodecError, match=match):
        reshape(shape).validate(chunk_spec("uint8", chunk))


@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ([[1], [0]], "strictly increasing"),
        ([[1, 0], 10], "strictly increasing"),
        ([[3, 4], 10, [0, 1]], "strictly increasing"),
        ([-1, -1], "at most once"),
        ([0, 3], "positive size"),
        ([-2], "positive size"),
        ("[2]", "expected a list"),
    ],
)
def test_the_spec_forbidden_shapes_are_refused(shape: object, match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        reshape(shape)  # type: ignore[arg-type]
