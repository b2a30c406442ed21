"""The `wsmode` command line: one subcommand per product area.

Each area owns its subcommands in a `commands.py` module exposing `register(subparsers)`; this
module only assembles them, so adding a command never means editing a central switch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Areas in the order their commands appear in `wsmode --help`.
_COMMAND_MODULES = (
    "reference_server.commands",
    "harness.conformance.commands",
    "harness.load.commands",
    "harness.traces.commands",
    "harness.report.commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wsmode",
        description="Benchmark and conformance harness for the Responses API WebSocket mode.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:  # a real import error inside the module
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    result: int = handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
