"""Server metrics, rendered in the Prometheus text exposition format at `/metrics`."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

_HELP = {
    "wsmode_connections": ("gauge", "Open WebSocket connections."),
    "wsmode_connections_total": ("counter", "WebSocket connections accepted."),
    "wsmode_connections_refused_total": ("counter", "Upgrades refused (auth, limits)."),
    "wsmode_responses_in_flight": ("gauge", "Responses being generated."),
    "wsmode_queue_depth": ("gauge", "Creates queued behind an in-flight response."),
    "wsmode_responses_total": ("counter", "Responses finished, by transport and status."),
    "wsmode_request_errors_total": ("counter", "Requests refused with an error, by code."),
    "wsmode_cache_total": ("counter", "previous_response_id resolutions, by outcome."),
    "wsmode_cache_evictions_total": ("counter", "Connection-cache evictions, by reason."),
    "wsmode_output_tokens_total": ("counter", "Output tokens emitted."),
    "wsmode_output_tokens_per_second": (
        "gauge",
        "Output tokens emitted over the last 10 s, per s.",
    ),
    "wsmode_stage_seconds_total": ("counter", "Time spent per pipeline stage (real + charged)."),
    "wsmode_stage_runs_total": ("counter", "Pipeline stage executions."),
    "wsmode_send_stalls_total": ("counter", "Clients cut off for not reading (send stall)."),
    "wsmode_billed_tokens_total": ("counter", "Tokens billed."),
    "wsmode_store_write_failures_total": (
        "counter",
        "store=true writes that failed, by outcome (retried, dropped).",
    ),
    "wsmode_connection_cache_entries": ("gauge", "Responses held in connection caches."),
    "wsmode_connection_cache_bytes": ("gauge", "Estimated bytes held in connection caches."),
    "wsmode_prefix_cache_bytes": ("gauge", "Estimated bytes held in the engine's prefix cache."),
    "wsmode_prefix_cache_queries_total": ("counter", "Prompt tokens looked up."),
    "wsmode_prefix_cache_hits_total": ("counter", "Prompt tokens found in the prefix cache."),
    "wsmode_store_bytes": ("gauge", "Payload bytes in the response store."),
    "wsmode_store_materialised_bytes": (
        "gauge",
        "Estimated bytes of hydrated chains kept for the next hydration.",
    ),
    "wsmode_gc_tenure_pause_seconds": (
        "gauge",
        "Longest pause of the GC policy's tenure (young collections, then freeze).",
    ),
    "wsmode_gc_sweep_pause_seconds": (
        "gauge",
        "Longest pause of the GC policy's full sweep over the frozen objects.",
    ),
    "wsmode_memory_trims_total": ("counter", "Allocator trims after a large connection closed."),
    "wsmode_worker_info": ("gauge", "The worker process this scrape reports on (per worker)."),
}

_RATE_WINDOW_S = 10.0


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{v}"' for k, v in labels)
    return "{" + inner + "}"


@dataclass
class ServerMetrics:
    connections: int = 0
    in_flight: int = 0
    queue_depth: int = 0
    counters: Counter[tuple[str, tuple[tuple[str, str], ...]]] = field(default_factory=Counter)
    stage_seconds: Counter[str] = field(default_factory=Counter)
    _token_window: deque[tuple[float, int]] = field(default_factory=deque)
    # Values read when rendered (sizes and counts other objects own): name -> current value.
    gauges: dict[str, Callable[[], float]] = field(default_factory=dict)

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        # labels in name order; one label (nearly every call, several a turn) needs no sort
        key = tuple(labels.items()) if len(labels) < 2 else tuple(sorted(labels.items()))
        self.counters[(name, key)] += amount  # type: ignore[assignment]

    def record_stages(self, stages_ms: dict[str, float]) -> None:
        counters, seconds = self.counters, self.stage_seconds
        for stage, ms in stages_ms.items():
            seconds[stage] += ms / 1000.0  # type: ignore[assignment]
            counters[("wsmode_stage_runs_total", (("stage", stage),))] += 1

    def record_tokens(self, count: int) -> None:
        now = time.monotonic()
        self.inc("wsmode_output_tokens_total", count)
        self._token_window.append((now, count))
        while self._token_window and self._token_window[0][0] < now - _RATE_WINDOW_S:
            self._token_window.popleft()

    def tokens_per_second(self) -> float:
        now = time.monotonic()
        recent = sum(n for t, n in self._token_window if t >= now - _RATE_WINDOW_S)
        return recent / _RATE_WINDOW_S

    def value(self, name: str, **labels: str) -> float:
        return float(self.counters[(name, tuple(sorted(labels.items())))])

    def render(self) -> str:
        samples: dict[str, list[str]] = {name: [] for name in _HELP}
        samples["wsmode_connections"].append(f"wsmode_connections {self.connections}")
        samples["wsmode_responses_in_flight"].append(f"wsmode_responses_in_flight {self.in_flight}")
        samples["wsmode_queue_depth"].append(f"wsmode_queue_depth {self.queue_depth}")
        samples["wsmode_output_tokens_per_second"].append(
            f"wsmode_output_tokens_per_second {self.tokens_per_second():.3f}"
        )
        for stage, seconds in sorted(self.stage_seconds.items()):
            samples["wsmode_stage_seconds_total"].append(
                f'wsmode_stage_seconds_total{{stage="{stage}"}} {seconds:.6f}'
            )
        for name, read in sorted(self.gauges.items()):
            samples.setdefault(name, []).append(f"{name} {read():g}")
        for (name, labels), value in sorted(self.counters.items()):
            samples.setdefault(name, []).append(f"{name}{_labels(labels)} {value:g}")
        lines: list[str] = []
        for name, values in samples.items():  # a counter without help text is still shown
            kind, text = _HELP.get(name, ("untyped", name))
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *values]
        return "\n".join(lines) + "\n"
