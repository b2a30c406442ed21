"""`wsmode bench` as a function: replay agent rollouts in every variant, compare them, write
the results JSON and print the tables.

With the default `BenchConfig` it starts the embedded reference server (`production-like`) in a
child process, replays the default subset of the bundled corpus in `ws`, `http` and
`http-chained` (interleaved: for each rollout every variant, in rotating order) plus
`ws-nocache`, prints a table and writes a results JSON under `results/bench/<target>/`. The HTML
report is the caller's (harness.report sits above this package): `run_bench` calls the
`write_report` it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harness.load.bench.bench_config import (
    NOCACHE_VARIANT,
    BenchConfig,
    check_config,
    describe_bounds,
    describe_output_cap,
    describe_sampling,
    describe_schedule,
    describe_subset,
    describe_tool_time,
    replayed_rollouts,
    select_rollouts,
)
from harness.load.bench.bench_console import (
    format_analysis,
    format_failures,
    format_table,
    format_work,
)
from harness.load.bench.bench_result import BenchRun, build_result
from harness.load.bench.engine_cache import EngineMetricsError
from harness.load.bench.replays import run_variants, warm_up
from harness.load.bench.variants import (
    MAIN_SERVER,
    ablated_servers,
    build_variants,
    embedded_servers,
)
from harness.load.core.gc_policy import load_gc
from harness.load.core.session import HttpClientPool
from harness.load.core.target_watch import TargetWatch
from harness.load.embedded_server import EmbeddedServer
from harness.load.live_metrics import LiveMetrics
from harness.load.server_metrics import ServerMetricsError
from harness.load.target_identity import server_headers
from harness.progress import MAX_COLUMNS, phase
from harness.results.identity import resolve_identity
from harness.results.schema import utc_now_iso
from harness.results.slo import format_goodput
from harness.results.store import write_result
from harness.traces.format import Rollout, load_traces
from harness.transport.target_check import CheckTarget, check_targets_now
from harness.usage import usage_error

BENCH = "wsmode bench"  # the command its usage errors name

# writes the HTML report of a results document beside its JSON; returns the path written
ReportWriter = Callable[[Mapping[str, Any], Path], Path]


async def _warm_up_and_replay(run: BenchRun, err: TextIO, live: LiveMetrics | None) -> None:
    pool = HttpClientPool()
    watches: dict[str, TargetWatch] = {}
    try:
        if run.rollouts:
            with phase(f"warming up ({len(run.variants)} variants, one unrecorded turn each)", err):
                await warm_up(run.variants, run.rollouts[0], pool, watches)
        run.results = await run_variants(
            run, progress=err, http_pool=pool, watches=watches, live=live
        )
    finally:
        await pool.aclose()
    for url, watch in watches.items():  # one line for a target that stopped mid-run
        if watch.dead_reason is not None:  # classified like the pre-run check, if it can be
            why = (
                f", {watch.problem.line()}" if watch.problem else f" at {url}: {watch.dead_reason}"
            )
            err.write(f"{BENCH}: the run ended early{why}\n")
            run.notes.append(f"the run ended early{why}")


# -- the whole run ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RunWords:
    """The run described in words, for the header, the summary and the results notes."""

    subset: str
    tool_time: str
    schedule: str  # with the bounds, if any
    bounds: str | None

    @classmethod
    def of(cls, config: BenchConfig, replayed: Sequence[Rollout], corpus_size: int) -> RunWords:
        bounds = describe_bounds(config)
        schedule = describe_schedule(config) + (f"; {bounds}" if bounds else "")
        subset = describe_subset(replayed, corpus_size, config)
        return cls(subset, describe_tool_time(config), schedule, bounds)

    def header(self, config: BenchConfig) -> str:
        extra = (
            " + ablation"
            if config.ablation
            else f" + {NOCACHE_VARIANT} (ablation variant: connection cache off)"
            if config.with_nocache
            else ""
        )
        return _wrapped(
            f"wsmode bench: {self.subset}; modes {', '.join(config.modes)}{extra}; "
            f"{self.schedule}; {self.tool_time}; end-to-end figures count tool time at its "
            "recorded value"
        )

    def notes(self, config: BenchConfig) -> list[str]:
        notes = [
            self.subset,
            self.tool_time + "; e2e = wall - waited tool time + recorded tool time",
        ]
        if self.bounds:
            notes.append(self.bounds)
        notes.append(describe_output_cap(config))
        sampling = describe_sampling(config)
        if sampling:
            notes.append(sampling)
        if config.embedded:
            notes.append("each variant replays as its own tenant (separate prefix cache)")
        return notes


def _wrapped(text: str) -> str:
    """A long line as lines within the console's width, the later ones indented."""
    return "\n".join(textwrap.wrap(text, width=MAX_COLUMNS, subsequent_indent="  ")) + "\n"


def run_bench(
    config: BenchConfig,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    write_report: ReportWriter | None = None,
) -> int:
    """The whole run; exit status 0, 1 (a rollout failed for another reason than the duration
    limit), 2 (bad input, before any server starts) or 130 (interrupted)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:  # every input checked and the traces loaded before any server starts
        check_config(config)
        corpus = load_traces(config.traces)
        rollouts = select_rollouts(corpus, config)
    except ValueError as exc:  # TraceFormatError is one
        return usage_error(BENCH, str(exc), err=err)
    except OSError as exc:  # reading the traces
        return usage_error(
            BENCH, f"{exc.filename or config.traces}: {exc.strerror or exc}", err=err
        )
    if not rollouts:
        return usage_error(BENCH, "no rollouts selected", err=err)
    if not config.embedded:  # a target that is not there: one line, no results file
        problem = check_targets_now(check_targets_of(config, rollouts[0].model))
        if problem is not None:
            return usage_error(BENCH, problem.line(), err=err)
    words = RunWords.of(config, replayed_rollouts(rollouts, config), len(corpus))
    err.write(words.header(config))
    try:
        run = _replay(config, rollouts, words, err)
    except KeyboardInterrupt:
        err.write(f"\n{BENCH}: interrupted\n")  # as harness.cli says it
        return 130
    except (EngineMetricsError, ServerMetricsError) as exc:
        return usage_error(BENCH, str(exc), err=err)
    result = build_result(run)
    path = write_result(config.out, result)
    _print_summary(out, run, result, words)
    out.write(f"\nresults: {path}\n")
    if config.html and write_report is not None:
        out.write(f"report:  {write_report(result, path.with_suffix('.html'))}\n")
    return 1 if run.real_failures() else 0


def check_targets_of(config: BenchConfig, rollout_model: str) -> list[CheckTarget]:
    """The URLs a run against a foreign target uses, one per transport its modes need."""
    model = config.model or rollout_model
    targets = []
    for mode in config.modes:
        url = config.target if mode == "ws" else config.http_target
        if url:
            targets.append(CheckTarget(url, mode, model, config.api_key))
    return targets


def _replay(config: BenchConfig, rollouts: list[Rollout], words: RunWords, err: TextIO) -> BenchRun:
    """Start the servers (embedded target), replay every variant, stop them; the finished run."""
    started_at = utc_now_iso()
    t0 = time.monotonic()
    with contextlib.ExitStack() as stack:
        servers: dict[str, EmbeddedServer] | None = None
        if config.embedded:
            count = len(ablated_servers(config))
            what = "the embedded reference server" if count == 1 else f"{count} embedded servers"
            with phase(f"starting {what} (profile {config.profile})", err):
                servers = stack.enter_context(embedded_servers(config))
            target_url = servers[MAIN_SERVER].ws_url
        else:
            target_url = config.target or config.http_target or ""
        target = resolve_identity(
            url=target_url,
            name=config.name,
            version=config.target_version,
            profile_name=config.profile_name,
            embedded=config.embedded,
            headers=server_headers(
                target_url if target_url.startswith("ws") else None, config.api_key
            ),
        )
        variants = build_variants(config, servers)
        run = BenchRun(
            config,
            variants,
            rollouts,
            target_name=target["name"],
            target_url=target_url,
            target=target,
        )
        run.started_at = started_at
        run.notes.extend(words.notes(config))
        live = stack.enter_context(config.observe.live_metrics("rollouts", err))
        embedded_http = servers[MAIN_SERVER].http_url if servers is not None else None
        scraper = config.observe.scraper(config.engine_metrics_url, embedded_http)
        if scraper is not None:
            scraper.check_reachable()  # ServerMetricsError: one line, before any replay
        with load_gc(), scraper or contextlib.nullcontext():
            asyncio.run(_warm_up_and_replay(run, err, live))
        if scraper is not None:
            run.server_metrics = scraper.to_json()
    run.elapsed_s = time.monotonic() - t0
    return run


def _print_summary(out: TextIO, run: BenchRun, result: Mapping[str, Any], words: RunWords) -> None:
    config = run.config
    profile = config.profile if config.embedded else "(target)"
    out.write("\n")
    out.write(
        _wrapped(
            f"wsmode bench: {words.subset}; {words.schedule}; {words.tool_time}; profile "
            f"{profile}; {run.elapsed_s:.0f} s"
        )
    )
    out.write("\n")
    out.write(format_table(result) + "\n")
    work = format_work(result)
    if work:
        out.write("\n" + work + "\n")
    goodput = format_goodput(result["bench"])
    if goodput:
        out.write("\n" + goodput + "\n")
    failures = format_failures(result)
    if failures:
        out.write("\n" + failures + "\n")
    for warning in run.warnings:
        out.write(f"warning: {warning}\n")
    analysis = format_analysis(result)
    if analysis:
        out.write("\n" + analysis + "\n")
