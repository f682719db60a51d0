"""Extension objects: the one parser for how ``zarr.json`` names an extension.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/core/index.html#extension-definition

Data types, chunk grids, chunk key encodings, codecs and storage
transformers are each named by a short-hand name or by an object

.. code-block:: json

    {"name": "gzip", "configuration": {"level": 1}, "must_understand": true}

whose ``configuration`` is optional (an object) and whose
``must_understand`` is optional (a boolean, ``true`` when absent). Which
names exist, and what the configuration holds, is each extension point's
business; this module only checks the envelope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import EntryPoint

from ..errors import MetadataError, UnknownExtensionError

MEMBERS = ("name", "configuration", "must_understand")
_SHOWN = 200  # characters of a bad value quoted in an error message
#: Names of the storage transformers this process applies (`zarr3_backend.store.storage_transformers` adds them).
STORAGE_TRANSFORMERS: set[str] = set()


@dataclass(frozen=True)
class ExtensionObject:
    """An extension's ``name``, ``configuration`` (empty when absent) and ``must_understand`` flag.

    >>> parse_extension("crc32c", "codecs[1]")
    ExtensionObject(name='crc32c', configuration={}, must_understand=True)
    """

    name: str
    configuration: dict[str, object] = field(default_factory=dict)
    must_understand: bool = True


def parse_extension(obj: object, where: str, *, may_be_optional: bool = True) -> ExtensionObject:
    """Parse a short-hand name or extension object found at ``where`` (e.g. ``"chunk_grid"``).

    ``may_be_optional=False`` refuses ``"must_understand": false``, which the
    spec does not allow for data types, chunk grids and chunk key encodings.
    Raises `MetadataError` naming ``where``, the member and the bad value.

    >>> parse_extension({"name": "gzip", "configuration": {"level": 1}}, "codecs[0]")
    ExtensionObject(name='gzip', configuration={'level': 1}, must_understand=True)
    >>> parse_extension({"name": 3}, "codecs[0]")
    Traceback (most recent call last):
    ...
    zarr3_backend.errors.MetadataError: codecs[0].name: expected a string, got 3
    """
    if isinstance(obj, str):
        return ExtensionObject(obj)
    if not isinstance(obj, dict):
        raise MetadataError(
            f"{where}: expected an object with a string 'name' (or a short-hand name), got {_show(obj)}"
        )
    if "name" not in obj:
        raise MetadataError(
            f"{where}: expected an object with a string 'name', got {_show(obj)} (it has no 'name' member)"
        )
    if not isinstance(obj["name"], str):
        raise MetadataError(f"{where}.name: expected a string, got {_show(obj['name'])}")
    extra = sorted(map(str, set(obj) - set(MEMBERS)))
    if extra:
        raise MetadataError(
            f"{where}: unexpected members {extra} in {_show(obj)}; an extension object holds only "
            "'name', 'configuration' and 'must_understand'"
        )
    configuration = obj.get("configuration", {})
    if not isinstance(configuration, dict):
        raise MetadataError(
            f"{where}.configuration: expected an object, got {_show(configuration)} in {_show(obj)}"
        )
    return ExtensionObject(
        obj["name"], configuration, _must_understand(obj.get("must_understand", True), where, may_be_optional)
    )


def _must_understand(value: object, where: str, may_be_optional: bool) -> bool:
    if not may_be_optional and value is not True:
        raise MetadataError(
            f"{where}.must_understand: expected true or absent (the spec does not allow false here), got {_show(value)}"
        )
    if not isinstance(value, bool):
        raise MetadataError(f"{where}.must_understand: expected true or false, got {_show(value)}")
    return value


def _show(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOWN else f"{shown[:_SHOWN]}..."


def load_entry_point(ep: EntryPoint, what: str) -> object:
    """What the entry point ``ep`` advertises for the ``what`` (``"codec"``, ``"data_type"``) of its name, loaded.

    A failure to load raises `UnknownExtensionError` naming the extension and the entry point.
    """
    try:
        return ep.load()
    except Exception as exc:
        raise UnknownExtensionError(
            f"{what} {ep.name!r}: entry point {ep.value!r} failed to load: {exc}"
        ) from exc
