"""What Zarr v3 and v2 metadata documents share: decoding JSON within the parse limits, and the field parsers.

Hostile documents give a `MetadataError`: decoding refuses nesting deeper
than `MAX_DEPTH` and integer literals longer than `MAX_INT_DIGITS` digits;
the field parsers refuse shapes whose product reaches 2**63, and chunks whose
byte size exceeds `ADDRESS_SPACE`, before anything is allocated. Every
message names the document key, the field, what was expected and what was found.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np

from ...errors import MetadataError
from ..dtypes import DataType
from ..integers import is_int

#: Deepest nesting of JSON objects and arrays accepted in a ``zarr.json``.
MAX_DEPTH = 64
#: Longest integer literal (in digits) accepted in a ``zarr.json``; no data type needs more than 20.
MAX_INT_DIGITS = 40
#: Bytes a process can address: no chunk may be larger (a 64-bit CPU maps at most 2**48 bytes per process).
ADDRESS_SPACE = min(sys.maxsize, 1 << 48)
_MAX_INDEX = 2**63  # numpy indexes with int64: shapes and their products stay below it


def field_error(where: str, field_name: str, expected: str, got: object) -> MetadataError:
    """``{where}: {field_name}: expected {expected}, got {got}`` (the value shown up to 200 characters)."""
    shown = repr(got)
    return MetadataError(
        f"{where}: {field_name}: expected {expected}, got {shown[:200]}{'...' if len(shown) > 200 else ''}"
    )


def parse_shape(value: object, where: str, field_name: str = "shape", low: int = 0) -> tuple[int, ...]:
    """A list of integers of at least ``low`` whose product stays below 2**63."""
    if not isinstance(value, list) or not all(
        is_int(v, numpy=False) and low <= v < _MAX_INDEX for v in value
    ):
        kind = "non-negative" if low == 0 else "positive"
        raise field_error(where, field_name, f"a list of {kind} integers below 2**63", value)
    if math.prod(value) >= _MAX_INDEX:
        raise field_error(where, field_name, "a shape with fewer than 2**63 elements", value)
    return tuple(value)


def check_chunk_bytes(chunk_shape: tuple[int, ...], data_type: DataType, where: str) -> None:
    """Refuse chunks no process could hold, before anything tries to allocate one."""
    nbytes = math.prod(chunk_shape) * data_type.numpy.itemsize
    if nbytes > ADDRESS_SPACE:
        raise MetadataError(
            f"{where}: chunk_grid.configuration.chunk_shape: a chunk of shape {list(chunk_shape)} and data type "
            f"{data_type.name!r} needs {nbytes} bytes, more than a process can address ({ADDRESS_SPACE})"
        )


def parse_attributes(value: object, where: str) -> dict[str, Any]:
    """An object of user attributes (missing means empty)."""
    if not isinstance(value, dict):
        raise field_error(where, "attributes", "a JSON object", value)
    return value


def decode_document(raw: bytes, where: str) -> object:
    """A JSON metadata document decoded within the parse limits (depth, integer length); `MetadataError` if not."""
    encoding = json.detect_encoding(raw)
    try:
        document = _DECODER.decode(raw.decode(encoding, "surrogatepass"))  # as json.loads
    except RecursionError as exc:
        raise MetadataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too long integers
        raise MetadataError(f"{where}: not valid JSON ({exc})") from exc
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:  # fewer brackets cannot nest deeper
        _check_depth(raw, encoding, document, where)
    return document


def _parse_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INT_DIGITS:
        raise MetadataError(
            f"integer literal of {len(literal)} digits; at most {MAX_INT_DIGITS} are accepted"
        )
    return int(literal)


_DECODER = json.JSONDecoder(parse_int=_parse_int)


def _check_depth(raw: bytes, encoding: str, document: object, where: str) -> None:
    """Refuse JSON nested deeper than `MAX_DEPTH` (later recursive code would overflow the stack).

    UTF-8 documents are measured on their bytes (`json_depth()`, which is
    faster than walking the decoded document); others by walking ``document``.
    """
    if encoding.startswith("utf-8"):
        if json_depth(raw) > MAX_DEPTH:
            raise MetadataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
        return
    stack = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise MetadataError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")


def json_depth(raw: bytes) -> int:
    """How deep arrays and objects nest in ``raw``, valid JSON in UTF-8 (brackets inside strings do not count).

    Escaped backslashes, then escaped quotes, are dropped, so that the
    remaining quotes delimit strings; what lies outside them keeps its brackets.

    >>> json_depth(b'{"a": [1, {"b": "]]\\\\\\"[["}], "c": []}')
    3
    """
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = np.frombuffer(b"".join(unescaped.split(b'"')[0::2]).translate(None, _NOT_BRACKETS), np.uint8)
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max(initial=0))
