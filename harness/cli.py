"""The `wsmode` command line: one subcommand per product area.

Each area owns its subcommands in a `commands.py` module exposing `register(subparsers)`; this
module only assembles them, so adding a command never means editing a central switch. The areas
are imported here, plainly: one that fails to import fails the command line, with its error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from harness.conformance import commands as conformance_commands
from harness.load import commands as load_commands
from harness.report import commands as report_commands
from harness.traces import commands as traces_commands
from harness.usage import CommandParser, usage_error
from reference_server import commands as server_commands

# Areas in the order their commands appear in `wsmode --help`.
_COMMAND_AREAS = (
    server_commands,
    conformance_commands,
    load_commands,
    traces_commands,
    report_commands,
)


def build_parser() -> CommandParser:
    parser = CommandParser(
        prog="wsmode",
        description="Benchmark and conformance harness for the Responses API WebSocket mode.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for area in _COMMAND_AREAS:
        area.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:  # no command, or a command group (`wsmode traces`) without its action
        group = getattr(args, "group", parser)
        return usage_error(group.prog, "no subcommand given", usage=group.format_help())
    result: int = handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
