"""The parts of the locust integration that do not need locust: the asyncio bridge, the
per-process collector and its lossless merge, and the results file.

**Why a bridge.** Locust runs users as gevent greenlets in a monkey-patched process; the replay
driver is asyncio. Each locust process starts one *real* OS thread (the original
`threading.Thread`, not gevent's) running one asyncio event loop; a user greenlet submits its
rollout with `asyncio.run_coroutine_threadsafe` and waits on a `gevent.event.AsyncResult`, which
the loop thread sets when the rollout ends (cross-thread `set` is supported since gevent 20.12).
So the exact driver `wsmode bench` uses runs unchanged, all timestamps are taken on the asyncio
thread, and a waiting greenlet costs nothing (no polling). Measured on `zero`: turn TTFT ~2-4 ms
through the bridge, the same as the plain asyncio driver.

**Merging.** A `Collector` accumulates, per mode, a `MetricSet` (HdrHistograms), failed turns,
and the rollout and turn records. `drain()` returns what accumulated since the last drain as
plain JSON (histograms encoded) and resets; `merge()` adds such a payload into another collector.
Workers drain into every `report_to_master` message (every 3 s and a final one on quit), the
master merges each `worker_report`, so nothing is counted twice or lost, and the merged
histograms equal those of one process that recorded every value.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from harness.load.core.gc_policy import load_gc
from harness.load.core.measurements import RolloutResult
from harness.load.core.results_document import build_results, metric_sets, paired_comparisons
from harness.results.histograms import MetricSet

T = TypeVar("T")
PAYLOAD_KEY = "wsmode"


class Collector:
    """Per-mode histograms, failure counts and records; drained and merged as plain JSON."""

    def __init__(self, *, keep_samples: bool = True) -> None:
        self.keep_samples = keep_samples
        self.lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.sets: dict[str, MetricSet] = {}
        self.failures: dict[str, int] = {}
        self.rollouts: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []

    def add(self, result: RolloutResult) -> None:
        sets, failures = metric_sets([result])
        with self.lock:
            for name, ms in sets.items():
                self.sets.setdefault(name, MetricSet()).merge(ms)
                self.failures[name] = self.failures.get(name, 0) + failures[name]
            self.rollouts.append(result.to_record())
            if self.keep_samples:
                self.samples.extend(t.to_sample() for t in result.turns)

    def drain(self) -> dict[str, Any]:
        """Everything since the last drain, as JSON; the collector starts empty again."""
        with self.lock:
            payload = {
                "modes": {
                    name: {**ms.to_dict(), "failures": self.failures.get(name, 0)}
                    for name, ms in self.sets.items()
                },
                "rollouts": self.rollouts,
                "samples": self.samples,
            }
            self._reset()
        return payload

    def merge(self, payload: Mapping[str, Any]) -> None:
        """Add a drained payload (from any process) into this collector."""
        with self.lock:
            for name, entry in payload.get("modes", {}).items():
                self.sets.setdefault(name, MetricSet()).merge(MetricSet.from_dict(entry))
                self.failures[name] = self.failures.get(name, 0) + int(entry.get("failures", 0))
            self.rollouts.extend(payload.get("rollouts", []))
            self.samples.extend(payload.get("samples", []))

    @property
    def empty(self) -> bool:
        return not self.sets and not self.rollouts


def build_locust_result(
    collector: Collector,
    *,
    label: str,
    target_url: str,
    target_name: str,
    time_scale: float,
    config: Mapping[str, Any],
    seed: int = 0,
    started_at: str | None = None,
) -> dict[str, Any]:
    """A validated `bench` results object from the merged collector, by the engine's one builder
    (harness.load.core.results_document); each mode compared with http."""
    names = list(collector.sets)
    rollouts, samples = list(collector.rollouts), list(collector.samples)
    comparisons = paired_comparisons(rollouts, samples, names, seed=seed)
    return build_results(
        "bench",
        label=label,
        target={"url": target_url, "name": target_name},
        profile=None,
        config=config,
        started_at=started_at,
        modes={n: (ms, collector.failures.get(n, 0)) for n, ms in collector.sets.items()},
        samples=samples,
        rollouts=rollouts,
        time_scale=time_scale,
        sections={"comparisons": [c.to_dict() for c in comparisons]},
    )


class AsyncioBridge:
    """One asyncio loop on a real OS thread; greenlets submit coroutines and wait cooperatively."""

    def __init__(self) -> None:
        import gevent.monkey

        thread_class = gevent.monkey.get_original("threading", "Thread")
        event_class = gevent.monkey.get_original("threading", "Event")
        self._ready = event_class()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = thread_class(target=self._run, name="wsmode-asyncio", daemon=True)
        self.thread.start()
        self._ready.wait(10)
        if self.loop is None:
            raise RuntimeError("the asyncio thread did not start")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        asyncio.set_event_loop(loop)
        self._ready.set()
        with load_gc():
            loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run `coro` on the loop; block this greenlet (only) until it ends."""
        import gevent.event

        assert self.loop is not None
        waiter: Any = gevent.event.AsyncResult()
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)

        def done(f: Any) -> None:
            if f.cancelled():
                waiter.set_exception(asyncio.CancelledError())
                return
            exc = f.exception()
            if exc is not None:
                waiter.set_exception(exc)
            else:
                waiter.set(f.result())

        future.add_done_callback(done)
        try:
            result: T = waiter.get(timeout=timeout_s)
        except BaseException:
            future.cancel()  # the user was stopped: do not leave the rollout running
            raise
        return result

    def stop(self) -> None:
        if self.loop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
