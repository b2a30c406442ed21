"""`wsmode certify`: run the conformance suites (pytest) against targets, or merge reports.

    wsmode certify                                   # the embedded reference server
    wsmode certify --target-profile openai           # a bundled profile (see --profiles)
    wsmode certify --target ws://HOST:PORT/v1/responses [--http-target URL] [--api-key KEY]
                   [--target-profile NAME|FILE] [--model MODEL] [--auth] [--strict]
                   [-k '5.2 and not lanes'] [--full-wire-log] [-v]
    wsmode certify --list [-k EXPR]                  # the case catalogue: id, level, needs, what
    wsmode certify --profiles                        # the bundled target profiles
    wsmode certify --target-profile a.toml --target-profile b.toml   # several targets: a matrix
    wsmode certify --fault cache-fifo                # the reference server with a fault on
    wsmode certify --merge r1/report.json r2/report.json [--out DIR] # one matrix from reports

Each remote target is checked before the run (connect, upgrade, one plain create): one that is
not there stops the run with one line. The console shows one line per case that did not pass
(every case with -v), one block per failure, and the summary last. A run without a target
profile cannot run the cases that need a declared capability: it says how many MUST cases it
left out, and its certificate is marked partial.

Exit status: 0 when every MUST case passed (and every SHOULD with --strict), 1 otherwise,
2 for usage errors and a target that cannot be reached. Reports go to
<results>/certify/<target>/<timestamp>/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.bundled import suites_dir
from harness.conformance.runner.certify_config import CASES, OUTPUT, CertifyConfig
from harness.errors import UsageError
from harness.options import add_options, cli, from_args
from harness.usage import CommandParser, usage_error

if TYPE_CHECKING:
    from harness.conformance.check.offline_check import ResponseVerdict
    from harness.conformance.model.verdict import CaseMeta

SUITES_DIR = suites_dir()
# the commands their usage errors name
CERTIFY, MERGE, CHECK = "wsmode certify", "wsmode certify --merge", "wsmode check"
CERTIFY_CLIENT = "wsmode certify-client"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_certify(subparsers)
    _register_check(subparsers)
    _register_certify_client(subparsers)


CERTIFY_CLIENT_DOC = """Certify a client (SDK, agent, CLI) of WebSocket mode.

Per case, a reference server plays a scripted behaviour (an upgrade refused, a socket dropped
mid-stream, an error in an odd shape, a slow first token, ...) and the client, driven by an
adapter, is judged from what the server saw and what its caller was told.

    wsmode certify-client --client openai-python         # a bundled adapter (suites/clients/)
    wsmode certify-client --adapter "node my-adapter.mjs" --name my-client
    wsmode certify-client --client openai-python -k upgrade --jobs 2
    wsmode certify-client --list                         # the cases, with levels and sources
    wsmode certify-client --matrix                       # re-render results/clients/MATRIX.md

The adapter contract (environment, JSON task on stdin, JSON lines on stdout) is in
suites/clients/README.md. Certificates go to <results>/clients/<client>/<timestamp>/
(report.json/html/md, junit.xml), and results/clients/MATRIX.md is re-rendered.
Exit status: 0 when no case is FAIL or ERROR (with --strict, none NON-STRICT), 1 otherwise,
2 for usage errors (an unknown client, a client that is not installed).
"""


def _register_certify_client(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "certify-client",
        help="certify a client of WebSocket mode against scripted server behaviours",
        description=CERTIFY_CLIENT_DOC,
    )
    from harness.conformance.clients.client_config import CertifyClientConfig

    add_options(parser, CertifyClientConfig)
    parser.set_defaults(handler=certify_client_main)


def certify_client_main(args: argparse.Namespace) -> int:
    import shlex

    from harness.conformance.clients import certify
    from harness.conformance.clients.client_config import CertifyClientConfig
    from harness.conformance.clients.client_runner import ClientUnderTest, select_cases
    from harness.conformance.clients.profiles import (
        ClientProfileError,
        Places,
        client_from_profile,
        load_profile,
    )

    config = from_args(CertifyClientConfig, args)
    results_root = Path(config.results)
    if config.list_cases:
        print(certify.case_list())
        return 0
    if config.matrix:
        certify.print_matrix(results_root / "clients")
        return 0
    cases = select_cases(config.keyword)
    if not cases:
        return usage_error(CERTIFY_CLIENT, f"no case matches -k {config.keyword!r} (see --list)")
    timings = config.timings
    waits = (timings.slow_ttft_s, timings.lifetime_s, timings.case_timeout_s)
    if config.jobs < 1 or min(waits) <= 0:
        return usage_error(CERTIFY_CLIENT, "--jobs and the times must be positive")
    if config.adapter:
        command = tuple(shlex.split(config.adapter))
        if not command:
            return usage_error(CERTIFY_CLIENT, "--adapter needs a command")
        name = config.name or Path(command[-1]).stem
        client = ClientUnderTest(name, command, config.version_label)
    elif config.client:
        try:
            places = Places(venvs=config.venvs, node_clients=config.node_clients)
            client = client_from_profile(load_profile(config.client), places)
        except ClientProfileError as exc:
            return usage_error(CERTIFY_CLIENT, str(exc))
    else:
        return usage_error(CERTIFY_CLIENT, "name a --client or an --adapter (or --list)")
    return certify.certify(
        client,
        cases,
        timings,
        jobs=config.jobs,
        strict=config.strict,
        results_root=None if config.no_report else results_root,
        label=config.label,
        full_wire_log=config.full_wire_log,
    )


def _register_check(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check",
        help="judge recorded Responses traffic offline (JSONL, SSE, wire logs, cassettes)",
        description=CHECK_DOC,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(parser, CheckCommand)
    parser.set_defaults(handler=check_main)


@dataclass(frozen=True, slots=True)
class CheckCommand:
    """`wsmode check`'s options."""

    files: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "files",
            nargs="+",
            metavar="FILE",
            to_field=tuple,
            help="recorded traffic to judge (or a directory of it)",
        ),
    )
    json: bool = field(
        default=False,
        metadata=cli("--json", action="store_true", help="one JSON document on stdout"),
    )
    strict: bool = field(
        default=False,
        metadata=cli(
            "--strict",
            action="store_true",
            help="a file that cannot be read is fatal: exit status 2 whatever the others gave",
        ),
    )
    max_record_mib: int = field(
        default=64,
        metadata=cli(
            "--max-record-mib",
            type=int,
            metavar="MIB",
            help="the largest JSONL line or SSE event read (memory is bounded by it); a larger "
            "one makes its file unreadable",
        ),
    )


CHECK_DOC = """Judge recorded traffic with the protocol core's rules, without a live target.

    wsmode check capture.jsonl                 # one JSON event per line
    wsmode check body.sse report.json          # raw SSE text; a certify report's wire logs
    wsmode check --json cassette.yaml          # VCR cassettes (PyYAML); machine-readable output
    wsmode check capture.har record.json       # HAR, go-vcr, Ruby VCR, Azure test-proxy records
    wsmode check recordings/                   # every recorded file below a folder

Each response (split at response.created, or response.queued when no created precedes it) gets
a verdict and its findings: level, rule id, the offending event's position, how many events
shared the cause. With several files, each gets a line: read (its responses' verdicts) or
unreadable (why); one unreadable file never stops the others.

Exit status:
    0  every file read, no MUST finding
    1  every file read, a response FAILed (a MUST finding)
    2  nothing could be read (or a usage error); with --strict, any file that could not be read
    3  some files could not be read, and nothing that was read FAILed
    4  some files could not be read, and a response of another FAILed
"""


def _print_verdict(path: str) -> Callable[[ResponseVerdict], None]:
    from harness.conformance.check.offline_check import render_response

    def say(verdict: ResponseVerdict) -> None:
        print("\n".join(render_response(path, verdict)))

    return say


def check_main(args: argparse.Namespace) -> int:
    import json

    from harness.conformance.check.offline_check import (
        UnreadableInput,
        check_file,
        exit_status,
        expand_inputs,
        file_line,
        render_text,
        summary_line,
    )
    from harness.conformance.check.streaming_read import MIB, ReadLimits

    command = from_args(CheckCommand, args)
    if command.max_record_mib < 1:
        return usage_error(CHECK, f"--max-record-mib must be >= 1, got {command.max_record_mib}")
    limits = ReadLimits(max_record_bytes=command.max_record_mib * MIB)
    try:
        files = expand_inputs(list(command.files))
    except UnreadableInput as exc:
        return usage_error(CHECK, str(exc))
    reports, unreadable = [], {}
    for path in files:
        try:
            # Text: each streamed verdict printed as made, so memory stays flat (JSON keeps all).
            say = None if command.json else _print_verdict(path)
            reports.append(check_file(path, limits, say))
        except UnreadableInput as exc:  # said now, the others still judged
            unreadable[path] = str(exc)
            print(f"{CHECK}: {exc}", file=sys.stderr)
    if command.json:
        document = {
            "files": [r.as_dict() for r in reports],
            "unreadable": list(unreadable.values()),
            "exit_status": exit_status(reports, len(unreadable), strict=command.strict),
        }
        print(json.dumps(document, indent=2))
    else:
        for report in reports:
            print("\n".join(render_text(report)))
        if len(files) > 1 or any(Path(given).is_dir() for given in command.files):
            done = {r.path: r for r in reports}
            for path in files:
                print(file_line(path, done.get(path), unreadable.get(path)))
        print(summary_line(reports, len(unreadable)))
    return exit_status(reports, len(unreadable), strict=command.strict)


def _register_certify(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "certify",
        help="run the conformance suites against a target (default: the reference server)",
        description=__doc__,
    )
    add_certify_options(parser)
    parser.set_defaults(handler=main)


def add_certify_options(parser: argparse.ArgumentParser) -> None:
    add_options(parser, CertifyConfig, CertifyCommand)


@dataclass(frozen=True, slots=True)
class CertifyCommand:
    """What only `wsmode certify` on the command line does: list and describe, merge reports,
    run other suites, say every case. The run's own options are CertifyConfig's."""

    list_cases: bool = field(
        default=False,
        metadata=cli(
            "--list",
            action="store_true",
            group=CASES,
            help="print the case catalogue (with -k: the selection)",
        ),
    )
    profiles: bool = field(
        default=False,
        metadata=cli(
            "--profiles",
            action="store_true",
            group=CASES,
            help="list the bundled target profiles, one line each",
        ),
    )
    show_profile: str | None = field(
        default=None,
        metadata=cli(
            "--show-profile",
            metavar="NAME",
            group=CASES,
            help="print a bundled target profile's TOML, to start your own from "
            "(wsmode certify --show-profile openai > my-server.toml)",
        ),
    )
    suites: Path = field(
        default=SUITES_DIR,
        metadata=cli(
            "--suites",
            type=Path,
            group=CASES,
            shown="the bundled suites",
            help="the suites directory",
        ),
    )
    verbose: bool = field(
        default=False,
        metadata=cli(
            "-v",
            "--verbose",
            action="store_true",
            group=OUTPUT,
            help="one line per case, passed ones too",
        ),
    )
    merge: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "--merge",
            nargs="+",
            metavar="REPORT",
            group=OUTPUT,
            to_field=tuple,
            help="render one cases × implementations matrix from report.json files (no run)",
        ),
    )
    out: Path | None = field(
        default=None,
        metadata=cli(
            "--out", type=Path, metavar="DIR", group=OUTPUT, help="--merge: the output directory"
        ),
    )


def merge(paths: list[str], out: Path | None, results_root: str) -> int:
    from harness.conformance.certificates.documents import (
        render_matrix_markdown,
        terminal_matrix,
        write_matrix,
    )
    from harness.results.schema import ResultsSchemaError, load_result

    results = []
    for path in paths:
        try:
            result = load_result(path)
        except ResultsSchemaError as exc:
            return usage_error(MERGE, str(exc))
        if result["kind"] != "certify":
            return usage_error(MERGE, f"{path} is a {result['kind']} result")
        results.append(result)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    directory = out or Path(results_root) / "certify" / "_matrix" / stamp
    written = write_matrix(directory, results)
    print(render_matrix_markdown(results))
    print(terminal_matrix(results))
    for kind, written_path in written.items():
        print(f"  {kind:<6}{written_path}")
    return 0


def main(args: argparse.Namespace) -> int:
    config = from_args(CertifyConfig, args)
    command = from_args(CertifyCommand, args)
    if command.merge:
        return merge(list(command.merge), command.out, config.results)
    if command.profiles:
        return _list_profiles()
    if command.show_profile:
        return _show_profile(command.show_profile)
    try:
        import pytest  # noqa: F401  (the runner runs the suites with it)
    except ImportError:
        return usage_error(CERTIFY, "needs pytest: pip install 'wsmode[test]'")
    if not command.suites.is_dir():
        return usage_error(CERTIFY, f"no suites directory at {command.suites}")
    from harness.conformance.runner.certify_console import CertifyConsole
    from harness.conformance.runner.plugin import run_prepared
    from harness.conformance.runner.prepare import TargetUnreachable, prepare_run, select_cases

    try:
        if command.list_cases:
            return _list_cases(select_cases(command.suites, config.keyword))
        console = CertifyConsole(sys.stdout, verbose=command.verbose, strict=config.strict)
        prepared = prepare_run(config, command.suites, console=console)
    except (UsageError, TargetUnreachable) as exc:
        return usage_error(CERTIFY, str(exc))
    return run_prepared(prepared)


def _list_cases(cases: Sequence[CaseMeta]) -> int:
    """The catalogue, from the cases themselves: id, level, what it needs, what it checks."""
    from harness.conformance.model.verdict import CATEGORIES
    from harness.progress import MAX_COLUMNS

    width = max(len(c.id) for c in cases)
    lines = []
    for category, title in CATEGORIES.items():
        members = [c for c in cases if c.category == category]
        if not members:
            continue
        lines.append(f"{title} ({len(members)})")
        for meta in members:
            needs = f" [needs {', '.join(meta.requires)}]" if meta.requires else ""
            head = f"  {meta.id:<{width}}  {meta.level:<6}  "
            if len(head) > MAX_COLUMNS * 3 // 5:  # a very long id: the text on the next line
                lines.append(head.rstrip())
                head = " " * 4
            lines += textwrap.wrap(
                meta.title + needs,
                width=MAX_COLUMNS,
                initial_indent=head,
                subsequent_indent=" " * len(head),
            )
    levels = ", ".join(
        f"{sum(1 for c in cases if c.level == level)} {level}"
        for level in ("MUST", "SHOULD", "MAY")
    )
    lines.append(f"{len(cases)} cases: {levels}")
    print("\n".join(lines))
    return 0


def _show_profile(name: str) -> int:
    from harness.conformance.targets.profile import TargetProfileError, resolve_profile

    try:
        path = resolve_profile(name)
        text = path.read_text(encoding="utf-8")
    except (TargetProfileError, OSError) as exc:
        return usage_error(CERTIFY, str(exc))
    sys.stdout.write(text)
    return 0


def _list_profiles() -> int:
    """The bundled target profiles: the name --target-profile takes, where, what."""
    from harness.conformance.targets.profile import bundled_profiles
    from harness.progress import MAX_COLUMNS

    found = bundled_profiles()
    width = max(len(p.name) for _, p in found)
    for _, profile in found:
        where = "(embedded)" if profile.embedded else profile.ws_url
        print(f"{profile.name:<{width}}  {where}")
        for line in textwrap.wrap(profile.description, width=MAX_COLUMNS - width - 2):
            print(f"{'':<{width}}  {line}")
    print(
        "\n".join(
            textwrap.wrap(
                "--target-profile NAME uses one. To describe your own server, start from one: "
                "wsmode certify --show-profile openai > my-server.toml, then edit its URLs, "
                f"model and capabilities (the files: {suites_dir() / 'targets'})",
                width=MAX_COLUMNS,
                break_on_hyphens=False,
            )
        )
    )
    return 0


# -- the maintainers' tools: python -m harness.conformance.commands catalog|kill-matrix -----------
def tool_main(argv: Sequence[str] | None = None) -> int:
    """`python -m harness.conformance.commands catalog [--write README]` prints (or writes into
    suites/README.md) the case catalog; `... kill-matrix [--write-kill-matrix README] [--jobs N]
    [--fault NAME]` runs the kill matrix (exit 1 when it does not hold)."""
    from harness.conformance import killmatrix

    parser = CommandParser(prog="python -m harness.conformance.commands")
    tools = parser.add_subparsers(dest="tool", metavar="TOOL", required=True)
    catalog = tools.add_parser("catalog", help="the case catalog of the suites")
    catalog.add_argument("--write", type=Path, default=None, metavar="README")
    catalog.set_defaults(run=_catalog)
    matrix_doc = (killmatrix.__doc__ or "").split("\n")[0]
    matrix = tools.add_parser("kill-matrix", help=matrix_doc, description=matrix_doc)
    matrix.add_argument("--write-kill-matrix", type=Path, metavar="README", default=None)
    matrix.add_argument("--jobs", type=int, default=None)
    matrix.add_argument("--fault", action="append", default=None, metavar="NAME")
    matrix.set_defaults(run=_kill_matrix)
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status


def _catalog(args: argparse.Namespace) -> int:
    from harness.conformance.model.cases import CATALOG
    from harness.conformance.model.catalog import render, write
    from harness.conformance.runner.suite_loader import load_suites

    block = render(load_suites())
    if args.write is None:
        print(block)
    else:
        write(args.write, block)
        print(f"wrote {args.write} ({len(CATALOG)} cases)")
    return 0


def _kill_matrix(args: argparse.Namespace) -> int:
    from harness.conformance.killmatrix import check_matrix, render_table, run_matrix, write_table

    run = run_matrix(args.fault, jobs=args.jobs)
    table = render_table(run)
    print(table)
    problems = check_matrix(run)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    if args.write_kill_matrix is not None:
        write_table(args.write_kill_matrix, table)
        print(f"wrote {args.write_kill_matrix}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(tool_main())
