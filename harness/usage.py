"""Usage errors: the one way a command says its input is bad; and the settings read from the
environment, one name each across commands.

`<prog>: <message>` on one line on stderr (after the parser's usage or help, when given), exit
status 2, whatever found the problem: the argument parser itself (`CommandParser`: a missing,
unknown or malformed argument), a command's own checks, a missing subcommand, or a target that
cannot be used before the run starts (harness.transport.target_check's one line). Shared by
every layer (tests/test_layering.py): the bench and the recorder check their input below the
CLI.

Every flag's help says its default (`HelpFormatter`; a declared option's, harness.options, says
the field's); a description written with line breaks is kept as written (a usage block), one
without them is wrapped.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Final, NoReturn, TextIO

from harness.options import shown_default

EXIT_USAGE: Final = 2

#: The API key setting: the key a client command sends (bench, load, certify: the first, if
#: several are given) and the keys `wsmode serve` accepts (comma-separated).
API_KEY_ENV: Final = "WSMODE_API_KEY"
#: Old names that still work, each with a deprecation note on stderr: old -> current.
DEPRECATED_ENV: Final = {"WSMODE_API_KEYS": API_KEY_ENV}


def usage_error(prog: str, message: str, *, usage: str = "", err: TextIO | None = None) -> int:
    """Write `usage` then `<prog>: <message>` (on one line, whatever the message) to `err`
    (default stderr); returns the exit status of a usage error, 2."""
    stream = err if err is not None else sys.stderr
    stream.write(f"{usage}{prog}: {' '.join(message.split())}\n")
    return EXIT_USAGE


def env_setting(name: str, *, err: TextIO | None = None) -> str | None:
    """The environment's value of the setting `name` (None when unset or empty); an old name
    still set (and the new one not) is used, with a deprecation note on stderr."""
    value = os.environ.get(name)
    if value:
        return value
    for old, new in DEPRECATED_ENV.items():
        if new == name and os.environ.get(old):
            stream = err if err is not None else sys.stderr
            stream.write(f"wsmode: ${old} is deprecated: set ${name} instead\n")
            return os.environ[old]
    return None


def client_api_key(given: str | None) -> str | None:
    """The key a client command sends: `--api-key`, else the first of $WSMODE_API_KEY."""
    if given:
        return given
    value = env_setting(API_KEY_ENV)
    return value.split(",")[0].strip() or None if value else None


# help, version and flags (on or off: no value to show)
_NO_DEFAULT_SHOWN: Final = (
    argparse._HelpAction,
    argparse._VersionAction,
    argparse._StoreConstAction,
)


class HelpFormatter(argparse.HelpFormatter):
    """Each option's help ends with its default (unless it says it already, or there is none
    worth saying: None, False, an empty list); descriptions with line breaks are kept as
    written, others wrapped."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is argparse.SUPPRESS  # a declared option's help says it (options.py)
            or isinstance(action, _NO_DEFAULT_SHOWN)
            or not action.option_strings
        ):
            return text
        shown = shown_default(default)
        if shown is None:
            return text
        return f"{text} (default: {shown})" if text else f"(default: {shown})"

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text.strip():
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose own errors go through `usage_error` (its subparsers too: argparse
    builds them with the parent's class), and whose help says every default."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        sys.exit(usage_error(self.prog, message, usage=self.format_usage()))
