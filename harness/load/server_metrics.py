"""The server's metrics in time with the client's: `--server-metrics URL` (repeatable) scrapes
any Prometheus endpoint (vLLM's, SGLang's, LiteLLM's, the reference server's `/metrics`) every
`--server-metrics-interval-s` while a bench or load runs, and stores what it read as time series
in the results (`<kind>.server_metrics`), which the bench's HTML report draws beside the client's
latency over time (harness.report.server_metrics_html).

What is kept: every gauge and counter sample, and a histogram's or summary's `_sum` and `_count`
(not its buckets or quantiles: a vLLM page holds hundreds of bucket series, and the client's own
histograms are exact), at most `MAX_SERIES` series per URL in the order first seen (the rest
counted as dropped). A point is `[t_s, value]`, t_s the seconds since the run started (epoch
`started_at_s`, on the same clock as the samples' `started_at_s`). A scrape that fails is
counted and its first errors kept; the run goes on. A URL that does not answer before the run
starts is a usage error, said in one line, like an unreachable target.

The scrapes run on a thread of their own (one GET per URL per interval, a few kB each), never on
the event loop that measures. `--engine-metrics` (harness.load.bench.engine_cache) reads its
counters through `fetch_text` too, and its URL is scraped as one of these sources.
"""

from __future__ import annotations

import math
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import TargetError
from harness.load.prometheus_text import PrometheusTextError, family_of, parse

SCRAPE_TIMEOUT_S = 10.0
MAX_SERIES = 300
MAX_ERRORS_KEPT = 5
DEFAULT_INTERVAL_S = 1.0


class ServerMetricsError(TargetError, RuntimeError):
    """A metrics endpoint could not be read before the run started."""


def check_url(option: str, url: str) -> None:
    """ValueError naming `option` unless `url` is http(s)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{option}: expected an http(s) URL, got {url!r}")


def fetch_text(url: str, timeout_s: float = SCRAPE_TIMEOUT_S) -> str:
    """One GET of a metrics page; OSError or ValueError when it cannot be read."""
    request = urllib.request.Request(url, headers={"Accept": "text/plain; version=0.0.4"})
    with urllib.request.urlopen(request, timeout=timeout_s) as reply:
        return str(reply.read().decode("utf-8", errors="replace"))


def _kept(name: str, labels: tuple[tuple[str, str], ...], types: dict[str, str]) -> bool:
    family = family_of(name, types)
    kind = types.get(family, "untyped")
    if kind in ("histogram", "summary", "gaugehistogram"):
        return name.endswith(("_sum", "_count"))
    return not any(k in ("le", "quantile") for k, _ in labels)


def _series_key(name: str, labels: tuple[tuple[str, str], ...]) -> tuple[str, tuple[Any, ...]]:
    return name, tuple(sorted(labels))


@dataclass
class Source:
    """One URL's scrapes: its series and what went wrong."""

    url: str
    scrapes: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    series_dropped: int = 0
    types: dict[str, str] = field(default_factory=dict)
    series: dict[tuple[str, tuple[Any, ...]], list[list[float]]] = field(default_factory=dict)
    _dropped: set[tuple[str, tuple[Any, ...]]] = field(default_factory=set)

    def add_page(self, text: str, t_s: float) -> None:
        page = parse(text, strict=False)
        self.types.update(page.types)
        self.scrapes += 1
        for sample in page.samples:
            if not _kept(sample.name, sample.labels, page.types) or math.isnan(sample.value):
                continue
            key = _series_key(sample.name, sample.labels)
            points = self.series.get(key)
            if points is None:
                if len(self.series) >= MAX_SERIES:
                    if key not in self._dropped:
                        self._dropped.add(key)
                        self.series_dropped += 1
                    continue
                points = self.series[key] = []
            value = sample.value if math.isfinite(sample.value) else None
            if value is not None:
                points.append([round(t_s, 3), value])

    def add_failure(self, error: str) -> None:
        self.failed += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(error)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "scrapes": self.scrapes,
            "failed_scrapes": self.failed,
            "errors": list(self.errors),
            "series_dropped": self.series_dropped,
            "series": [
                {
                    "name": name,
                    "labels": dict(labels),
                    "type": self.types.get(family_of(name, self.types), "untyped"),
                    "points": points,
                }
                for (name, labels), points in self.series.items()
            ],
        }


class ServerMetricsScraper:
    """Scrape `urls` every `interval_s` on a thread between `start()` and `stop()`."""

    def __init__(
        self,
        urls: Sequence[str],
        interval_s: float = DEFAULT_INTERVAL_S,
        option_of: Mapping[str, str] | None = None,
    ) -> None:
        self.urls = list(dict.fromkeys(urls))
        # the option that named each URL, for the pre-run error (--engine-metrics's is scraped too)
        self.option_of = dict(option_of or {})
        self.interval_s = interval_s
        self.sources = [Source(url) for url in self.urls]
        self.started_at_s = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="server-metrics", daemon=True)

    def check_reachable(self) -> None:
        """One GET of each URL before the run; ServerMetricsError (one line) for the first that
        does not answer with a metrics page."""
        for url in self.urls:
            try:
                parse(fetch_text(url, min(SCRAPE_TIMEOUT_S, max(self.interval_s, 2.0))))
            except (OSError, ValueError) as exc:
                option = self.option_of.get(url, "--server-metrics")
                raise ServerMetricsError(f"{option}: cannot read {url}: {exc}") from None

    def scrape_once(self) -> None:
        t_s = time.time() - self.started_at_s
        for source in self.sources:
            try:
                text = fetch_text(source.url, min(SCRAPE_TIMEOUT_S, max(self.interval_s, 1.0)))
                with self._lock:
                    source.add_page(text, t_s)
            except (OSError, ValueError, PrometheusTextError) as exc:
                with self._lock:
                    source.add_failure(f"at {t_s:.1f} s: {exc}")

    def _run(self) -> None:
        next_s = time.monotonic()
        while not self._stop.is_set():
            self.scrape_once()
            next_s += self.interval_s
            self._stop.wait(max(0.0, next_s - time.monotonic()))

    def start(self) -> ServerMetricsScraper:
        self.started_at_s = time.time()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop, with one last scrape so the series reach the run's end."""
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(timeout=SCRAPE_TIMEOUT_S * max(1, len(self.urls)) + 1)
            self.scrape_once()

    def __enter__(self) -> ServerMetricsScraper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def to_json(self) -> dict[str, Any]:
        """The results section `<kind>.server_metrics`."""
        with self._lock:
            return {
                "interval_s": self.interval_s,
                "started_at_s": round(self.started_at_s, 3),
                "sources": [s.to_json() for s in self.sources],
            }
