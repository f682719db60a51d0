"""The spellings of S3 storage options users bring, in the names s3fs takes, and the check of what is left.

Users copy S3 options from boto3 (``region_name``, ``aws_access_key_id``),
from obstore and object_store (``region``, ``endpoint``, ``access_key_id``)
and from s3fs (``key``, ``client_kwargs``). `canonical_s3_options()` turns
each common spelling into s3fs's name, which both backends take (obstore's
through `obstore_settings()`), so a region or an endpoint works whichever
backend reads the URL. `check_s3_options()` refuses an option that neither
backend takes, naming the keys they accept, before obstore's refusal sends
it to s3fs, which would pass it on to botocore's session as a keyword that
fails there.

>>> canonical_s3_options({"region": "eu-west-1", "endpoint": "http://127.0.0.1:9000"})
{'endpoint_url': 'http://127.0.0.1:9000', 'client_kwargs': {'region_name': 'eu-west-1'}}
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Mapping
from functools import cache
from typing import Any

from ..errors import ArgumentError

#: top-level spellings of s3fs's own top-level options
_TOP_LEVEL = {
    "endpoint": "endpoint_url", "aws_endpoint_url": "endpoint_url", "aws_endpoint": "endpoint_url",
    "access_key_id": "key", "aws_access_key_id": "key",
    "secret_access_key": "secret", "aws_secret_access_key": "secret",
    "session_token": "token", "aws_session_token": "token",
}  # fmt: skip
#: top-level spellings of what s3fs takes inside ``client_kwargs``
_CLIENT = {"region": "region_name", "region_name": "region_name", "aws_region": "region_name"}
#: obstore's own options, passed through by `obstore_settings()`
_OBSTORE_OWN = frozenset({"client_options", "retry_config"})
#: what fsspec itself takes for every file system (its instance and listings caches)
_FSSPEC_COMMON = frozenset({"skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths"})


def canonical_s3_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with each common spelling of an S3 option renamed to s3fs's (see the module docstring).

    Two spellings of one option with different values raise `ArgumentError`.

    >>> canonical_s3_options({"aws_access_key_id": "k", "key": "k", "anon": False})
    {'key': 'k', 'anon': False}
    """
    result: dict[str, Any] = {}
    client = dict(options.get("client_kwargs") or {})
    for name, value in options.items():
        if name == "client_kwargs":
            continue
        if name in _CLIENT:
            _put(client, _CLIENT[name], value, name, "client_kwargs")
        else:
            _put(result, _TOP_LEVEL.get(name, name), value, name, "")
    if client or "client_kwargs" in options:
        result["client_kwargs"] = client
    return result


def _put(into: dict[str, Any], canonical: str, value: Any, given: str, where: str) -> None:
    if canonical in into and into[canonical] != value:
        place = f"{where}.{canonical}" if where else canonical
        raise ArgumentError(
            f"storage option {given!r} is another spelling of {place!r}, which is given as "
            f"{into[canonical]!r}; give one of them"
        )
    into[canonical] = value


def check_s3_options(options: Mapping[str, Any]) -> None:
    """Raise `ArgumentError` naming any of ``options`` (canonical, see `canonical_s3_options`) that neither
    obstore's translation nor s3fs takes; where s3fs is not installed, obstore's translation decides alone."""
    if importlib.util.find_spec("s3fs") is None:
        return  # fsspec says that s3fs is missing, and how to install it
    accepted = _s3fs_options()
    unknown = sorted(set(options) - accepted)
    if unknown:
        names = ", ".join(sorted(accepted | _TOP_LEVEL.keys() | _CLIENT.keys()))
        raise ArgumentError(
            f"unknown S3 storage option(s) {unknown}: neither obstore nor s3fs takes them. Accepted: {names}"
        )


@cache
def _s3fs_options() -> frozenset[str]:
    """The keywords either backend takes: s3fs's own, ``profile`` (for botocore's session), fsspec's caches
    and obstore's pass-through options."""
    from s3fs import S3FileSystem

    parameters = inspect.signature(S3FileSystem.__init__).parameters.values()
    own = {p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"}
    return frozenset(own | {"profile"} | _FSSPEC_COMMON | _OBSTORE_OWN)
