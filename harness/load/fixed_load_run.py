"""`wsmode load` across processes: N client processes, one merged, lossless result.

Each process runs its share of the load (`LoadSpec.share`) on its own event loop; the processes
are spawned first, wait until all of them are ready, then start together. Each sends back its
`ShardResult` as JSON (HdrHistograms in their encoded wire form, the same one locust workers
ship), and the parent merges them: every sample of every process is in the merged histograms
(`tests/load/test_fixed_load.py` proves the counts add up exactly). Throughput is the merged
ok count over the window from the first process's start to the last one's end, on the
machine-wide monotonic clock.

The results document is a `load` results file (the bench payload's layout under `load`, one
mode entry per mode run, and its workload identity), so `wsmode gate` compares it with load runs
of the same workload only and `wsmode board` never pools it with a bench; `load.throughput` adds
the throughput figures (req/s, achieved rate, tokens/s, CPU per request, failures by reason,
warnings) and `load.tokens` the token accounting (cached share, session cache-hit ratio).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import queue
import signal
import statistics
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.synchronize import Event as EventType
from typing import Any, TextIO

from harness.errors import TargetError
from harness.load.core.gc_policy import load_gc
from harness.load.core.results_document import build_results
from harness.load.fixed_load import LoadSpec, ShardResult, run_shard
from harness.progress import Progress, phase
from harness.results.table import Column, legend, number, render
from harness.results.work import describe_tokens, token_summary, unequal_work
from harness.results.workload import load_workload

CHILD_START_TIMEOUT_S = 60.0


class LoadProcessError(TargetError, RuntimeError):
    """A client process died before it sent its result back."""


def default_processes() -> int:
    """One client process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_processes(spec: LoadSpec, processes: int, progress: Progress | None = None) -> ShardResult:
    """Run `spec` split over `processes` client processes (1: in this process) and merge.

    With `progress`, its line follows the requests done (and failed) in every process: each
    keeps its counts in its own slots of a shared array, read from a thread here."""
    if processes < 1:
        raise ValueError("processes must be >= 1")
    if processes == 1:
        tally = [0, 0]
        with _following(progress, [tally]), load_gc():
            return asyncio.run(run_shard(spec, 0, tally))
    shares = [(i, s) for i in range(processes) if (s := spec.share(i, processes)) is not None]
    ctx = mp.get_context("spawn")  # no inherited event loop, threads or sockets
    ready, results = ctx.Queue(), ctx.Queue()
    start = ctx.Event()
    tallies = [ctx.Array("q", 2, lock=False) for _ in shares]
    children = [
        ctx.Process(target=_child, args=(share, i, ready, start, results, tally), daemon=True)
        for (i, share), tally in zip(shares, tallies, strict=True)
    ]
    with _ctrl_c_ignored():  # the children inherit it from their start: Ctrl-C is the parent's
        for child in children:
            child.start()
    try:
        starting = (
            contextlib.nullcontext()
            if progress is None
            else phase(f"starting {len(children)} client processes", progress.stream)
        )
        with starting:
            for _ in children:
                ready.get(timeout=CHILD_START_TIMEOUT_S)
        start.set()
        merged = ShardResult()
        with _following(progress, tallies):
            for _ in children:
                merged.merge(ShardResult.from_json(_result_of(results, children)))
        return merged
    except BaseException:  # Ctrl-C (the parent's alone) or an error: the children stop now
        for child in children:
            child.terminate()
        raise
    finally:
        for child in children:
            child.join(timeout=10)
            if child.is_alive():
                child.terminate()


@contextlib.contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """SIGINT ignored while the body runs (main thread only: elsewhere signals are not ours)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _following(progress: Progress | None, tallies: Sequence[Sequence[int]]) -> Iterator[None]:
    """Keep `progress` on the sum of the tallies ([ok, failed] each) while the body runs."""
    if progress is None:
        yield
        return
    stop = threading.Event()
    progress.restart()

    def follow() -> None:
        while not stop.wait(min(progress.every_s, 0.5)):
            ok, failed = sum(t[0] for t in tallies), sum(t[1] for t in tallies)
            progress.update(ok + failed, failed=failed)

    thread = threading.Thread(target=follow, name="load-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        ok, failed = sum(t[0] for t in tallies), sum(t[1] for t in tallies)
        progress.update(ok + failed, failed=failed)
        progress.close()


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


def _child(
    spec: LoadSpec, index: int, ready: Any, start: EventType, results: Any, tally: Any
) -> None:
    ready.put(index)
    start.wait()
    with load_gc():
        shard = asyncio.run(run_shard(spec, index, tally))
    results.put(shard.to_json())


# -- the results document --------------------------------------------------------------------------
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
        },
    )


def _ms(value: Any) -> str:
    """A latency cell: small values keep three significant digits (0.004, not 0.00); large ones
    have thousands separators (12,345)."""
    if not isinstance(value, int | float):
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


LOAD_COLUMNS = (
    Column("mode", left=True),
    Column("ok"),
    Column("failed"),
    Column("req/s"),
    Column("out tok/s"),
    Column("in tok/turn"),
    Column("CPU ms/req"),
)
LATENCY_COLUMNS = (
    Column("mode", left=True),
    Column("TTFT p50"),
    Column("p90"),
    Column("p99"),
    Column("TTFE p50"),
    Column("ITL p50"),
    Column("p99"),
    Column("TPOT p50"),
    Column("e2e p50"),
    Column("p99"),
    Column("queue p50"),
)
LOAD_LEGEND = (
    "Latencies in ms. TTFT: request sent -> first content token; TTFE: -> first output event of "
    "any kind (harness.protocol.timing_marks); ITL: gap between content events; TPOT: time per "
    "output token after the first; e2e: request sent -> its terminal event; queue: open-loop "
    "wait for a free slot; CPU ms/req: the client's CPU per request. Failures are not in the "
    "latencies."
)


def format_load_table(result: Mapping[str, Any]) -> str:
    """The console tables: throughput per mode, then latency percentiles (ms), then failures."""
    load = result["load"]
    throughput_rows, latency_rows, failures = [], [], []
    for mode, entry in load["throughput"].items():
        s = load["modes"][mode]["summary"]

        def p(metric: str, q: str, s: Mapping[str, Any] = s) -> str:
            return _ms(s.get(metric, {}).get(q))

        throughput_rows.append(
            [
                mode,
                number(entry["requests_ok"]),
                number(entry["requests_failed"]),
                number(float(entry["requests_per_s"])),
                number(round(entry["output_tokens_per_s"])),
                number(_per_turn(load, mode), 0),
                number(entry["client_cpu_ms_per_request"], 3),
            ]
        )
        latency_rows.append(
            [
                mode,
                *(p("ttft_ms", q) for q in ("p50", "p90", "p99")),
                p("ttfe_ms", "p50"),
                p("itl_ms", "p50"),
                p("itl_ms", "p99"),
                p("tpot_ms", "p50"),
                p("turn_e2e_ms", "p50"),
                p("turn_e2e_ms", "p99"),
                p("queue_ms", "p50"),
            ]
        )
        for reason, count in entry["failures"].items():
            failures += legend(f"{mode}: failed {count:,}x: {reason}", indent="  ")
    lines = render(LOAD_COLUMNS, throughput_rows)
    lines += ["", *render(LATENCY_COLUMNS, latency_rows)]
    if failures:
        lines += ["Failures:", *failures]
    return "\n".join(lines)


def _per_turn(load: Mapping[str, Any], mode: str) -> float | None:
    value = load.get("tokens", {}).get(mode, {}).get("input_tokens_per_turn")
    return float(value) if isinstance(value, int | float) else None


def format_load_notes(result: Mapping[str, Any]) -> list[str]:
    """Below the table: each mode's prompts and tokens, then every warning and flag."""
    load = result["load"]
    modes = result["config"].get("modes", {})
    lines = []
    for mode, tokens in load.get("tokens", {}).items():
        prompts = modes.get(mode, {}).get("prompts")
        lines.append(
            f"{mode}: {describe_tokens(tokens)}" + (f"; prompts {prompts}" if prompts else "")
        )
    for mode, entry in load["throughput"].items():
        lines += [f"warning: {mode}: {w}" for w in entry.get("warnings", [])]
        queue = load["modes"][mode]["summary"].get("queue_ms", {}).get("p50")
        e2e = load["modes"][mode]["summary"].get("turn_e2e_ms", {}).get("p50")
        if queue and e2e and queue > 0.5 * e2e:
            lines.append(
                f"warning: {mode}: overloaded: requests waited {_ms(queue)} ms (median) for a free "
                f"slot; TTFT and e2e count that wait (from the intended start), TPOT and ITL do not"
            )
    by_turn = input_tokens_by_turn(load.get("samples", []))
    if any(len(t) > 1 for t in by_turn.values()):
        lines += legend(
            "input tokens by turn (median of ok requests): "
            + "; ".join(f"{m} {' → '.join(f'{v:,.0f}' for v in t)}" for m, t in by_turn.items())
        )
    lines += [f"UNEQUAL WORK: {flag['message']}" for flag in load.get("unequal_work", [])]
    return lines


def input_tokens_by_turn(samples: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Per mode, the median input tokens of each turn index (ok requests), in turn order: equal
    work shows as equal rows."""
    grouped: dict[str, dict[int, list[int]]] = {}
    for s in samples:
        if s.get("ok") and isinstance(s.get("input_tokens"), int):
            turns = grouped.setdefault(s["mode"], {})
            turns.setdefault(int(s["turn_index"]), []).append(s["input_tokens"])
    return {
        mode: [statistics.median(turns[i]) for i in sorted(turns)]
        for mode, turns in grouped.items()
    }


def print_load(out: TextIO, result: Mapping[str, Any]) -> None:
    out.write(format_load_table(result) + "\n")
    for note in format_load_notes(result):
        out.write("\n".join(legend(note)) + "\n")
    out.write("\n".join(legend(LOAD_LEGEND)) + "\n")
