"""What one `wsmode bench` run replays, against what, and how: `BenchConfig`, its checks, the
rollout subset it selects and its description in words (for the header and the results notes).

Choices that shape the numbers (all printed with the table and stored in the results `config`):

- Tool time is not shrunk silently: `time_scale` sets how much of it is waited, and every
  end-to-end figure counts it at its recorded value.
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
from harness.load.core.modes import MODES, Mode, parse_modes
from harness.load.core.rollout_requests import CALL_CAP_HEADROOM
from harness.load.core.subagents import families, family_members
from harness.load.core.target_watch import DEFAULT_EVENT_TIMEOUT_S, DEFAULT_TURN_TIMEOUT_S
from harness.load.observe_options import OBSERVE, ObserveOptions
from harness.load.target_options import LOAD_PATTERN, OUTPUT, TargetOptions
from harness.options import Alternative, nested, option
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


WORKLOAD = "workload"
#: `--sampling exact`: temperature 0 where the recorded turn allows (a reasoning model as
#: recorded refuses it); `target`: the target's own sampling
EXACT_SAMPLING = "exact"
SAMPLINGS = (EXACT_SAMPLING, "target")
#: the ablation variant the embedded server's default run adds (harness.load.bench.variants)
NOCACHE_VARIANT = "ws-nocache"


def parse_levels(text: str) -> tuple[int, ...]:
    """`--sweep 1,2,4`: the concurrency levels."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--sweep: expected comma-separated integers, got {text!r}") from None


@dataclass
class BenchConfig(TargetOptions):
    """`wsmode bench`: each field that is an option declares it (harness.options), its default
    stated here only."""

    traces: str = option(
        DEFAULT_TRACES,
        "--traces",
        group=WORKLOAD,
        shown="the bundled generated corpus",
        help="trace file or directory",
    )
    corpus: str | None = option(
        None,
        "--corpus",
        group=WORKLOAD,
        choices=CORPORA,
        help="a bundled corpus instead of --traces: generated or real (converted from public "
        "recordings of real agent sessions, traces/real)",
    )
    # The default subset: the N shortest rollouts (fewest turns) of each agent kind of the
    # bundled corpus, at time_scale 0 and concurrency 4: 9 rollouts, 25-43 turns and 27-55 tool
    # calls each. Measured on the 2-core reference machine: about 1.5 min for the three modes,
    # ~2 min with ws-nocache.
    per_kind: int | None = option(
        3,
        "--per-kind",
        group=WORKLOAD,
        type=int,
        to_field=lambda n: n or None,
        help="the N shortest rollouts of each agent kind (0: all)",
    )
    rollout_ids: tuple[str, ...] = option(
        (),
        "--rollout",
        group=WORKLOAD,
        action="append",
        metavar="ID",
        help="replay this id (repeatable)",
    )
    max_turns: int | None = option(
        None, "--max-turns", group=WORKLOAD, type=int, help="replay only the first N turns of each"
    )
    time_scale: float = option(
        0.0,
        "--time-scale",
        group=WORKLOAD,
        type=float,
        help="fraction of the recorded tool time to wait (e2e always counts it in full)",
    )
    modes: tuple[Mode, ...] = option(
        MODES,
        "--modes",
        group=WORKLOAD,
        to_field=parse_modes,
        help="comma-separated subset of ws,http,http-chained",
    )
    ablation: bool = option(
        False,
        "--ablation",
        group=WORKLOAD,
        action="store_true",
        help="also replay ws with each server optimization switched off in turn",
    )
    nocache: bool = option(
        True,
        "--no-cache-split",
        group=WORKLOAD,
        action="store_false",
        help=f"skip {NOCACHE_VARIANT} (ws with the connection cache off), which splits "
        "transport from server-side cache savings (~25 s of the default run)",
    )
    repeats: int = option(
        1, "--repeats", group=WORKLOAD, type=int, help="replay each (rollout, mode) pair N times"
    )
    send_script: bool | None = option(
        None,
        "--script",
        group=WORKLOAD,
        action="store_const",
        const=True,
        help="send the recorded output as wsmode.script (without either flag: to the "
        "embedded server only)",
        alternatives=[
            Alternative(
                "--no-script",
                False,
                "let the target generate its own output (without either flag: a --target)",
            )
        ],
    )
    model: str | None = option(
        None,
        "--model",
        group=WORKLOAD,
        shown="each rollout's, e.g. gpt-5-codex",
        help="the model every request names; a real target needs one it serves",
    )
    prewarm: bool = option(
        False,
        "--prewarm",
        group=WORKLOAD,
        action="store_true",
        help="ws: generate:false before turn 0",
    )
    # the Prometheus page of the engine behind the target: its prefix-cache counters are read
    # around each variant, which then replay one after another (harness.load.bench.engine_cache)
    engine_metrics_url: str | None = option(
        None,
        "--engine-metrics",
        group=WORKLOAD,
        metavar="URL",
        help="the Prometheus /metrics of the engine behind the target (vLLM's): its "
        "prefix-cache hit rate is read around each variant, which then replay one after "
        "another",
    )
    # each turn asks max_output_tokens = its recorded output tokens x this; None: no cap
    output_cap_scale: float | None = option(
        1.0,
        "--output-cap-scale",
        group=WORKLOAD,
        type=float,
        metavar="X",
        help="each turn asks max_output_tokens = its recorded output tokens x this (at least "
        "16; a turn with a recorded call twice that; not with --script, whose output is the "
        "recorded one); turns that produced more or less are reported, and a call cut anyway "
        "ends its rollout in every mode",
        alternatives=[
            Alternative(
                "--no-output-cap",
                None,
                "send no max_output_tokens (a real model then generates until it stops)",
            )
        ],
    )
    # what a sampling model needs for its modes to answer alike (docs/OUTPUT-CAPS.md)
    sampling: str = option(
        EXACT_SAMPLING,
        "--sampling",
        group=WORKLOAD,
        choices=SAMPLINGS,
        help="without a script: exact sends temperature 0 where the recorded turn allows (not "
        "to a reasoning model as recorded, which refuses it), so the modes of a sampling "
        "model answer alike; target leaves the target's own sampling",
    )
    sampling_seed: int | None = option(
        None,
        "--sampling-seed",
        group=WORKLOAD,
        type=int,
        metavar="N",
        help="also send seed N with every create (a target that honours it, such as vLLM; the "
        "OpenAI API refuses the field)",
    )
    concurrency: int = option(
        4,
        "--concurrency",
        group=LOAD_PATTERN,
        type=int,
        help="rollouts in flight (closed loop; open loop: at most)",
    )
    schedule: str = option(
        "closed",
        "--schedule",
        group=LOAD_PATTERN,
        choices=("closed", "open", "sweep"),
        help="closed: --concurrency rollouts in flight; open: Poisson arrivals at --rate; "
        "sweep: the closed loop once per --sweep level",
    )
    rate_per_s: float = option(
        1.0, "--rate", group=LOAD_PATTERN, type=float, help="open loop: rollouts per second"
    )
    sweep_levels: tuple[int, ...] = option(
        (1, 2, 4, 8),
        "--sweep",
        group=LOAD_PATTERN,
        metavar="N,N,...",
        to_field=parse_levels,
        help="sweep: the concurrency levels, comma-separated integers",
    )
    duration_s: float | None = option(
        None,
        "--duration-s",
        group=LOAD_PATTERN,
        type=float,
        help="hard time limit (per sweep level): rollouts still running then are cut and "
        "count as failed (not in the latencies, not in the exit status)",
    )
    max_rollouts: int | None = option(
        None,
        "--max-rollouts",
        group=LOAD_PATTERN,
        type=int,
        help="replay at most the first N selected rollouts per variant (per sweep level)",
    )
    turn_timeout_s: float = option(
        DEFAULT_TURN_TIMEOUT_S,
        "--turn-timeout-s",
        group=LOAD_PATTERN,
        type=float,
        help="a turn that takes longer fails (then a liveness probe decides whether the "
        "target is dead, which ends the run's remaining rollouts)",
    )
    event_timeout_s: float = option(
        DEFAULT_EVENT_TIMEOUT_S,
        "--event-timeout-s",
        group=LOAD_PATTERN,
        type=float,
        help="silence that ends a turn (a real model's prefill of a long context on a CPU "
        "can take longer)",
    )
    seed: int = option(
        0, "--seed", group=LOAD_PATTERN, type=int, help="arrivals, bootstrap and tenant keys"
    )
    out: str = option("results", "--out", group=OUTPUT, help="results root")
    label: str = option("bench", "--label", group=OUTPUT, help="results file label")
    html: bool = option(
        True,
        "--no-html",
        action="store_false",
        group=OUTPUT,
        help="write no HTML report beside the results JSON",
    )
    observe: ObserveOptions = field(default_factory=ObserveOptions, metadata=nested(OBSERVE))
    quiet: bool = False
    # a fresh token per run: with a target of the user's, each variant's prompts start with a
    # line of their own (variants.cache_salt), so no variant warms another's prefix cache
    cache_salt: str | None = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def with_nocache(self) -> bool:
        """ws-nocache runs: with --ablation, or by default against the embedded server (it needs
        the connection cache switched off) when ws is replayed."""
        return self.ablation or (self.nocache and self.embedded and "ws" in self.modes)

    @property
    def effective_send_script(self) -> bool:
        return self.embedded if self.send_script is None else self.send_script

    def sampling_json(self) -> dict[str, Any] | None:
        """What the run adds to each create for its sampling (None: nothing; with a script)."""
        if self.effective_send_script:
            return None
        fields: dict[str, Any] = {}
        if self.sampling == EXACT_SAMPLING:
            fields["temperature"] = 0.0
        if self.sampling_seed is not None:
            fields["seed"] = self.sampling_seed
        return fields or None

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
            "output_cap_call_headroom": CALL_CAP_HEADROOM,
            "sampling": self.sampling_json(),
            "engine_metrics_url": self.engine_metrics_url,
            "cache_salt": None if self.embedded else self.cache_salt,
            **self.observe.to_json(),
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
    if "embedded" in config.observe.server_metrics and not config.embedded:
        raise ValueError("--server-metrics embedded: the run has no embedded server (a --target)")
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
    sub-agents counting as one (they replay beside it, subagents.families)."""
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
    return (
        f"each turn capped at its recorded output length{scale} (max_output_tokens; a turn "
        f"with a recorded call x{CALL_CAP_HEADROOM:g}; a call cut anyway ends its rollout in "
        "every mode)"
    )


def describe_sampling(config: BenchConfig) -> str | None:
    """What the run adds to each create for sampling, in words (None with a script)."""
    fields = config.sampling_json()
    if config.effective_send_script:
        return None
    if not fields:
        return "sampling: the target's own (--sampling target)"
    words = []
    if "temperature" in fields:
        words.append(
            "temperature 0 where the recorded turn allows (not to a reasoning model as recorded)"
        )
    if "seed" in fields:
        words.append(f"seed {fields['seed']}")
    return "sampling: " + ", ".join(words) + ", so the modes of a sampling model answer alike"


def describe_schedule(config: BenchConfig) -> str:
    if config.schedule == "open":
        text = (
            f"open loop, Poisson arrivals at {config.rate_per_s:g} rollouts/s, at most "
            f"{config.concurrency} in flight, latency from the intended start"
        )
    elif config.schedule == "sweep":
        text = "closed-loop sweep over concurrency " + ",".join(map(str, config.sweep_levels))
    else:
        text = f"closed loop, concurrency {config.concurrency}"
    # how the modes shared the target: a reader of a sequential run must not read it as a mix
    if config.engine_metrics_url is not None:
        return text + "; the modes ran one after another (never at once)"
    return text + "; the modes interleaved (each rollout in every mode, in rotating order)"


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
