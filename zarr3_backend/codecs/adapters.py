"""Codec objects users already hold, as Zarr v3 codecs: numcodecs codecs and zarr-python codecs.

=============================================  ======================================
given                                          becomes
=============================================  ======================================
``numcodecs.Blosc(cname, clevel, shuffle)``    ``blosc`` (``AUTOSHUFFLE`` -> chosen per dtype)
``numcodecs.Zstd(level, checksum)``            ``zstd``
``numcodecs.GZip(level)``                      ``gzip``
any other ``numcodecs`` codec                  ``numcodecs.<codec_id>`` with its config
zarr-python codecs (``zarr.codecs.*``)         their ``to_dict()`` extension object
=============================================  ======================================

>>> import numcodecs
>>> from zarr3_backend.codecs.registry import codec_from_json
>>> codec_from_json(numcodecs.Blosc(cname="lz4", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE))
BloscCodec(typesize=None, cname='lz4', clevel=3, shuffle='bitshuffle', blocksize=0)
>>> codec_from_json(numcodecs.Delta(dtype="<i4")).to_json()["name"]
'numcodecs.delta'
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

from ..errors import MetadataError

if TYPE_CHECKING:
    from numcodecs.abc import Codec as Numcodec

ACCEPTED = (
    "a name or an object with a 'name' (e.g. 'zstd' or {'name': 'zstd', 'configuration': {'level': 3}}), "
    "a zarr3_backend codec, a numcodecs codec (e.g. numcodecs.Zstd(level=3)) "
    "or a zarr-python codec (e.g. zarr.codecs.ZstdCodec())"
)
BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle", -1: None}


def codec_document(obj: object) -> dict[str, Any]:
    """The v3 codec object for a numcodecs or zarr-python codec object; `MetadataError` for anything else.

    `codec_from_json()` builds the codec from it.
    """
    if is_numcodecs_object(obj):
        return _from_numcodecs(cast("Numcodec", obj))
    to_dict = getattr(obj, "to_dict", None)  # zarr-python's codecs are untyped here: getattr gives Any
    if type(obj).__module__.split(".")[0] in ("zarr", "numcodecs") and callable(to_dict):
        document = dict(to_dict())
        unset = getattr(
            obj, "_tunable_attrs", ()
        )  # zarr-python's BloscCodec: left unset, filled in per array
        if unset and isinstance(document.get("configuration"), dict):
            configuration = document["configuration"]
            document["configuration"] = {k: v for k, v in configuration.items() if k not in unset}
        return document
    raise MetadataError(f"codec: expected {ACCEPTED}; got {obj!r} of type {type(obj).__name__}")


def is_numcodecs_object(obj: object) -> bool:
    """Whether ``obj`` is a numcodecs codec instance (one the caller built, so trusted to run).

    Without importing numcodecs: until something has imported it, no object is one of its codecs.
    """
    abc = sys.modules.get("numcodecs.abc")
    return abc is not None and isinstance(obj, abc.Codec)


def _from_numcodecs(obj: Numcodec) -> dict[str, Any]:
    configuration = dict(obj.get_config())
    codec_id = configuration.pop("id")
    if codec_id == "blosc":
        shuffle = BLOSC_SHUFFLE.get(configuration.pop("shuffle", 1), "shuffle")
        return {
            "name": "blosc",
            "configuration": {**configuration, "shuffle": shuffle} if shuffle else configuration,
        }
    if codec_id in ("zstd", "gzip"):
        return {"name": codec_id, "configuration": configuration}
    return {"name": f"numcodecs.{codec_id}", "configuration": configuration}
