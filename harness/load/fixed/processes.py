"""`wsmode load` across processes: N client processes, one merged, lossless result.

Each process runs its share of the load (`LoadSpec.share`) on its own event loop; the processes
are spawned first, wait until all of them are ready, then start together. Each sends back its
`ShardResult` as JSON (HdrHistograms in their encoded wire form, the same one locust workers
ship), and the parent merges them: every sample of every process is in the merged histograms
(`tests/load/fixed/test_fixed_load.py` proves the counts add up exactly). Throughput is the merged
ok count over the window from the first process's start to the last one's end, on the
machine-wide monotonic clock (harness.load.fixed.load_result).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import queue
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from multiprocessing.synchronize import Event as EventType
from typing import Any

from harness.errors import TargetError
from harness.load.core.gc_policy import load_gc
from harness.load.fixed.conversations import ShardResult, run_shard
from harness.load.fixed.load_spec import LoadSpec
from harness.load.live_metrics import LiveMetrics, ModeFeed, QueueFeed, drain_queue
from harness.progress import Progress, phase

CHILD_START_TIMEOUT_S = 60.0


class LoadProcessError(TargetError, RuntimeError):
    """A client process died before it sent its result back."""


def default_processes() -> int:
    """One client process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_processes(
    spec: LoadSpec,
    processes: int,
    progress: Progress | None = None,
    live: LiveMetrics | None = None,
) -> ShardResult:
    """Run `spec` split over `processes` client processes (1: in this process) and merge.

    With `progress`, its line follows the requests done (and failed) in every process: each
    keeps its counts in its own slots of a shared array, read from a thread here. With `live`
    (--metrics-port), each process sends its requests in batches on a queue drained here."""
    if processes < 1:
        raise ValueError("processes must be >= 1")
    if processes == 1:
        tally = [0, 0]
        feed = ModeFeed(live, spec.mode) if live is not None else None
        with _following(progress, [tally]), load_gc():
            return asyncio.run(run_shard(spec, 0, tally, feed))
    shares = [(i, s) for i in range(processes) if (s := spec.share(i, processes)) is not None]
    ctx = mp.get_context("spawn")  # no inherited event loop, threads or sockets
    ready, results = ctx.Queue(), ctx.Queue()
    live_queue = ctx.Queue() if live is not None else None
    start = ctx.Event()
    tallies = [ctx.Array("q", 2, lock=False) for _ in shares]
    children = [
        ctx.Process(
            target=_child, args=(share, i, ready, start, results, tally, live_queue), daemon=True
        )
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
        draining = drain_queue(live, live_queue) if live is not None else contextlib.nullcontext()
        with _following(progress, tallies), draining:
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
    spec: LoadSpec,
    index: int,
    ready: Any,
    start: EventType,
    results: Any,
    tally: Any,
    live_queue: Any = None,
) -> None:
    ready.put(index)
    start.wait()
    feed = QueueFeed(live_queue, spec.mode) if live_queue is not None else None
    with load_gc():
        shard = asyncio.run(run_shard(spec, index, tally, feed))
    results.put(shard.to_json())
