"""The ``encoding`` a user hands to ``to_zarr3``, parsed, and the metadata of each new array built from it.

Every check runs before anything is written, and every error names the
variable, the key, what was given and what is accepted:

- ``encoding`` is a mapping of variable name to a mapping of keys;
- the zarr keys (:data:`VALID_ENCODING`) go to the array; the CF keys
  (:data:`CF_ENCODING`) are consumed by xarray's CF encoders (``_FillValue:
  None`` means "no ``_FillValue`` attribute", as with ``engine="zarr"``);
- ``chunks`` and ``shards`` are parsed by :mod:`.chunk_encoding`; those a
  variable carries from its source that no longer fit it are dropped there;
- as with ``engine="zarr"``, an encoding for a variable the dataset lacks
  raises ``KeyError``, a non-dict ``encoding[name]`` ``ValueError``;
- ``shards`` without ``chunks`` warns and picks inner chunks: the regular dask
  chunks when they divide the shard, else the shard split along its largest
  dimension until an inner chunk holds ~4 MiB or less
  (:func:`~zarr3_backend.nodes.creation.default_chunks` with ``dividing=True``);
- :func:`new_array_metadata` turns a CF-encoded variable into the metadata of
  its new array (``fill_value`` NaN for floats by default, the ``_FillValue``
  attribute JSON-encoded by xarray's ``FillValueCoder``).

>>> import numpy as np, xarray as xr
>>> var = xr.Variable(("t", "x"), np.zeros((10, 6)), encoding={"chunks": (5, 6, 1)})
>>> new_array_metadata("v", var, path="v", explicit=False, where="the root").chunk_shape
(10, 6)
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends.zarr import FillValueCoder

from ..codecs.base import Codec
from ..codecs.chain import CodecChain
from ..codecs.foreign import codec_document
from ..codecs.registry import codec_from_json
from ..core.metadata import ArrayMetadata
from ..core.stacklevel import caller_stacklevel
from ..errors import WriteError, WriteKeyError, WriteTypeError
from ..nodes import creation
from .chunk_encoding import fitting_encoding, parse_shape, regular_dask_chunks
from .encoding import codec_parts
from .write_checks import encode_attributes

VALID_ENCODING = frozenset({
    "chunks", "shards", "compressors", "filters", "serializer", "codecs", "index_location",
    "fill_value", "chunk_key_encoding", "write_empty_chunks",
})
CF_ENCODING = frozenset({"_FillValue", "missing_value", "dtype", "scale_factor", "add_offset", "units", "calendar"})
IGNORED_ENCODING = frozenset({"source", "original_shape", "preferred_chunks", "dimension_names", "dtype", "coordinates"})


class InnerChunksWarning(UserWarning):
    """``shards`` was given without ``chunks``; the warning names the inner chunks chosen."""


def parse_encodings(encoding: object, variables: Mapping[Hashable, xr.Variable]) -> dict[Hashable, dict[str, Any]]:
    """``encoding`` as ``{variable: {key: value}}``, checked against the dataset's variables and known keys."""
    if encoding is None:
        return {}
    if not isinstance(encoding, Mapping):
        raise WriteTypeError(f"to_zarr3: encoding must be a dict of {{variable: {{key: value}}}}, got {type(encoding).__name__}")
    parsed = {}
    for name, keys in encoding.items():
        if name not in variables:  # KeyError and ValueError below: what engine="zarr" raises
            raise WriteKeyError(f"to_zarr3: encoding given for {name!r}, which is not a variable of the dataset {sorted(map(str, variables))}")
        keys = _as_dict(name, keys)
        unknown = sorted(set(keys) - VALID_ENCODING - CF_ENCODING - IGNORED_ENCODING)
        if unknown:
            raise WriteError(
                f"to_zarr3: unexpected encoding keys for {name!r}: {unknown}; valid are "
                f"{sorted(VALID_ENCODING)} and the CF keys {sorted(CF_ENCODING)}"
            )
        parsed[name] = keys
    return parsed


def _as_dict(name: Hashable, keys: Any) -> dict[Any, Any]:
    """``encoding[name]`` cast to a dict as xarray casts it (a mapping or ``(key, value)`` pairs), else ``ValueError``."""
    try:
        return dict(keys)
    except (TypeError, ValueError) as exc:
        raise WriteError(
            f"to_zarr3: encoding[{name!r}] must be castable to a dict of encoding keys (e.g. {{'chunks': (10,)}}), "
            f"got {type(keys).__name__} {keys!r}"
        ) from exc


def zarr_encoding(name: str, var: xr.Variable, explicit: bool) -> dict[str, Any]:
    """The zarr keys left in a CF-encoded ``var.encoding``, codec objects as JSON.

    CF keys that xarray's encoders did not consume (``units`` or ``calendar``
    on a variable that is not a time) are refused when the user passed them,
    as ``engine="zarr"`` does.
    """
    leftover = sorted(k for k in CF_ENCODING & set(var.encoding) - IGNORED_ENCODING if var.encoding[k] is not None)
    if explicit and leftover:
        raise WriteError(
            f"to_zarr3: encoding {leftover} of {name!r} does not apply to a {var.dtype} variable "
            "('units'/'calendar' encode datetimes and timedeltas only); put them in the variable's attrs instead"
        )
    return {k: codec_json(v) if k in ("compressors", "filters", "serializer", "codecs") else v
            for k, v in var.encoding.items() if k in VALID_ENCODING}


def check_codecs_agree(name: str, encoding: Mapping[str, Any]) -> None:
    """With ``codecs`` (the full chain) any ``filters``/``serializer``/``compressors`` given must describe it.

    An opened dataset's encoding carries both; changing one and not the other
    would otherwise be silently ignored.
    """
    given = [k for k in ("filters", "serializer", "compressors") if encoding.get(k) is not None]
    if encoding.get("codecs") is None or not given:
        return
    described = codec_parts(CodecChain.from_json(list(encoding["codecs"])), encoding.get("shards") is not None)
    differing = [k for k in given if not described or _normalise(described[k]) != _normalise(encoding[k])]
    if differing:
        raise WriteError(
            f"to_zarr3: encoding[{name!r}] has 'codecs' {list(encoding['codecs'])} and "
            f"{ {k: encoding[k] for k in differing} } that describe a different chain; drop 'codecs' to use "
            f"{differing}, or drop {differing} to use 'codecs'"
        )


def _normalise(codecs: Any) -> Any:
    if isinstance(codecs, Mapping | str):
        return _codec_json(codecs)
    return [_codec_json(c) for c in codecs]


def _codec_json(obj: Any) -> dict[str, Any] | None:
    """A codec's canonical JSON; ``None`` for one a chain leaves out (``"must_understand": false``)."""
    codec = codec_from_json(obj)
    return None if codec is None else codec.to_json()


def codec_json(value: object) -> object:
    """Codec objects (ours, numcodecs', zarr-python's) become their v3 JSON; lists item by item."""
    if isinstance(value, list | tuple):
        return [codec_json(v) for v in value]
    if value is None or isinstance(value, Mapping | str):
        return value
    if isinstance(value, Codec):
        return value.to_json()
    codec = codec_from_json(value)
    return codec_document(value) if codec is None else codec.to_json()


def chunking(name: str, var: xr.Variable, encoding: Mapping[str, Any], explicit: bool) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """(chunks, shards): explicit encoding first, else regular dask chunks, else automatic chunks."""
    chunks, shards = parse_shape(encoding.get("chunks"), var, "chunks", name), parse_shape(encoding.get("shards"), var, "shards", name)
    dask_chunks = regular_dask_chunks(var)
    if chunks is None and shards is not None:
        fits = dask_chunks is not None and all(s % c == 0 for s, c in zip(shards, dask_chunks))
        chunks = dask_chunks if fits else creation.default_chunks(shards, max(var.dtype.itemsize, 1), dividing=True)
        if explicit:
            warnings.warn(
                f"to_zarr3: {name!r} has shards={shards} but no chunks; using inner chunks {chunks} "
                f"({'the dask chunks' if fits else 'the shard split to ~4 MiB'}). Pass encoding[{name!r}]['chunks'] to choose",
                InnerChunksWarning, stacklevel=caller_stacklevel("zarr3_backend"),
            )
    elif chunks is None:
        chunks = dask_chunks
    return chunks, shards


def new_array_metadata(name: str, var: xr.Variable, *, path: str, explicit: bool, where: str) -> ArrayMetadata:
    """The metadata of the new array at ``path`` for the CF-encoded ``var``; every encoding check runs here.

    ``explicit``: the user gave ``encoding[name]`` (unused CF keys are refused,
    ``shards`` without ``chunks`` warns, chunk shapes that do not fit raise
    instead of being dropped by :func:`fitting_encoding`); ``where`` names the
    group in errors.
    """
    encoding = zarr_encoding(name, var, explicit)
    if not explicit:
        encoding = fitting_encoding(var, encoding)
    attrs = dict(var.attrs)
    fill_value = encoding.pop("fill_value", None)
    if fill_value is None and var.dtype.kind == "f":
        fill_value = np.nan
    if (cf_fill := attrs.pop("_FillValue", None)) is not None:
        attrs["_FillValue"] = FillValueCoder.encode(cf_fill, var.dtype)
    chunks, shards = chunking(name, var, encoding, explicit)
    check_codecs_agree(name, encoding)
    codecs = encoding.get("codecs")
    return creation.build_array_metadata(
        path, shape=var.shape, dtype=str if var.dtype.kind == "O" else var.dtype,
        chunks=(shards or chunks) if codecs is not None else chunks, shards=shards,
        fill_value=fill_value, compressors=encoding.get("compressors", "auto"), filters=encoding.get("filters", ()),
        serializer=encoding.get("serializer", "auto"), codecs=codecs,
        index_location=encoding.get("index_location", "end"), chunk_key_encoding=encoding.get("chunk_key_encoding"),
        dimension_names=[str(d) for d in var.dims], attributes=encode_attributes(attrs, f"variable {name!r} in {where}"),
    )
