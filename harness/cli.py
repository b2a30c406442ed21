"""The `wsmode` command line: one subcommand per product area.

Each area owns its subcommands in a `commands.py` module exposing `register(subparsers)`; this
module only assembles them, so adding a command never means editing a central switch. The areas
are imported here, plainly: one that fails to import fails the command line, with its error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from harness.conformance import commands as conformance_commands
from harness.errors import WsmodeError
from harness.load import commands as load_commands
from harness.protocol.errors import LocalProtocolError
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


class _Version(argparse.Action):
    """`wsmode --version`: the version, the commit of a checkout, the Python running it."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from harness.results.machine import harness_commit, harness_version

        commit = harness_commit()
        where = f"commit {commit[:12]}, " if commit != "unknown" else ""
        print(f"wsmode {harness_version()} ({where}Python {platform.python_version()})")
        parser.exit()


def build_parser() -> CommandParser:
    parser = CommandParser(
        prog="wsmode",
        description="Benchmark and conformance harness for the Responses API WebSocket mode.",
        epilog="Every command has --help. Environment: $WSMODE_API_KEY, the API key (the key "
        "bench, load and certify send; the keys serve accepts, comma-separated).",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for area in _COMMAND_AREAS:
        area.register(subparsers)
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _stop_signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) stop a command as Ctrl-C does, so it stops what it
    started (the embedded server, client processes) on its way out; `serve` installs its own."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:  # no command, or a command group (`wsmode traces`) without its action
        group = getattr(args, "group", parser)
        return usage_error(group.prog, "no subcommand given", usage=group.format_help())
    prog = f"wsmode {args.command}"
    try:
        with _stop_signals_interrupt():
            result: int = handler(args)
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{prog}: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except LocalProtocolError:
        raise  # our own emitter broke the protocol: a bug of wsmode, its traceback helps
    except WsmodeError as exc:  # something wsmode detected and reports: one line
        return usage_error(prog, str(exc))
    except OSError as exc:  # the machine refused (a file, a port): one line
        where = f"{exc.filename}: " if exc.filename else ""
        return usage_error(prog, f"{where}{exc.strerror or exc}")
    return result


if __name__ == "__main__":
    sys.exit(main())
