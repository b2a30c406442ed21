"""The server's garbage-collector policy: long-lived state tenured out of the collector's reach.

Measured (issue 42, bench/ratios/connection_scale.py): with 2,000 cached connections (1,500-word
histories) the server process tracks ~300,000 containers, and one collection of the oldest
generation walks them all: 690-700 ms with the event loop stopped, the stall seen in idle pings
(1,035 ms at 9,000 connections) and in a round's p99. CPython runs such a collection whenever a
quarter of the old generation is new survivors, so it recurs as turns replace cached responses.

The cached responses and the connections' own objects are long-lived and freed by reference
counting when their connection closes, so the collector gains nothing by walking them:

- every `tenure_interval_s` the young and middle generations are collected (bounded by what was
  allocated since the last time: a few ms) and the survivors frozen (`gc.freeze()`), so the old
  generation stays small and its collections short;
- frozen objects are still freed by reference counting; only garbage *cycles* among them wait
  (a closed connection leaves ~80 cyclic objects: its exception tracebacks and futures), until
  the full sweep (`gc.unfreeze()`, a full collection, freeze again) every `sweep_interval_s`:
  one pause of the old kind, at a known rate (0: never; the frozen cycles then stay).

Process-wide like the collector itself: several servers in one process (the tests') share it;
the first to start installs it, the last to stop restores CPython's settings.
"""

from __future__ import annotations

import asyncio
import gc
import time

_servers = 0  # servers in this process using the policy


class ServerGc:
    def __init__(self, tenure_interval_s: float, sweep_interval_s: float) -> None:
        self.tenure_interval_s = tenure_interval_s
        self.sweep_interval_s = sweep_interval_s
        self.tenures = 0
        self.sweeps = 0
        self.longest_tenure_s = 0.0  # the pauses it takes itself, for /metrics
        self.longest_sweep_s = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._next_sweep = 0.0
        self._started = False

    @property
    def enabled(self) -> bool:
        return self.tenure_interval_s > 0

    def start(self) -> None:
        global _servers
        if not self.enabled or self._started:
            return
        self._started = True
        _servers += 1
        if _servers == 1:
            gc.freeze()  # what is alive once the server has started: modules, the profile
        self._next_sweep = time.monotonic() + self.sweep_interval_s
        self._schedule()

    def stop(self) -> None:
        global _servers
        if not self._started:
            return
        self._started = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        _servers -= 1
        if _servers == 0:
            gc.unfreeze()  # the next full collection takes what the frozen cycles hold

    def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.tenure_interval_s, self._tick)

    def _tick(self) -> None:
        started = time.perf_counter()
        if self.sweep_interval_s > 0 and time.monotonic() >= self._next_sweep:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.sweeps += 1
            self._next_sweep = time.monotonic() + self.sweep_interval_s
            self.longest_sweep_s = max(self.longest_sweep_s, time.perf_counter() - started)
        else:
            gc.collect(1)  # young and middle: the cycles among new objects go now
            gc.freeze()
            self.tenures += 1
            self.longest_tenure_s = max(self.longest_tenure_s, time.perf_counter() - started)
        self._schedule()
