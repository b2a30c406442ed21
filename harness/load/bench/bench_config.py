"""What one `wsmode bench` run replays, against what, and how: `BenchConfig`, its checks, the
rollout subset it selects and its description in words (for the header and the results notes).

Choices that shape the numbers (all printed with the table and stored in the results `config`):

- Tool time is not shrunk silently: `time_scale` (default 0) sets how much of it is waited, and
  every end-to-end figure counts it at its recorded value.
- Bounds: `max_rollouts` per variant, and `duration_s` as a hard limit: rollouts still running
  then are cut, and count as failed (never as latencies).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bundled import BundledDataMissing, corpus_dir, real_corpus_dir
from harness.load.core.modes import MODES, Mode
from harness.load.core.subagents import families, family_members
from harness.load.core.target_watch import DEFAULT_EVENT_TIMEOUT_S, DEFAULT_TURN_TIMEOUT_S
from harness.load.embedded_server import DEFAULT_PROFILE
from harness.results.paths import portable_path
from harness.traces.format import Rollout


def _bundled_corpus() -> str:
    """The corpus shipped with wsmode (the wheel's copy, else the checkout's), from any cwd; an
    install without it falls back to traces/corpus in the working directory (check_config says
    so when that is missing too)."""
    try:
        return str(corpus_dir())
    except BundledDataMissing:
        return str(Path("traces") / "corpus")


DEFAULT_TRACES = _bundled_corpus()
#: `--corpus NAME`: the bundled corpora (generated rollouts, or ones converted from public
#: recordings of real agent sessions, traces/real).
CORPORA = ("generated", "real")


def corpus_traces(name: str) -> str:
    """The trace directory of a bundled corpus."""
    if name not in CORPORA:
        raise ValueError(f"--corpus: expected one of {', '.join(CORPORA)}, got {name!r}")
    if name == "generated":
        return DEFAULT_TRACES
    try:
        return str(real_corpus_dir())
    except BundledDataMissing:
        return str(Path("traces") / "real")


# The default subset: the N shortest rollouts (fewest turns) of each agent kind of the bundled
# corpus, at time_scale 0 and concurrency 4: 9 rollouts, 25-43 turns and 27-55 tool calls each.
# Measured on the 2-core reference machine: about 1.5 min for the three modes, ~2 min with
# ws-nocache.
DEFAULT_PER_KIND = 3
DEFAULT_CONCURRENCY = 4
DEFAULT_TIME_SCALE = 0.0


@dataclass
class BenchConfig:
    target: str | None = None  # ws://... of a foreign server; None = embedded
    http_target: str | None = None
    api_key: str | None = None
    name: str | None = None  # --target-name
    target_version: str | None = None  # --target-version
    profile_name: str | None = None  # the --target-profile's name
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
    turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S
    event_timeout_s: float = DEFAULT_EVENT_TIMEOUT_S  # silence that ends a turn (a slow prefill)
    # each turn asks max_output_tokens = its recorded output tokens x this; None: no cap
    output_cap_scale: float | None = 1.0
    # the Prometheus page of the engine behind the target: its prefix-cache counters are read
    # around each variant, which then replay one after another (harness.load.engine_metrics)
    engine_metrics_url: str | None = None
    quiet: bool = False
    # a fresh token per run: with a target of the user's, each variant's prompts start with a
    # line of their own (variants.cache_salt), so no variant warms another's prefix cache
    cache_salt: str | None = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def embedded(self) -> bool:
        return self.target is None and self.http_target is None

    @property
    def with_nocache(self) -> bool:
        """ws-nocache runs: with --ablation, or by default against the embedded server (it needs
        the connection cache switched off) when ws is replayed."""
        return self.ablation or (self.nocache and self.embedded and "ws" in self.modes)

    @property
    def effective_send_script(self) -> bool:
        return self.embedded if self.send_script is None else self.send_script

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "http_target": self.http_target,
            "embedded": self.embedded,
            "profile": self.profile if self.embedded else None,
            "traces": portable_path(self.traces),
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
            "event_timeout_s": self.event_timeout_s,
            "output_cap_scale": self.output_cap_scale,
            "engine_metrics_url": self.engine_metrics_url,
            "cache_salt": None if self.embedded else self.cache_salt,
        }


def _at_least(option: str, value: float | None, low: float, *, strict: bool = False) -> None:
    bad = value is not None and (
        not math.isfinite(value) or value < low or (strict and value == low)
    )
    if bad:
        raise ValueError(f"{option} must be {'>' if strict else '>='} {low:g}, got {value:g}")


def check_config(config: BenchConfig) -> None:
    """Raise ValueError naming the option for a configuration the run cannot honour."""
    if not config.modes:
        raise ValueError("--modes: no mode given (choose from ws,http,http-chained)")
    metrics_url = config.engine_metrics_url
    if metrics_url is not None and not metrics_url.startswith(("http://", "https://")):
        raise ValueError(f"--engine-metrics: expected an http(s) URL, got {metrics_url!r}")
    if config.engine_metrics_url is not None and config.schedule == "sweep":
        raise ValueError(
            "--engine-metrics reads the counters around each variant: not with a sweep"
        )
    if config.ablation and not config.embedded:
        raise ValueError("--ablation needs the embedded server (it switches flags)")
    _at_least("--time-scale", config.time_scale, 0)
    _at_least("--concurrency", config.concurrency, 1)
    if config.per_kind is not None and config.per_kind < 0:
        raise ValueError(f"--per-kind must be >= 0 (0 = every rollout), got {config.per_kind}")
    _at_least("--max-turns", config.max_turns, 1)
    _at_least("--repeats", config.repeats, 1)
    _at_least("--max-rollouts", config.max_rollouts, 1)
    _at_least("--duration-s", config.duration_s, 0, strict=True)
    _at_least("--turn-timeout-s", config.turn_timeout_s, 0, strict=True)
    _at_least("--event-timeout-s", config.event_timeout_s, 0, strict=True)
    _at_least("--output-cap-scale", config.output_cap_scale, 0, strict=True)
    if config.schedule == "open":
        _at_least("--rate", config.rate_per_s, 0, strict=True)
    if config.schedule == "sweep":
        if not config.sweep_levels:
            raise ValueError("--sweep: no concurrency level given")
        for level in config.sweep_levels:
            _at_least("--sweep levels", level, 1)
    if config.traces == DEFAULT_TRACES and not Path(DEFAULT_TRACES).is_dir():
        raise ValueError(
            f"the bundled trace corpus is not at {DEFAULT_TRACES}: reinstall wsmode (a wheel, or "
            "`pip install -e .` in a checkout), or pass --traces FILE|DIR"
        )


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


def replayed_rollouts(rollouts: Sequence[Rollout], config: BenchConfig) -> list[Rollout]:
    """The selected rollouts `max_rollouts` lets through: the first ones, a parent with its
    sub-agents counting as one (they replay beside it, schedule.families)."""
    roots, spawns = families(rollouts)
    kept = roots[: config.max_rollouts] if config.max_rollouts else roots
    return [member for root in kept for member in family_members(root, spawns)]


def describe_subset(replayed: Sequence[Rollout], corpus_size: int, config: BenchConfig) -> str:
    """The rollouts replayed, in words: how many of the corpus, turns and tool calls."""
    turns = sum(min(len(r.turns), config.max_turns or len(r.turns)) for r in replayed)
    calls = [sum(len(t.function_calls) for t in r.turns) for r in replayed]
    shortest = (
        f" (the {config.per_kind} shortest per agent kind)"
        if config.per_kind and not config.rollout_ids
        else ""
    )
    return (
        f"{len(replayed)} of {corpus_size} rollouts from {portable_path(config.traces)}{shortest}, "
        f"{turns} turns, {min(calls)}-{max(calls)} tool calls each"
    )


def describe_tool_time(config: BenchConfig) -> str:
    if config.time_scale == 0:
        return "tool time not waited (time_scale 0)"
    return f"tool time waited x{config.time_scale:g}"


def describe_output_cap(config: BenchConfig) -> str:
    if config.effective_send_script:
        return "no output cap: each turn's output is its recorded one, sent as wsmode.script"
    if config.output_cap_scale is None:
        return "no output cap (--no-output-cap: a model generates until it stops)"
    scale = "" if config.output_cap_scale == 1 else f" x{config.output_cap_scale:g}"
    return f"each turn capped at its recorded output length{scale} (max_output_tokens)"


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
