"""``zarr3 convert SRC DST``: rewrite a hierarchy as sharded Zarr v3 (see `zarr3_backend.conversion.convert()`)."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..conversion import convert
from ..conversion.progress_record import OVERWRITE_OPTION
from ..core.json_types import JSON
from ..errors import ArgumentError
from .options import storage_options

T = TypeVar("T")


def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], store_options: argparse.ArgumentParser
) -> None:
    parser = commands.add_parser(
        "convert",
        parents=[store_options],
        help="rewrite a Zarr hierarchy (v2 or v3) as sharded Zarr v3",
        description="Rewrite every array below SRC into DST as sharded Zarr v3, keeping attributes, dimension names, "
        "fill values and data types, with consolidated metadata. Inner chunks are the source chunks, "
        "shards ~64-128 MiB slabs of the leading dimension (the same along a dimension for the arrays "
        "of a group that share it), each array's own compressor and filters (v3 form) + crc32c, unless set. One dask "
        "task per shard (threads, or a cluster with --scheduler) reads, writes and verifies its shard "
        "against the source. Run again after an interruption to finish: shards recorded as verified are checked (still stored as recorded, their source values unchanged) and copied again if not. One convert at a time into a DST; another is refused naming it. SRC is only read; "
        "--storage-option applies to SRC, --dst-storage-option to DST.",
    )
    parser.add_argument("src", metavar="SRC")
    parser.add_argument("dst", metavar="DST")
    shape_help = (
        "N,N,... for every array with that many dimensions, or PATH=N,N,... for one array "
        "(repeatable; not both forms)"
    )
    parser.add_argument(
        "--shards", action="append", default=[], metavar="[PATH=]SHAPE", help="shard shape: " + shape_help
    )
    parser.add_argument(
        "--chunks",
        action="append",
        default=[],
        metavar="[PATH=]SHAPE",
        help="inner chunk shape: " + shape_help,
    )
    parser.add_argument(
        "--codecs",
        action="append",
        default=[],
        metavar="[PATH=]JSON",
        help='the inner chunks\' codecs as a JSON list, e.g. \'["bytes", "zstd", "crc32c"]\', '
        "for every array or (PATH=JSON) one",
    )
    parser.add_argument("--overwrite", action="store_true", help="delete what DST holds first")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run on this dask.distributed scheduler")
    parser.add_argument(
        "--dst-storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an fsspec option for DST (repeatable)",
    )
    parser.add_argument(
        "--dst-storage-options-file", metavar="FILE.json", help="a JSON object of fsspec options for DST"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.set_defaults(run=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    dst_options = storage_options(
        argparse.Namespace(
            storage_option=args.dst_storage_option, storage_options_file=args.dst_storage_options_file
        )
    )
    settings: dict[str, Any] = {
        "shards": per_array("--shards", args.shards, parse_shape),
        "chunks": per_array("--chunks", args.chunks, parse_shape),
        "codecs": per_array("--codecs", args.codecs, parse_codecs),
    }
    print(f"converting {args.src} -> {args.dst}", flush=True)
    spelling = OVERWRITE_OPTION.set("--overwrite")  # the flag the user typed, in every message that names it
    try:
        with scheduler(args.scheduler):
            summary = convert(
                args.src,
                args.dst,
                overwrite=args.overwrite,
                progress=not args.quiet,
                storage_options=storage_options(args),
                dst_storage_options=dst_options,
                **settings,
            )
    finally:
        OVERWRITE_OPTION.reset(spelling)
    print(
        f"converted {summary.arrays} array{'s' * (summary.arrays != 1)}: {summary.shards} shards, "
        f"{summary.copied} written and verified ({summary.nbytes / 1e6:.0f} MB)"
        + (f", {summary.skipped} verified by an earlier run and unchanged" if summary.skipped else "")
        + (
            f" ({summary.recopied} recorded by an earlier run had changed in DST or SRC: copied again)"
            if summary.recopied
            else ""
        )
        + "; consolidated metadata written"
    )
    for note in summary.notes:
        print(f"note: {note}")
    return 0


def per_array(option: str, values: list[str], parse: Callable[[str, str], T]) -> T | dict[str, T] | None:
    """``None``, one value for every array, or values by array path (``PATH=VALUE`` entries)."""
    if not values:
        return None
    split = [_split(value) for value in values]
    if all(path is None for path, _ in split) and len(split) == 1:
        return parse(option, split[0][1])
    if any(path is None for path, _ in split):
        raise ArgumentError(
            f"{option}: give one value for every array, or PATH=VALUE entries, not both: {values}"
        )
    return {str(path): parse(option, value) for path, value in split}


def _split(value: str) -> tuple[str | None, str]:
    if value.lstrip().startswith(("[", "{")) or "=" not in value:
        return None, value
    path, _, rest = value.partition("=")
    return path.strip("/"), rest


def parse_shape(option: str, value: str) -> tuple[int, ...]:
    """``"24,721,1440"`` as ``(24, 721, 1440)``."""
    try:
        return tuple(int(n) for n in value.split(","))
    except ValueError as exc:
        raise ArgumentError(
            f"{option} {value!r}: expected comma-separated integers, e.g. 24,721,1440"
        ) from exc


def parse_codecs(option: str, value: str) -> list[JSON]:
    """A JSON list of codecs (objects or names)."""
    try:
        codecs = json.loads(value)
    except ValueError as exc:
        raise ArgumentError(f"{option} {value!r}: not JSON ({exc})") from exc
    if not isinstance(codecs, list):
        raise ArgumentError(
            f'{option} {value!r}: expected a JSON list of codecs, e.g. ["bytes", "zstd", "crc32c"]'
        )
    return codecs


@contextlib.contextmanager
def scheduler(address: str | None) -> Iterator[None]:
    """A ``dask.distributed`` client of ``address`` while the convert runs (nothing when ``None``)."""
    if address is None:
        yield
        return
    from distributed import Client

    with Client(address):
        yield
