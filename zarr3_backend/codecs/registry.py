"""Codec names -> codec classes, and JSON codec objects -> codec instances.

A codec is named in ``zarr.json`` by a short-hand string (``"crc32c"``) or
an extension object ``{"name": ..., "configuration": {...}}`` (spec: core,
"Extension definition"). Names are registered names matching
``^[a-z][a-z0-9-_.]+$`` or, for older extensions, URIs.

Classes are found, in order, among

1. classes registered with `register_codec()`, and the built-in codecs of
   `BUILT_IN` (each module of ``zarr3_backend.codecs`` registers its
   classes when it is imported, which happens the first time one of its
   names is looked up, so a process imports numcodecs, zfpy ... only for
   the codecs its stores name);
2. third-party classes advertised in the entry-point group
   ``zarr3_backend.codecs`` under the codec's name, loaded on first use;
3. codec families registered with `register_codec_family()` (e.g. every
   ``numcodecs.<codec_id>`` through the numcodecs adapter, loaded the same
   way).

Codecs that can execute code when they decode (``numcodecs.pickle``, or any
codec registered with ``unsafe=True`` or named in `mark_unsafe()`) are
refused with `UnsafeCodecError` unless the user opts in, inside
``with allow_unsafe_codecs():`` or with the environment variable
``ZARR3_ALLOW_UNSAFE_CODECS=1`` (needed on dask workers in other processes,
which rebuild codecs from metadata).

The small ``parse_config_*`` helpers validate configuration members with
uniform messages.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TypeVar

from ..core.extension import load_entry_point, parse_extension
from ..core.integers import is_int
from ..errors import MetadataError, UnknownExtensionError, UnsafeCodecError
from .adapters import codec_document, is_numcodecs_object
from .base import Codec

ENTRY_POINT_GROUP = "zarr3_backend.codecs"
_REGISTERED_NAME = re.compile(r"^[a-z][a-z0-9\-_.]+$")
_URI_NAME = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.\-]*://|urn:)\S+$")

#: Set to ``1`` (or ``true``/``yes``) to allow codecs that can execute code on decode.
UNSAFE_ENV = "ZARR3_ALLOW_UNSAFE_CODECS"

#: The built-in codecs: name -> the module of this package that defines and registers it.
BUILT_IN = {
    "bitround": "bitround",
    "numcodecs.bitround": "bitround",
    "blosc": "blosc",
    "bytes": "bytes",
    "cast_value": "cast_value",
    "conditional": "conditional",
    "crc32c": "crc32c",
    "gzip": "gzip",
    "n5_default": "n5_default",
    "packbits": "packbits",
    "reshape": "reshape",
    "scale_offset": "scale_offset",
    "sharding_indexed": "sharding",
    "transpose": "transpose",
    "zarr3_backend.v2_filters": "v2",
    "vlen-utf8": "vlen_utf8",
    "vlen-bytes": "vlen_utf8",
    "zfp": "zfp",
    "zstd": "zstd",
}
#: The built-in codec families: name prefix -> the module of this package that registers the family.
BUILT_IN_FAMILIES = {"numcodecs.": "numcodecs_adapter"}
_codecs: dict[str, type[Codec]] = {}
_families: dict[str, Callable[[str], type[Codec] | None]] = {}
_unsafe: set[str] = set()
_allowed = 0  # depth of open ``allow_unsafe_codecs`` blocks
_allowed_lock = threading.Lock()

C = TypeVar("C", bound=type[Codec])


def register_codec(cls: C, *, unsafe: bool = False) -> C:
    """Register ``cls`` under ``cls.name``; the last registration of a name wins.

    ``unsafe=True`` flags a codec that can execute code when it decodes: it
    is then refused unless the user opts in (see `allow_unsafe_codecs()`).
    Returns ``cls`` so it can be used as a decorator.

    >>> from zarr3_backend.codecs.registry import get_codec_class, register_codec
    >>> from zarr3_backend.codecs.crc32c import Crc32cCodec
    >>> register_codec(Crc32cCodec) is get_codec_class("crc32c")
    True
    """
    if not (isinstance(cls, type) and issubclass(cls, Codec)):
        raise TypeError(f"register_codec: expected a Codec subclass, got {cls!r}")
    name = parse_codec_name(cls.name)
    if name in BUILT_IN and cls.__module__ != _module_path(BUILT_IN[name]):
        _load_built_in(name)  # so that the built-in, imported later, cannot replace this registration
    _codecs[name] = cls
    if unsafe:
        mark_unsafe(cls.name)
    return cls


def mark_unsafe(name: str) -> None:
    """Flag the codec ``name`` as able to execute code on decode (refused unless opted in)."""
    _unsafe.add(parse_codec_name(name))


def is_unsafe(name: str) -> bool:
    """Whether the codec ``name`` is flagged as able to execute code on decode.

    >>> is_unsafe("numcodecs.pickle"), is_unsafe("gzip")
    (True, False)
    """
    _load_built_in_family(name)
    return name in _unsafe


@contextmanager
def allow_unsafe_codecs() -> Iterator[None]:
    """Within the block, accept codecs flagged unsafe (``numcodecs.pickle`` ...) in this process.

    Only open data you trust this way: decoding such a chunk can run
    arbitrary code. Processes that rebuild codecs elsewhere (dask workers)
    need ``ZARR3_ALLOW_UNSAFE_CODECS=1`` in their environment instead.
    """
    global _allowed
    with _allowed_lock:
        _allowed += 1
    try:
        yield
    finally:
        with _allowed_lock:
            _allowed -= 1


def unsafe_codecs_allowed() -> bool:
    """Whether codecs flagged unsafe are accepted right now (opt-in block or environment variable)."""
    return _allowed > 0 or os.environ.get(UNSAFE_ENV, "").strip().lower() in ("1", "true", "yes")


def _check_safe(name: str) -> None:
    if is_unsafe(name) and not unsafe_codecs_allowed():
        raise UnsafeCodecError(
            f"codec {name!r} can execute arbitrary code when it decodes, so it is refused; if you trust "
            f"this data, open it inside 'with zarr3_backend.allow_unsafe_codecs():' or set {UNSAFE_ENV}=1"
        )


def register_codec_family(prefix: str, factory: Callable[[str], type[Codec] | None]) -> None:
    """Resolve every name starting with ``prefix`` through ``factory(name)``.

    The factory returns a codec class or ``None`` for a name it does not know.
    """
    _families[prefix] = factory


def get_codec_class(name: str) -> type[Codec]:
    """The codec class registered under ``name``.

    Raises `UnknownExtensionError` naming the codec when no class,
    entry point or codec family provides it.

    >>> from zarr3_backend.codecs.registry import get_codec_class
    >>> get_codec_class("gzip").__name__
    'GzipCodec'
    """
    cls = _codecs.get(name) or _load_built_in(name) or _load_entry_point(name) or _from_family(name)
    if cls is None:
        known = ", ".join(sorted(_codecs.keys() | BUILT_IN.keys()))
        raise UnknownExtensionError(
            f"unknown codec {name!r}: no codec of that name is registered (known: {known}) "
            f"and no entry point in group {ENTRY_POINT_GROUP!r} provides it; install the package "
            'that implements it, or mark the codec object with "must_understand": false if it may be skipped'
        )
    return cls


def codec_from_json(obj: object) -> Codec | None:
    """Build a codec from a short-hand name, an extension object, a codec, or a numcodecs or
    zarr-python codec object (see `zarr3_backend.codecs.adapters`).

    Returns ``None`` for an unknown codec whose object says
    ``"must_understand": false``: the caller then leaves it out of the chain.
    Malformed objects raise `MetadataError`; unknown codecs raise
    `UnknownExtensionError`; codecs flagged unsafe raise
    `UnsafeCodecError` outside `allow_unsafe_codecs()`.

    >>> from zarr3_backend.codecs.registry import codec_from_json
    >>> codec_from_json({"name": "gzip", "configuration": {"level": 1}})
    GzipCodec(level=1)
    >>> codec_from_json({"name": "no-such-codec", "must_understand": False}) is None
    True
    """
    if isinstance(obj, Codec):
        return obj
    extension = parse_extension(obj if isinstance(obj, str | dict) else codec_document(obj), "codec")
    name = parse_codec_name(extension.name)
    try:
        cls = get_codec_class(name)
    except UnknownExtensionError:
        if extension.must_understand:
            raise
        return None
    if not is_numcodecs_object(obj):  # a numcodecs object the caller built runs as it would in numcodecs
        _check_safe(name)
    return cls.from_json(extension.configuration)


def parse_codec_name(name: object) -> str:
    """Return ``name`` if it is a valid extension name, else raise `MetadataError`."""
    if not isinstance(name, str):
        raise MetadataError(f"codec name: expected a string, got {name!r}")
    if not (_REGISTERED_NAME.match(name) or _URI_NAME.match(name)):
        raise MetadataError(
            f"codec name {name!r} is not a valid extension name: expected a registered name "
            f"matching {_REGISTERED_NAME.pattern} or a URI such as 'https://example.org/codecs/name'"
        )
    return name


def _module_path(module: str) -> str:
    return f"{__package__}.{module}"


def _load_built_in(name: str) -> type[Codec] | None:
    """Import the built-in module of codec ``name`` (it registers its codecs); the class now registered."""
    if name in BUILT_IN:
        importlib.import_module(_module_path(BUILT_IN[name]))
    return _codecs.get(name)


def _load_built_in_family(name: str) -> None:
    for prefix, module in BUILT_IN_FAMILIES.items():
        if name.startswith(prefix):
            importlib.import_module(_module_path(module))


@cache
def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _load_entry_point(name: str) -> type[Codec] | None:
    ep = _entry_points().get(name)
    if ep is None:
        return None
    loaded = load_entry_point(ep, "codec")
    if isinstance(loaded, type) and issubclass(loaded, Codec):
        _codecs[name] = loaded
    return _codecs.get(name)


def _from_family(name: str) -> type[Codec] | None:
    _load_built_in_family(name)
    for prefix, factory in _families.items():
        if name.startswith(prefix):
            return factory(name)
    return None


# -- configuration validators shared by the codec modules ---------------------


def parse_config_int(
    codec: str, field: str, value: object, low: int | None = None, high: int | None = None
) -> int:
    """``value`` as an int within ``[low, high]``, else `MetadataError`.

    >>> parse_config_int("gzip", "level", 5, 0, 9)
    5
    """
    if is_int(value, numpy=False) and (low is None or value >= low) and (high is None or value <= high):
        return int(value)
    bounds = (
        f" in {low}..{high}"
        if low is not None and high is not None
        else (f" >= {low}" if low is not None else "")
    )
    raise MetadataError(f"codec {codec!r}: configuration.{field}: expected an integer{bounds}, got {value!r}")


def parse_config_choice(codec: str, field: str, value: object, choices: Collection[str]) -> str:
    """``value`` if it is one of ``choices``, else `MetadataError`.

    >>> parse_config_choice("bytes", "endian", "big", ("little", "big"))
    'big'
    """
    if isinstance(value, str) and value in choices:
        return value
    expected = ", ".join(repr(c) for c in choices)
    raise MetadataError(f"codec {codec!r}: configuration.{field}: expected one of {expected}, got {value!r}")
