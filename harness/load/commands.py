"""CLI command of the load area: `wsmode bench` (its arguments, their translation into a
`BenchConfig`, and the handler that runs it and writes the HTML report)."""

from __future__ import annotations

import argparse
import os
import re
import sys

from harness.load.bench_config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_PER_KIND,
    DEFAULT_TIME_SCALE,
    DEFAULT_TRACES,
    BenchConfig,
)
from harness.load.bench_run import run_bench, usage_error
from harness.load.embedded_server import DEFAULT_PROFILE
from harness.load.liveness import DEFAULT_TURN_TIMEOUT_S
from harness.load.replay import MODES, parse_mode
from harness.load.variants import NOCACHE_VARIANT


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="replay agent rollouts in ws, http and http-chained mode and compare them",
        description=(
            "Replay agent-rollout traces against a server in WebSocket mode and over HTTP, "
            "print a comparison table, write a results JSON and an HTML report. Without "
            "--target it starts the embedded reference server."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(handler=main)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_target_arguments(
        parser.add_argument_group("target (default: the embedded reference server)")
    )
    _add_workload_arguments(parser.add_argument_group("workload"))
    _add_load_arguments(parser.add_argument_group("load pattern"))
    output = parser.add_argument_group("output")
    output.add_argument("--out", default="results", help="results root (default results/)")
    output.add_argument("--label", default="bench", help="results file label")
    output.add_argument("--no-html", dest="html", action="store_false")


def _add_target_arguments(target: argparse._ArgumentGroup) -> None:
    target.add_argument(
        "--target", help="WebSocket URL of a server under test (ws://.../v1/responses)"
    )
    target.add_argument("--http-target", help="HTTP base URL for the http modes (http://.../v1)")
    target.add_argument(
        "--api-key", default=os.environ.get("WSMODE_API_KEY"), help="bearer key ($WSMODE_API_KEY)"
    )
    target.add_argument("--name", help="target name in the results (default: from the URL)")
    target.add_argument(
        "--profile", default=DEFAULT_PROFILE, help="embedded server cost profile or TOML path"
    )


def _add_workload_arguments(work: argparse._ArgumentGroup) -> None:
    work.add_argument("--traces", default=DEFAULT_TRACES, help="trace file or directory")
    work.add_argument(
        "--per-kind",
        type=int,
        default=DEFAULT_PER_KIND,
        help=f"the N shortest rollouts of each agent kind (default {DEFAULT_PER_KIND}; 0 = all)",
    )
    work.add_argument("--rollout", action="append", default=[], help="replay this id (repeatable)")
    work.add_argument("--max-turns", type=int, help="replay only the first N turns")
    work.add_argument(
        "--time-scale",
        type=float,
        default=DEFAULT_TIME_SCALE,
        help="fraction of recorded tool time to wait (e2e always counts it in full)",
    )
    work.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated subset of ws,http,http-chained",
    )
    work.add_argument(
        "--ablation",
        action="store_true",
        help="also replay ws with each server optimization switched off in turn",
    )
    work.add_argument(
        "--no-cache-split",
        dest="nocache",
        action="store_false",
        help=f"skip {NOCACHE_VARIANT} (ws with the connection cache off), which splits "
        "transport from server-side cache savings (~25 s of the default run)",
    )
    work.add_argument(
        "--repeats", type=int, default=1, help="replay each (rollout, mode) pair N times"
    )
    script = work.add_mutually_exclusive_group()
    script.add_argument(
        "--script",
        dest="send_script",
        action="store_true",
        default=None,
        help="send the recorded output as wsmode.script (default with the embedded server)",
    )
    script.add_argument("--no-script", dest="send_script", action="store_false")
    work.add_argument(
        "--model",
        help="the model every request names (default: each rollout's, e.g. gpt-5-codex); "
        "a real target needs one it serves",
    )
    work.add_argument("--prewarm", action="store_true", help="ws: generate:false before turn 0")


def _add_load_arguments(load: argparse._ArgumentGroup) -> None:
    load.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"rollouts in flight (closed loop; open loop: at most; default {DEFAULT_CONCURRENCY})",
    )
    load.add_argument("--schedule", choices=("closed", "open", "sweep"), default="closed")
    load.add_argument("--rate", type=float, default=1.0, help="open loop: rollouts per second")
    load.add_argument("--sweep", default="1,2,4,8", help="sweep: concurrency levels")
    load.add_argument(
        "--duration-s",
        type=float,
        help="hard time limit (per sweep level): rollouts still running then are cut and count "
        "as failed (not in the latencies, not in the exit status)",
    )
    load.add_argument(
        "--max-rollouts",
        type=int,
        help="replay at most the first N selected rollouts per variant (per sweep level)",
    )
    load.add_argument(
        "--turn-timeout-s",
        type=float,
        default=DEFAULT_TURN_TIMEOUT_S,
        help="a turn that takes longer fails (then a liveness probe decides whether the target "
        "is dead, which ends the run's remaining rollouts)",
    )
    load.add_argument("--seed", type=int, default=0, help="arrivals, bootstrap and tenant keys")


def derive_urls(target: str | None, http_target: str | None) -> tuple[str | None, str | None]:
    """Fill the missing one of (ws URL, HTTP base URL) from the other, as the SDK maps them."""
    if target and not http_target:
        base = re.sub(r"^ws", "http", target.rstrip("/"))
        http_target = base[: -len("/responses")] if base.endswith("/responses") else base
    elif http_target and not target:
        target = re.sub(r"^http", "ws", http_target.rstrip("/")) + "/responses"
    return target, http_target


def parse_levels(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--sweep: expected comma-separated integers, got {text!r}") from None


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    modes = tuple(parse_mode(m.strip()) for m in args.modes.split(",") if m.strip())
    target, http_target = derive_urls(args.target, args.http_target)
    return BenchConfig(
        target=target,
        http_target=http_target,
        api_key=args.api_key,
        name=args.name,
        profile=args.profile,
        traces=args.traces,
        per_kind=args.per_kind or None,
        rollout_ids=tuple(args.rollout),
        max_turns=args.max_turns,
        time_scale=args.time_scale,
        concurrency=args.concurrency,
        modes=modes,
        ablation=args.ablation,
        nocache=args.nocache,
        schedule=args.schedule,
        rate_per_s=args.rate,
        sweep_levels=parse_levels(args.sweep),
        duration_s=args.duration_s,
        max_rollouts=args.max_rollouts,
        repeats=args.repeats,
        send_script=args.send_script,
        model=args.model,
        prewarm=args.prewarm,
        seed=args.seed,
        out=args.out,
        label=args.label,
        html=args.html,
        turn_timeout_s=args.turn_timeout_s,
    )


def main(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except ValueError as exc:
        return usage_error(sys.stderr, str(exc))
    if not config.html:
        return run_bench(config)
    # the report package sits above load (it reads results files): the CLI wires it in
    from harness.report.bench_html import write_report

    return run_bench(config, write_report=write_report)
