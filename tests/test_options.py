"""Options declared once (harness.options): the declaration builds the parser and fills the
config; the commands hold to it."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.options import (
    DECLARED_ATTR,
    Alternative,
    add_options,
    add_pytest_options,
    cli,
    declared,
    from_args,
    from_pytest,
    help_text,
    nested,
    positive_float,
    positive_int,
)
from harness.usage import CommandParser

_STATES_A_DEFAULT = re.compile(r"\(default|default\s*[:=%0-9]|by default|defaults to", re.I)
# The commands whose every option is a declaration (a field of the config it fills).
DECLARED_COMMANDS = ("serve", "bench", "load", "certify", "certify-client")


@dataclass(frozen=True)
class Inner:
    depth: int = field(
        default=1, metadata=cli("--depth", dest="inner_depth", type=positive_int, help="depth")
    )


@dataclass(frozen=True)
class Sample:
    port: int = field(default=8000, metadata=cli("--port", type=int, group="net", help="port"))
    keys: tuple[str, ...] = field(
        default=(), metadata=cli("--key", action="append", help="a key (repeatable)")
    )
    fast: bool = field(default=False, metadata=cli("--fast", action="store_true", help="fast"))
    websocket: bool = field(
        default=True, metadata=cli("--no-websocket", action="store_false", help="no ws")
    )
    script: bool | None = field(
        default=None,
        metadata=cli(
            "--script",
            action="store_const",
            const=True,
            help="send the script",
            alternatives=[Alternative("--no-script", False, "do not")],
        ),
    )
    per_kind: int | None = field(
        default=3, metadata=cli("--per-kind", type=int, to_field=lambda n: n or None, help="n")
    )
    scale: float = field(default=1.5, metadata=cli("--scale", type=positive_float, help="x"))
    inner: Inner = field(default_factory=Inner, metadata=nested("deep"))
    salt: str = "not an option"
    pattern: str | None = field(default=None, metadata=cli("-k", dest="keyword", help="select"))


def _parse(*argv: str) -> Sample:
    parser = CommandParser(prog="sample")
    add_options(parser, Sample)
    return from_args(Sample, parser.parse_args(list(argv)))


def test_defaults_come_from_the_fields() -> None:
    assert _parse() == Sample()


def test_given_values_fill_the_fields_converted() -> None:
    sample = _parse("--port", "1", "--key", "a", "--key", "b", "--fast", "--no-websocket")
    assert (sample.port, sample.keys, sample.fast, sample.websocket) == (1, ("a", "b"), True, False)
    assert _parse("--per-kind", "0").per_kind is None
    assert _parse("--depth", "4").inner == Inner(4)
    assert _parse("--no-script").script is False
    assert _parse("--script").script is True


def test_overrides_win_and_fill_fields_that_are_no_option() -> None:
    parser = CommandParser(prog="sample")
    add_options(parser, Sample)
    sample = from_args(Sample, parser.parse_args(["--port", "2"]), port=3, salt="x")
    assert (sample.port, sample.salt) == (3, "x")


def test_alternatives_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parse("--script", "--no-script")
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_bad_value_is_a_usage_error_naming_the_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        _parse("--depth", "0")
    assert "--depth: must be >= 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _parse("--scale", "nan")
    assert "--scale: not a finite number" in capsys.readouterr().err


def test_help_says_each_default_once_from_the_field() -> None:
    parser = CommandParser(prog="sample")
    add_options(parser, Sample)
    text = " ".join(parser.format_help().split())
    assert "port (default: 8000)" in text
    assert "x (default: 1.5)" in text
    assert "fast (default" not in text  # a switch has no default worth saying
    assert "deep:" in text and "net:" in text  # the groups, the nested one's too


def test_a_pytest_plugin_reads_the_same_table_under_one_prefix() -> None:
    class Group:  # pytest's OptionGroup.addoption takes argparse's arguments
        def __init__(self) -> None:
            self.parser = argparse.ArgumentParser()

        def addoption(self, *opts: str, **attrs: object) -> None:
            self.parser.add_argument(*opts, **attrs)  # type: ignore[arg-type]

    group = Group()
    add_pytest_options(group, Sample)
    parsed = group.parser.parse_args(["--wsmode-port", "9", "--wsmode-no-script"])

    class Config:  # pytest's Config.getoption
        def getoption(self, name: str, default: object = None) -> object:
            return getattr(parsed, name, default)

    sample = from_pytest(Sample, Config())
    assert (sample.port, sample.script, sample.inner) == (9, False, Inner())


@dataclass(frozen=True)
class Who:
    client: str | None = field(default=None, metadata=cli("--client", exclusive="who", help="c"))
    adapter: str | None = field(default=None, metadata=cli("--adapter", exclusive="who", help="a"))


def test_exclusive_options_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    parser = CommandParser(prog="who")
    add_options(parser, Who)
    assert from_args(Who, parser.parse_args(["--adapter", "x"])) == Who(adapter="x")
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--client", "c", "--adapter", "a"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


class _SamplePlugin:
    """A pytest plugin on the Sample table: what a real pytest run parses."""

    def __init__(self) -> None:
        self.samples: list[Sample] = []

    def pytest_addoption(self, parser: pytest.Parser) -> None:
        add_pytest_options(parser.getgroup("sample"), Sample)

    def pytest_configure(self, config: pytest.Config) -> None:
        self.samples.append(from_pytest(Sample, config))


def test_a_real_pytest_run_fills_the_table_from_its_options(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing() -> None:\n    pass\n")
    base = [str(tmp_path), "-q", "-p", "no:cacheprovider", "-c", os.devnull]
    plugin = _SamplePlugin()
    given = ["--wsmode-key", "a", "--wsmode-key", "b", "--wsmode-fast", "--wsmode-no-script"]
    given += ["--wsmode-keyword", "ping", "--wsmode-depth", "2", "--wsmode-no-websocket"]
    assert pytest.main([*base, *given], plugins=[plugin]) == 0
    assert pytest.main(base, plugins=[plugin]) == 0
    first, second = plugin.samples
    assert (first.keys, first.fast, first.script, first.pattern) == (
        ("a", "b"),
        True,
        False,
        "ping",
    )
    assert (first.inner, first.websocket, first.port) == (Inner(2), False, 8000)
    assert second == Sample()  # nothing given: every field's default


def _subcommand(name: str) -> argparse.ArgumentParser:
    subparsers = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    parser: argparse.ArgumentParser = subparsers.choices[name]
    return parser


@pytest.mark.parametrize("command", DECLARED_COMMANDS)
def test_every_option_of_the_command_is_declared(command: str) -> None:
    by_hand = [
        "/".join(action.option_strings) or action.dest
        for action in _subcommand(command)._actions
        if not isinstance(action, argparse._HelpAction) and not hasattr(action, DECLARED_ATTR)
    ]
    assert by_hand == [], f"wsmode {command}: options added by hand, not declared"


@pytest.mark.parametrize("command", DECLARED_COMMANDS)
def test_no_declared_help_states_its_default_by_hand(command: str) -> None:
    """The default is the field's: help that says one itself says it a second time."""
    for action in _subcommand(command)._actions:
        if hasattr(action, DECLARED_ATTR):
            stated = (action.help or "").split(" (default: ")[0]
            assert not _STATES_A_DEFAULT.search(stated), f"{action.option_strings}: {action.help}"


def test_declared_yields_nested_options_in_their_group() -> None:
    groups = {item.name: option.group for item, option in declared(Sample)}
    assert groups["depth"] == "deep" and groups["port"] == "net"
    assert "salt" not in groups and "inner" not in groups


def test_help_text_uses_the_shown_default_when_given() -> None:
    item, option = next((i, o) for i, o in declared(Sample) if i.name == "port")
    assert help_text(item, option) == "port (default: 8000)"
