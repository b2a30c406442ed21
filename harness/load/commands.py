"""CLI commands of the load area: `wsmode bench` (replayed rollouts, `harness.load.bench`) and
`wsmode load` (synthetic fixed-shape load, `harness.load.fixed`). Each option is declared once,
on the config field it fills (harness.options): BenchConfig's, LoadConfig's and LoadSpec's, the
target's (TargetOptions) shared by both; this module adds the parsers, the target profile
(the conformance area owns its format) and the handlers."""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
from dataclasses import replace
from typing import Final, TypeVar

from harness.load.bench.bench_config import DEFAULT_TRACES, BenchConfig, corpus_traces
from harness.load.bench.bench_run import BENCH, run_bench
from harness.load.core.replay_options import Endpoint
from harness.load.embedded_server import EmbeddedServer
from harness.load.fixed.conversations import ShardResult
from harness.load.fixed.load_config import LoadConfig
from harness.load.fixed.load_console import print_load
from harness.load.fixed.load_result import LoadRun, build_load_result
from harness.load.fixed.load_spec import DEFAULT_MODEL, LoadSpec, mode_seed
from harness.load.fixed.processes import run_processes
from harness.load.server_metrics import ServerMetricsError
from harness.load.target_identity import server_headers
from harness.load.target_options import TargetOptions, derive_urls
from harness.options import add_options, from_args
from harness.progress import Progress, phase
from harness.results.identity import resolve_identity
from harness.results.schema import utc_now_iso
from harness.results.store import write_result
from harness.transport.target_check import CheckTarget, check_targets_now
from harness.usage import client_api_key, usage_error

LOAD = "wsmode load"
C = TypeVar("C", bound=TargetOptions)


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
    """bench's options: the fields of BenchConfig that declare one."""
    add_options(parser, BenchConfig)


def resolve_target(config: C) -> tuple[C, str | None]:
    """The config with its target filled from `--target-profile` (flags given win), the key
    last from $WSMODE_API_KEY, the missing URL derived from the other; and the profile's model
    (None without a profile). Raises ValueError for an unreadable profile."""
    if not config.target_profile:
        return _with_urls(replace(config, api_key=client_api_key(config.api_key))), None
    # the conformance area owns the profile format; the CLI sits above both areas
    from harness.conformance.targets.profile import (
        TargetProfileError,
        load_target_profile,
        resolve_profile,
    )

    try:
        profile = load_target_profile(resolve_profile(config.target_profile))
    except (TargetProfileError, OSError) as exc:
        raise ValueError(
            str(exc) if "--target-profile" in str(exc) else f"--target-profile: {exc}"
        ) from None
    if profile.embedded:
        raise ValueError("--target-profile: the profile names the embedded server: drop it")
    config = replace(
        config,
        target=config.target or profile.ws_url or None,
        http_target=config.http_target or profile.http_url or None,
        api_key=client_api_key(config.api_key or profile.api_key or None),
        profile_name=profile.name,
    )
    return _with_urls(config), profile.model


def _with_urls(config: C) -> C:
    target, http_target = derive_urls(config.target, config.http_target)
    return replace(config, target=target, http_target=http_target)


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    config, profile_model = resolve_target(from_args(BenchConfig, args))
    if profile_model is not None and config.model in (None, DEFAULT_MODEL):
        config = replace(config, model=profile_model)
    if config.corpus is not None:
        if config.traces != DEFAULT_TRACES:
            raise ValueError("--traces and --corpus name two workloads: give one")
        config = replace(config, traces=corpus_traces(config.corpus))
    return config


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
    add_options(parser, LoadConfig, LoadSpec)
    parser.set_defaults(handler=load_main)


def load_specs(
    args: argparse.Namespace,
    config: LoadConfig,
    endpoint: Endpoint,
    run_seed: int,
    profile_model: str | None = None,
) -> list[LoadSpec]:
    """One spec per mode, each with its own prompts (`mode_seed`), its shape and pattern the
    options LoadSpec declares."""
    requests, duration_s = config.bounds
    specs = []
    for mode in config.modes:
        spec = from_args(
            LoadSpec,
            args,
            mode=mode,
            endpoint=endpoint,
            seed=mode_seed(run_seed, mode),
            requests=requests,
            duration_s=duration_s,
        )
        if profile_model is not None and spec.model == DEFAULT_MODEL:
            spec = replace(spec, model=profile_model)
        specs.append(spec)
    return specs


#: Stands for the embedded server's URL while the flags are checked before it starts.
_PLACEHOLDER_WS: Final = "ws://127.0.0.1:1/v1/responses"


def load_main(args: argparse.Namespace) -> int:
    try:
        config = from_args(LoadConfig, args)
    except ValueError as exc:
        return usage_error(LOAD, str(exc))
    if config.processes < 1:
        return usage_error(LOAD, "--processes must be >= 1")
    try:
        config, profile_model = resolve_target(config)
    except ValueError as exc:
        return usage_error(LOAD, str(exc))
    run_seed = config.seed if config.seed is not None else secrets.randbelow(2**31)
    server = None
    if config.embedded:
        problem = check_profile(config.profile)
        if problem is not None:
            return usage_error(LOAD, problem)
        try:  # the flags are judged before a server is started for them
            placeholder = Endpoint(*derive_urls(_PLACEHOLDER_WS, None), None)
            load_specs(args, config, placeholder, run_seed)
        except ValueError as exc:
            return usage_error(LOAD, str(exc))
        with phase(f"starting the embedded reference server (profile {config.profile})"):
            server = EmbeddedServer(profile=config.profile).start()
        config = replace(config, target=server.ws_url, http_target=server.http_url)
    try:
        ws_url, http_url = config.target, config.http_target
        endpoint = Endpoint(ws_url, http_url, config.api_key)
        try:
            specs = load_specs(args, config, endpoint, run_seed, profile_model)
        except ValueError as exc:
            return usage_error(LOAD, str(exc))
        if server is None:  # a target that is not there: one line, no results file
            unreachable = check_targets_now(
                [
                    CheckTarget(endpoint.for_mode(s.mode), s.mode, s.model, config.api_key)
                    for s in specs
                ]
            )
            if unreachable is not None:
                return usage_error(LOAD, unreachable.line())
        target = resolve_identity(
            url=ws_url or http_url or "",
            name=config.name,
            version=config.target_version,
            profile_name=config.profile_name,
            embedded=server is not None,
            headers=server_headers(ws_url, config.api_key),
        )
        run = LoadRun(
            label=config.label,
            target=target,
            profile=config.profile if server else None,
            processes=config.processes,
            started_at=utc_now_iso(),
            run_seed=run_seed,
            slo=config.observe.slo,
        )
        shards: dict[str, ShardResult] = {}
        try:
            scraper = config.observe.scraper(embedded_http_url=server.http_url if server else None)
            if scraper is not None:
                scraper.check_reachable()
        except (ServerMetricsError, ValueError) as exc:
            return usage_error(LOAD, str(exc))
        with (
            config.observe.live_metrics("requests", sys.stderr) as live,
            scraper or contextlib.nullcontext(),
        ):
            for spec in specs:
                progress = Progress(
                    f"load {spec.mode}",
                    total=spec.requests,
                    unit="requests",
                    duration_s=spec.duration_s,
                )
                shards[spec.mode] = run_processes(spec, config.processes, progress, live)
        if scraper is not None:
            run = replace(run, server_metrics=scraper.to_json())
    finally:
        if server is not None:
            server.stop()
    result = build_load_result(run, specs, shards)
    path = write_result(config.out, result)
    print_load(sys.stdout, result)
    sys.stdout.write(f"results: {path}\n")
    stopped = next((s.stopped for s in shards.values() if s.stopped), "")
    if stopped:  # one line: what a user reads first, not a count of failures
        sys.stderr.write(f"{LOAD}: the run ended early, {stopped}\n")
    return 1 if any(s.failed for s in shards.values()) else 0
