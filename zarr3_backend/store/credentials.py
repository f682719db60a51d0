"""A clear "no credentials found" for S3 when none are configured, instead of the last source's failure.

With no credentials configured, obstore (and botocore, under s3fs) fall
through to the EC2 instance metadata service at ``169.254.169.254``; off EC2
the request fails with a 403 or a timeout that says nothing about
credentials. `missing_credentials()` recognizes that failure when no
source of credentials is configured, and names every source looked at and
the fixes.

>>> missing_credentials("s3://b/x.zarr", {}, "PUT http://169.254.169.254/latest/api/token: 403", {}) is None
False
>>> missing_credentials("s3://b/x.zarr", {"anon": True}, "PUT http://169.254.169.254/latest/api/token: 403", {})
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ..errors import StoreError

#: storage_options that configure S3 credentials (or turn signing off).
CREDENTIAL_OPTIONS = ("key", "secret", "token", "profile", "anon", "aws_access_key_id", "aws_session_token")
#: Environment variables that configure a source of S3 credentials.
CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_SKIP_SIGNATURE",
)
#: What the last source of the default chains (the EC2 instance metadata service) fails with off EC2.
NO_CREDENTIAL_SIGNS = (
    "169.254.169.254",
    "/latest/api/token",
    "Unable to locate credentials",
    "NoCredentialsError",
)


def missing_credentials(
    url: str, storage_options: Mapping[str, Any], failure: str, environ: Mapping[str, str] | None = None
) -> StoreError | None:
    """The "no credentials found" error for ``url``, or ``None`` when ``failure`` is another problem.

    ``None`` too when any source is configured (then its own failure is the
    one to report). ``environ`` defaults to ``os.environ``.
    """
    environ = os.environ if environ is None else environ
    if not url.startswith(("s3://", "s3a://")) or not any(sign in failure for sign in NO_CREDENTIAL_SIGNS):
        return None
    if credentials_configured(storage_options, environ):
        return None
    files = [p for p in _credential_files(environ) if p.is_file()]
    found = (
        f" ({', '.join(map(str, files))} exists but names no profile to use: set AWS_PROFILE, e.g. "
        "AWS_PROFILE=default)"
        if files
        else ""
    )
    return StoreError(
        f"no credentials found for {url}. Tried: storage_options ({', '.join(CREDENTIAL_OPTIONS[:5])}), the "
        f"environment ({', '.join(CREDENTIAL_VARIABLES[:5])}), a profile from AWS_PROFILE{found}, and the EC2 "
        f"instance metadata service (169.254.169.254); the last answer: {failure.strip()[:200]}. For a public "
        "bucket pass storage_options={'anon': True}; otherwise set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
        "or AWS_PROFILE, or pass storage_options={'key': ..., 'secret': ...} or {'profile': ...}"
    )


def credentials_configured(
    storage_options: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> bool:
    """Whether ``storage_options`` or the environment name a source of S3 credentials (or turn signing off).

    When none is named, the default chains end at the EC2 instance metadata service.

    >>> credentials_configured({"anon": True}, {}), credentials_configured({}, {})
    (True, False)
    """
    environ = os.environ if environ is None else environ
    options = {**storage_options, **dict(storage_options.get("client_kwargs") or {})}
    return any(options.get(name) for name in CREDENTIAL_OPTIONS) or any(
        environ.get(v) for v in CREDENTIAL_VARIABLES
    )


class _Remote(Protocol):
    url: str
    storage_options: dict[str, Any]


def store_failure(store: _Remote, what: str, exc: BaseException) -> StoreError:
    """``what`` failed on ``store`` with obstore's ``exc``: the error to raise (its debug trailer cut off)."""
    message = str(exc).split("\n\nDebug source", 1)[0].strip()
    return missing_credentials(store.url, store.storage_options, message) or StoreError(
        f"{what}: {type(exc).__name__}: {message}"
    )


def _credential_files(environ: Mapping[str, str]) -> list[Path]:
    home = Path(environ.get("HOME", "~")).expanduser()
    return [
        Path(environ.get("AWS_SHARED_CREDENTIALS_FILE", home / ".aws" / "credentials")),
        Path(environ.get("AWS_CONFIG_FILE", home / ".aws" / "config")),
    ]
