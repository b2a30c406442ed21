"""`wsmode certify`: run the conformance suites (pytest) against targets, or merge reports.

    wsmode certify                                   # the embedded reference server
    wsmode certify --target ws://HOST:PORT/v1/responses [--http-target URL] [--api-key KEY]
                   [--target-profile FILE] [--model MODEL] [--auth] [--strict]
                   [-k '5.2 and not lanes'] [--full-wire-log]
    wsmode certify --target-profile a.toml --target-profile b.toml   # several targets: a matrix
    wsmode certify --fault cache-fifo                # the reference server with a fault on
    wsmode certify --merge r1/report.json r2/report.json [--out DIR] # one matrix from reports

Exit status: 0 when every MUST case passed (and every SHOULD with --strict), 1 otherwise,
2 for usage errors. Reports go to <results>/certify/<target>/<timestamp>/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.bundled import suites_dir
from harness.usage import EXIT_USAGE, CommandParser, usage_error

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
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--client", metavar="NAME", help="a bundled client profile (suites/clients)")
    who.add_argument("--adapter", metavar="COMMAND", help="an adapter command (shell words)")
    parser.add_argument("--name", default=None, help="--adapter: the client's name in reports")
    parser.add_argument("--version-label", default=None, metavar="V", help="the client's version")
    parser.add_argument("-k", dest="keyword", default=None, metavar="EXPR", help="select cases")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--matrix", action="store_true", help="only re-render the client matrix")
    parser.add_argument("--jobs", type=int, default=1, help="cases run side by side (default 1)")
    parser.add_argument(
        "--slow-ttft-s", type=float, default=20.0, help="the slow-TTFT case's first-token delay"
    )
    parser.add_argument(
        "--lifetime-s", type=float, default=1.0, help="the shortened connection lifetime"
    )
    parser.add_argument(
        "--case-timeout-s", type=float, default=30.0, help="each case's bound beyond its waits"
    )
    parser.add_argument("--strict", action="store_true", help="NON-STRICT verdicts fail the run")
    parser.add_argument("--results", default="results", metavar="DIR", help="results root")
    parser.add_argument("--label", default="certify-client")
    parser.add_argument("--no-report", action="store_true", help="write no report files")
    parser.add_argument("--full-wire-log", action="store_true", help="keep every frame")
    parser.set_defaults(handler=certify_client_main)


def certify_client_main(args: argparse.Namespace) -> int:
    import shlex

    from harness.conformance.clients import certify
    from harness.conformance.clients.catalogue import Timings
    from harness.conformance.clients.profiles import (
        ClientProfileError,
        client_from_profile,
        load_profile,
    )
    from harness.conformance.clients.runner import ClientUnderTest, select_cases

    results_root = Path(args.results)
    if args.list:
        print(certify.case_list())
        return 0
    if args.matrix:
        certify.print_matrix(results_root / "clients")
        return 0
    cases = select_cases(args.keyword)
    if not cases:
        return usage_error(CERTIFY_CLIENT, f"no case matches -k {args.keyword!r} (see --list)")
    if args.jobs < 1 or args.slow_ttft_s <= 0 or args.lifetime_s <= 0 or args.case_timeout_s <= 0:
        return usage_error(CERTIFY_CLIENT, "--jobs and the times must be positive")
    if args.adapter:
        command = tuple(shlex.split(args.adapter))
        if not command:
            return usage_error(CERTIFY_CLIENT, "--adapter needs a command")
        client = ClientUnderTest(args.name or Path(command[-1]).stem, command, args.version_label)
    elif args.client:
        try:
            client = client_from_profile(load_profile(args.client))
        except ClientProfileError as exc:
            return usage_error(CERTIFY_CLIENT, str(exc))
    else:
        return usage_error(CERTIFY_CLIENT, "name a --client or an --adapter (or --list)")
    timings = Timings(
        slow_ttft_s=args.slow_ttft_s, lifetime_s=args.lifetime_s, case_timeout_s=args.case_timeout_s
    )
    return certify.certify(
        client,
        cases,
        timings,
        jobs=args.jobs,
        strict=args.strict,
        results_root=None if args.no_report else results_root,
        label=args.label,
        full_wire_log=args.full_wire_log,
    )


def _register_check(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check",
        help="judge recorded Responses traffic offline (JSONL, SSE, wire logs, cassettes)",
        description=CHECK_DOC,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="recorded traffic to judge (or a directory of it)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.set_defaults(handler=check_main)


CHECK_DOC = """Judge recorded traffic with the protocol core's rules, without a live target.

    wsmode check capture.jsonl                 # one JSON event per line
    wsmode check body.sse report.json          # raw SSE text; a certify report's wire logs
    wsmode check --json cassette.yaml          # VCR cassettes (PyYAML); machine-readable output
    wsmode check capture.har record.json       # HAR, go-vcr, Ruby VCR, Azure test-proxy records

Each response (split at response.created, or response.queued when no created precedes it) gets
a verdict and its findings: level, rule id, the offending event's position, how many events
shared the cause. Exit status: 0 clean, 1 on a MUST finding, 2 on unreadable input.
"""


def check_main(args: argparse.Namespace) -> int:
    import json
    from collections import Counter

    from harness.conformance.offline_check import (
        UnreadableInput,
        check_file,
        expand_inputs,
        render_text,
    )

    try:
        files = expand_inputs(list(args.files))
    except UnreadableInput as exc:
        return usage_error(CHECK, str(exc))
    reports, unreadable = [], []
    for path in files:
        try:
            reports.append(check_file(path))
        except UnreadableInput as exc:  # said now, the others still judged; exit status 2
            unreadable.append(str(exc))
            usage_error(CHECK, str(exc))
    if args.json:
        document = {"files": [r.as_dict() for r in reports], "unreadable": unreadable}
        print(json.dumps(document, indent=2))
    else:
        for report in reports:
            print("\n".join(render_text(report)))
        verdicts = Counter(r.verdict for report in reports for r in report.responses)
        tally = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
        skipped = sum(report.skipped for report in reports)
        parts = [tally] if tally else []
        if skipped:
            parts.append(f"{skipped} interactions skipped (not Responses traffic)")
        print(
            f"wsmode check: {sum(verdicts.values())} responses in {len(reports)} files"
            + (f": {'; '.join(parts)}" if parts else "")
        )
    if unreadable:
        return EXIT_USAGE
    return 1 if any(r.must_findings for r in reports) else 0


def _register_certify(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "certify",
        help="run the conformance suites against a target (default: the reference server)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(handler=main)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="URL",
        help="WebSocket URL (repeatable); default: the embedded reference server",
    )
    parser.add_argument("--http-target", action="append", default=[], metavar="URL")
    parser.add_argument("--api-key", action="append", default=[], metavar="KEY")
    parser.add_argument(
        "--target-profile",
        action="append",
        default=[],
        metavar="FILE",
        help="target profile TOML (repeatable; see suites/targets/)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="run the embedded reference server with this fault on (repeatable)",
    )
    parser.add_argument("--strict", action="store_true", help="SHOULD failures fail the run too")
    parser.add_argument("--event-timeout", type=float, default=None, metavar="S")
    parser.add_argument(
        "--response-timeout",
        type=float,
        default=None,
        metavar="S",
        help="longest one response may stream before its terminal event (default: the "
        "profile's, 25 s)",
    )
    parser.add_argument("--case-timeout", type=float, default=None, metavar="S")
    parser.add_argument("--results", default="results", metavar="DIR", help="results root")
    parser.add_argument("--label", default="certify")
    parser.add_argument("--no-report", action="store_true", help="write no report files")
    parser.add_argument(
        "-k",
        dest="keyword",
        default=None,
        metavar="EXPR",
        help="select cases by id, category or level (-k '5.2 and not lanes'); never the target",
    )
    parser.add_argument(
        "--model",
        default=None,
        metavar="MODEL",
        help="the model every request names (default: the target profile's; shown in reports)",
    )
    parser.add_argument(
        "--auth",
        action="store_true",
        help="the target refuses a missing or wrong key: run the auth cases (--api-key only "
        "sends the key)",
    )
    parser.add_argument(
        "--full-wire-log",
        action="store_true",
        help="keep every frame in every case (default: delta runs of passing cases collapsed)",
    )
    parser.add_argument("--suites", type=Path, default=SUITES_DIR, help="the suites directory")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    parser.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="REPORT",
        help="render one cases × implementations matrix from report.json files (no run)",
    )
    parser.add_argument("--out", type=Path, default=None, help="--merge: output directory")


def pytest_arguments(args: argparse.Namespace) -> list[str]:
    targets = list(args.target)
    if args.fault:
        if any(not t.startswith("embedded") for t in targets):
            raise ValueError("--fault applies to the embedded reference server only")
        faults = ",".join(args.fault)
        targets = [f"embedded:{faults}"] if not targets else [f"{t}:{faults}" for t in targets]
    argv = [str(args.suites), "-p", "no:cacheprovider", "-v" if args.verbose else "-q"]
    for option, values in (
        ("--target", targets),
        ("--http-target", args.http_target),
        ("--api-key", args.api_key),
        ("--target-profile", args.target_profile),
    ):
        for value in values:
            argv += [option, str(value)]
    if args.strict:
        argv.append("--wsmode-strict")
    if args.event_timeout is not None:
        argv += ["--event-timeout", str(args.event_timeout)]
    if args.response_timeout is not None:
        argv += ["--response-timeout", str(args.response_timeout)]
    if args.case_timeout is not None:
        argv += ["--case-timeout", str(args.case_timeout)]
    if args.no_report:
        argv.append("--wsmode-no-report")
    argv += ["--wsmode-results", str(args.results), "--wsmode-label", args.label]
    if args.keyword:
        argv += ["--wsmode-cases", args.keyword]
    if args.model:
        argv += ["--wsmode-model", args.model]
    if args.auth:
        argv.append("--wsmode-auth")
    if args.full_wire_log:
        argv.append("--wsmode-full-wire-log")
    return argv


def merge(paths: list[str], out: Path | None, results_root: str) -> int:
    from harness.conformance.reports import render_matrix_markdown, terminal_matrix, write_matrix
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
    if args.merge:
        return merge(list(args.merge), args.out, args.results)
    try:
        import pytest
    except ImportError:
        return usage_error(CERTIFY, "needs pytest: pip install 'wsmode[test]'")
    if not Path(args.suites).is_dir():
        return usage_error(CERTIFY, f"no suites directory at {args.suites}")
    try:
        argv = pytest_arguments(args)
    except ValueError as exc:
        return usage_error(CERTIFY, str(exc))
    code = int(pytest.main(argv))
    return code if code in (0, 1) else 2


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
    from harness.conformance.cases import CATALOG
    from harness.conformance.catalog import load_suites, render, write

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
