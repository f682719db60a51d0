"""Icechunk 1.x and 2.x behind one small API: where the two lines differ, only this module knows.

`fork`/`merge_forks` (2.x: every task writes into a fork of its copy of the
client's fork; 1.x cannot fork a fork with changes, so tasks write into the
copies themselves), `no_credentials` (the "no credentials" sentinel the
installed line takes) and `refused_virtual_access` (an unauthorized virtual
chunk becomes a `StoreError` saying how to authorize). Why each differs: the
architecture page, "Icechunk 1.x and 2.x". Sessions and stores are passed in;
icechunk is imported only when one is used.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ArgumentError, StoreError

if TYPE_CHECKING:
    from icechunk import ForkSession, Session

#: What icechunk says when a virtual chunk's container was not authorized (1.x and 2.x alike).
_NOT_AUTHORIZED = "authorize the virtual chunk container"


def major_version() -> int:
    """The major version of the installed icechunk (1 or 2).

    Raises `ImportError` if icechunk is not installed.
    """
    import icechunk

    return int(icechunk.__version__.split(".")[0])


def fork(session: Session) -> ForkSession:
    """``session.fork()``; a session with uncommitted changes is refused (`ValueError`) on both lines.

    1.x refuses it itself. 2.x forks it, but merging such a fork back drops
    what the fork changed in the metadata of nodes the session created
    (2.3: an append's resize, attributes), so it is refused here too.
    """
    if session.has_uncommitted_changes:
        raise ValueError(
            "Cannot fork a Session with uncommitted changes: commit them (or start a new session) first"
        )
    return session.fork()


def task_session(fork: ForkSession) -> ForkSession:
    """The session a dask task writes into, given its copy of the client's fork: the copy (1.x) or a fork of it (2.x)."""
    return fork.fork() if major_version() >= 2 else fork


def merge_forks(session: Session, fork: ForkSession, copies: Sequence[ForkSession]) -> None:
    """Merge every task's copy into ``fork`` (the client's), then ``fork`` into the user's ``session``."""
    fork.merge(*copies)
    session.merge(fork)


def no_credentials(prefix: str) -> object:
    """What ``authorize_virtual_chunk_access`` takes for a container read without credentials.

    ``None`` on 1.x; on 2.x the sentinel for ``file://`` or ``http(s)://``
    prefixes, and anonymous credentials for ``s3://``, ``gs://`` and ``az://``.
    """
    scheme = prefix.partition("://")[0]
    if scheme not in _ANONYMOUS:
        raise ArgumentError(
            f"no_credentials: container prefix {prefix!r} has no scheme Icechunk reads without credentials; "
            f"expected one of {sorted(_ANONYMOUS)}, as in 'file:///data/'"
        )
    if major_version() < 2:
        return None
    import importlib

    credentials = importlib.import_module("icechunk.credentials")  # 2.x names, absent from 1.x's stubs
    found = getattr(credentials, _ANONYMOUS[scheme])
    return found if scheme in ("file", "http", "https") else found()


#: By scheme, the name in ``icechunk.credentials`` (2.x) of "no credentials": a sentinel or a function.
_ANONYMOUS = {
    "file": "LocalFileSystemAccess",
    "http": "HttpAccess",
    "https": "HttpAccess",
    "s3": "s3_anonymous_credentials",
    "gs": "gcs_anonymous_credentials",
    "az": "azure_anonymous_credentials",
}


def refused_virtual_access(store: object, key: str, exc: BaseException) -> StoreError | None:
    """A `StoreError` for icechunk's refusal to read a virtual chunk of an unauthorized container, else ``None``."""
    module = sys.modules.get("icechunk")
    message = " ".join(str(exc).replace("|", " ").split())  # 1.x draws its message in a wrapped box
    if module is None or not isinstance(exc, module.IcechunkError) or _NOT_AUTHORIZED not in message:
        return None
    prefix = _container_prefix(message)
    return StoreError(
        f"{store!r}: chunk {key!r} is a virtual reference into the container {prefix}, which this "
        "Icechunk repository was not authorized to read; open it with "
        f"icechunk.Repository.open(storage, authorize_virtual_chunk_access={{{prefix!r}: credentials}}) "
        "(for a container without credentials, zarr3_backend.store.icechunk_api.no_credentials(prefix))"
    )


def _container_prefix(message: str) -> str:
    """The url prefix named in icechunk's refusal ("... resolves to the url prefix file:///data/, to be ...")."""
    _, found, rest = message.partition("url prefix ")
    return rest.split(",")[0].split()[0] if found and rest.split() else "(unknown prefix)"
