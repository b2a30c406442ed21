"""Synthetic, seeded results files for the report tests (exposed through the `synth` fixture)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from harness.results.histograms import MetricSet
from harness.results.schema import finish_result, new_result

DEFAULT_TTFT = {"ws": 20.0, "http": 60.0}
DEFAULT_ITL = {"ws": 2.0, "http": 2.2}


def bench_result(
    *,
    target: str = "reference",
    label: str = "run",
    seed: int = 0,
    rollouts: int = 40,
    turns: int = 10,
    ttft_ms: Mapping[str, float] = DEFAULT_TTFT,
    itl_ms: Mapping[str, float] = DEFAULT_ITL,
    scale: Mapping[str, Mapping[str, float]] | None = None,
    sigma: float = 0.25,
    started_at: str = "2025-03-01T10:00:00Z",
    ended_at: str = "2025-03-01T10:05:00Z",
    failures: int = 0,
    workers: int = 1,
) -> dict[str, Any]:
    """A valid bench result: `rollouts` paired rollouts per mode, lognormal turn metrics.

    `scale[mode][metric]` multiplies every sample of that metric (a known shift).
    `workers` > 1 records each worker into its own MetricSet and merges their encodings,
    as a distributed run does.
    """
    rng = random.Random(seed)
    scale = scale or {}
    result = new_result(
        "bench",
        label=label,
        target={"url": f"ws://127.0.0.1:9/{target}", "name": target, "version": "1.0"},
        profile="spark-1000tps",
        config={"rollouts": rollouts, "seed": seed},
        started_at=started_at,
    )
    bench = result["bench"]
    bench["time_scale"] = 0.1
    for mode in ttft_ms:
        mscale = scale.get(mode, {})
        worker_sets = [MetricSet() for _ in range(workers)]
        failed = 0
        for r in range(rollouts):
            ms = worker_sets[r % workers]
            rollout_e2e = 0.0
            tool_wait = 0.0
            for t in range(turns):
                out_tokens = 20 + rng.randrange(40)
                ttft = ttft_ms[mode] * rng.lognormvariate(0, sigma) * mscale.get("ttft_ms", 1.0)
                itl = itl_ms[mode] * rng.lognormvariate(0, sigma / 2) * mscale.get("itl_ms", 1.0)
                e2e = (ttft + itl * out_tokens) * mscale.get("turn_e2e_ms", 1.0)
                ok = not (failed < failures and t == 0)
                failed += not ok
                sample = {
                    "rollout_id": f"r{r:03d}",
                    "mode": mode,
                    "turn_index": t,
                    "ttft_ms": ttft if ok else None,
                    "itl_ms": itl if ok else None,
                    "tpot_ms": itl if ok else None,
                    "turn_e2e_ms": e2e if ok else None,
                    "bytes_sent": 100 + t,
                    "bytes_received": 2000 + t,
                    "context_tokens": 1000 * (t + 1),
                    "output_tokens": out_tokens,
                    "api_overhead_ms": ttft * 0.5 if ok else None,
                    "ok": ok,
                    "error": None if ok else "connection reset",
                }
                bench["samples"].append(sample)
                if ok:
                    ms.record_ms("ttft_ms", ttft)
                    ms.record_ms("itl_ms", itl)
                    ms.record_ms("tpot_ms", itl)
                    ms.record_ms("turn_e2e_ms", e2e)
                    rollout_e2e += e2e
                tool_wait += 5.0
            rollout_e2e += tool_wait
            ms.record_ms("rollout_e2e_ms", rollout_e2e)
            bench["rollouts"].append(
                {
                    "rollout_id": f"r{r:03d}",
                    "mode": mode,
                    "e2e_ms": rollout_e2e,
                    "api_ms": rollout_e2e * 0.2,
                    "inference_ms": rollout_e2e * 0.7,
                    "tool_wait_ms": tool_wait,
                    "turns": turns,
                    "ok": True,
                }
            )
        merged = MetricSet()
        for w in worker_sets:
            merged.merge(MetricSet.from_dict(w.to_dict()))
        bench["modes"][mode] = {**merged.to_dict(), "summary": merged.summary(), "failures": failed}
    if "ws" in ttft_ms and "http" in ttft_ms:
        by_id = {(ro["mode"], ro["rollout_id"]): ro["e2e_ms"] for ro in bench["rollouts"]}
        ratios = sorted(
            by_id[("http", f"r{r:03d}")] / by_id[("ws", f"r{r:03d}")] for r in range(rollouts)
        )
        bench["comparisons"].append(
            {
                "baseline_mode": "http",
                "mode": "ws",
                "speedup_median": ratios[len(ratios) // 2],
                "ci95": [ratios[len(ratios) // 4], ratios[3 * len(ratios) // 4]],
                "ttft_improvement_pct": 100.0 * (1 - ttft_ms["ws"] / ttft_ms["http"]),
            }
        )
    return finish_result(result, ended_at=ended_at)


def certify_result(
    verdicts: Mapping[str, tuple[str, str]],
    *,
    target: str = "reference",
    label: str = "certify",
    started_at: str = "2025-03-01T09:00:00Z",
) -> dict[str, Any]:
    """A valid certify result; `verdicts` maps case id -> (level, verdict)."""
    result = new_result(
        "certify",
        label=label,
        target={"url": f"ws://127.0.0.1:9/{target}", "name": target},
        config={"strict": False},
        started_at=started_at,
    )
    for case_id, (level, verdict) in verdicts.items():
        result["certify"]["cases"].append(
            {
                "id": case_id,
                "section": case_id.split(".")[0],
                "level": level,
                "title": f"case {case_id}",
                "verdict": verdict,
                "duration_ms": 1.5,
                "rule_ids": [case_id.rsplit(".", 1)[-1]],
                "detail": "" if verdict == "PASS" else "expected x, got y",
            }
        )
    return finish_result(result, ended_at="2025-03-01T09:01:00Z")


CASES = {
    "3.1.connect.accept": ("MUST", "PASS"),
    "3.3.order.seq-from-zero": ("MUST", "PASS"),
    "3.3.order.terminal-last": ("MUST", "PASS"),
    "4.1.cache.hit": ("SHOULD", "PASS"),
    "4.2.cache.evict": ("SHOULD", "FAIL"),
    "5.1.extras.ping": ("MAY", "UNIMPLEMENTED"),
}


class Synth:
    bench = staticmethod(bench_result)
    certify = staticmethod(certify_result)
    cases = CASES


@pytest.fixture
def synth() -> type[Synth]:
    return Synth
