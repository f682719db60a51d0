"""Translations to and from obstore: fsspec-style ``storage_options`` as its configuration, byte ranges,
generations, and values to upload.

`obstore_settings()` translates the options users already pass to
``engine="zarr"`` and fsspec into the configuration and client options of
an obstore store; an option with no equivalent raises
`UnsupportedOptionError`, naming it, so that ``make_store`` can fall
back to fsspec.

>>> obstore_settings("s3", {"key": "k", "secret": "s", "client_kwargs": {"region_name": "eu-west-1"}}).config
{'access_key_id': 'k', 'secret_access_key': 's', 'region': 'eu-west-1'}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ArgumentError
from .base import Buffer, ByteRange, Generation, Value
from .credentials import credentials_configured
from .etags import object_generation

if TYPE_CHECKING:
    from obstore import GetOptions, ObjectMeta


class UnsupportedOptionError(ArgumentError):
    """A storage option that obstore has no equivalent for; ``option`` names it."""

    def __init__(self, option: str, protocol: str) -> None:
        super().__init__(f"storage option {option!r} has no obstore equivalent for {protocol}:// URLs")
        self.option = option


@dataclass
class ObstoreSettings:
    """obstore's configuration for one store: ``config`` (per backend), ``client_options``, ``retry_config``
    (``None``: obstore's default) and an AWS profile."""

    config: dict[str, Any] = field(default_factory=dict)
    client_options: dict[str, Any] = field(default_factory=dict)
    retry_config: dict[str, Any] | None = None
    profile: str | None = None


#: obstore's retries where no S3 credentials are configured, so that only the EC2 instance metadata
#: service could supply them: off EC2 it fails at once, where obstore's default (10 retries with
#: exponential backoff) spends seconds before the "no credentials" error.
NO_CREDENTIALS_RETRY: dict[str, Any] = {
    "max_retries": 2,
    "backoff": {"init_backoff": timedelta(milliseconds=50), "max_backoff": timedelta(seconds=1), "base": 2},
}


_S3_NAMES = {
    "key": "access_key_id", "secret": "secret_access_key", "token": "session_token", "endpoint_url": "endpoint",
    "aws_access_key_id": "access_key_id", "aws_secret_access_key": "secret_access_key",
    "aws_session_token": "session_token", "region_name": "region",
}  # fmt: skip
#: fsspec's own caching knobs: they shape fsspec's file system objects, not the requests sent.
_FSSPEC_ONLY = frozenset({
    "skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths", "default_block_size",
    "default_fill_cache", "default_cache_type", "cache_regions",
})  # fmt: skip
_AZURE_NAMES = {
    "account_name": "account_name", "account_key": "account_key", "sas_token": "sas_key", "tenant_id": "tenant_id",
    "client_id": "client_id", "client_secret": "client_secret",
}  # fmt: skip


def obstore_settings(protocol: str, storage_options: Mapping[str, Any]) -> ObstoreSettings:
    """obstore's configuration for fsspec-style ``storage_options`` of a ``protocol`` URL.

    S3 (s3fs's names): ``key``, ``secret``, ``token``, ``anon``, ``endpoint_url``,
    ``profile``, ``requester_pays``, ``client_kwargs`` (``region_name``,
    ``endpoint_url``, ``verify``: ``False`` or a CA bundle file) and
    ``config_kwargs={"max_pool_connections": ...}`` (requests in flight are
    `ObstoreStore.io_concurrency` here). GCS (gcsfs): ``token`` (a
    service-account file or dict, ``"anon"``, ``"google_default"``,
    ``"cloud"``). Azure (adlfs): ``account_name``, ``account_key``,
    ``sas_token``, ``tenant_id``, ``client_id``, ``client_secret``, ``anon``.
    Everywhere, ``client_options`` and ``retry_config`` pass obstore's own
    options through, and fsspec's caching options are ignored. Anything else
    raises `UnsupportedOptionError`. S3 with no credentials configured (see
    `credentials_configured`) retries `NO_CREDENTIALS_RETRY` unless
    ``retry_config`` is given.
    """
    settings = ObstoreSettings()
    kind = protocol_kind(protocol)
    for name, value in storage_options.items():
        if name == "client_options":
            settings.client_options.update(value)
        elif name == "retry_config":
            settings.retry_config = dict(value)
        elif name == "backend" or name in _FSSPEC_ONLY:
            continue  # make_store's choice of backend; fsspec's caches
        elif name == "anon" and kind in ("s3", "azure"):
            if value:
                settings.config["skip_signature"] = True
        elif kind == "s3":
            _s3_option(name, value, settings, protocol)
        elif kind == "azure" and name in _AZURE_NAMES:
            settings.config[_AZURE_NAMES[name]] = value
        elif kind == "gcs" and name == "token":
            _gcs_token(value, settings)
        else:
            raise UnsupportedOptionError(name, protocol)
    if kind == "s3":
        _s3_environment(storage_options, settings)
    if protocol == "http":
        settings.client_options.setdefault("allow_http", True)
    return settings


def protocol_kind(protocol: str) -> str:
    """``"s3"``, ``"gcs"``, ``"azure"`` or ``"http"``: the obstore store a URL scheme needs."""
    if protocol in ("s3", "s3a"):
        return "s3"
    if protocol in ("gs", "gcs"):
        return "gcs"
    return "http" if protocol in ("http", "https") else "azure"


def _s3_option(name: str, value: Any, settings: ObstoreSettings, protocol: str) -> None:
    if name in ("key", "secret", "token", "endpoint_url"):
        if value is not None:
            settings.config[_S3_NAMES[name]] = value
    elif name == "requester_pays":
        if value:
            settings.config["request_payer"] = True
    elif name == "profile":
        settings.profile = value
    elif name == "client_kwargs":
        for inner, inner_value in value.items():
            if inner == "verify":
                _verify(inner_value, settings)
            elif inner in _S3_NAMES:
                settings.config[_S3_NAMES[inner]] = inner_value
            else:
                raise UnsupportedOptionError(f"client_kwargs.{inner}", protocol)
    elif name == "config_kwargs":
        for inner in value:
            if inner != "max_pool_connections":
                raise UnsupportedOptionError(f"config_kwargs.{inner}", protocol)
    else:
        raise UnsupportedOptionError(name, protocol)


def _s3_environment(storage_options: Mapping[str, Any], settings: ObstoreSettings) -> None:
    """What botocore takes from the environment and obstore does not: a profile, a CA bundle, an http endpoint."""
    config = settings.config
    explicit = {"key", "secret", "anon", "profile"} & storage_options.keys()
    if not explicit and "AWS_PROFILE" in os.environ and "AWS_ACCESS_KEY_ID" not in os.environ:
        settings.profile = os.environ["AWS_PROFILE"]
    if settings.retry_config is None and not credentials_configured(storage_options):
        settings.retry_config = NO_CREDENTIALS_RETRY
    endpoint = (
        config.get("endpoint")
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
        or ""
    )
    if endpoint.startswith("http://"):
        settings.client_options.setdefault("allow_http", True)
    elif (
        "AWS_CA_BUNDLE" in os.environ
        and not {"root_certificate", "allow_invalid_certificates"} & settings.client_options.keys()
    ):
        _verify(os.environ["AWS_CA_BUNDLE"], settings)


def _verify(value: Any, settings: ObstoreSettings) -> None:
    """botocore's ``verify``: ``False`` turns certificate checks off, a path names a CA bundle to trust."""
    if value is False:
        settings.client_options["allow_invalid_certificates"] = True
    elif isinstance(value, str | os.PathLike):
        settings.client_options["root_certificate"] = Path(value).read_text()


def _gcs_token(token: Any, settings: ObstoreSettings) -> None:
    if token == "anon":
        settings.config["skip_signature"] = True
    elif isinstance(token, dict):
        settings.config["service_account_key"] = json.dumps(token)
    elif isinstance(token, str | os.PathLike) and token not in ("google_default", "cloud"):
        settings.config["service_account"] = os.fspath(token)


def get_options(byte_range: ByteRange | None) -> GetOptions | None:
    """obstore's ``GetOptions`` for ``byte_range`` (``None``: the whole object)."""
    if byte_range is None:
        return None
    if byte_range.is_suffix:
        return {"range": {"suffix": -byte_range.start}}
    if byte_range.end is None:
        return {"range": {"offset": byte_range.start}}
    return {"range": (byte_range.start, byte_range.end)}


def span(byte_range: ByteRange | None, size: int) -> tuple[int, int]:
    """The ``[start, stop)`` of a value of ``size`` bytes that ``byte_range`` reads."""
    if byte_range is None:
        return 0, size
    start, stop, _ = byte_range.slice().indices(size)
    return start, max(start, stop)


def endpoint_name(url: str, settings: ObstoreSettings) -> str:
    """The endpoint a store at ``url`` talks to, as `etags` names it: scheme, bucket or host, endpoint.

    >>> endpoint_name("s3://bucket/data.zarr", ObstoreSettings({"endpoint": "http://127.0.0.1:9000"}))
    's3://bucket at http://127.0.0.1:9000'
    """
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc} at {settings.config.get('endpoint', 'default')}"


def generation(meta: ObjectMeta, endpoint: str, key: str) -> Generation | None:
    """The generation of the object ``meta`` describes (see `object_generation()`)."""
    return object_generation(
        endpoint,
        key,
        etag=meta["e_tag"],
        version=meta["version"],
        size=meta["size"],
        modified=meta["last_modified"],
    )


def put_payload(value: Value) -> tuple[Buffer | list[Buffer], int]:
    """``value`` as obstore's ``put`` takes it without a copy (one buffer, or the list of its pieces, never
    joined), and its size in bytes.

    >>> put_payload((b"ab", memoryview(bytearray(b"cde"))))[1]
    5
    """
    if isinstance(value, bytes | bytearray | memoryview):
        piece = _as_bytes_view(value)
        return piece, memoryview(piece).nbytes
    pieces = [_as_bytes_view(piece) for piece in value]
    return pieces, sum(memoryview(piece).nbytes for piece in pieces)


def _as_bytes_view(piece: Buffer) -> Buffer:
    """``piece`` with a byte format, as obstore requires (a view of an array of floats is cast, not copied)."""
    if not isinstance(piece, memoryview) or piece.format == "B":
        return piece
    return piece.cast("B") if piece.c_contiguous else piece.tobytes()
