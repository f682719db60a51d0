"""Failures of object storage said plainly: "no credentials found" for S3 when none are configured, instead
of the last source's failure, and a server's error answer as its code and message, not its raw XML body.

With no credentials configured, obstore (and botocore, under s3fs) fall
through to the EC2 instance metadata service at ``169.254.169.254``; off EC2
the request fails with a 403 or a timeout that says nothing about
credentials. `missing_credentials()` recognizes that failure when no
source of credentials is configured, and names every source looked at and
the fixes.

>>> missing_credentials("s3://b/x.zarr", {}, "PUT http://169.254.169.254/latest/api/token: 403", {}) is None
False
>>> missing_credentials("s3://b/x.zarr", {"anon": True}, "PUT http://169.254.169.254/latest/api/token: 403", {})
>>> server_answer(OSError("403 Forbidden: <Error><Code>AccessDenied</Code><Message>Denied</Message></Error>"))
'AccessDenied (HTTP 403): Denied'
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


def store_failure(url: str, storage_options: Mapping[str, Any], what: str, exc: BaseException) -> StoreError:
    """``what`` failed on the store at ``url`` with obstore's or fsspec's ``exc``: the error to raise.

    A server's error answer comes first, as its code and message (see `server_answer`), then ``what``;
    any other failure follows ``what``, with obstore's debug trailer cut off.
    """
    message = str(exc).split("\n\nDebug source", 1)[0].strip()
    if missing := missing_credentials(url, storage_options, message):
        return missing
    if answer := server_answer(exc):
        return StoreError(f"{answer} -- {what}")
    return StoreError(f"{what}: {type(exc).__name__}: {message}")


_XML_ERROR = re.compile(
    r"<Error>.*?<Code>(?P<code>[^<]*)</Code>(?:.*?<Message>(?P<message>[^<]*)</Message>)?", re.DOTALL
)
#: the status line obstore writes just before the answer's body: "... 403 Forbidden: <Error>..."
_STATUS = re.compile(r"\b(?P<status>[1-5]\d\d) [A-Za-z][A-Za-z -]*:\s*<Error>")


def server_answer(exc: BaseException) -> str | None:
    """A storage server's error answer in ``exc`` (or its causes) as ``"Code (HTTP status): message"``.

    obstore puts the answer's status and XML body in its message; s3fs
    raises a builtin error caused by botocore's ``ClientError``, whose
    ``response`` holds the parsed answer. ``None`` when ``exc`` carries no
    server answer.
    """
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)  # botocore's ClientError, a public attribute
        if isinstance(response, dict) and isinstance(response.get("Error"), dict):
            error, status = response["Error"], response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return _answer(str(error.get("Code", "")), status, error.get("Message"))
        if found := _XML_ERROR.search(text := str(seen)):
            status = _STATUS.search(text)
            return _answer(found["code"], status and status["status"], found["message"])
        seen = seen.__cause__ or seen.__context__
    return None


def _answer(code: str, status: object, message: str | None) -> str:
    text = f"{code} (HTTP {status})" if status else code
    return f"{text}: {message}" if message else text


def _credential_files(environ: Mapping[str, str]) -> list[Path]:
    home = Path(environ.get("HOME", "~")).expanduser()
    return [
        Path(environ.get("AWS_SHARED_CREDENTIALS_FILE", home / ".aws" / "credentials")),
        Path(environ.get("AWS_CONFIG_FILE", home / ".aws" / "config")),
    ]
