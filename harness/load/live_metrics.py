"""Live metrics while a run runs: `--metrics-port N` serves the client's view in the Prometheus
text exposition format (version 0.0.4) at `http://127.0.0.1:N/metrics`, as AIPerf's
`--api-port` does, so a Prometheus (or `curl`) can watch a long bench or load as it goes.

Per mode (`mode` label, the variant name of a bench):

- `wsmode_client_ttft_seconds`, `wsmode_client_itl_seconds` (every inter-token gap),
  `wsmode_client_e2e_seconds` (a turn's end to end): histograms of the ok turns, in seconds
  as Prometheus names its base unit;
- `wsmode_client_turns_total{outcome="ok"|"failed"}` and `wsmode_client_errors_total{kind}`,
  the failed turns by the kind of their error (its text before the first colon);
- `wsmode_client_<unit>_in_flight`: rollouts in flight (bench) or requests (load).

The registry is fed from the event loop that measures (`turn_ended`), or across processes from
batches (`QueueFeed`, `drain_queue`: `wsmode load --processes N` sends each process's turns to
the parent), or from a locust worker's report on the master (`observe_payload`); the server is a
`ThreadingHTTPServer` on its own thread bound to 127.0.0.1, so a scrape never waits on the
event loop and costs the measured turns one lock each.
"""

from __future__ import annotations

import bisect
import contextlib
import http.server
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness.load.core.measurements import TurnResult
from harness.results.histograms import MetricSet

#: the histogram buckets, in seconds (upper bounds; +Inf is added)
BUCKETS_S = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
#: histogram name -> (the sample key / MetricSet name it reads, its help)
HISTOGRAMS = {
    "wsmode_client_ttft_seconds": ("ttft_ms", "time to the first content token of ok turns"),
    "wsmode_client_itl_seconds": ("itl_ms", "gaps between output tokens of ok turns"),
    "wsmode_client_e2e_seconds": ("turn_e2e_ms", "end-to-end time of ok turns"),
}
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BIND_HOST = "127.0.0.1"
FLUSH_EVERY_S = 0.25  # a client process sends its turns to the parent at most this often


def error_kind(error: str | None) -> str:
    """The kind of a failed turn's error: its text before the first colon, at most 60 chars."""
    return (error or "failed").split(":", 1)[0].strip()[:60] or "failed"


class _Histogram:
    __slots__ = ("count", "counts", "sum_s")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS_S) + 1)  # the last: beyond every bound (+Inf only)
        self.sum_s = 0.0
        self.count = 0

    def observe_ms(self, value_ms: float, n: int = 1) -> None:
        value_s = value_ms / 1000.0
        # the first bound >= the value (le semantics); past the last: the +Inf slot
        self.counts[bisect.bisect_left(BUCKETS_S, value_s)] += n
        self.sum_s += value_s * n
        self.count += n


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class LiveMetrics:
    """The registry: thread-safe, fed per turn, rendered on each scrape."""

    def __init__(self, in_flight_unit: str = "requests") -> None:
        self.in_flight_unit = in_flight_unit
        self._lock = threading.Lock()
        self._hist: dict[tuple[str, str], _Histogram] = defaultdict(_Histogram)
        self._turns: dict[tuple[str, str], int] = defaultdict(int)
        self._errors: dict[tuple[str, str], int] = defaultdict(int)
        self._in_flight: dict[str, int] = defaultdict(int)

    def started(self, mode: str, n: int = 1) -> None:
        with self._lock:
            self._in_flight[mode] += n

    def finished(self, mode: str, n: int = 1) -> None:
        with self._lock:
            self._in_flight[mode] = max(0, self._in_flight[mode] - n)

    def turn_ended(self, turn: TurnResult) -> None:
        self.record(
            turn.mode, turn.ok, turn.error, turn.ttft_ms, turn.turn_e2e_ms, turn.itl_gaps_ms
        )

    def record(
        self,
        mode: str,
        ok: bool,
        error: str | None,
        ttft_ms: float | None,
        e2e_ms: float | None,
        itl_gaps_ms: Sequence[float],
    ) -> None:
        with self._lock:
            self._turns[(mode, "ok" if ok else "failed")] += 1
            if not ok:
                self._errors[(mode, error_kind(error))] += 1
                return
            if ttft_ms is not None:
                self._hist[("wsmode_client_ttft_seconds", mode)].observe_ms(ttft_ms)
            if e2e_ms is not None:
                self._hist[("wsmode_client_e2e_seconds", mode)].observe_ms(e2e_ms)
            itl = self._hist[("wsmode_client_itl_seconds", mode)]
            for gap in itl_gaps_ms:
                itl.observe_ms(gap)

    def observe_payload(self, payload: Mapping[str, Any]) -> None:
        """A locust worker's drained report (harness.load.locust_glue.Collector.drain), on the
        master: its HdrHistograms into the buckets (lossless: each recorded value with its
        count), its failed turns by kind from the samples it kept (else as `failed`)."""
        failed_kinds: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for s in payload.get("samples", []):
            if not s.get("ok"):
                failed_kinds[str(s.get("mode"))][error_kind(s.get("error"))] += 1
        with self._lock:
            for mode, entry in payload.get("modes", {}).items():
                sets = MetricSet.from_dict(entry)
                for name, (key, _) in HISTOGRAMS.items():
                    if key in sets:
                        hist = self._hist[(name, mode)]
                        for value_ms, count in sets[key].recorded_ms():
                            hist.observe_ms(value_ms, count)
                ok = sets["turn_e2e_ms"].count if "turn_e2e_ms" in sets else 0
                failed = int(entry.get("failures", 0))
                self._turns[(mode, "ok")] += ok
                self._turns[(mode, "failed")] += failed
                kinds = failed_kinds.get(mode) or ({"failed": failed} if failed else {})
                for kind, n in kinds.items():
                    self._errors[(mode, kind)] += n

    def render(self) -> str:
        """The exposition text of everything so far."""
        with self._lock:
            lines: list[str] = []
            for name, (_, help_text) in HISTOGRAMS.items():
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
                for (hist_name, mode), h in sorted(self._hist.items()):
                    if hist_name != name:
                        continue
                    m = _label(mode)
                    cumulative = 0
                    for bound, n in zip((*BUCKETS_S, None), h.counts, strict=True):
                        cumulative += n
                        le = "+Inf" if bound is None else f"{bound:g}"
                        lines.append(f'{name}_bucket{{mode="{m}",le="{le}"}} {cumulative}')
                    lines.append(f'{name}_sum{{mode="{m}"}} {h.sum_s:.6f}')
                    lines.append(f'{name}_count{{mode="{m}"}} {h.count}')
            lines += [
                "# HELP wsmode_client_turns_total turns ended, by outcome",
                "# TYPE wsmode_client_turns_total counter",
            ]
            for (mode, outcome), n in sorted(self._turns.items()):
                lines.append(
                    f'wsmode_client_turns_total{{mode="{_label(mode)}",outcome="{outcome}"}} {n}'
                )
            lines += [
                "# HELP wsmode_client_errors_total failed turns, by the kind of their error",
                "# TYPE wsmode_client_errors_total counter",
            ]
            for (mode, kind), n in sorted(self._errors.items()):
                lines.append(
                    f'wsmode_client_errors_total{{mode="{_label(mode)}",kind="{_label(kind)}"}} {n}'
                )
            gauge = f"wsmode_client_{self.in_flight_unit}_in_flight"
            lines += [f"# HELP {gauge} {self.in_flight_unit} in flight", f"# TYPE {gauge} gauge"]
            for mode, n in sorted(self._in_flight.items()):
                lines.append(f'{gauge}{{mode="{_label(mode)}"}} {n}')
            return "\n".join(lines) + "\n"


class ModeFeed:
    """What a load shard calls (harness.load.fixed.conversations): one mode's requests."""

    def __init__(self, live: LiveMetrics, mode: str) -> None:
        self.live, self.mode = live, mode

    def started(self) -> None:
        self.live.started(self.mode)

    def ended(self, turn: TurnResult) -> None:
        self.live.finished(self.mode)
        self.live.turn_ended(turn)

    def flush(self) -> None:
        """Nothing buffered in process."""


class QueueFeed:
    """The same calls in a client process: batched onto a multiprocessing queue the parent
    drains (`drain_queue`), at most every FLUSH_EVERY_S, and at the shard's end (`flush`)."""

    def __init__(self, out: Any, mode: str) -> None:
        self.out, self.mode = out, mode
        self.batch: list[tuple[Any, ...]] = []
        self.last_flush_s = time.monotonic()

    def started(self) -> None:
        self.batch.append(("s",))
        self._maybe_flush()

    def ended(self, turn: TurnResult) -> None:
        self.batch.append(
            ("e", turn.ok, turn.error, turn.ttft_ms, turn.turn_e2e_ms, list(turn.itl_gaps_ms))
        )
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if time.monotonic() - self.last_flush_s >= FLUSH_EVERY_S:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.out.put((self.mode, self.batch))
            self.batch = []
        self.last_flush_s = time.monotonic()


def apply_batch(live: LiveMetrics, mode: str, batch: Sequence[tuple[Any, ...]]) -> None:
    for event in batch:
        if event[0] == "s":
            live.started(mode)
        else:
            _, ok, error, ttft_ms, e2e_ms, gaps = event
            live.finished(mode)
            live.record(mode, ok, error, ttft_ms, e2e_ms, gaps)


@contextlib.contextmanager
def drain_queue(live: LiveMetrics, source: Any) -> Iterator[None]:
    """Apply the batches arriving on `source` to `live` from a thread while the body runs, and
    what is left when it ends."""
    stop = threading.Event()

    def drain(block_s: float) -> None:
        while True:
            try:
                mode, batch = source.get(timeout=block_s) if block_s else source.get_nowait()
            except (queue.Empty, EOFError, OSError):
                return
            apply_batch(live, mode, batch)

    def run() -> None:
        while not stop.is_set():
            drain(0.1)

    thread = threading.Thread(target=run, name="live-metrics-drain", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        drain(0)


class _Handler(http.server.BaseHTTPRequestHandler):
    live: LiveMetrics  # set on the class made per server

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404, "only /metrics is served")
            return
        body = self.live.render().encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged: the console is the run's."""


class MetricsServer:
    """`/metrics` of `live` on 127.0.0.1:`port` (0: a free one, read `.port`), on a thread."""

    def __init__(self, live: LiveMetrics, port: int) -> None:
        handler = type("LiveMetricsHandler", (_Handler,), {"live": live})
        self.httpd = http.server.ThreadingHTTPServer((BIND_HOST, port), handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, name="live-metrics", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://{BIND_HOST}:{self.port}/metrics"

    def __enter__(self) -> MetricsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
