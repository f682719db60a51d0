"""The ``encoding`` a user hands to ``to_zarr3``, parsed, and the metadata of each new array built from it.

Every check runs before anything is written, and every error names the
variable, the key, what was given and what is accepted; keys, types and
errors follow ``engine="zarr"`` (``KeyError`` for an unknown variable,
`WriteTypeError` (a ``TypeError``) for a size that is not an integer,
`WriteError` (a ``ValueError``) for other refusals). ``chunks`` and
``shards`` are an int, one int per dimension, or a dict by dimension name
(``-1``/``None``: the full length); nested lengths ask for a rectilinear
grid. The accepted keys are `VALID_ENCODING` (to the array) and
`CF_ENCODING` (to xarray's CF encoders).

>>> import numpy as np, xarray as xr
>>> var = xr.Variable(("t", "x"), np.zeros((10, 6)), encoding={"chunks": (5, 6, 1)})
>>> new_array_metadata("v", var, path="v", explicit=False, where="the root").chunk_shape
(10, 6)
>>> parse_shape({"t": 5}, var, "chunks", "v")
(5, 6)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Container, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends.zarr import FillValueCoder, encode_zarr_attr_value
from xarray.conventions import CF_RELATED_DATA

from ...codecs.adapters import codec_document
from ...codecs.base import Codec
from ...codecs.chain import CodecChain
from ...codecs.registry import codec_from_json
from ...core.dtypes.kinds import is_float, is_object
from ...core.integers import is_int
from ...core.metadata import ArrayMetadata
from ...errors import WriteError, WriteKeyError, WriteTypeError
from ...nodes import creation
from ...runtime.stacklevel import caller_stacklevel
from ..geo import geozarr_attributes
from ..read_encoding import codec_parts
from .rectilinear import Lengths, is_rectilinear_request, rectilinear_chunking

VALID_ENCODING = frozenset(
    {
        "chunks",
        "shards",
        "compressors",
        "filters",
        "serializer",
        "codecs",
        "index_location",
        "fill_value",
        "chunk_key_encoding",
        "write_empty_chunks",
    }
)
CF_ENCODING = frozenset(
    {"_FillValue", "missing_value", "dtype", "scale_factor", "add_offset", "units", "calendar"}
)
IGNORED_ENCODING = frozenset(
    {"source", "original_shape", "preferred_chunks", "dimension_names", "dtype", "coordinates"}
)
#: CF attributes naming other variables (``grid_mapping``, ``bounds``, ...), which xarray's encoder moves
#: from ``encoding`` to ``attrs``; ``engine="zarr"`` accepts them in ``encoding=`` (``coordinates``: see above).
CF_RELATED = frozenset(CF_RELATED_DATA)


class InnerChunksWarning(UserWarning):
    """``shards`` was given without ``chunks``; the warning names the inner chunks chosen."""


def parse_encodings(
    encoding: object, variables: Mapping[Hashable, xr.Variable]
) -> dict[Hashable, dict[str, Any]]:
    """``encoding`` as ``{variable: {key: value}}``, checked against the dataset's variables and known keys."""
    if encoding is None:
        return {}
    if not isinstance(encoding, Mapping):
        raise WriteTypeError(
            f"to_zarr3: encoding must be a dict of {{variable: {{key: value}}}}, got {type(encoding).__name__}"
        )
    parsed = {}
    for name, keys in encoding.items():
        if name not in variables:  # KeyError and ValueError below: what engine="zarr" raises
            raise WriteKeyError(
                f"to_zarr3: encoding given for {name!r}, which is not a variable of the dataset {sorted(map(str, variables))}"
            )
        keys = _as_dict(name, keys)
        unknown = sorted(set(keys) - VALID_ENCODING - CF_ENCODING - CF_RELATED - IGNORED_ENCODING)
        if unknown:
            raise WriteError(
                f"to_zarr3: unexpected encoding keys for {name!r}: {unknown}; valid are "
                f"{sorted(VALID_ENCODING)} and the CF keys {sorted(CF_ENCODING | CF_RELATED)}"
            )
        parsed[name] = keys
    return parsed


def apply_encodings(
    variables: Mapping[Hashable, xr.Variable],
    explicit: Mapping[Hashable, dict[str, Any]],
    existing: Container[str],
) -> None:
    """Give the CF-encoded ``variables`` the user's ``explicit`` encodings, and new ones their GeoZarr attributes.

    A ``grid_mapping`` (or ``bounds``, ...) that rioxarray or an opened store
    put in a variable's encoding survives an ``encoding=`` that does not name
    it (``engine="zarr"`` drops it, and the CRS with it); one in the
    variable's ``attrs`` or in the user's encoding wins. Variables not in
    ``existing`` that `geozarr_attributes()` finds georeferenced get its
    ``spatial:``/``proj:`` attributes.
    """
    for name, given in explicit.items():
        var = variables[name]
        kept = {
            k: v for k, v in var.encoding.items() if k in CF_RELATED and k not in var.attrs and k not in given
        }
        var.encoding = {**kept, **given}
    for name, geo in geozarr_attributes(variables).items():
        if str(name) not in existing:
            variables[name].attrs = {**variables[name].attrs, **geo}


def parse_tree_encodings(encoding: object, groups: Iterable[str]) -> dict[str, Any]:
    """A DataTree's ``encoding``, keyed by group path (``"/"``, ``"/child"``), checked against its ``groups``.

    Each group's own mapping is parsed by `parse_encodings()` when that group is planned.
    """
    if encoding is None:
        return {}
    if not isinstance(encoding, Mapping):
        raise WriteTypeError(
            f"to_zarr3: a DataTree's encoding must be a dict keyed by group path, got {type(encoding).__name__}"
        )
    known = list(groups)
    if unknown := set(encoding) - set(known):
        raise WriteError(f"to_zarr3: encoding keys {sorted(unknown)} are not groups of the DataTree {known}")
    return dict(encoding)


def _as_dict(name: Hashable, keys: Any) -> dict[Any, Any]:
    """``encoding[name]`` cast to a dict as xarray casts it (a mapping or ``(key, value)`` pairs), else ``ValueError``."""
    try:
        return dict(keys)
    except (TypeError, ValueError) as exc:
        raise WriteError(
            f"to_zarr3: encoding[{name!r}] must be castable to a dict of encoding keys (e.g. {{'chunks': (10,)}}), "
            f"got {type(keys).__name__} {keys!r}"
        ) from exc


def new_array_metadata(
    name: str, var: xr.Variable, *, path: str, explicit: bool, where: str
) -> ArrayMetadata:
    """The metadata of the new array at ``path`` for the CF-encoded ``var``; every encoding check runs here.

    ``explicit``: the user gave ``encoding[name]`` (unused CF keys are refused,
    ``shards`` without ``chunks`` warns, chunk shapes that do not fit raise
    instead of being dropped by `fitting_encoding()`); ``where`` names the
    group in errors.
    """
    encoding = zarr_encoding(name, var, explicit)
    if not explicit:
        encoding = fitting_encoding(var, encoding)
    attrs = dict(var.attrs)
    fill_value = encoding.pop("fill_value", None)
    if fill_value is None and is_float(var.dtype):
        fill_value = np.nan
    if (cf_fill := attrs.pop("_FillValue", None)) is not None:
        attrs["_FillValue"] = FillValueCoder.encode(cf_fill, var.dtype)
    chunks, shards = chunking(name, var, encoding, explicit)
    check_codecs_agree(name, encoding)
    codecs = encoding.get("codecs")
    return creation.build_array_metadata(
        path,
        shape=var.shape,
        dtype=str if is_object(var.dtype) else var.dtype,
        chunks=(shards or chunks) if codecs is not None else chunks,
        shards=shards,
        fill_value=fill_value,
        compressors=encoding.get("compressors", "auto"),
        filters=encoding.get("filters", ()),
        serializer=encoding.get("serializer", "auto"),
        codecs=codecs,
        index_location=encoding.get("index_location", "end"),
        chunk_key_encoding=encoding.get("chunk_key_encoding"),
        dimension_names=[str(d) for d in var.dims],
        attributes=encode_attributes(attrs, f"variable {name!r} in {where}"),
    )


def zarr_encoding(name: str, var: xr.Variable, explicit: bool) -> dict[str, Any]:
    """The zarr keys left in a CF-encoded ``var.encoding``, codec objects as JSON.

    CF keys that xarray's encoders did not consume (``units`` or ``calendar``
    on a variable that is not a time) are refused when the user passed them,
    as ``engine="zarr"`` does.
    """
    leftover = sorted(
        k for k in CF_ENCODING & set(var.encoding) - IGNORED_ENCODING if var.encoding[k] is not None
    )
    if explicit and leftover:
        raise WriteError(
            f"to_zarr3: encoding {leftover} of {name!r} does not apply to a {var.dtype} variable "
            "('units'/'calendar' encode datetimes and timedeltas only); put them in the variable's attrs instead"
        )
    return {
        k: codec_json(v) if k in ("compressors", "filters", "serializer", "codecs") else v
        for k, v in var.encoding.items()
        if k in VALID_ENCODING
    }


def fitting_encoding(var: xr.Variable, encoding: dict[str, Any]) -> dict[str, Any]:
    """``encoding`` without ``chunks``, ``shards`` and ``codecs`` when those chunks or shards do not fit ``var``.

    For the encoding a variable carries from its source, not one given as
    ``encoding=``: after ``isel``/``sel``/``squeeze`` a variable keeps its
    source's chunk shapes (and ``codecs``, which hold the inner chunk shape
    when sharded), one size per dimension it no longer has. They are dropped
    and the chunks chosen anew, as ``engine="zarr"`` does; sizes that are not
    positive integers still raise in `parse_shape()`.

    >>> var = xr.Variable(("x",), [0.0] * 4)
    >>> fitting_encoding(var, {"chunks": (2, 2), "shards": None, "compressors": ()})
    {'compressors': ()}
    >>> fitting_encoding(var, {"chunks": (2,), "shards": (4,)})
    {'chunks': (2,), 'shards': (4,)}
    """
    if all(_fits(encoding.get(key), var) for key in ("chunks", "shards")):
        return encoding
    return {k: v for k, v in encoding.items() if k not in ("chunks", "shards", "codecs")}


def _fits(value: object, var: xr.Variable) -> bool:
    """Whether a ``chunks``/``shards`` value has no more or fewer dimensions than ``var`` (ints fit any)."""
    if isinstance(value, Mapping):
        return set(value) <= set(var.dims)
    if isinstance(value, Sequence) and not isinstance(
        value, str
    ):  # lengths per dimension must still cover it
        return len(value) == var.ndim and all(
            sum(v) >= n
            for v, n in zip(value, var.shape)
            if isinstance(v, Sequence) and not isinstance(v, str)
        )
    return True


def chunking(
    name: str, var: xr.Variable, encoding: Mapping[str, Any], explicit: bool
) -> tuple[Lengths | None, Lengths | None]:
    """(chunks, shards): explicit encoding first, else regular dask chunks, else automatic chunks.

    Lengths per dimension or ``"dask"`` ask for a rectilinear grid (see [`rectilinear`][zarr3_backend.xarray.write.rectilinear]).
    """
    if is_rectilinear_request(encoding.get("shards")):
        return rectilinear_chunking(
            name, var, encoding, parse_shape(encoding.get("chunks"), var, "chunks", name)
        )
    if is_rectilinear_request(encoding.get("chunks")):
        return rectilinear_chunking(name, var, encoding, None)
    chunks, shards = (
        parse_shape(encoding.get("chunks"), var, "chunks", name),
        parse_shape(encoding.get("shards"), var, "shards", name),
    )
    dask_chunks = regular_dask_chunks(var)
    if chunks is None and shards is not None:
        fits = dask_chunks is not None and all(s % c == 0 for s, c in zip(shards, dask_chunks))
        chunks = (
            dask_chunks
            if fits
            else creation.default_chunks(shards, max(var.dtype.itemsize, 1), dividing=True)
        )
        if explicit:
            warnings.warn(
                f"to_zarr3: {name!r} has shards={shards} but no chunks; using inner chunks {chunks} "
                f"({'the dask chunks' if fits else 'the shard split to ~4 MiB'}). Pass encoding[{name!r}]['chunks'] to choose",
                InnerChunksWarning,
                stacklevel=caller_stacklevel("zarr3_backend"),
            )
    elif chunks is None:
        chunks = dask_chunks
    return chunks, shards


def parse_shape(value: object, var: xr.Variable, key: str, name: str) -> tuple[int, ...] | None:
    """``encoding[name][key]`` (``chunks`` or ``shards``) as one positive int per dimension, or None."""
    if value is None or (isinstance(value, str) and value == "auto"):
        return None
    where = f"to_zarr3: encoding[{name!r}][{key!r}]"
    if isinstance(value, Mapping):
        if unknown := sorted(map(str, set(value) - set(var.dims))):
            raise WriteError(
                f"{where} names dimensions {unknown} that {name!r} does not have; its dimensions are {var.dims}"
            )
        value = tuple(value.get(dim, -1) for dim in var.dims)
        value = tuple(
            size if v is None or (is_int(v) and v == -1) else v for v, size in zip(value, var.shape)
        )
    elif is_int(value):
        value = (value,) * var.ndim
    elif not isinstance(value, Sequence) or isinstance(value, str):
        raise WriteTypeError(
            f"{where} must be an int, a tuple of ints or a dict by dimension name, got {value!r}"
        )
    if len(value) != var.ndim:
        raise WriteError(
            f"{where}={tuple(value)} has {len(value)} entries, but {name!r} has {var.ndim} dimensions {var.dims}; "
            "give one size per dimension (or a dict by dimension name)"
        )
    if not_int := [
        v for v in value if not is_int(v)
    ]:  # TypeError, as engine="zarr" raises for non-integer sizes
        raise WriteTypeError(
            f"{where}={tuple(value)}: every size must be a positive integer, got {not_int[0]!r}"
        )
    if bad := [v for v in value if v <= 0]:
        raise WriteError(f"{where}={tuple(value)}: every size must be a positive integer, got {bad[0]!r}")
    return tuple(int(v) for v in value)


def regular_dask_chunks(var: xr.Variable) -> tuple[int, ...] | None:
    """The dask chunk shape of ``var`` when it is regular (all blocks equal but the last), else None."""
    if var.chunks is None or not var.ndim:
        return None
    if any(len(set(c[:-1])) > 1 or c[-1] > c[0] for c in var.chunks):
        return None
    return tuple(max(1, int(c[0])) for c in var.chunks)


def check_codecs_agree(name: str, encoding: Mapping[str, Any]) -> None:
    """With ``codecs`` (the full chain) any ``filters``/``serializer``/``compressors`` given must describe it.

    An opened dataset's encoding carries both; changing one and not the other
    would otherwise be silently ignored.
    """
    given = [k for k in ("filters", "serializer", "compressors") if encoding.get(k) is not None]
    if encoding.get("codecs") is None or not given:
        return
    described = codec_parts(
        CodecChain.from_json(list(encoding["codecs"])), encoding.get("shards") is not None
    )
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


def encode_attributes(attrs: Mapping[Hashable, object], where: str) -> dict[str, Any]:
    """``attrs`` encoded as xarray's zarr engine does; a value that is not JSON is refused by name."""
    encoded = {}
    for key, value in attrs.items():
        value = encode_zarr_attr_value(value)
        try:
            json.dumps(value, default=_numpy_json)
        except (TypeError, ValueError) as exc:
            raise WriteTypeError(
                f"to_zarr3: attribute {key!r} of {where} is not JSON serialisable ({type(value).__name__} {value!r}); "
                "convert it to a str, number, list or dict, or drop it"
            ) from exc
        encoded[str(key)] = value
    return encoded


def _numpy_json(value: Any) -> Any:
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(type(value).__name__)
