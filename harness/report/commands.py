"""CLI for the report area: `wsmode gate`, `wsmode board`, `wsmode results list|show|compare`."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from harness.progress import MAX_COLUMNS
from harness.report import board, gate, gate_micro, runs_report
from harness.report.gate_text import render_markdown, render_text
from harness.results import llmd_report, runs_compare
from harness.results.schema import (
    REPORT_DROP,
    ResultsSchemaError,
    dumps_result,
    load_result,
    ttft_definition,
)
from harness.results.store import list_results
from harness.results.work import equal_pairs_note
from harness.results.workload import describe_workload, latency_payload
from harness.usage import usage_error

GATE, BOARD = "wsmode gate", "wsmode board"  # the commands their usage errors name


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "gate",
        help="compare a results file against a baseline; exit 1 on regression",
        description=gate.__doc__,
    )
    add_gate_arguments(p)
    p.set_defaults(handler=gate_main)

    p = subparsers.add_parser(
        "board",
        help="render a static latency leaderboard (index.html + leaderboard.md)",
        description=board.__doc__,
    )
    add_board_arguments(p)
    p.set_defaults(handler=board_main)

    results = subparsers.add_parser("results", help="list and show results files")
    sub = results.add_subparsers(dest="results_command", metavar="ACTION")
    lp = sub.add_parser("list", help="list the results tree")
    lp.add_argument("--root", default="results", help="results directory (default: results)")
    lp.set_defaults(handler=results_list)
    sp = sub.add_parser("show", help="summarize one results file")
    sp.add_argument("file", metavar="FILE", help="a results file (.json)")
    sp.add_argument("--json", action="store_true", help="print the validated JSON instead")
    sp.set_defaults(handler=results_show)
    add_compare_parser(sub)
    add_llmd_parser(sub)
    results.set_defaults(group=results)  # `wsmode results` alone: harness.cli shows its help


# -- wsmode gate -----------------------------------------------------------------------------------
def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        required=True,
        metavar="FILE",
        help="baseline results or pytest-benchmark file",
    )
    parser.add_argument(
        "--current", required=True, metavar="FILE", help="current results or pytest-benchmark file"
    )
    parser.add_argument(
        "--thresholds",
        metavar="FILE.toml",
        help="limits in %% per percentile, a TOML file: [thresholds] p50 = 10, p90 = 20; "
        "[metric.ttft_ms] p50 = 5 (default: +10 %% at p50, +20 %% at p90)",
    )
    parser.add_argument(
        "--markdown",
        metavar="OUT",
        help="append a Markdown summary to OUT (e.g. \"$GITHUB_STEP_SUMMARY\"); '-' for stdout",
    )
    parser.add_argument(
        "--require-samples",
        action="store_true",
        help="fail when a metric has fewer samples than min_samples",
    )
    parser.add_argument(
        "--min-samples", type=int, metavar="N", help="override min_samples (default 30)"
    )
    parser.add_argument(
        "--strict", action="store_true", help="certify: SHOULD cases gate like MUST cases"
    )


def gate_main(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    try:
        config = gate.load_config(args.thresholds)
        if args.min_samples is not None:
            if args.min_samples < 1:
                raise gate.GateInputError("--min-samples must be at least 1")
            config.min_samples = args.min_samples
        micro = gate_micro.read_if_micro(args.baseline), gate_micro.read_if_micro(args.current)
        if micro != (None, None):  # pytest-benchmark JSON (scripts/microbench)
            report = gate_micro.run_micro_gate(*micro, config, require_samples=args.require_samples)
        else:
            report = gate.run_gate(
                load_result(args.baseline, drop=REPORT_DROP),
                load_result(args.current, drop=REPORT_DROP),
                config,
                require_samples=args.require_samples,
                strict=args.strict,
            )
    except (gate.GateInputError, ResultsSchemaError) as exc:
        return usage_error(GATE, str(exc), err=err)
    out.write(render_text(report))
    if args.markdown:
        md = render_markdown(report)
        if args.markdown == "-":
            out.write("\n" + md)
        else:
            try:
                with open(args.markdown, "a", encoding="utf-8") as f:
                    f.write(md)
            except OSError as exc:
                return usage_error(GATE, f"cannot write {args.markdown}: {exc}", err=err)
    return report.exit_code


# -- wsmode board ----------------------------------------------------------------------------------
def add_board_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", nargs="+", metavar="RESULTS", help="results files or directories of them"
    )
    parser.add_argument("--out", default="board", metavar="DIR", help="output directory")
    parser.add_argument("--title", default="wsmode latency leaderboard", help="the page's title")


def board_main(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    try:
        rows = board.write_board(args.results, args.out, title=args.title)
    except (ResultsSchemaError, ValueError, OSError) as exc:
        return usage_error(BOARD, str(exc), err=err)
    ranked = sum(1 for r in rows if r.rank is not None)
    out.write(
        f"wrote {Path(args.out) / 'index.html'} and leaderboard.md: {len(rows)} implementation(s), "
        f"{ranked} ranked\n"
    )
    return 0


# -- wsmode results --------------------------------------------------------------------------------
def add_compare_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cp = sub.add_parser(
        "compare",
        help="bench or load runs side by side: per mode and metric, with intervals and the "
        "equal-work check",
        description=runs_compare.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cp.add_argument("files", nargs="+", metavar="FILE", help="results files; the first is A")
    cp.add_argument("--html", metavar="OUT", help="also write the comparison as an HTML page")
    cp.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    cp.set_defaults(handler=results_compare)


def add_llmd_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lp = sub.add_parser(
        "llmd-report",
        help="a bench or load results file as llm-d-benchmark Benchmark Reports (v0.2.1), one "
        "per mode",
        description=llmd_report.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lp.add_argument("file", metavar="FILE", help="a bench or load results file (.json)")
    lp.add_argument(
        "--out", metavar="DIR", help="where to write them (default: beside FILE)", default=None
    )
    lp.set_defaults(handler=results_llmd)


def results_llmd(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Writes FILE's stem + `.<mode>.llmd-br-v0.2.1.json`, each validated against the schema."""
    out = out or sys.stdout
    prog = "wsmode results llmd-report"
    try:
        reports = llmd_report.llmd_reports(load_result(args.file))
    except (ResultsSchemaError, ValueError) as exc:
        return usage_error(prog, str(exc))
    folder = Path(args.out) if args.out else Path(args.file).parent
    folder.mkdir(parents=True, exist_ok=True)
    for mode, report in reports.items():
        path = folder / f"{Path(args.file).stem}.{mode}.llmd-br-v0.2.1.json"
        path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        out.write(f"{mode}: {path}\n")
    return 0


def results_compare(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    prog = "wsmode results compare"
    try:
        results = [load_result(f) for f in args.files]
        comparison = runs_compare.compare_runs(results, args.files, seed=args.seed)
    except (ResultsSchemaError, runs_compare.CompareInputError) as exc:
        return usage_error(prog, str(exc))
    out.write(runs_report.render_text(comparison))
    if args.html:
        try:
            Path(args.html).write_text(runs_report.render_html(comparison), encoding="utf-8")
        except OSError as exc:
            return usage_error(prog, f"cannot write {args.html}: {exc.strerror or exc}")
        out.write(f"report: {args.html}\n")
    return 0


def results_list(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    infos = list_results(args.root)
    if not infos:
        out.write(f"no results under {args.root}\n")
        return 0
    rows = [i for i in infos if not i.error]
    if rows:
        target = max(len("target"), *(len(i.target) for i in rows))
        outcome = max(len("outcome"), *(len(i.outcome) for i in rows))
        label = max(len("label"), *(len(i.label) for i in rows))
        out.write(
            f"{'started':<19}  {'run':<7}  {'target':<{target}}  {'outcome':<{outcome}}  "
            f"{'label':<{label}}  file (under {args.root})\n"
        )
    for info in infos:
        if info.error:
            out.write(f"INVALID  {info.path}: {info.error}\n")
            continue
        started = info.started_at[:19].replace("T", " ")
        row = (
            f"{started:<19}  {info.run:<7}  {info.target:<{target}}  "
            f"{info.outcome:<{outcome}}  {info.label:<{label}}"
        )
        file = _under(info.path, args.root)
        if len(row) + 2 + len(file) <= MAX_COLUMNS:
            out.write(f"{row}  {file}\n")
        else:  # too wide for one line: the file below its row
            out.write(f"{row.rstrip()}\n    {file}\n")
    return 1 if any(i.error for i in infos) else 0


def _under(path: str | Path, root: str | Path) -> str:
    """`path` relative to the results root (as given when it is elsewhere)."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def results_show(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        result = load_result(args.file)
    except ResultsSchemaError as exc:
        return usage_error("wsmode results show", str(exc))
    if args.json:
        out.write(dumps_result(result))
        return 0
    out.write(render_summary(result))
    return 0


def render_summary(result: Mapping[str, Any]) -> str:
    t, m = result["target"], result["machine"]
    lines = [
        f"{result['kind']} result '{result['label']}' (schema v{result['schema_version']})",
        f"  target:  {t['name']} {t.get('version') or ''} at {t['url']}".rstrip(),
        f"  profile: {result['profile']}",
        f"  time:    {result['started_at']} .. {result['ended_at']}",
        f"  harness: wsmode {result['harness']['version']} ({result['harness']['commit'][:12]})",
        f"  machine: {m['cpu_model']}, {m['cores']} cores, {m['python']}, {m['os']}",
        f"  config:  {json.dumps(result['config'], sort_keys=True)}",
        *([f"  ttft:    {ttft_definition(result)}"] if result["kind"] != "certify" else []),
        *([f"  workload: {describe_workload(result)}"] if result["kind"] != "certify" else []),
        "",
    ]
    if result["kind"] != "certify":
        bench = latency_payload(result)
        lines.append(f"time_scale {bench['time_scale']}")
        lines.append(f"{'mode':<14}{'metric':<16}{'count':>8}{'p50':>11}{'p90':>11}{'p99':>11}")
        for mode, entry in bench["modes"].items():
            for metric, s in entry["summary"].items():
                lines.append(
                    f"{mode:<14}{metric:<16}{s['count']:>8}{s['p50']:>11.3f}{s['p90']:>11.3f}"
                    f"{s['p99']:>11.3f}"
                )
            lines.append(f"{mode:<14}{'failures':<16}{entry['failures']:>8}")
        for c in bench["comparisons"]:
            ci = c.get("ci95") or [None, None]
            median = c.get("speedup_median")
            lines.append(
                f"speedup {c['mode']} vs {c['baseline_mode']}: "
                + ("—" if median is None else f"{median:.3f}×")
                + ("" if ci[0] is None else f" (95% CI {ci[0]:.3f}–{ci[1]:.3f})")
                + (f"; {equal_pairs_note(c['work'])}" if c.get("work") else "")
            )
        lines.append(f"{len(bench['samples'])} turn samples, {len(bench['rollouts'])} rollouts")
    else:
        s = result["certify"]["summary"]
        lines.append(
            f"MUST {s['must_passed']}/{s['must_total']}  SHOULD {s['should_passed']}/"
            f"{s['should_total']}"
        )
        lines.append("  ".join(f"{v}={n}" for v, n in s["counts"].items() if n))
        for case in result["certify"]["cases"]:
            if case["verdict"] != "PASS":
                lines.append(f"  {case['verdict']:<14}{case['level']:<7}{case['id']}")
    fitted = [  # long values (the config, the workload) continue under their value
        part
        for line in lines
        for part in (
            textwrap.wrap(line, MAX_COLUMNS, subsequent_indent=" " * 11, break_on_hyphens=False)
            if len(line) > MAX_COLUMNS
            else [line]
        )
    ]
    return "\n".join(fitted) + "\n"
