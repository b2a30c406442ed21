"""The results file of `wsmode load`: a `load` results document (the bench payload's layout
under `load`, one mode entry per mode run, and its workload identity), built by the engine's one
builder, so `wsmode gate` compares it with load runs of the same workload only and `wsmode board`
never pools it with a bench; `load.throughput` adds the throughput figures (req/s, achieved
rate, tokens/s, CPU per request, failures by reason, warnings) and `load.tokens` the token
accounting (cached share, session cache-hit ratio).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.load.core.results_document import build_results
from harness.load.fixed.conversations import ShardResult
from harness.load.fixed.load_spec import LoadSpec
from harness.results.slo import SloTarget
from harness.results.work import token_summary, unequal_work
from harness.results.workload import load_workload

#: warn when the achieved rate is under this share of the requested one
RATE_WARN_SHARE = 0.9
#: warn when the client processes used more than this share of their CPU over the run
CPU_WARN_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class LoadRun:
    label: str
    target: Mapping[str, Any]  # url, name, version, name_source (results.identity)
    profile: str | None
    processes: int
    started_at: str
    run_seed: int = 0
    slo: tuple[SloTarget, ...] = ()  # --slo: goodput per mode (harness.results.slo)
    server_metrics: dict[str, Any] | None = None  # --server-metrics: the scraped series


def throughput(spec: LoadSpec, shard: ShardResult, processes: int) -> dict[str, Any]:
    """req/s, tokens/s, CPU per request and the warnings of one mode (`load.throughput.<mode>`)."""
    elapsed_s = max(shard.ended_ns - shard.started_ns, 1) / 1e9
    done = shard.ok + sum(shard.failed.values())
    sent_rate = shard.sent / shard.sending_s if shard.sending_s > 0 else None
    cpu_share = shard.cpu_s / (elapsed_s * processes)
    entry: dict[str, Any] = {
        "requests_ok": shard.ok,
        "requests_failed": sum(shard.failed.values()),
        "failures": dict(shard.failed.most_common()),
        "elapsed_s": round(elapsed_s, 3),
        "requests_per_s": round(shard.ok / elapsed_s, 2),
        "requested_rate_per_s": spec.rate_per_s,
        "sent_rate_per_s": round(sent_rate, 2) if sent_rate is not None else None,
        "output_tokens_per_s": round(shard.output_tokens / elapsed_s, 1),
        "input_tokens_per_s": round(shard.input_tokens / elapsed_s, 1),
        "client_cpu_s": round(shard.cpu_s, 3),
        "client_cpu_share": round(cpu_share, 3),
        "client_cpu_ms_per_request": round(1000 * shard.cpu_s / done, 4) if done else None,
        "processes": processes,
    }
    entry["warnings"] = load_warnings(entry, spec)
    return entry


def load_warnings(entry: Mapping[str, Any], spec: LoadSpec) -> list[str]:
    """What makes a mode's figures less than they seem: a rate not reached, a busy client."""
    warnings = []
    requested = spec.rate_per_s
    if requested:
        # completions over the whole window, and sends over the sending window: either short
        # of the rate means the requests were not made at the rate asked for
        achieved = min(entry["requests_per_s"], entry["sent_rate_per_s"] or 0.0)
        if entry["requests_ok"] and achieved < RATE_WARN_SHARE * requested:
            warnings.append(
                f"achieved {achieved:.1f} req/s of the {requested:g} requested "
                f"({achieved / requested:.0%}): the target (or the client) could not keep up; "
                "latencies count from each request's intended start"
            )
    if entry["client_cpu_share"] > CPU_WARN_SHARE:
        warnings.append(
            f"the client used {entry['client_cpu_share']:.0%} of its {entry['processes']} "
            "process(es)' CPU: latencies may include client time (add --processes or cores)"
        )
    return warnings


def load_baseline(specs: Sequence[LoadSpec]) -> str | None:
    """The mode whose turns carry the whole conversation by construction: http-chained (the
    server hydrates the chain from its store), else http (it resends the conversation every
    turn); None when neither ran."""
    modes = {s.mode for s in specs}
    for mode in ("http-chained", "http"):
        if mode in modes:
            return mode
    return None


def build_load_result(
    run: LoadRun, specs: Sequence[LoadSpec], shards: Mapping[str, ShardResult]
) -> dict[str, Any]:
    """A validated `load` results document with one mode entry per mode run, by the engine's
    one builder (harness.load.core.results_document)."""
    modes_config: dict[str, dict[str, Any]] = {s.mode: s.to_json() for s in specs}
    by_mode: dict[str, LoadSpec] = {s.mode: s for s in specs}
    samples = [sample for shard in shards.values() for sample in shard.samples]
    baseline = load_baseline(specs)
    return build_results(
        "load",
        label=run.label,
        target=run.target,
        profile=run.profile,
        config={
            "command": "load",
            "processes": run.processes,
            "run_seed": run.run_seed,
            "modes": modes_config,
            "slo": [str(t) for t in run.slo],
        },
        started_at=run.started_at,
        modes={mode: (s.metrics, sum(s.failed.values())) for mode, s in shards.items()},
        samples=samples,
        workload=load_workload(modes_config, run.profile),
        sections={
            "throughput": {
                mode: throughput(by_mode[mode], shard, run.processes)
                for mode, shard in shards.items()
            },
            "tokens": {mode: token_summary(samples, mode) for mode in shards},
            "unequal_work": [
                flag
                for mode in shards
                if baseline is not None and mode != baseline
                if (flag := unequal_work(samples, baseline, mode)) is not None
            ],
            **({"server_metrics": run.server_metrics} if run.server_metrics is not None else {}),
        },
        slo=run.slo,
    )
