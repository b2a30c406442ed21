"""`wsmode load` across processes: N client processes, one merged, lossless result.

Each process runs its share of the load (`LoadSpec.share`) on its own event loop; the processes
are spawned first, wait until all of them are ready, then start together. Each sends back its
`ShardResult` as JSON (HdrHistograms in their encoded wire form, the same one locust workers
ship), and the parent merges them: every sample of every process is in the merged histograms
(`tests/load/test_fixed_load.py` proves the counts add up exactly). Throughput is the merged
ok count over the window from the first process's start to the last one's end, on the
machine-wide monotonic clock.

The results document is a `bench` results file (schema v2) with one mode entry per mode run,
so `wsmode gate` and `wsmode board` read it as they read a bench; `bench.load` adds the
throughput figures (req/s, tokens/s, CPU per request, failures by reason).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import queue
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.synchronize import Event as EventType
from typing import Any, TextIO

from harness.errors import WsmodeError
from harness.load.bench.result import mode_entry
from harness.load.fixed_load import LoadSpec, ShardResult, run_shard
from harness.load.gc_policy import load_gc
from harness.results.schema import finish_result, new_result

CHILD_START_TIMEOUT_S = 60.0


class LoadProcessError(WsmodeError, RuntimeError):
    """A client process died before it sent its result back."""


def default_processes() -> int:
    """One client process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_processes(spec: LoadSpec, processes: int) -> ShardResult:
    """Run `spec` split over `processes` client processes (1: in this process) and merge."""
    if processes < 1:
        raise ValueError("processes must be >= 1")
    if processes == 1:
        with load_gc():
            return asyncio.run(run_shard(spec, 0))
    shares = [(i, s) for i in range(processes) if (s := spec.share(i, processes)) is not None]
    ctx = mp.get_context("spawn")  # no inherited event loop, threads or sockets
    ready, results = ctx.Queue(), ctx.Queue()
    start = ctx.Event()
    children = [
        ctx.Process(target=_child, args=(share, i, ready, start, results), daemon=True)
        for i, share in shares
    ]
    for child in children:
        child.start()
    try:
        for _ in children:
            ready.get(timeout=CHILD_START_TIMEOUT_S)
        start.set()
        merged = ShardResult()
        for _ in children:
            merged.merge(ShardResult.from_json(_result_of(results, children)))
        return merged
    finally:
        for child in children:
            child.join(timeout=10)
            if child.is_alive():
                child.terminate()


def _result_of(results: Any, children: Sequence[Any]) -> Mapping[str, Any]:
    """The next child's result; a child that died without one is an error, not a hang."""
    while True:
        try:
            payload: Mapping[str, Any] = results.get(timeout=1.0)
            return payload
        except queue.Empty:
            dead = [c for c in children if c.exitcode not in (None, 0)]
            if dead:
                status = dead[0].exitcode
                raise LoadProcessError(f"a load process exited with status {status}") from None


def _child(spec: LoadSpec, index: int, ready: Any, start: EventType, results: Any) -> None:
    ready.put(index)
    start.wait()
    with load_gc():
        shard = asyncio.run(run_shard(spec, index))
    results.put(shard.to_json())


# -- the results document --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LoadRun:
    label: str
    target_name: str
    target_url: str
    profile: str | None
    processes: int
    started_at: str


def throughput(shard: ShardResult, processes: int) -> dict[str, Any]:
    """req/s, tokens/s and CPU per request over the run's window (`bench.load.<mode>`)."""
    elapsed_s = max(shard.ended_ns - shard.started_ns, 1) / 1e9
    done = shard.ok + sum(shard.failed.values())
    return {
        "requests_ok": shard.ok,
        "requests_failed": sum(shard.failed.values()),
        "failures": dict(shard.failed.most_common()),
        "elapsed_s": round(elapsed_s, 3),
        "requests_per_s": round(shard.ok / elapsed_s, 2),
        "output_tokens_per_s": round(shard.output_tokens / elapsed_s, 1),
        "input_tokens_per_s": round(shard.input_tokens / elapsed_s, 1),
        "client_cpu_s": round(shard.cpu_s, 3),
        "client_cpu_ms_per_request": round(1000 * shard.cpu_s / done, 4) if done else None,
        "processes": processes,
    }


def build_load_result(
    run: LoadRun, specs: Sequence[LoadSpec], shards: Mapping[str, ShardResult]
) -> dict[str, Any]:
    """A validated `bench` results document with one mode entry per mode run."""
    result = new_result(
        "bench",
        label=run.label,
        target={"url": run.target_url, "name": run.target_name},
        profile=run.profile,
        config={
            "command": "load",
            "processes": run.processes,
            "modes": {s.mode: s.to_json() for s in specs},
        },
        started_at=run.started_at,
    )
    bench = result["bench"]
    bench["time_scale"] = 0.0
    bench["load"] = {mode: throughput(shard, run.processes) for mode, shard in shards.items()}
    for mode, shard in shards.items():
        bench["modes"][mode] = mode_entry(shard.metrics, sum(shard.failed.values()))
        bench["samples"].extend(shard.samples)
    return finish_result(result)


def format_load_table(result: Mapping[str, Any]) -> str:
    """The console table: throughput and latency percentiles per mode (ms)."""
    bench = result["bench"]
    head = (
        f"{'mode':<13}{'ok':>8}{'failed':>8}{'req/s':>9}{'out tok/s':>11}{'TTFT p50':>10}"
        f"{'p90':>8}{'p99':>8}{'TTFE p50':>10}{'ITL p50':>9}{'p99':>8}{'TPOT p50':>10}"
        f"{'e2e p50':>9}{'p99':>8}{'CPU ms/req':>11}"
    )
    lines = [head]
    for mode, load in bench["load"].items():
        s = bench["modes"][mode]["summary"]

        def p(metric: str, q: str, s: Mapping[str, Any] = s) -> str:
            value = s.get(metric, {}).get(q)
            return "—" if value is None else f"{value:.2f}"

        cpu = load["client_cpu_ms_per_request"]
        lines.append(
            f"{mode:<13}{load['requests_ok']:>8}{load['requests_failed']:>8}"
            f"{load['requests_per_s']:>9.1f}{load['output_tokens_per_s']:>11.0f}"
            f"{p('ttft_ms', 'p50'):>10}{p('ttft_ms', 'p90'):>8}{p('ttft_ms', 'p99'):>8}"
            f"{p('ttfe_ms', 'p50'):>10}{p('itl_ms', 'p50'):>9}{p('itl_ms', 'p99'):>8}"
            f"{p('tpot_ms', 'p50'):>10}{p('turn_e2e_ms', 'p50'):>9}{p('turn_e2e_ms', 'p99'):>8}"
            f"{'—' if cpu is None else f'{cpu:.3f}':>11}"
        )
        for reason, count in load["failures"].items():
            lines.append(f"  failed {count}x: {reason}")
    return "\n".join(lines)


def print_load(out: TextIO, result: Mapping[str, Any]) -> None:
    out.write(format_load_table(result) + "\n")
    out.write(
        "TTFT: request sent → first content token; TTFE: → first output event of any kind "
        "(harness.protocol.timing_marks). Failures are not in the latencies.\n"
    )
