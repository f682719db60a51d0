"""The one test for "is this an integer?" used by parsers and indexers alike."""

from __future__ import annotations

from typing import Any, Literal, TypeGuard, overload

import numpy as np


@overload
def is_int(value: object, *, numpy: Literal[False]) -> TypeGuard[int]: ...
@overload
def is_int(value: object, *, numpy: bool = True) -> TypeGuard[int | np.integer[Any]]: ...


def is_int(value: object, *, numpy: bool = True) -> bool:
    """Whether ``value`` is an integer: a Python ``int`` or, unless ``numpy=False``, a numpy integer.

    Booleans are never integers here (``True`` is not a valid shape or index
    entry). ``numpy=False`` is for values decoded from JSON, which holds
    Python ints only.

    >>> is_int(3), is_int(np.int64(3)), is_int(True), is_int(3.0)
    (True, True, False, False)
    >>> is_int(np.uint8(3), numpy=False)
    False
    """
    kinds = (int, np.integer) if numpy else int
    return isinstance(value, kinds) and not isinstance(value, bool)
