"""The spellings of S3 storage options users bring from boto3, obstore and s3fs work on both backends."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.errors import ArgumentError
from zarr3_backend.store import FsspecStore, ObstoreStore, make_store
from zarr3_backend.store.s3_names import canonical_s3_options

pytest.importorskip("s3fs")


def _obstore_spelling(s3_storage_options: dict[str, Any]) -> dict[str, Any]:
    """The moto server's options as obstore and object_store spell them: region, endpoint, access_key_id."""
    return {
        "access_key_id": s3_storage_options["key"],
        "secret_access_key": s3_storage_options["secret"],
        "endpoint": s3_storage_options["client_kwargs"]["endpoint_url"],
        "region": "eu-west-1",
    }


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_obstore_spellings_of_region_endpoint_and_credentials_reach_the_server(
    s3_url: str, s3_storage_options: dict[str, Any], backend: str
) -> None:
    zarr3_backend.create_array(
        f"{s3_url}/a", shape=(4,), chunks=(2,), dtype="int16", storage_options=s3_storage_options
    )[:] = np.arange(4)
    options = {**_obstore_spelling(s3_storage_options), "backend": backend}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: the backend asked for takes every option
        store = make_store(f"{s3_url}/a", storage_options=options)
        array = zarr3_backend.open_array(f"{s3_url}/a", storage_options=options)
    assert isinstance(store, ObstoreStore if backend == "obstore" else FsspecStore)
    assert array[:].tolist() == [0, 1, 2, 3]


def test_a_region_reaches_s3fs_as_its_client_region() -> None:
    store = make_store(
        "s3://bucket/x", storage_options={"anon": True, "region": "eu-west-1", "backend": "fsspec"}
    )
    assert isinstance(store, FsspecStore)
    assert store.fs.client_kwargs == {"region_name": "eu-west-1"}


def test_boto3_spellings_become_s3fs_names() -> None:
    assert canonical_s3_options(
        {"aws_access_key_id": "k", "aws_secret_access_key": "s", "aws_session_token": "t", "region_name": "r"}
    ) == {"key": "k", "secret": "s", "token": "t", "client_kwargs": {"region_name": "r"}}


def test_two_spellings_with_different_values_are_refused() -> None:
    with pytest.raises(ArgumentError, match="'region' is another spelling of 'client_kwargs.region_name'"):
        make_store("s3://b/x", storage_options={"region": "a", "client_kwargs": {"region_name": "b"}})


@pytest.mark.parametrize("backend", [None, "fsspec"])
def test_an_option_neither_backend_takes_is_an_argument_error_naming_the_accepted_keys(
    backend: str | None,
) -> None:
    options: dict[str, Any] = {"anon": True, "regoin": "eu-west-1"}
    if backend:
        options["backend"] = backend
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused at once, not after a fallback warning
        with pytest.raises(ArgumentError, match=r"\['regoin'\].*Accepted: .*\bregion\b.*\bsecret\b"):
            make_store("s3://bucket/x", storage_options=options)
