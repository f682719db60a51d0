"""Where a warning points: the first frame of the user's code, above zarr3_backend's (and xarray's) own frames."""

from __future__ import annotations

import sys


def caller_stacklevel(*packages: str) -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called by the caller, name the first frame outside ``packages``.

    Frames are told apart by their module's ``__name__`` (``zarr3_backend`` and
    its sub-modules, say), not by file paths, so a user's own folder named like
    a package (``tests/xarray/``) is still the user's.

    >>> caller_stacklevel("no_such_package")  # this line's own frame
    1
    """
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and _in(frame.f_globals.get("__name__", ""), packages):
        frame, level = frame.f_back, level + 1
    return level


def _in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)
