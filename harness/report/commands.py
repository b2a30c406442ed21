"""CLI for the report area: `wsmode gate`, `wsmode board`, `wsmode results list|show`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from harness.report import board, gate
from harness.results.schema import ResultsSchemaError, dumps_result, load_result, ttft_definition
from harness.results.store import list_results


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "gate",
        help="compare a results file against a baseline; exit 1 on regression",
        description=gate.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gate.add_arguments(p)
    p.set_defaults(handler=gate.main)

    p = subparsers.add_parser(
        "board",
        help="render a static latency leaderboard (index.html + leaderboard.md)",
        description=board.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    board.add_arguments(p)
    p.set_defaults(handler=board.main)

    p = subparsers.add_parser("results", help="list and show results files")
    sub = p.add_subparsers(dest="results_command", metavar="ACTION")
    lp = sub.add_parser("list", help="list the results tree")
    lp.add_argument("--root", default="results", help="results directory (default: results)")
    lp.set_defaults(handler=results_list)
    sp = sub.add_parser("show", help="summarize one results file")
    sp.add_argument("file", metavar="FILE")
    sp.add_argument("--json", action="store_true", help="print the validated JSON instead")
    sp.set_defaults(handler=results_show)
    p.set_defaults(handler=lambda args: _usage(p))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def results_list(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    infos = list_results(args.root)
    if not infos:
        out.write(f"no results under {args.root}\n")
        return 0
    for info in infos:
        if info.error:
            out.write(f"INVALID  {info.path}: {info.error}\n")
        else:
            out.write(
                f"{info.started_at:<25} {info.kind:<8} {info.target:<24} {info.label:<20} "
                f"{info.path}\n"
            )
    return 1 if any(i.error for i in infos) else 0


def results_show(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        result = load_result(args.file)
    except ResultsSchemaError as exc:
        print(f"wsmode results: error: {exc}", file=sys.stderr)
        return 2
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
        *([f"  ttft:    {ttft_definition(result)}"] if result["kind"] == "bench" else []),
        "",
    ]
    if result["kind"] == "bench":
        bench = result["bench"]
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
    return "\n".join(lines) + "\n"
