"""`wsmode bench`: replay agent rollouts in every mode, compare them, write results and a report.

With no arguments it starts the embedded reference server (`production-like`) in a child process
on a free loopback port with a temporary data directory, replays the default subset of the
bundled corpus in `ws`, `http` and `http-chained` (interleaved: for each rollout every mode, in
rotating order), plus `ws-nocache` (WS with the server's connection cache off, on its own server)
so the speedup splits into input size, transport and server-side cache savings; prints a table,
writes a results JSON under `results/bench/<target>/` and an HTML report beside it.

Choices that shape the numbers (all printed with the table and stored in `config`):

- The server runs in its own process so the client's measurements do not share a GIL with it.
- Each variant replays as its own tenant (its own API key on the embedded server): the server's
  prefix (KV) cache is per tenant, so no mode pre-warms the prompt cache for another. Without this
  the mode that happens to replay a rollout first pays all the cold prefill (~1 s per rollout).
- Tool time is not shrunk silently: `time_scale` (default 0) sets how much of it is waited, and
  every end-to-end figure counts it at its recorded value.
- Bounds: `--max-rollouts` per variant, and `--duration-s` as a hard limit: rollouts still running
  then are cut, and count as failed (never as latencies).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from harness.load.gc_policy import load_gc
from harness.load.replay import (
    MODES,
    Endpoint,
    HttpClientPool,
    Mode,
    ReplayOptions,
    RolloutResult,
    TurnResult,
    parse_mode,
    replay_rollout,
)
from harness.load.schedule import closed_loop, interleaved, open_loop
from harness.results import compare as cmp
from harness.results.histograms import MetricSet
from harness.results.schema import finish_result, new_result
from harness.results.store import slug, write_result
from harness.traces.format import Rollout, load_traces

# The bundled corpus of the checkout this package runs from (editable install), from any cwd.
DEFAULT_TRACES = str(Path(__file__).resolve().parents[2] / "traces" / "corpus")
DEFAULT_PROFILE = "production-like"
# The default subset: the N shortest rollouts (fewest turns) of each agent kind of the bundled
# corpus, at time_scale 0 and concurrency 4: 9 rollouts, 25-43 turns and 27-55 tool calls each.
# Measured on the 2-core reference machine: about 1.5 min for the three modes, ~2 min with
# ws-nocache.
DEFAULT_PER_KIND = 3
DEFAULT_CONCURRENCY = 4
DEFAULT_TIME_SCALE = 0.0
OPTIMIZATION_FLAGS = ("render_cache", "incremental_checks", "routing_reuse", "async_post")
NOCACHE_VARIANT = "ws-nocache"
CUT_ERROR = "cut at the duration limit"
SERVER_START_TIMEOUT_S = 60.0


# -- the embedded server -------------------------------------------------------------------------
@dataclass
class EmbeddedServer:
    """`wsmode serve` in a child process on a free loopback port; `stop()` sends SIGTERM."""

    profile: str = DEFAULT_PROFILE
    disable: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()
    data_dir: Path | None = None
    extra_args: tuple[str, ...] = ()
    ws_url: str = ""
    http_url: str = ""
    process: subprocess.Popen[str] | None = None
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    _log: TextIO | None = None

    def start(self) -> EmbeddedServer:
        if self.data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="wsmode-bench-")
            self.data_dir = Path(self._tmp.name)
        args = [
            sys.executable,
            "-m",
            "harness.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--profile",
            self.profile,
            "--data-dir",
            str(self.data_dir),
            *[a for key in self.api_keys for a in ("--api-key", key)],
            *[a for flag in self.disable for a in ("--disable", flag)],
            *self.extra_args,
        ]
        self._log = tempfile.TemporaryFile("w+", prefix="wsmode-serve-")  # noqa: SIM115
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("WSMODE_API_KEYS", None)
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=self._log, text=True, env=env
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            match = re.search(r"(ws://\S+) \(HTTP (http://\S+)\)", line)
            if match:
                self.ws_url, self.http_url = match.group(1), match.group(2)
                return self
        self.stop()
        raise RuntimeError(f"reference server did not start: {line.strip()} {self.log_tail()}")

    def log_tail(self, n: int = 2000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read()[-n:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- variants ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Variant:
    """One column of the comparison: a mode, against a server, with driver options."""

    name: str
    endpoint: Endpoint
    options: ReplayOptions
    description: str = ""
    disabled: tuple[str, ...] = ()

    @property
    def mode(self) -> Mode:
        return self.options.mode


@dataclass
class BenchConfig:
    target: str | None = None  # ws://... of a foreign server; None = embedded
    http_target: str | None = None
    api_key: str | None = None
    name: str | None = None
    profile: str = DEFAULT_PROFILE
    traces: str = DEFAULT_TRACES
    per_kind: int | None = DEFAULT_PER_KIND  # None: every rollout
    rollout_ids: tuple[str, ...] = ()
    max_turns: int | None = None
    time_scale: float = DEFAULT_TIME_SCALE
    concurrency: int = DEFAULT_CONCURRENCY
    modes: tuple[Mode, ...] = MODES
    ablation: bool = False
    nocache: bool = True  # add ws-nocache (embedded server, ws among the modes)
    schedule: str = "closed"  # closed | open | sweep
    rate_per_s: float = 1.0
    sweep_levels: tuple[int, ...] = (1, 2, 4, 8)
    duration_s: float | None = None  # hard: rollouts still running then are cut
    max_rollouts: int | None = None  # per variant (per sweep level)
    repeats: int = 1
    send_script: bool | None = None  # default: on for the embedded server, off for --target
    model: str | None = None  # the model every request names; default: each rollout's
    prewarm: bool = False
    seed: int = 0
    out: str = "results"
    label: str = "bench"
    html: bool = True
    turn_timeout_s: float = 120.0
    quiet: bool = False

    @property
    def embedded(self) -> bool:
        return self.target is None and self.http_target is None

    @property
    def with_nocache(self) -> bool:
        """ws-nocache runs: with --ablation, or by default against the embedded server (it needs
        the connection cache switched off) when ws is replayed."""
        return self.ablation or (self.nocache and self.embedded and "ws" in self.modes)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "http_target": self.http_target,
            "embedded": self.embedded,
            "profile": self.profile if self.embedded else None,
            "traces": self.traces,
            "per_kind": self.per_kind,
            "rollout_ids": list(self.rollout_ids),
            "max_turns": self.max_turns,
            "time_scale": self.time_scale,
            "concurrency": self.concurrency,
            "modes": list(self.modes),
            "ablation": self.ablation,
            "nocache_variant": self.with_nocache,
            "schedule": self.schedule,
            "rate_per_s": self.rate_per_s if self.schedule == "open" else None,
            "sweep_levels": list(self.sweep_levels) if self.schedule == "sweep" else None,
            "duration_s": self.duration_s,
            "max_rollouts": self.max_rollouts,
            "repeats": self.repeats,
            "send_script": self.effective_send_script,
            "model": self.model,
            "prewarm": self.prewarm,
            "seed": self.seed,
            "label": self.label,
            "turn_timeout_s": self.turn_timeout_s,
        }

    @property
    def effective_send_script(self) -> bool:
        return self.embedded if self.send_script is None else self.send_script


def select_rollouts(rollouts: Sequence[Rollout], config: BenchConfig) -> list[Rollout]:
    """The subset to replay: named ids, else the `per_kind` shortest (fewest turns) of each
    agent kind, in file order; `per_kind` None: every rollout."""
    if config.rollout_ids:
        by_id = {r.id: r for r in rollouts}
        missing = [i for i in config.rollout_ids if i not in by_id]
        if missing:
            raise ValueError(f"unknown rollout id(s): {', '.join(missing)}")
        return [by_id[i] for i in config.rollout_ids]
    if config.per_kind is None:
        return list(rollouts)
    by_kind: dict[str, list[Rollout]] = {}
    for r in rollouts:
        by_kind.setdefault(r.agent_kind, []).append(r)
    chosen: set[str] = set()
    for group in by_kind.values():
        shortest = sorted(group, key=lambda r: (len(r.turns), r.id))[: config.per_kind]
        chosen.update(r.id for r in shortest)
    return [r for r in rollouts if r.id in chosen]


# -- running -----------------------------------------------------------------------------------
@dataclass
class BenchRun:
    config: BenchConfig
    variants: list[Variant]
    rollouts: list[Rollout]
    results: list[RolloutResult] = field(default_factory=list)
    target_name: str = "reference"
    target_url: str = ""
    started_at: str = ""
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)


class Progress:
    """Plain progress lines on stderr: done/total per variant, at most every `every_s`."""

    def __init__(self, totals: Mapping[str, int], stream: TextIO, every_s: float = 2.0) -> None:
        self.totals = dict(totals)
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.stream = stream
        self.every_s = every_s
        self.start = time.monotonic()
        self.last = 0.0

    def __call__(self, result: RolloutResult) -> None:
        self.done[result.mode] += 1
        if not result.ok:
            self.failed[result.mode] += 1
        now = time.monotonic()
        finished = sum(self.done.values()) == sum(self.totals.values())
        if now - self.last >= self.every_s or finished:
            self.last = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        total = sum(self.totals.values())
        done = sum(self.done.values())
        width = 24
        filled = int(width * done / total) if total else width
        parts = []
        for name, n in self.totals.items():
            fail = f" ({self.failed[name]} failed)" if self.failed[name] else ""
            parts.append(f"{name} {self.done[name]}/{n}{fail}")
        elapsed = time.monotonic() - self.start
        return (
            f"bench [{'#' * filled}{'.' * (width - filled)}] {done}/{total} replays  "
            f"{elapsed:5.0f}s  " + "  ".join(parts)
        )


def _variant_key(name: str, seed: int) -> str:
    return f"wsmode-bench-{seed}-{name}"


def build_variants(
    config: BenchConfig, servers: Mapping[str, EmbeddedServer] | None
) -> list[Variant]:
    """The variants of this run; with the embedded servers, each variant is its own tenant."""
    base = ReplayOptions(
        time_scale=config.time_scale,
        send_script=config.effective_send_script,
        model=config.model,
        prewarm=config.prewarm,
        max_turns=config.max_turns,
        turn_timeout_s=config.turn_timeout_s,
        seed=None,
    )
    variants: list[Variant] = []

    def endpoint(server_key: str, name: str) -> Endpoint:
        if servers is None:
            return Endpoint(config.target, config.http_target, config.api_key)
        server = servers[server_key]
        return Endpoint(server.ws_url, server.http_url, _variant_key(name, config.seed))

    descriptions = {
        "ws": "WebSocket, previous_response_id + new items, store=false (connection cache)",
        "http": "HTTP SSE, stateless: full history every turn, store=false",
        "http-chained": "HTTP SSE, previous_response_id + new items, store=true (hydration)",
    }
    for mode in config.modes:
        variants.append(
            Variant(mode, endpoint("main", mode), replace(base, mode=mode), descriptions[mode])
        )
    if config.with_nocache:
        variants.append(
            Variant(
                NOCACHE_VARIANT,
                endpoint(NOCACHE_VARIANT, NOCACHE_VARIANT),
                replace(base, mode="ws", store=True),
                "WebSocket, connection_cache off, store=true (hydrates every turn)",
                ("connection_cache",),
            )
        )
    if config.ablation:
        for flag in OPTIMIZATION_FLAGS:
            name = ablation_name(flag)
            variants.append(
                Variant(
                    name,
                    endpoint(name, name),
                    replace(base, mode="ws"),
                    f"WebSocket with {flag} off",
                    (flag,),
                )
            )
    return variants


def ablation_name(flag: str) -> str:
    return "ws-no-" + flag.replace("_", "-")


@contextlib.contextmanager
def embedded_servers(config: BenchConfig) -> Iterator[dict[str, EmbeddedServer]]:
    """The main server (every optimization on), one for ws-nocache (connection cache off) and,
    for --ablation, one per switched-off flag."""
    wanted: dict[str, tuple[str, ...]] = {"main": ()}
    if config.with_nocache:
        wanted[NOCACHE_VARIANT] = ("connection_cache",)
    if config.ablation:
        for flag in OPTIMIZATION_FLAGS:
            wanted[ablation_name(flag)] = (flag,)
    names: list[str] = list(config.modes) + [n for n in wanted if n != "main"]
    keys = tuple(_variant_key(n, config.seed) for n in names)
    servers: dict[str, EmbeddedServer] = {}
    try:
        for key, disabled in wanted.items():
            servers[key] = EmbeddedServer(profile=config.profile, disable=disabled, api_keys=keys)
            servers[key].start()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


async def run_variants(
    run: BenchRun, *, progress: TextIO | None = None, http_pool: HttpClientPool | None = None
) -> list[RolloutResult]:
    """Replay every (rollout, variant) pair with the configured schedule.

    HTTP clients come from `http_pool`, filled here with one client per concurrent rollout and
    HTTP variant before the first replay starts (building one stalls the event loop ~22 ms).
    """
    config = run.config
    pairs = interleaved(run.rollouts, run.variants, repeats=config.repeats)
    own_pool = http_pool is None
    pool = http_pool if http_pool is not None else HttpClientPool()
    slots = max(
        [config.concurrency, *config.sweep_levels]
        if config.schedule == "sweep"
        else [config.concurrency]
    )
    for variant in run.variants:
        if variant.mode != "ws":
            pool.prefill(
                variant.endpoint.for_mode(variant.mode),
                variant.endpoint.api_key,
                variant.options.turn_timeout_s,
                min(slots, len(run.rollouts) * config.repeats),
            )

    async def runner(job: Replay, intended_ns: int | None) -> RolloutResult:
        variant = job.variant
        return await replay_rollout(
            job.rollout,
            variant.endpoint,
            variant.options,
            name=variant.name,
            intended_start_ns=intended_ns,
            http_pool=pool,
            on_turn=job.turns.append,
        )

    try:
        return await _schedule(run, pairs, runner, progress)
    finally:
        if own_pool:
            await pool.aclose()


@dataclass(slots=True)
class Replay:
    """One job of a schedule: a rollout in a variant. `turns` collects its turns as they end, so
    a replay cut at the duration limit keeps the turns it finished."""

    rollout: Rollout
    variant: Variant
    turns: list[TurnResult] = field(default_factory=list)


async def _schedule(
    run: BenchRun,
    pairs: list[tuple[Rollout, Variant]],
    runner: Callable[[Replay, int | None], Awaitable[RolloutResult]],
    progress: TextIO | None,
) -> list[RolloutResult]:
    config = run.config
    # pairs are interleaved (every variant per rollout), so a prefix of N x variants pairs
    # replays the first N rollouts in every variant
    variant_count = len({v.name for _, v in pairs})
    max_jobs = config.max_rollouts * variant_count if config.max_rollouts is not None else None
    totals = Counter(v.name for _, v in pairs[:max_jobs])
    on_done = Progress(totals, progress) if progress is not None else None

    def cut(job: Replay) -> RolloutResult:
        return cut_result(job, config.duration_s)

    if config.schedule == "open":
        return await open_loop(
            [Replay(r, v) for r, v in pairs],
            runner,
            rate_per_s=config.rate_per_s,
            seed=config.seed,
            max_in_flight=config.concurrency,
            duration_s=config.duration_s,
            max_jobs=max_jobs,
            on_done=on_done,
            cut=cut,
        )
    if config.schedule == "sweep":
        results: list[RolloutResult] = []
        for level in config.sweep_levels:
            level_jobs = [Replay(r, replace(v, name=f"{v.name}-c{level}")) for r, v in pairs]
            level_totals = Counter(j.variant.name for j in level_jobs[:max_jobs])
            done = Progress(level_totals, progress) if progress is not None else None
            results += await closed_loop(
                level_jobs,
                runner,
                concurrency=level,
                duration_s=config.duration_s,
                max_jobs=max_jobs,
                on_done=done,
                cut=cut,
            )
        return results
    return await closed_loop(
        [Replay(r, v) for r, v in pairs],
        runner,
        concurrency=config.concurrency,
        duration_s=config.duration_s,
        max_jobs=max_jobs,
        on_done=on_done,
        cut=cut,
    )


def cut_result(job: Replay, limit_s: float | None) -> RolloutResult:
    """A replay cancelled at the duration limit: a failed rollout, so it is counted and kept out
    of the rollout latencies. The turns it finished stay (measured like any failed rollout's ok
    turns); the turn it was in becomes a failed turn carrying the error (turn error rates count
    it)."""
    error = f"{CUT_ERROR} ({limit_s:g} s)" if limit_s is not None else CUT_ERROR
    rollout, name = job.rollout, job.variant.name
    index = job.turns[-1].turn_index + 1 if job.turns else 0
    return RolloutResult(
        rollout.id,
        name,
        job.variant.mode,
        turns=[*job.turns, TurnResult(rollout.id, name, index, False, error)],
        ok=False,
        error=error,
        time_scale=job.variant.options.time_scale,
    )


async def warm_up(
    variants: Sequence[Variant], rollout: Rollout, http_pool: HttpClientPool | None = None
) -> None:
    """One unrecorded turn per variant: first connections, imports and caches out of the way."""
    for variant in variants:
        options = replace(variant.options, max_turns=1, time_scale=0.0)
        await replay_rollout(
            rollout, variant.endpoint, options, name=variant.name, http_pool=http_pool
        )


# -- results -----------------------------------------------------------------------------------
METRIC_ORDER = (
    "ttft_ms",
    "itl_ms",
    "tpot_ms",
    "turn_e2e_ms",
    "api_overhead_ms",
    "rollout_e2e_ms",
    "rollout_model_ms",
)


def metric_sets(results: Sequence[RolloutResult]) -> tuple[dict[str, MetricSet], Counter[str]]:
    """HdrHistograms per variant (ok turns / ok rollouts only) and failed turns per variant."""
    sets: dict[str, MetricSet] = {}
    failures: Counter[str] = Counter()
    for r in results:
        ms = sets.setdefault(r.mode, MetricSet())
        for t in r.turns:
            if not t.ok:
                failures[r.mode] += 1
                continue
            if t.ttft_ms is not None:
                ms.record_ms("ttft_ms", t.ttft_ms)
            for gap in t.itl_gaps_ms:
                ms.record_ms("itl_ms", gap)
            if t.tpot_ms is not None:
                ms.record_ms("tpot_ms", t.tpot_ms)
            if t.turn_e2e_ms is not None:
                ms.record_ms("turn_e2e_ms", t.turn_e2e_ms)
            if t.api_overhead_ms is not None:
                ms.record_ms("api_overhead_ms", max(t.api_overhead_ms, 0.0))
        if r.ok:
            ms.record_ms("rollout_e2e_ms", r.e2e_ms)
            ms.record_ms("rollout_model_ms", r.model_ms)
    return sets, failures


def mode_entry(ms: MetricSet, failures: int) -> dict[str, Any]:
    return {**ms.to_dict(), "summary": ms.summary(), "failures": failures}


def analyse(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    *,
    seed: int,
) -> dict[str, Any]:
    """Comparisons against http, the speedup split and the ablation rows."""
    comparisons = []
    for name in names:
        baseline = baseline_for(name, names)
        if baseline is not None:
            comparisons.append(cmp.compare(rollouts, samples, baseline, name, seed=seed))
    split = cmp.speedup_split(rollouts)
    flags = {ablation_name(f): f for f in OPTIMIZATION_FLAGS if ablation_name(f) in names}
    if NOCACHE_VARIANT in names:
        flags = {NOCACHE_VARIANT: "connection_cache", **flags}
    ablation = cmp.ablation_rows(rollouts, samples, flags) if flags and "ws" in names else []
    sensitivity = (
        cmp.tool_time_sensitivity(rollouts, "http", "ws") if {"http", "ws"} <= set(names) else []
    )
    return {
        "comparisons": comparisons,
        "tool_time_sensitivity": sensitivity,
        "split": split,
        "ablation": ablation,
        "stages_ms": {n: cmp.stage_means(samples, n) for n in names},
    }


def baseline_for(name: str, names: Sequence[str]) -> str | None:
    """The http variant `name` is compared with: `http`, or `http-cN` for a sweep's `x-cN`."""
    match = re.fullmatch(r"(.+)-c(\d+)", name)
    if match:
        base = f"http-c{match.group(2)}"
        return base if base in names and base != name else None
    return "http" if "http" in names and name != "http" else None


def describe_schedule(config: BenchConfig) -> str:
    if config.schedule == "open":
        return (
            f"open loop, Poisson arrivals at {config.rate_per_s:g} rollouts/s, at most "
            f"{config.concurrency} in flight, latency from the intended start"
        )
    if config.schedule == "sweep":
        return "closed-loop sweep over concurrency " + ",".join(map(str, config.sweep_levels))
    return f"closed loop, concurrency {config.concurrency}"


def describe_bounds(config: BenchConfig) -> str | None:
    """The count and duration bounds in words, or None when the run is unbounded."""
    per_level = " per sweep level" if config.schedule == "sweep" else ""
    parts = []
    if config.max_rollouts is not None:
        parts.append(f"at most {config.max_rollouts} rollouts per variant{per_level}")
    if config.duration_s is not None:
        parts.append(
            f"hard limit {config.duration_s:g} s on the replays{per_level} (rollouts still "
            "running then are cut and count as failed, not as latencies)"
        )
    return "; ".join(parts) or None


def build_result(run: BenchRun) -> dict[str, Any]:
    config = run.config
    names = list(dict.fromkeys(r.mode for r in run.results))
    result = new_result(
        "bench",
        label=config.label,
        target={"url": run.target_url, "name": run.target_name},
        profile=config.profile if config.embedded else None,
        config={
            **config.to_json(),
            "rollouts": [r.id for r in run.rollouts],
            "variants": {
                v.name: {
                    "mode": v.mode,
                    "description": v.description,
                    "store": v.options.effective_store,
                    "disabled_optimizations": list(v.disabled),
                }
                for v in run.variants
            },
            "notes": run.notes,
        },
        started_at=run.started_at or None,
    )
    bench = result["bench"]
    bench["time_scale"] = config.time_scale
    sets, failures = metric_sets(run.results)
    for name in names:
        bench["modes"][name] = mode_entry(sets[name], failures[name])
    bench["samples"] = [t.to_sample() for r in run.results for t in r.turns]
    bench["rollouts"] = [r.to_record() for r in run.results]
    analysis = analyse(bench["rollouts"], bench["samples"], names, seed=config.seed)
    bench["comparisons"] = [c.to_dict() for c in analysis["comparisons"]]
    bench["analysis"] = {
        "tool_time_sensitivity": analysis["tool_time_sensitivity"],
        "split": [
            {
                "term": t.name,
                "from_mode": t.from_mode,
                "to_mode": t.to_mode,
                "saved_ms_per_rollout": _r(t.saved_ms),
                "share": _r(t.share, 4),
                "pairs": t.pairs,
            }
            for t in analysis["split"]
        ],
        "ablation": [
            {
                "variant": a.variant,
                "optimization": a.flag,
                "slowdown_ms_per_rollout": _r(a.slowdown_ms),
                "share": _r(a.share, 4),
                "ttft_p50_ms": _r(a.ttft_p50_ms),
                "ttft_delta_ms": _r(a.ttft_delta_ms),
                "turn_delta_ms_median": _r(a.turn_delta_ms),
                "pairs": a.pairs,
            }
            for a in analysis["ablation"]
        ],
        "stages_ms": {
            n: {k: round(v, 3) for k, v in stages.items()}
            for n, stages in analysis["stages_ms"].items()
        },
        "per_rollout_speedup": {
            c.mode: [[rid, round(e2e, 4), round(model, 4)] for rid, e2e, model in c.per_rollout]
            for c in analysis["comparisons"]
        },
    }
    return finish_result(result)


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


# -- the table ---------------------------------------------------------------------------------
def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_table(result: Mapping[str, Any]) -> str:
    bench = result["bench"]
    comps = {c["mode"]: c for c in bench["comparisons"]}
    rollouts_by_mode: Counter[str] = Counter(r["mode"] for r in bench["rollouts"])
    turns_by_mode: Counter[str] = Counter(s["mode"] for s in bench["samples"])
    variants = result.get("config", {}).get("variants", {})
    header = (
        f"{'mode':<24}{'rollouts':>9}{'turns':>7}{'fail':>5}"
        f"{'TTFT p50':>10}{'p90':>8}{'p99':>8}{'turn e2e p50':>14}{'p99':>8}"
        f"{'rollout e2e p50':>17}{'model p50':>11}"
        f"{'speedup e2e [95% CI]':>24}{'model-side [95% CI]':>24}{'TTFT -%':>9}"
    )

    def row(name: str, entry: Mapping[str, Any]) -> str:
        s = entry["summary"]
        ttft, turn = s.get("ttft_ms", {}), s.get("turn_e2e_ms", {})
        roll, model = s.get("rollout_e2e_ms", {}), s.get("rollout_model_ms", {})
        comp = comps.get(name)
        speed = model_speed = improvement = "-"
        if comp is not None and comp["speedup_median"] is not None:
            ci = comp["ci95"] or [None, None]
            speed = f"{comp['speedup_median']:.3f} [{ci[0]:.3f},{ci[1]:.3f}]"
            mci = comp.get("model_ci95") or [None, None]
            if comp.get("model_speedup_median") is not None:
                model_speed = f"{comp['model_speedup_median']:.3f} [{mci[0]:.3f},{mci[1]:.3f}]"
            improvement = _fmt(comp["ttft_improvement_pct"])
        elif name == "http" or re.fullmatch(r"http-c\d+", name):  # http-cN: a sweep level
            speed = model_speed = "(baseline)"
        return (
            f"{name:<24}{rollouts_by_mode[name]:>9}{turns_by_mode[name]:>7}{entry['failures']:>5}"
            f"{_fmt(ttft.get('p50')):>10}{_fmt(ttft.get('p90')):>8}{_fmt(ttft.get('p99')):>8}"
            f"{_fmt(turn.get('p50')):>14}{_fmt(turn.get('p99')):>8}"
            f"{_fmt(_s(roll.get('p50'))):>17}{_fmt(_s(model.get('p50'))):>11}"
            f"{speed:>24}{model_speed:>24}{improvement:>9}"
        )

    # ablation variants (a server optimization switched off) below the modes, marked as such
    modes = bench["modes"]
    ablated = [
        n
        for n in modes
        if variants.get(re.sub(r"-c\d+$", "", n), {}).get("disabled_optimizations")  # sweep: -cN
    ]
    lines = [header, "-" * len(header)]
    lines += [row(n, e) for n, e in modes.items() if n not in ablated]
    if ablated:
        lines.append("ablation variants: ws with a server optimization off (its own server)")
        lines += [row(n, modes[n]) for n in ablated]
    lines.append(
        "(latencies in ms; rollout e2e and model-side time in s; speedup = median per-rollout "
        "ratio http/mode, bootstrap 95% CI; TTFT -% = TTFT p50 improvement over http)"
    )
    return "\n".join(lines)


def format_failures(result: Mapping[str, Any]) -> str:
    """One line per variant with failed rollouts: how many (cut ones apart) and the first error,
    preferring a real failure over a cut, so the table's failure counts come with a reason."""
    rollouts = result["bench"]["rollouts"]
    lines = []
    for name in result["bench"]["modes"]:
        failed = [r for r in rollouts if r["mode"] == name and not r["ok"]]
        if not failed:
            continue
        total = sum(1 for r in rollouts if r["mode"] == name)
        errors = [" ".join(str(r.get("error") or "no error recorded").split()) for r in failed]
        real = [e for e in errors if not e.startswith(CUT_ERROR)]
        cut = len(errors) - len(real)
        cut_note = f" ({cut} {CUT_ERROR})" if cut and real else ""
        lines.append(
            f"  {name}: {len(failed)} of {total} rollouts failed{cut_note}: {(real or errors)[0]}"
        )
    return "Failed rollouts (first error per variant):\n" + "\n".join(lines) if lines else ""


def _s(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, int | float) else None


def format_analysis(result: Mapping[str, Any]) -> str:
    analysis = result["bench"].get("analysis", {})
    lines: list[str] = []
    split = [t for t in analysis.get("split", []) if t["saved_ms_per_rollout"] is not None]
    if split:
        lines.append("Speedup split (mean model-side time saved per rollout, http -> ws):")
        total = sum(t["saved_ms_per_rollout"] for t in split)
        for t in split:
            share = f"{100 * t['share']:.0f}%" if t["share"] is not None else "-"
            lines.append(
                f"  {t['term']:<32} {t['from_mode']:>13} -> {t['to_mode']:<11}"
                f"{t['saved_ms_per_rollout']:>10.0f} ms  {share:>5}"
            )
        lines.append(f"  {'total':<32} {'http':>13} -> {'ws':<11}{total:>10.0f} ms")
    sensitivity = [r for r in analysis.get("tool_time_sensitivity", []) if r["speedup_median"]]
    if sensitivity:
        lines.append(
            "WS speedup vs the client's tool time (derived: measured model-side times + recorded "
            "tool time x f):"
        )
        lines.append(
            "  "
            + "  ".join(
                f"f={r['tool_time_fraction']:g}: {r['speedup_median']:.3f}x" for r in sensitivity
            )
        )
        lines.append(
            "  (f=0 is the agent loop with instant tools, what 'faster agent loops' figures "
            "measure; f=1 is this corpus's recorded tool waits)"
        )
    ablation = analysis.get("ablation", [])
    if ablation:
        lines.append(
            "Ablation (each optimization off in turn, vs ws with all on; share of the http -> ws "
            "saving):"
        )
        lines.append(
            f"  {'optimization':<20}{'variant':<26}{'+ms/rollout':>12}{'share':>8}"
            f"{'+ms/turn (median)':>19}{'TTFT p50':>10}{'ΔTTFT':>9}"
        )
        for a in ablation:
            share = f"{100 * a['share']:.0f}%" if a["share"] is not None else "-"
            lines.append(
                f"  {a['optimization']:<20}{a['variant']:<26}"
                f"{_fmt(a['slowdown_ms_per_rollout'], 0):>12}{share:>8}"
                f"{_fmt(a.get('turn_delta_ms_median')):>19}"
                f"{_fmt(a['ttft_p50_ms']):>10}{_fmt(a['ttft_delta_ms']):>9}"
            )
        lines.append(
            "  (+ms/rollout: mean paired model-side time added, which the share uses; "
            "+ms/turn: median paired turn e2e difference, robust to scheduling noise)"
        )
    stages = analysis.get("stages_ms", {})
    if any(stages.values()):
        names = sorted({k for v in stages.values() for k in v})
        lines.append("Server stage time per turn (mean ms, real + charged; reference server):")
        width = max(22, *(len(mode) + 2 for mode in stages))
        lines.append("  " + f"{'mode':<{width}}" + "".join(f"{n[:9]:>10}" for n in names))
        for mode, values in stages.items():
            if values:
                lines.append(
                    "  "
                    + f"{mode:<{width}}"
                    + "".join(f"{values.get(n, 0.0):>10.1f}" for n in names)
                )
    return "\n".join(lines)


# -- orchestration -----------------------------------------------------------------------------
def check_config(config: BenchConfig) -> None:
    """Raise ValueError naming the option for a configuration the run cannot honour."""

    def at_least(option: str, value: float | None, low: float, *, strict: bool = False) -> None:
        bad = value is not None and (
            not math.isfinite(value) or value < low or (strict and value == low)
        )
        if bad:
            raise ValueError(f"{option} must be {'>' if strict else '>='} {low:g}, got {value:g}")

    if not config.modes:
        raise ValueError("--modes: no mode given (choose from ws,http,http-chained)")
    if config.ablation and not config.embedded:
        raise ValueError("--ablation needs the embedded server (it switches flags)")
    at_least("--time-scale", config.time_scale, 0)
    at_least("--concurrency", config.concurrency, 1)
    if config.per_kind is not None and config.per_kind < 0:
        raise ValueError(f"--per-kind must be >= 0 (0 = every rollout), got {config.per_kind}")
    at_least("--max-turns", config.max_turns, 1)
    at_least("--repeats", config.repeats, 1)
    at_least("--max-rollouts", config.max_rollouts, 1)
    at_least("--duration-s", config.duration_s, 0, strict=True)
    at_least("--turn-timeout-s", config.turn_timeout_s, 0, strict=True)
    if config.schedule == "open":
        at_least("--rate", config.rate_per_s, 0, strict=True)
    if config.schedule == "sweep":
        if not config.sweep_levels:
            raise ValueError("--sweep: no concurrency level given")
        for level in config.sweep_levels:
            at_least("--sweep levels", level, 1)
    if config.traces == DEFAULT_TRACES and not Path(DEFAULT_TRACES).is_dir():
        raise ValueError(
            f"the bundled trace corpus is not at {DEFAULT_TRACES}: run from a checkout installed "
            "with `pip install -e .`, or pass --traces FILE|DIR"
        )


def _usage_error(err: TextIO, message: str) -> int:
    err.write(f"wsmode bench: {' '.join(message.split())}\n")  # one line, whatever the message
    return 2


def run_bench(config: BenchConfig, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from harness.results.schema import utc_now_iso

    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    # every input checked and the traces loaded before any server starts
    try:
        check_config(config)
        all_rollouts = load_traces(config.traces)
        rollouts = select_rollouts(all_rollouts, config)
    except ValueError as exc:  # TraceFormatError is one
        return _usage_error(err, str(exc))
    except OSError as exc:  # reading the traces
        return _usage_error(err, f"{exc.filename or config.traces}: {exc.strerror or exc}")
    if not rollouts:
        return _usage_error(err, "no rollouts selected")
    # what the header describes: the rollouts --max-rollouts lets through (the first ones)
    replayed = rollouts[: config.max_rollouts] if config.max_rollouts else rollouts
    turns = sum(min(len(r.turns), config.max_turns or len(r.turns)) for r in replayed)
    calls = [sum(len(t.function_calls) for t in r.turns) for r in replayed]
    subset = (
        f"{len(replayed)} of {len(all_rollouts)} rollouts from {config.traces}"
        + (
            f" (the {config.per_kind} shortest per agent kind)"
            if config.per_kind and not config.rollout_ids
            else ""
        )
        + f", {turns} turns, {min(calls)}-{max(calls)} tool calls each"
    )
    tool_note = (
        "tool time not waited (time_scale 0)"
        if config.time_scale == 0
        else f"tool time waited x{config.time_scale:g}"
    )
    bounds = describe_bounds(config)
    schedule = describe_schedule(config) + (f"; {bounds}" if bounds else "")
    extra = (
        " + ablation"
        if config.ablation
        else f" + {NOCACHE_VARIANT} (ablation variant: connection cache off)"
        if config.with_nocache
        else ""
    )
    err.write(
        f"wsmode bench: {subset}; modes {', '.join(config.modes)}{extra}; {schedule}; "
        f"{tool_note}; end-to-end figures count tool time at its recorded value\n"
    )
    started_at = utc_now_iso()
    t0 = time.monotonic()
    with contextlib.ExitStack() as stack:
        servers: dict[str, EmbeddedServer] | None = None
        if config.embedded:
            err.write(f"starting the embedded reference server (profile {config.profile}) ...\n")
            servers = stack.enter_context(embedded_servers(config))
            target_name, target_url = "reference", servers["main"].ws_url
        else:
            target_url = config.target or config.http_target or ""
            target_name = config.name or slug(re.sub(r"^\w+://", "", target_url))
        variants = build_variants(config, servers)
        run = BenchRun(config, variants, rollouts, target_name=target_name, target_url=target_url)
        run.started_at = started_at
        run.notes.append(subset)
        run.notes.append(tool_note + "; e2e = wall - waited tool time + recorded tool time")
        if bounds:
            run.notes.append(bounds)
        if config.embedded:
            run.notes.append("each variant replays as its own tenant (separate prefix cache)")
        try:
            with load_gc():
                asyncio.run(_run(run, err))
        except KeyboardInterrupt:
            err.write("interrupted\n")
            return 130
    run.elapsed_s = time.monotonic() - t0
    result = build_result(run)
    path = write_result(config.out, result)
    out.write(
        f"\nwsmode bench: {subset}; {schedule}; {tool_note}; profile "
        f"{config.profile if config.embedded else '(target)'}; {run.elapsed_s:.0f} s\n\n"
    )
    out.write(format_table(result) + "\n")
    failures = format_failures(result)
    if failures:
        out.write("\n" + failures + "\n")
    analysis = format_analysis(result)
    if analysis:
        out.write("\n" + analysis + "\n")
    out.write(f"\nresults: {path}\n")
    if config.html:
        from harness.report.bench_html import write_report

        html_path = write_report(result, path.with_suffix(".html"))
        out.write(f"report:  {html_path}\n")
    # rollouts cut at the limit the user set are expected: only real failures fail the run
    failed = [r for r in run.results if not r.ok and not (r.error or "").startswith(CUT_ERROR)]
    return 1 if failed else 0


async def _run(run: BenchRun, err: TextIO) -> None:
    pool = HttpClientPool()
    try:
        if run.rollouts:
            await warm_up(run.variants, run.rollouts[0], pool)
        run.results = await run_variants(run, progress=err, http_pool=pool)
    finally:
        await pool.aclose()


# -- CLI -----------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_argument_group("target (default: the embedded reference server)")
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
    work = parser.add_argument_group("workload")
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
    load = parser.add_argument_group("load pattern")
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
        "--turn-timeout-s", type=float, default=120.0, help="a turn that takes longer fails"
    )
    load.add_argument("--seed", type=int, default=0, help="arrivals, bootstrap and tenant keys")
    output = parser.add_argument_group("output")
    output.add_argument("--out", default="results", help="results root (default results/)")
    output.add_argument("--label", default="bench", help="results file label")
    output.add_argument("--no-html", dest="html", action="store_false")


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
        return _usage_error(sys.stderr, str(exc))
    return run_bench(config)
