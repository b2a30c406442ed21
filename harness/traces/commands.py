"""CLI commands of the trace area: `wsmode record`, `wsmode traces generate|validate|convert`
and `wsmode traces stats`."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.options import port_number
from harness.traces.format import TraceFormatError
from harness.usage import CommandParser, usage_error

#: The file `traces generate --count` writes when --out names a directory.
GENERATED_FILE_NAME = "generated.jsonl"
_TRACE_SUFFIXES = (".jsonl", ".jsonl.gz")
CONVERT = "wsmode traces convert"  # the command its usage errors name
#: `traces convert --from` choices and the Mooncake block size, spelled here so that the CLI does
#: not import every converter to build its parser (tests hold them equal to convert_cli's).
CONVERT_SOURCES = (
    "codex",
    "chat",
    "swe-agent",
    "openhands",
    "kvcache",
    "claude-code",
    "mooncake",
    "gemini-cli",
    "tracelab",
    "tau-bench",
)
MOONCAKE_BLOCK_TOKENS = 512


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from harness.traces.synthetic import generator as tracegen

    record = subparsers.add_parser(
        "record",
        help="record a live agent's traffic into a trace (WS + HTTP pass-through proxy)",
        description=(
            "Listen on 127.0.0.1:PORT, forward WebSocket and HTTP /v1/responses traffic to the "
            "upstream server and write what passed as a wsmode-trace file (one rollout per "
            "WebSocket connection or previous_response_id chain); with nothing recorded no "
            "file is written. Stop with Ctrl-C."
        ),
    )
    record.add_argument("--upstream", required=True, help="e.g. http://127.0.0.1:8000")
    record.add_argument(
        "--listen", type=port_number, required=True, help="local port (0: pick one)"
    )
    record.add_argument("--out", required=True, help="trace file to write (.jsonl or .jsonl.gz)")
    record.add_argument("--duration-s", type=float, help="stop after this many seconds")
    record.add_argument(
        "--events",
        metavar="FILE",
        help="also write every relayed server event (wire-log JSONL that `wsmode check` judges)",
    )
    record.set_defaults(handler=_record)

    traces = subparsers.add_parser("traces", help="generate, validate or convert traces")
    sub = traces.add_subparsers(dest="traces_command", metavar="ACTION")
    gen = sub.add_parser(
        "generate",
        help="generate rollouts with the seeded generator",
        description=(
            "Without --count: write the bundled corpus's layout (corpus/*.jsonl and smoke.jsonl) "
            "into the directory --out. With --count: generate COUNT "
            "rollouts, cycling through --kind, into one trace file."
        ),
    )
    gen.add_argument(
        "--out",
        required=True,
        help=(
            "without --count: a directory; with --count: a .jsonl or .jsonl.gz file, or else "
            f"a directory (created if needed) that gets {GENERATED_FILE_NAME}"
        ),
    )
    gen.add_argument("--count", type=int, help="rollouts to generate (>= 1)")
    gen.add_argument("--seed", type=int, help="generator seed (default: the corpus seed)")
    gen.add_argument(
        "--kind",
        action="append",
        choices=tracegen.KINDS,
        help="with --count: agent kind to cycle through, repeatable (default: all)",
    )
    gen.add_argument(
        "--turns",
        type=int,
        help="with --count: turns per rollout (default: per kind, context-bounded)",
    )
    gen.add_argument(
        "--size-scale",
        type=float,
        help="with --count: scale of the prompt, file and tool-output sizes (> 0; default 1.0)",
    )
    gen.add_argument(
        "--targets",
        metavar="FILE",
        help="with --count: a JSON object of target distributions overriding the calibrated "
        "ones by field (harness.traces.synthetic.targets.Targets)",
    )
    gen.set_defaults(handler=_generate)
    val = sub.add_parser("validate", help="load trace files strictly; print a summary")
    val.add_argument("paths", nargs="+", metavar="PATH", help="trace files or directories")
    val.set_defaults(handler=_validate)
    _register_convert(sub)
    _register_stats(sub)
    traces.set_defaults(group=traces)  # `wsmode traces` alone: harness.cli shows its help


def _register_convert(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    conv = sub.add_parser(
        "convert",
        help="convert recorded agent sessions (" + ", ".join(CONVERT_SOURCES) + ")",
        description=(
            "Convert recorded sessions to one trace file and print what was kept: rollouts, "
            "turns, tool calls and how many were linked to their outputs. Bad input exits 2 "
            "with the file, line or JSON path and the field; in a directory, a file that "
            "cannot be converted is said (with why) and the rest converted: exit status 3."
        ),
    )
    conv.add_argument(
        "--from",
        dest="source",
        choices=CONVERT_SOURCES,
        required=True,
        help="the format of the recorded sessions",
    )
    conv.add_argument(
        "inputs", nargs="+", help="files, or directories (searched for the source's files)"
    )
    conv.add_argument("--out", required=True, help="trace file to write (.jsonl or .jsonl.gz)")
    conv.add_argument(
        "--agent-kind", default="unknown", help="the agent kind the rollouts are labelled with"
    )
    conv.add_argument(
        "--min-turns",
        type=int,
        default=1,
        help="leave out rollouts of fewer turns (default: 1, keep all)",
    )
    conv.add_argument(
        "--block-size",
        type=int,
        default=MOONCAKE_BLOCK_TOKENS,
        help=f"mooncake: tokens per hash_ids block (default: {MOONCAKE_BLOCK_TOKENS})",
    )
    conv.set_defaults(handler=_convert)


def _register_stats(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from harness.options import add_options
    from harness.traces.stats.options import StatsConfig

    stats = sub.add_parser(
        "stats",
        help="a corpus's distributions, and how far they are from a reference corpus",
        description=(
            "Print a corpus's distributions (turns per session, tool calls per turn, input "
            "growth, append and output tokens per turn, tool latency) and, with --reference, "
            "the reference's beside them: the KS distance and quantile ratios per distribution."
        ),
    )
    add_options(stats, StatsConfig)
    stats.set_defaults(handler=_stats)


def _stats(args: argparse.Namespace) -> int:
    from harness.options import from_args
    from harness.traces.stats import compare, measure
    from harness.traces.stats.options import STATS, StatsConfig, read_corpus
    from harness.traces.stats.report import render_text, stats_json

    config = from_args(StatsConfig, args)
    if config.reference_source is not None and not config.reference:
        return usage_error(STATS, "--reference-from needs --reference")
    try:
        corpus = measure(read_corpus(config.paths, config.source))
        reference = (
            measure(read_corpus(config.reference, config.reference_source))
            if config.reference
            else None
        )
    except TraceFormatError as exc:
        return usage_error(STATS, str(exc))
    comparison = compare(corpus, reference) if reference is not None else None
    parts = (corpus, config.paths, reference, config.reference, comparison)
    if config.as_json:
        print(json.dumps(stats_json(*parts), indent=2))
    else:
        print("\n".join(render_text(*parts)))
    return 0


def _record(args: argparse.Namespace) -> int:
    import asyncio

    from websockets.exceptions import ConnectionClosed

    from harness.traces.record.proxy import RECORD, record
    from harness.transport.target_check import check_reachable_now

    problem = check_reachable_now(args.upstream)  # an upstream not there: one line, no file
    if problem is not None:
        return usage_error(RECORD, problem.line())
    try:
        return asyncio.run(
            record(
                args.upstream,
                args.listen,
                args.out,
                duration_s=args.duration_s,
                events=getattr(args, "events", None),
            )
        )
    except ValueError as exc:
        return usage_error(RECORD, str(exc))
    except ConnectionClosed:
        return 1


def _generate(args: argparse.Namespace) -> int:
    from harness.traces.format import dump_rollouts
    from harness.traces.synthetic import corpus
    from harness.traces.synthetic import generator as tracegen

    def fail(message: str) -> int:
        return usage_error("wsmode traces generate", message)

    seed = corpus.CORPUS_SEED if args.seed is None else args.seed
    out = Path(args.out)
    # a trailing slash is lost by Path(), yet it clearly names a directory
    names_dir = args.out.endswith(("/", os.sep)) or out.is_dir()
    names_file = not names_dir and out.name.endswith(_TRACE_SUFFIXES)
    if args.count is None:
        given = [
            flag
            for flag, value in (
                ("--kind", args.kind),
                ("--turns", args.turns),
                ("--size-scale", args.size_scale),
                ("--targets", args.targets),
            )
            if value is not None
        ]
        if given:
            return fail(
                f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --count "
                "(without it, --out gets the fixed corpus layout)"
            )
        if names_file:
            return fail(f"without --count, --out is a directory, got the file name {args.out}")
        try:
            sizes = corpus.write_corpus(out, seed)
        except OSError as exc:
            return fail(f"cannot write under {out}: {exc.strerror or exc}")
        for name, size in sizes.items():
            print(f"{out / name}: {size / 1e6:.2f} MB")
        return 0
    if args.count < 1:
        return fail(f"--count must be >= 1, got {args.count}")
    if args.turns is not None and args.turns < 1:
        return fail(f"--turns must be >= 1, got {args.turns}")
    size_scale = 1.0 if args.size_scale is None else args.size_scale
    if not (math.isfinite(size_scale) and size_scale > 0):
        return fail(f"--size-scale must be a number > 0, got {args.size_scale}")
    kwargs: dict[str, Any] = {"size_scale": size_scale}
    if args.targets is not None:
        from harness.traces.synthetic.targets import load_targets

        try:
            kwargs["targets"] = load_targets(args.targets)
        except (OSError, ValueError) as exc:
            return fail(f"--targets: {getattr(exc, 'strerror', None) or exc}")
    if args.turns is not None:  # a fixed length: no context bounds (they would rescale the texts)
        kwargs["n_turns"] = args.turns
        kwargs["context_bounds"] = None
    target = out if names_file else out / GENERATED_FILE_NAME
    rollouts = tracegen.generate_corpus(
        args.count, seed, kinds=tuple(args.kind or tracegen.KINDS), **kwargs
    )
    try:
        size = dump_rollouts(rollouts, target)
    except OSError as exc:
        return fail(f"cannot write {target}: {exc.strerror or exc}")
    print(f"{target}: {len(rollouts)} rollouts, {size / 1e6:.2f} MB")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from harness.traces.format import load_traces

    status = 0
    for path in args.paths:
        try:
            rollouts = load_traces(path)
        except TraceFormatError as exc:
            print(f"INVALID {exc}")
            status = 1
            continue
        turns = sum(len(r.turns) for r in rollouts)
        calls = sum(len(t.function_calls) for r in rollouts for t in r.turns)
        print(f"ok {path}: {len(rollouts)} rollouts, {turns} turns, {calls} function calls")
    return status


def _convert(args: argparse.Namespace) -> int:
    from harness.traces.converters.sources import ConvertOptions, convert_inputs, summary_line
    from harness.traces.format import dump_rollouts

    if args.min_turns < 1:
        return usage_error(CONVERT, f"--min-turns must be >= 1, got {args.min_turns}")
    if args.block_size < 1:
        return usage_error(CONVERT, f"--block-size must be >= 1, got {args.block_size}")
    options = ConvertOptions(args.agent_kind, args.min_turns, args.block_size)
    problems: list[TraceFormatError] = []
    try:
        rollouts = convert_inputs(args.source, [Path(p) for p in args.inputs], options, problems)
        dump_rollouts(rollouts, args.out)
    except TraceFormatError as exc:
        return usage_error(CONVERT, str(exc))
    except OSError as exc:
        return usage_error(CONVERT, f"cannot write {args.out}: {exc.strerror or exc}")
    for problem in problems:  # said, and the rest converted
        print(f"{CONVERT}: not converted: {problem}", file=sys.stderr)
    print(f"{args.out}: {summary_line(rollouts)}")
    return EXIT_SOME_NOT_CONVERTED if problems else 0


# A folder some of whose files could not be converted (each said on stderr): the rest written.
EXIT_SOME_NOT_CONVERTED = 3


# -- the maintainers' tool: python -m harness.traces.commands corpus ------------------------------
def tool_main(argv: Sequence[str] | None = None) -> int:
    """`python -m harness.traces.commands corpus [--out traces] [--seed N] [--stats]`:
    regenerate the bundled trace corpus (traces/README.md)."""
    from harness.traces.synthetic import corpus

    parser = CommandParser(prog="python -m harness.traces.commands")
    tools = parser.add_subparsers(dest="tool", metavar="TOOL", required=True)
    regenerate = tools.add_parser("corpus", help="regenerate the bundled trace corpus")
    regenerate.add_argument("--out", default="traces", help="output directory (default: traces)")
    regenerate.add_argument("--seed", type=int, default=corpus.CORPUS_SEED)
    regenerate.add_argument("--stats", action="store_true", help="print corpus statistics as JSON")
    calibrate = tools.add_parser(
        "calibration", help="write traces/CALIBRATION.md: the corpus beside real sessions"
    )
    calibrate.add_argument(
        "--reference", action="append", default=[], help="real sessions (wsmode-trace files)"
    )
    calibrate.add_argument("--out", default="traces/CALIBRATION.md")
    args = parser.parse_args(argv)
    if args.tool == "calibration":
        return _calibration(args.reference, Path(args.out))
    sizes = corpus.write_corpus(args.out, args.seed)
    for name, size in sizes.items():
        print(f"{name}: {size / 1e6:.2f} MB")
    if args.stats:
        from harness.traces.format import load_traces

        stats = corpus.corpus_stats(load_traces(Path(args.out) / "corpus"))
        print(json.dumps(stats, indent=2))
    return 0


def _calibration(reference: Sequence[str], out: Path) -> int:
    from harness.traces.converters.tracelab import convert_tracelab
    from harness.traces.format import load_traces
    from harness.traces.stats import measure
    from harness.traces.synthetic import corpus
    from harness.traces.synthetic.calibration import calibration_document
    from harness.traces.synthetic.targets import CALIBRATED, UNCALIBRATED

    example = Path(__file__).resolve().parents[2] / "tests" / "data" / "tracelab" / "sanitized"
    references = [("TraceLab examples", measure(convert_tracelab(example / "round_trace.jsonl")))]
    if reference:
        real = [r for path in reference for r in load_traces(path)]
        references.insert(0, ("real sessions", measure(real)))
    corpora = [
        (
            label,
            measure(
                r
                for _, kind, count in corpus.CORPUS_LAYOUT
                for r in corpus.corpus_rollouts(kind, count, targets=targets)
            ),
        )
        for label, targets in (("calibrated (v2)", CALIBRATED), ("uncalibrated (v1)", UNCALIBRATED))
    ]
    out.write_text(calibration_document(references, corpora), encoding="utf-8")
    print(f"{out}: {len(references)} references, {len(corpora)} corpora")
    return 0


if __name__ == "__main__":
    sys.exit(tool_main())
