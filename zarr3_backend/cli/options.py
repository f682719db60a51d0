"""Store arguments of the command line: the store and its fsspec options."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..store import make_store
from ..store.base import Store


def open_store(args: argparse.Namespace) -> Store:
    """The store named by ``args.store``, read-only, with the options given on the command line."""
    return make_store(args.store, storage_options=storage_options(args), read_only=True)


def storage_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The fsspec options given on the command line (``None`` when there are none)."""
    options: dict[str, Any] = {}
    if args.storage_options_file:
        loaded = json.loads(Path(args.storage_options_file).read_text())
        if not isinstance(loaded, dict):
            raise ValueError(
                f"--storage-options-file {args.storage_options_file}: expected a JSON object, got {loaded!r}"
            )
        options.update(loaded)
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--storage-option {item!r}: expected KEY=VALUE, e.g. anon=true")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options or None
