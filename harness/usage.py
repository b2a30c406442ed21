"""Usage errors: the one way a command says its input is bad.

`<prog>: <message>` on one line on stderr (after the parser's usage or help, when given), exit
status 2, whatever found the problem: the argument parser itself (`CommandParser`: a missing,
unknown or malformed argument), a command's own checks, or a missing subcommand. Shared by every
layer (tests/test_layering.py): the bench and the recorder check their input below the CLI.
"""

from __future__ import annotations

import argparse
import sys
from typing import Final, NoReturn, TextIO

EXIT_USAGE: Final = 2


def usage_error(prog: str, message: str, *, usage: str = "", err: TextIO | None = None) -> int:
    """Write `usage` then `<prog>: <message>` (on one line, whatever the message) to `err`
    (default stderr); returns the exit status of a usage error, 2."""
    stream = err if err is not None else sys.stderr
    stream.write(f"{usage}{prog}: {' '.join(message.split())}\n")
    return EXIT_USAGE


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose own errors go through `usage_error` (its subparsers too: argparse
    builds them with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        sys.exit(usage_error(self.prog, message, usage=self.format_usage()))
