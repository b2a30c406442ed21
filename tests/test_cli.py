"""The `wsmode` command line: every area is there, and every usage error takes one shape:
`<prog>: <message>` as the last line on stderr, nothing on stdout, exit status 2
(harness/usage.py), whether the parser, a command's own check or a missing subcommand found it."""

from __future__ import annotations

import argparse
import io
import logging
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import build_parser
from harness.conformance.commands import tool_main as conformance_tool
from harness.traces.commands import tool_main as traces_tool
from harness.usage import usage_error
from tests.cli_run import run_cli

# in `wsmode --help` order
COMMANDS = [
    "serve",
    "certify",
    "check",
    "certify-client",
    "bench",
    "load",
    "record",
    "traces",
    "gate",
    "board",
    "results",
]


def test_every_area_registers_its_commands_in_order() -> None:
    parser = build_parser()
    (subparsers,) = (a for a in parser._actions if a.dest == "command")
    assert list(subparsers.choices) == COMMANDS  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ([], "wsmode: no subcommand given"),
        (["traces"], "wsmode traces: no subcommand given"),
        (["results"], "wsmode results: no subcommand given"),
        (["gate"], "wsmode gate: the following arguments are required: --baseline, --current"),
        (["serve", "--workers", "0"], "wsmode serve: argument --workers: must be >= 1, got 0"),
        (["serve", "--fault", "nonsense"], "wsmode serve: unknown fault(s): nonsense; known: "),
        (["bench", "--schedule", "sweep", "--sweep", "x"], "wsmode bench: --sweep: expected"),
        (["bench", "--traces", "/nonexistent"], "wsmode bench: /nonexistent: no such file"),
        (["load", "--processes", "0"], "wsmode load: --processes must be >= 1"),
        (
            ["certify", "--fault", "x", "--target", "ws://127.0.0.1:9/v1/responses"],
            "wsmode certify: --fault applies to the embedded reference server only",
        ),
        (["certify", "--merge", "/nonexistent.json"], "wsmode certify --merge: /nonexistent.json"),
        (
            ["record", "--upstream", "http://127.0.0.1:9", "--listen", "70000", "--out", "x"],
            "wsmode record: argument --listen: a port is 0-65535 (0 picks a free one), got 70000",
        ),
        (["traces", "generate", "--out", "g.jsonl", "--count", "0"], "wsmode traces generate: "),
        (
            ["traces", "convert", "--from", "chat", "/nonexistent", "--out", "x.jsonl"],
            "wsmode traces convert: /nonexistent: no such file or directory",
        ),
        (["traces", "generate", "--kind", "x"], "wsmode traces generate: argument --kind: invalid"),
        (
            ["gate", "--baseline", "/nonexistent.json", "--current", "/nonexistent.json"],
            "wsmode gate: /nonexistent.json: cannot read",
        ),
        (["board", "/nonexistent.json"], "wsmode board: /nonexistent.json: cannot read"),
        (["results", "show", "/nonexistent.json"], "wsmode results show: /nonexistent.json"),
    ],
)
def test_a_usage_error_is_one_line_on_stderr_and_exit_2(
    argv: list[str], line: str, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing a refused command might write lands in the checkout
    status, out, err = run_cli(argv, capsys)
    assert (status, out) == (2, ""), err
    assert err.splitlines()[-1].startswith(line), err
    assert list(tmp_path.iterdir()) == []


def test_check_says_each_unreadable_file_and_still_judges_the_others(
    tmp_path: Path, capsys: Any
) -> None:
    status, out, err = run_cli(["check", str(tmp_path / "none.jsonl")], capsys)
    assert (
        status == 2
        and err == f"wsmode check: {tmp_path / 'none.jsonl'}: No such file or directory\n"
    )
    assert out == "wsmode check: 0 responses in 0 files: 1 files unreadable\n"  # the tally


def test_a_missing_subcommand_shows_the_group_help_on_stderr(capsys: Any) -> None:
    status, out, err = run_cli(["results"], capsys)
    assert status == 2 and out == ""
    assert "list the results tree" in err and "summarize one results file" in err


def test_usage_error_keeps_the_message_on_one_line() -> None:
    err = io.StringIO()
    assert usage_error("wsmode x", "two\nlines  and   spaces", usage="usage: x\n", err=err) == 2
    assert err.getvalue() == "usage: x\nwsmode x: two lines and spaces\n"


def test_the_maintainers_tools_run_from_their_commands_module(capsys: Any) -> None:
    assert conformance_tool(["catalog"]) == 0
    assert "| category | MUST | SHOULD | MAY | total |" in capsys.readouterr().out
    for tool in (conformance_tool, traces_tool):
        with pytest.raises(SystemExit) as info:
            tool([])
        assert info.value.code == 2
        assert "the following arguments are required: TOOL" in capsys.readouterr().err


# -- help and version -----------------------------------------------------------------------------
def parsers(parser: argparse.ArgumentParser, path: str = "wsmode") -> Iterator[tuple[str, Any]]:
    """Every parser of the command line (commands, groups, actions), with its command path."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def help_text() -> str:
    """All of `wsmode ... --help`, every command's."""
    return "\n".join(parser.format_help() for _, parser in parsers(build_parser()))


def test_every_option_has_help_and_says_its_default() -> None:
    missing, no_default = [], []
    for path, parser in parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            name = f"{path} {'/'.join(action.option_strings) or action.dest}"
            if not action.help:
                missing.append(name)
                continue
            shown = formatter._get_help_string(action)
            meaningful = action.default not in (None, False, [], argparse.SUPPRESS)
            flag = isinstance(action, argparse._StoreConstAction | argparse._HelpAction)
            if action.option_strings and meaningful and not flag and "default" not in shown:
                no_default.append(name)
    assert missing == [] and no_default == []
    assert len(list(parsers(build_parser()))) > 12  # every command, group and action


def test_help_names_one_environment_variable_and_no_machine_path() -> None:
    text = help_text()
    assert "$WSMODE_API_KEY" in text and "WSMODE_API_KEYS" not in text
    assert str(Path(__file__).resolve().parents[1]) not in text  # no checkout path as a default


def test_version(capsys: Any) -> None:
    status, out, err = run_cli(["--version"], capsys)
    assert status == 0 and err == ""
    assert re.fullmatch(r"wsmode \S+ \((commit [0-9a-f]{12}, )?Python \d+\.\d+\.\d+\)\n", out)


def test_a_users_mistake_is_one_line_not_a_traceback(capsys: Any, tmp_path: Path) -> None:
    for argv, start in (
        (["bench", "--profile", "nosuch"], "wsmode bench: --profile: unknown profile 'nosuch'"),
        (["load", "--profile", "nosuch"], "wsmode load: --profile: unknown profile 'nosuch'"),
        (["serve", "--profile", "nosuch"], "wsmode serve: unknown profile 'nosuch'"),
        (["serve", "--port", "99999"], "wsmode serve: argument --port: a port is 0-65535"),
        (["load", "--duration-s", "-1"], "wsmode load: duration must be > 0 s"),  # no server
        (["bench", "--engine-metrics", "x"], "wsmode bench: --engine-metrics: expected an http"),
    ):
        status, out, err = run_cli(argv, capsys)
        assert (status, out) == (2, ""), err
        assert err.splitlines()[-1].startswith(start), err
        assert "Traceback" not in err and "starting" not in err, err
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["serve", "--port", str(port), "--data-dir", str(tmp_path)]
        try:
            status, out, err = run_cli(argv, capsys)
        finally:  # serve routes the process's logging to its stderr: give it back
            root.handlers[:] = handlers
            root.setLevel(level)
    assert status == 2 and err == (
        f"wsmode serve: 127.0.0.1:{port} is in use (errno 98): stop what listens there, or "
        "pick another port (--port 0 picks a free one)\n"
    )
