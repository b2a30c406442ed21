"""A bench or load results file as llm-d-benchmark Benchmark Reports (version 0.2.1), the format
llm-d-benchmark converts AIPerf, GuideLLM, inference-perf and vLLM bench output into
(`wsmode results llmd-report FILE`): one report per mode, since a report describes one point
of a sweep (one workload against one stack), and a wsmode run replays one workload per mode.

How the fields are filled (what wsmode does not know, it leaves out; nothing is invented):

- `run`: `uid` a digest of the run and the mode, `eid` one of the run (common to its modes'
  reports), its start, end and ISO 8601 duration, keywords `wsmode`, the kind and the mode.
- `scenario.stack`: the target as one `generic` component (tool = the implementation's name,
  tool_version its version, or `unknown`; with its URL and the embedded server's cost profile).
  wsmode sees an endpoint, not its engine or accelerators, so no `inference_engine` is claimed.
- `scenario.load`: tool `wsmode` and its version; `source` `sampled` (bench: recorded rollouts)
  or `random` (load: synthetic prompts); input (and for load, output) sequence length; bench's
  multi-turn rollouts (`multi_turn.max_turns`); concurrency, and load's rate as `rate_qps`;
  `native.args` the results file's whole `config`, `native.config` the workload identity and,
  with `--slo`, the targets and this mode's goodput (the report has no goodput field).
- `results.request_performance.aggregate`: per turn (one request): requests and failures, input
  and output tokens, and TTFT, ITL (every gap), TPOT and request latency from the mode's
  HdrHistograms in ms (stddev from the samples); load's throughput (req/s, tokens/s).
- `results.session_performance.sessions` (bench): a rollout is a session: counts, turns, its
  e2e time in s, its input and output tokens.
- `results.observability.components[0].time_series`: the `--server-metrics` series whose
  meaning the report names (running and waiting requests, prefix-cache queries and hits,
  prompt and generation tokens, KV-cache usage), summed over label sets per scrape.

Why 0.2.1: it is the version llm-d-benchmark's README tells new consumers to use ("an additive
superset of 0.2"), and the schema stored here is its JSON Schema; the sessions and the engine's
time series this export fills exist in 0.2.1 only (0.2 has no `session_performance`).
Validated against the stored schema (its provenance: harness/results/llmd/PROVENANCE.md) by
`harness.results.json_schema_subset` before it is returned.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from harness.results.histograms import LatencyHistogram, MetricSet
from harness.results.json_schema_subset import Validator
from harness.results.schema import parse_time
from harness.results.work import turn_tokens
from harness.results.workload import describe_workload, latency_payload, workload_of

REPORT_VERSION = "0.2.1"
SCHEMA_PATH = Path(__file__).with_name("llmd") / "br_v0_2_json_schema.json"
#: the percentiles a Statistics object carries, as its keys name them
_PERCENTILES: dict[str, float] = {"p1": 1, "p5": 5, "p10": 10, "p25": 25, "p50": 50, "p75": 75}
_PERCENTILES |= {"p90": 90, "p95": 95, "p99": 99, "p99p9": 99.9}
#: our metric -> the report's latency field
_LATENCY = {
    "ttft_ms": "time_to_first_token",
    "itl_ms": "inter_token_latency",
    "tpot_ms": "time_per_output_token",
    "turn_e2e_ms": "request_latency",
}
#: how a server metric's name ends (any namespace before it) -> (time series field, units)
_SERVER_SERIES = {
    "num_requests_running": ("num_requests_running", "count"),
    "responses_in_flight": ("num_requests_running", "count"),  # the reference server's
    "num_requests_waiting": ("num_requests_waiting", "count"),
    "queue_depth": ("num_requests_waiting", "count"),  # the reference server's
    "prefix_cache_queries_total": ("prefix_cache_queries", "count"),
    "prefix_cache_hits_total": ("prefix_cache_hits", "count"),
    "prompt_tokens_total": ("prompt_tokens", "count"),
    "generation_tokens_total": ("generation_tokens", "count"),
    "kv_cache_usage_perc": ("kv_cache_usage", "fraction"),
}


@cache
def report_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _iso(timestamp: str) -> str:
    return parse_time(timestamp).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _stats(values: Sequence[float], units: str) -> dict[str, Any] | None:
    """A Statistics object of plain values (None for none)."""
    if not values:
        return None
    xs = sorted(values)
    out: dict[str, Any] = {"units": units, "mean": statistics.fmean(xs)}
    out["stddev"] = statistics.pstdev(xs) if len(xs) > 1 else 0.0
    out["min"], out["max"] = xs[0], xs[-1]
    for key, p in _PERCENTILES.items():
        out[key] = xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))]
    return out


def _hist_stats(hist: LatencyHistogram, stddev_of: Sequence[float]) -> dict[str, Any] | None:
    """A Statistics object in ms from an HdrHistogram (every value), stddev from the samples."""
    if not hist.count:
        return None
    out: dict[str, Any] = {"units": "ms", "mean": hist.mean_ms}
    if len(stddev_of) > 1:
        out["stddev"] = statistics.pstdev(stddev_of)
    out["min"], out["max"] = hist.min_ms, hist.max_ms
    percentiles = hist.percentiles_ms(list(_PERCENTILES.values()))
    for key, p in _PERCENTILES.items():
        out[key] = percentiles[float(p)]
    return out


def _values(records: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in records if r.get("ok") and isinstance(r.get(key), int | float)]


def _request_performance(
    payload: Mapping[str, Any], mode: str, samples: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    entry = payload["modes"][mode]
    sets = MetricSet.from_dict(entry)
    latency = {
        field: stats
        for metric, field in _LATENCY.items()
        if metric in sets and (stats := _hist_stats(sets[metric], _values(samples, metric)))
    }
    ok = [s for s in samples if s.get("ok")]
    inputs = [float(turn_tokens(s)[0]) for s in ok]
    outputs = [float(s.get("output_tokens") or 0) for s in ok]
    throughput = payload.get("throughput", {}).get(mode)
    total = len(samples)
    failures = int(entry.get("failures", 0))
    if throughput:  # load: every request counted, not only the samples kept
        total = int(throughput["requests_ok"]) + int(throughput["requests_failed"])
        failures = int(throughput["requests_failed"])
    aggregate: dict[str, Any] = {
        "requests": {
            "total": total,
            "failures": failures,
            **({"input_length": s} if (s := _stats(inputs, "count")) else {}),
            **({"output_length": s} if (s := _stats(outputs, "count")) else {}),
        },
        "latency": latency,
    }
    if throughput:
        aggregate["throughput"] = {
            "request_rate": {"units": "queries/s", "mean": float(throughput["requests_per_s"])},
            "input_token_rate": {
                "units": "tokens/s",
                "mean": float(throughput["input_tokens_per_s"]),
            },
            "output_token_rate": {
                "units": "tokens/s",
                "mean": float(throughput["output_tokens_per_s"]),
            },
            "total_token_rate": {
                "units": "tokens/s",
                "mean": float(throughput["input_tokens_per_s"])
                + float(throughput["output_tokens_per_s"]),
            },
        }
    return {"aggregate": aggregate}


def _sessions(
    rollouts: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    if not rollouts:
        return None
    tokens: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for s in samples:
        pair = tokens[str(s.get("rollout_id"))]
        pair[0] += turn_tokens(s)[0]
        pair[1] += float(s.get("output_tokens") or 0)
    ok = [r for r in rollouts if r.get("ok")]
    sessions: dict[str, Any] = {
        "total": len(rollouts),
        "succeeded": len(ok),
        "failed": len(rollouts) - len(ok),
        "total_events": len(samples),
        "total_events_completed": sum(1 for s in samples if s.get("ok")),
    }
    optional = {
        "session_duration": _stats([v / 1000.0 for v in _values(rollouts, "e2e_ms")], "s"),
        "events_per_session": _stats([float(r.get("turns") or 0) for r in rollouts], "count"),
        "input_tokens_per_session": _stats([t[0] for t in tokens.values()], "count"),
        "output_tokens_per_session": _stats([t[1] for t in tokens.values()], "count"),
    }
    return {**sessions, **{k: v for k, v in optional.items() if v is not None}}


def _time_series(section: Mapping[str, Any] | None) -> dict[str, Any]:
    """The --server-metrics series the report names, summed over label sets per scrape."""
    if not section:
        return {}
    origin = float(section.get("started_at_s") or 0.0)
    summed: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    units: dict[str, str] = {}
    for source in section.get("sources", []):
        for series in source.get("series", []):
            name = str(series["name"])
            match = next((v for k, v in _SERVER_SERIES.items() if name.endswith(k)), None)
            if match is None:
                continue
            field, unit = match
            units[field] = unit
            for t_s, value in series.get("points", []):
                summed[field][float(t_s)] += float(value)
    out = {}
    for field, points in summed.items():
        out[field] = {
            "units": units[field],
            "series": [
                {"ts": _epoch_iso(origin + t_s), "value": value}
                for t_s, value in sorted(points.items())
            ],
        }
    return out


def _epoch_iso(epoch_s: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch_s, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _duration(result: Mapping[str, Any]) -> str | None:
    if not result.get("ended_at"):
        return None
    seconds = (parse_time(result["ended_at"]) - parse_time(result["started_at"])).total_seconds()
    return f"PT{max(seconds, 0.0):.3f}S"


def _load(
    result: Mapping[str, Any], payload: Mapping[str, Any], mode: str, samples: Sequence[Any]
) -> dict[str, Any]:
    kind, config = result["kind"], result.get("config") or {}
    ok_inputs = [float(turn_tokens(s)[0]) for s in samples if s.get("ok")]
    standardized: dict[str, Any] = {
        "tool": "wsmode",
        "tool_version": str(result["harness"]["version"]),
        "source": "sampled" if kind == "bench" else "random",
        "input_seq_len": {
            "distribution": "other",
            "value": statistics.fmean(ok_inputs) if ok_inputs else 0,
        },
    }
    mode_config = (config.get("modes") or {}).get(mode) if kind == "load" else None
    if isinstance(mode_config, Mapping):  # load: the request shape it asked for
        stddev = float(mode_config.get("input_tokens_stddev") or 0)
        standardized["input_seq_len"] = {
            "distribution": "gaussian" if stddev else "fixed",
            "value": mode_config.get("input_tokens"),
            **({"std_dev": stddev} if stddev else {}),
        }
        standardized["output_seq_len"] = {
            "distribution": "fixed",
            "value": mode_config.get("output_tokens"),
        }
        standardized["parallelism"] = int(config.get("processes") or 1)
        if mode_config.get("rate_per_s"):
            standardized["rate_qps"] = float(mode_config["rate_per_s"])
        if mode_config.get("turns", 1) > 1:
            fixed = {"distribution": "fixed", "value": int(mode_config["turns"])}
            standardized["multi_turn"] = {"enabled": True, "max_turns": fixed}
    concurrency = (mode_config or config).get("concurrency")
    if isinstance(concurrency, int | float) and concurrency >= 1:
        standardized["concurrency"] = concurrency
    if kind == "bench":
        per_rollout = [int(r.get("turns") or 0) for r in payload.get("rollouts", [])]
        if per_rollout:
            longest = max(per_rollout)
            most = {"distribution": "other", "value": longest, "max": max(longest, 1)}
            standardized["multi_turn"] = {"enabled": True, "max_turns": most}
    native_config: dict[str, Any] = {"mode": mode, "workload": workload_of(result)}
    slo = payload.get("slo")
    if slo:
        native_config["slo"] = {"targets": slo["targets"], "goodput": slo["modes"].get(mode)}
    return {
        "metadata": {
            "schema_version": "0.0.1",
            "cfg_id": _digest(workload_of(result), mode),
            "description": f"wsmode {kind}, mode {mode}: {describe_workload(result)}",
        },
        "standardized": standardized,
        "native": {"args": dict(config), "config": native_config},
    }


def llmd_report(result: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """The Benchmark Report (0.2.1) of one mode of a bench or load results document."""
    payload = latency_payload(result)
    if mode not in payload["modes"]:
        raise ValueError(f"mode {mode!r} is not in this run (modes: {', '.join(payload['modes'])})")
    target = result["target"]
    samples = [s for s in payload.get("samples", []) if s.get("mode") == mode]
    rollouts = [r for r in payload.get("rollouts", []) if r.get("mode") == mode]
    label = str(target["name"])
    run_id = _digest(result["started_at"], result["label"], target["url"])
    component = {
        "metadata": {
            "schema_version": "0.0.1",
            "label": label,
            "cfg_id": _digest(target["url"], result.get("profile")),
            "description": f"the target under test, {target['url']}",
        },
        "standardized": {
            "kind": "generic",
            "tool": label,
            "tool_version": str(target.get("version") or "unknown"),
            "url": target["url"],
            "profile": result.get("profile"),
        },
        "native": {"args": None, "envars": None, "config": None},
    }
    results: dict[str, Any] = {"request_performance": _request_performance(payload, mode, samples)}
    sessions = _sessions(rollouts, samples)
    if sessions is not None:
        results["session_performance"] = {"sessions": sessions}
    series = _time_series(payload.get("server_metrics"))
    if series:
        results["observability"] = {
            "components": [{"component_label": label, "time_series": series}]
        }
    report = {
        "version": REPORT_VERSION,
        "run": {
            "uid": _digest(run_id, mode),
            "eid": run_id,
            "time": {
                "start": _iso(result["started_at"]),
                **({"end": _iso(result["ended_at"])} if result.get("ended_at") else {}),
                **({"duration": d} if (d := _duration(result)) else {}),
            },
            "description": f"wsmode {result['kind']} '{result['label']}', mode {mode}",
            "keywords": ["wsmode", str(result["kind"]), mode],
        },
        "scenario": {"stack": [component], "load": _load(result, payload, mode, samples)},
        "results": results,
    }
    Validator(report_schema()).validate(report)
    return report


def llmd_reports(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One report per mode of the run, in its modes' order."""
    if result.get("kind") not in ("bench", "load"):
        raise ValueError(
            f"a {result.get('kind')} result has no latencies: Benchmark Reports are written "
            "from bench or load results"
        )
    return {mode: llmd_report(result, mode) for mode in latency_payload(result)["modes"]}
