"""Which strings are safe store keys and node names: nothing that could leave the store root.

Metadata (node names), hierarchies (paths) and every store check keys with
these rules before any request is made.
"""

from __future__ import annotations

from urllib.parse import unquote

from ..errors import InvalidKeyError

_MAX_UNQUOTE = 4  # percent-decode this many times: servers and proxies may each decode once


def segment_problem(segment: str) -> str | None:
    """Why ``segment`` is unsafe as one path segment of a key or node name, or ``None`` if safe.

    Refused: empty, ``.``/``..``, backslashes, NUL, and segments that become
    one of those or contain a separator once percent-decoded (``%2e%2e``,
    ``..%2F``, ``%5c``, any case): an HTTP server would decode them and leave
    the store root.

    >>> segment_problem("t2m") is None, segment_problem("%2E%2e")
    (True, "is '..' once percent-decoded")
    """
    if segment in ("", ".", ".."):
        return "is empty, '.' or '..'"
    if "\\" in segment or "\0" in segment:
        return "contains a backslash or NUL"
    decoded = segment
    for _ in range(_MAX_UNQUOTE):
        if "%" not in decoded:
            return None
        decoded, previous = unquote(decoded, errors="surrogateescape"), decoded
        if decoded in (".", ".."):
            return f"is {decoded!r} once percent-decoded"
        if any(char in decoded for char in "/\\\0"):
            return "holds an encoded '/', backslash or NUL"
        if decoded == previous:
            return None
    return "is percent-encoded too many times"


def validate_key(key: str) -> str:
    """Return ``key`` if it is a safe store key, else raise `InvalidKeyError`.

    Refused: empty keys, a leading or trailing ``/``, and any segment
    `segment_problem()` refuses (they could escape the store root).
    Checked before any request is made.
    """
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"store key must be a non-empty string, got {key!r}")
    if key.startswith("/") or key.endswith("/"):
        raise InvalidKeyError(f"store key {key!r} must be relative, use '/' separators and not end with '/'")
    if _plainly_safe(key):  # every key of a chunk read: string searches, not a loop over segments
        return key
    for part in key.split("/"):
        problem = segment_problem(part)
        if problem is not None:
            raise InvalidKeyError(
                f"store key {key!r}: segment {part!r} {problem}; it could escape the store root"
            )
    return key


def _plainly_safe(key: str) -> bool:
    """Whether ``key`` (neither starting nor ending with ``/``) has no segment `segment_problem()` could refuse:
    no ``%``, backslash or NUL, and no empty, ``.`` or ``..`` segment.

    >>> _plainly_safe("c/0/1"), _plainly_safe("a/../b"), _plainly_safe("a//b"), _plainly_safe("%2e")
    (True, False, False, False)
    """
    if "%" in key or "\\" in key or "\0" in key or "//" in key or key in (".", ".."):
        return False
    return not (key.startswith(("./", "../")) or key.endswith(("/.", "/..")) or "/./" in key or "/../" in key)


def validate_prefix(prefix: str) -> str:
    """Return ``prefix`` ('' or ending in '/') if safe, else raise `InvalidKeyError`."""
    if prefix == "":
        return prefix
    if not prefix.endswith("/"):
        raise InvalidKeyError(f"store prefix {prefix!r} must be empty or end with '/'")
    validate_key(prefix[:-1])
    return prefix
