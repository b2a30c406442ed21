"""CLI commands of the load area: `wsmode bench` (its arguments, their translation into a
`BenchConfig`, and the handler that runs it and writes the HTML report) and `wsmode load`
(synthetic fixed-shape load, `harness.load.fixed_load`)."""

from __future__ import annotations

import argparse
import re
import secrets
import sys
from typing import Final

from harness.load.bench.bench_config import (
    CORPORA,
    DEFAULT_CONCURRENCY,
    DEFAULT_PER_KIND,
    DEFAULT_TIME_SCALE,
    BenchConfig,
    corpus_traces,
)
from harness.load.bench.bench_run import BENCH, run_bench
from harness.load.bench.variants import NOCACHE_VARIANT
from harness.load.core.modes import MODES, parse_mode
from harness.load.core.replay_options import Endpoint
from harness.load.core.target_watch import DEFAULT_EVENT_TIMEOUT_S, DEFAULT_TURN_TIMEOUT_S
from harness.load.embedded_server import DEFAULT_PROFILE, EmbeddedServer
from harness.load.fixed.conversations import ShardResult
from harness.load.fixed.load_console import print_load
from harness.load.fixed.load_result import LoadRun, build_load_result
from harness.load.fixed.load_spec import DEFAULT_MODEL, LoadSpec, mode_seed
from harness.load.fixed.processes import default_processes, run_processes
from harness.load.target_identity import server_headers
from harness.progress import Progress, phase
from harness.results.identity import resolve_identity
from harness.results.schema import utc_now_iso
from harness.results.store import write_result
from harness.transport.target_check import CheckTarget, check_targets_now
from harness.usage import API_KEY_ENV, client_api_key, usage_error

LOAD = "wsmode load"


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
    register_load(subparsers)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_target_arguments(
        parser.add_argument_group("target (default: the embedded reference server)")
    )
    _add_workload_arguments(parser.add_argument_group("workload"))
    _add_load_arguments(parser.add_argument_group("load pattern"))
    output = parser.add_argument_group("output")
    output.add_argument("--out", default="results", help="results root")
    output.add_argument("--label", default="bench", help="results file label")
    output.add_argument(
        "--no-html",
        dest="html",
        action="store_false",
        help="write no HTML report beside the results JSON",
    )


def _add_target_arguments(target: argparse._ArgumentGroup) -> None:
    target.add_argument(
        "--target", help="WebSocket URL of a server under test (ws://.../v1/responses)"
    )
    target.add_argument("--http-target", help="HTTP base URL for the http modes (http://.../v1)")
    target.add_argument(
        "--api-key",
        default=None,
        metavar="KEY",
        help=f"bearer key sent to the target (default: ${API_KEY_ENV}, the first if several)",
    )
    target.add_argument(
        "--target-profile",
        metavar="NAME|FILE",
        help="a target profile, a bundled one's name (wsmode certify --profiles) or a TOML "
        "file: its URLs, key, model and name",
    )
    target.add_argument(
        "--target-name",
        "--name",
        dest="name",
        help="the implementation's name in the results (default: the profile's, the server's "
        "word, else host:port of the URL)",
    )
    target.add_argument(
        "--target-version",
        help="the implementation's version (default: what the server's headers offer)",
    )
    target.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        help="the embedded server's cost profile: a bundled name (see wsmode serve --help) or "
        "a TOML file",
    )


def _add_workload_arguments(work: argparse._ArgumentGroup) -> None:
    work.add_argument(
        "--traces", help="trace file or directory (default: the bundled generated corpus)"
    )
    work.add_argument(
        "--corpus",
        choices=CORPORA,
        help="a bundled corpus instead of --traces: generated (the default) or real "
        "(converted from public recordings of real agent sessions, traces/real)",
    )
    work.add_argument(
        "--per-kind",
        type=int,
        default=DEFAULT_PER_KIND,
        help=f"the N shortest rollouts of each agent kind (default {DEFAULT_PER_KIND}; 0 = all)",
    )
    work.add_argument("--rollout", action="append", default=[], help="replay this id (repeatable)")
    work.add_argument("--max-turns", type=int, help="replay only the first N turns of each")
    work.add_argument(
        "--time-scale",
        type=float,
        default=DEFAULT_TIME_SCALE,
        help="fraction of the recorded tool time to wait (e2e always counts it in full)",
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
    script.add_argument(
        "--no-script",
        dest="send_script",
        action="store_false",
        help="let the target generate its own output (default with --target)",
    )
    work.add_argument(
        "--model",
        help="the model every request names (default: each rollout's, e.g. gpt-5-codex); "
        "a real target needs one it serves",
    )
    work.add_argument("--prewarm", action="store_true", help="ws: generate:false before turn 0")
    work.add_argument(
        "--engine-metrics",
        metavar="URL",
        help="the Prometheus /metrics of the engine behind the target (vLLM's): its prefix-cache "
        "hit rate is read around each variant, which then replay one after another",
    )
    cap = work.add_mutually_exclusive_group()
    cap.add_argument(
        "--output-cap-scale",
        type=float,
        default=1.0,
        help="each turn asks max_output_tokens = its recorded output tokens x this (default 1; "
        "at least 16; not with --script, whose output is the recorded one); turns that produced "
        "more or less are reported",
    )
    cap.add_argument(
        "--no-output-cap",
        dest="output_cap_scale",
        action="store_const",
        const=None,
        help="send no max_output_tokens (a real model then generates until it stops)",
    )


def _add_load_arguments(load: argparse._ArgumentGroup) -> None:
    load.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"rollouts in flight (closed loop; open loop: at most; default {DEFAULT_CONCURRENCY})",
    )
    load.add_argument(
        "--schedule",
        choices=("closed", "open", "sweep"),
        default="closed",
        help="closed: --concurrency rollouts in flight; open: Poisson arrivals at --rate; "
        "sweep: the closed loop once per --sweep level",
    )
    load.add_argument("--rate", type=float, default=1.0, help="open loop: rollouts per second")
    load.add_argument(
        "--sweep",
        default="1,2,4,8",
        metavar="N,N,...",
        help="sweep: the concurrency levels, comma-separated integers",
    )
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
    load.add_argument(
        "--event-timeout-s",
        type=float,
        default=DEFAULT_EVENT_TIMEOUT_S,
        help="silence that ends a turn (default %(default)g s; a real model's prefill of a long "
        "context on a CPU can take longer)",
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


def _traces(traces: str | None, corpus: str | None) -> str:
    if traces is not None and corpus is not None:
        raise ValueError("--traces and --corpus name two workloads: give one")
    return traces if traces is not None else corpus_traces(corpus or "generated")


def apply_target_profile(args: argparse.Namespace) -> str | None:
    """Fill the target, key and model from `--target-profile` (flags given win), the key last
    from $WSMODE_API_KEY; the profile's name, or None without one. Raises ValueError for an
    unreadable profile."""
    if not args.target_profile:
        args.api_key = client_api_key(args.api_key)
        return None
    # the conformance area owns the profile format; the CLI sits above both areas
    from harness.conformance.target_profile import (
        TargetProfileError,
        load_target_profile,
        resolve_profile,
    )

    try:
        profile = load_target_profile(resolve_profile(args.target_profile))
    except (TargetProfileError, OSError) as exc:
        raise ValueError(
            str(exc) if "--target-profile" in str(exc) else f"--target-profile: {exc}"
        ) from None
    if profile.embedded:
        raise ValueError("--target-profile: the profile names the embedded server: drop it")
    args.target = args.target or profile.ws_url or None
    args.http_target = args.http_target or profile.http_url or None
    args.api_key = client_api_key(args.api_key or profile.api_key or None)
    if getattr(args, "model", None) in (None, DEFAULT_MODEL):
        args.model = profile.model
    return profile.name


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    modes = tuple(parse_mode(m.strip()) for m in args.modes.split(",") if m.strip())
    profile_name = apply_target_profile(args)
    target, http_target = derive_urls(args.target, args.http_target)
    return BenchConfig(
        target=target,
        http_target=http_target,
        api_key=args.api_key,
        name=args.name,
        target_version=args.target_version,
        profile_name=profile_name,
        profile=args.profile,
        traces=_traces(args.traces, args.corpus),
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
        event_timeout_s=args.event_timeout_s,
        output_cap_scale=args.output_cap_scale,
        engine_metrics_url=args.engine_metrics,
    )


def check_profile(profile: str) -> str | None:
    """Why the embedded server's cost profile cannot be used, or None (said before it starts)."""
    from reference_server.cost_profiles import load_cost_profile
    from reference_server.engine.cost_profile import CostProfileError

    try:
        load_cost_profile(profile)
    except (CostProfileError, OSError) as exc:
        return f"--profile: {exc}"
    return None


def main(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except ValueError as exc:
        return usage_error(BENCH, str(exc))
    problem = check_profile(config.profile) if config.embedded else None
    if problem is not None:
        return usage_error(BENCH, problem)
    if not config.html:
        return run_bench(config)
    # the report package sits above load (it reads results files): the CLI wires it in
    from harness.report.bench_html import write_report

    return run_bench(config, write_report=write_report)


# -- wsmode load -----------------------------------------------------------------------------------
def register_load(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "load",
        help="synthetic fixed-shape load against any Responses API endpoint (ws, http, chained)",
        description=(
            "Send fixed-shape requests (input tokens, max_output_tokens) at a concurrency or a "
            "Poisson rate over WebSocket mode and/or HTTP/SSE; print req/s, tokens/s and "
            "TTFT/ITL/TPOT/e2e percentiles; write a load results file (gate, board). Without "
            "--target it starts the embedded reference server. TTFT is measured to the first "
            "content token, TTFE to the first output event of any kind."
        ),
    )
    target = parser.add_argument_group("target (default: the embedded reference server)")
    _add_target_arguments(target)
    shape = parser.add_argument_group("request shape")
    shape.add_argument("--modes", default="ws", help="comma-separated ws,http,http-chained")
    shape.add_argument("--model", default=DEFAULT_MODEL, help="model every request names")
    shape.add_argument("--input-tokens", type=int, default=256, help="input tokens (mean)")
    shape.add_argument("--input-tokens-stddev", type=float, default=0.0, help="normal stddev")
    shape.add_argument("--output-tokens", type=int, default=128, help="sent as max_output_tokens")
    shape.add_argument(
        "--turns",
        type=int,
        default=1,
        help="ws / http-chained: requests per connection/chain, chained with "
        "previous_response_id (http: every request stands alone)",
    )
    pattern = parser.add_argument_group("load pattern")
    pattern.add_argument(
        "--concurrency", type=int, default=8, help="in flight (with --rate: at most)"
    )
    pattern.add_argument("--rate", type=float, help="requests per second, Poisson arrivals")
    pattern.add_argument("--requests", type=int, help="stop after N requests (per mode)")
    pattern.add_argument(
        "--duration-s", type=float, help="stop sending after N s (default 10 s without --requests)"
    )
    pattern.add_argument(
        "--processes",
        type=int,
        default=default_processes(),
        help=f"client processes, each its own event loop (default: cores, {default_processes()})",
    )
    pattern.add_argument(
        "--timeout-s",
        type=float,
        default=DEFAULT_TURN_TIMEOUT_S,
        help=f"per request (default {DEFAULT_TURN_TIMEOUT_S:g}); each event "
        f"{DEFAULT_EVENT_TIMEOUT_S:g} s. A request that times out asks a liveness probe whether "
        "the target still answers; a dead target ends the run",
    )
    pattern.add_argument(
        "--seed",
        type=int,
        help="the run's seed (prompts and arrivals; each mode derives its own from it); "
        "default: a fresh one per run, recorded in the results",
    )
    shape.add_argument(
        "--prefix-share",
        type=float,
        default=0.0,
        metavar="RATIO",
        help="a shared-prefix workload: this fraction (0-1) of every prompt is one prefix common "
        "to every request, mode and run (default 0: every prompt fresh, per run and mode)",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--out", default="results", help="results root (default results/)")
    output.add_argument("--label", default="load", help="results file label")
    output.add_argument(
        "--keep-samples", type=int, default=20_000, help="per-request samples kept per process"
    )
    parser.set_defaults(handler=load_main)


def load_specs(args: argparse.Namespace, endpoint: Endpoint, run_seed: int) -> list[LoadSpec]:
    """One spec per mode, each with its own prompts (`mode_seed`)."""
    modes = [parse_mode(m.strip()) for m in args.modes.split(",") if m.strip()]
    duration = args.duration_s
    if duration is None and args.requests is None:
        duration = 10.0
    return [
        LoadSpec(
            mode=mode,
            endpoint=endpoint,
            model=args.model,
            input_tokens=args.input_tokens,
            input_tokens_stddev=args.input_tokens_stddev,
            output_tokens=args.output_tokens,
            concurrency=args.concurrency,
            rate_per_s=args.rate,
            duration_s=duration,
            requests=args.requests,
            turns=args.turns,
            seed=mode_seed(run_seed, mode),
            prefix_share=args.prefix_share,
            timeout_s=args.timeout_s,
            keep_samples=args.keep_samples,
        )
        for mode in modes
    ]


#: Stands for the embedded server's URL while the flags are checked before it starts.
_PLACEHOLDER_WS: Final = "ws://127.0.0.1:1/v1/responses"


def load_main(args: argparse.Namespace) -> int:
    if args.processes < 1:
        return usage_error(LOAD, "--processes must be >= 1")
    try:
        profile_name = apply_target_profile(args)
    except ValueError as exc:
        return usage_error(LOAD, str(exc))
    run_seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    server = None
    if not args.target and not args.http_target:
        problem = check_profile(args.profile)
        if problem is not None:
            return usage_error(LOAD, problem)
        try:  # the flags are judged before a server is started for them
            load_specs(args, Endpoint(*derive_urls(_PLACEHOLDER_WS, None), None), run_seed)
        except ValueError as exc:
            return usage_error(LOAD, str(exc))
        with phase(f"starting the embedded reference server (profile {args.profile})"):
            server = EmbeddedServer(profile=args.profile).start()
        args.target, args.http_target = server.ws_url, server.http_url
    try:
        ws_url, http_url = derive_urls(args.target, args.http_target)
        endpoint = Endpoint(ws_url, http_url, args.api_key)
        try:
            specs = load_specs(args, endpoint, run_seed)
        except ValueError as exc:
            return usage_error(LOAD, str(exc))
        if server is None:  # a target that is not there: one line, no results file
            unreachable = check_targets_now(
                [
                    CheckTarget(endpoint.for_mode(s.mode), s.mode, s.model, args.api_key)
                    for s in specs
                ]
            )
            if unreachable is not None:
                return usage_error(LOAD, unreachable.line())
        target = resolve_identity(
            url=ws_url or http_url or "",
            name=args.name,
            version=args.target_version,
            profile_name=profile_name,
            embedded=server is not None,
            headers=server_headers(ws_url, args.api_key),
        )
        run = LoadRun(
            label=args.label,
            target=target,
            profile=args.profile if server else None,
            processes=args.processes,
            started_at=utc_now_iso(),
            run_seed=run_seed,
        )
        shards: dict[str, ShardResult] = {}
        for spec in specs:
            progress = Progress(
                f"load {spec.mode}",
                total=spec.requests,
                unit="requests",
                duration_s=spec.duration_s,
            )
            shards[spec.mode] = run_processes(spec, args.processes, progress)
    finally:
        if server is not None:
            server.stop()
    result = build_load_result(run, specs, shards)
    path = write_result(args.out, result)
    print_load(sys.stdout, result)
    sys.stdout.write(f"results: {path}\n")
    stopped = next((s.stopped for s in shards.values() if s.stopped), "")
    if stopped:  # one line: what a user reads first, not a count of failures
        sys.stderr.write(f"{LOAD}: the run ended early, {stopped}\n")
    return 1 if any(s.failed for s in shards.values()) else 0
