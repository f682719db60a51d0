"""The ``zarr3`` command: look inside, check and try out Zarr v3 stores.

Every store argument is a path or any fsspec URL (``s3://bucket/x.zarr``,
``https://...``, ``memory://...``); credentials and endpoints go in
``--storage-option KEY=VALUE`` (repeatable; values are read as JSON when
they parse, e.g. ``anon=true``) or ``--storage-options-file FILE.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..validate import describe_error
from . import check, convert, demo, info

DESCRIPTION = "Inspect, validate, convert and try out Zarr v3 stores."
EPILOG = (
    "STORE is a path or an fsspec URL (s3://bucket/x.zarr, https://..., memory://...). "
    "Pass credentials and endpoints with --storage-option key=value or --storage-options-file. "
    "Run 'zarr3 COMMAND --help' for a command's options."
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 problems or errors, 2 usage)."""
    args = build_parser().parse_args(argv)
    try:
        status = int(args.run(args))
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # the reader went away (``zarr3 info ... | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("zarr3: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"zarr3: error: {one_line(exc)}", file=sys.stderr)
        return 1


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line, prefixed with its type unless it is one of ours."""
    return " ".join(describe_error(exc).split()) or type(exc).__name__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zarr3", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"zarr3 (zarr3_backend) {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback on errors"
    )
    store_options = argparse.ArgumentParser(add_help=False, parents=[common])
    store_options.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="storage_option",
        help="an fsspec option for the store, e.g. endpoint_url=http://localhost:9000 or anon=true "
        "(repeatable; values are parsed as JSON when possible)",
    )
    store_options.add_argument(
        "--storage-options-file",
        metavar="FILE.json",
        help="a JSON object of fsspec options (--storage-option entries override it)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    info.add_commands(commands, store_options)
    check.add_command(commands, store_options)
    convert.add_command(commands, store_options)
    demo.add_command(commands, common)
    return parser
