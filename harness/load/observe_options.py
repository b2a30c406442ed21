"""What `wsmode bench` and `wsmode load` watch besides the latencies, declared once for both
(harness.options, a `nested()` field of each config): the service-level objectives the results
judge goodput by, and the live metrics endpoint (harness.load.live_metrics)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from harness.load.live_metrics import LiveMetrics, MetricsServer
from harness.load.server_metrics import DEFAULT_INTERVAL_S, ServerMetricsScraper, check_url
from harness.options import option, port_number, positive_float
from harness.results.slo import SLO_SYNTAX, SloTarget, parse_slo

OBSERVE = "objectives and live metrics"


#: `--server-metrics embedded`: the embedded reference server's own /metrics
EMBEDDED = "embedded"


def _metrics_urls(urls: list[str]) -> tuple[str, ...]:
    for url in urls:
        if url != EMBEDDED:
            check_url("--server-metrics", url)
    return tuple(urls)


@dataclass
class ObserveOptions:
    slo: tuple[SloTarget, ...] = option(
        (),
        "--slo",
        metavar="TARGETS",
        group=OBSERVE,
        to_field=parse_slo,
        help=f"service-level objectives, {SLO_SYNTAX} (metrics: ttft_ms, ttfe_ms, itl_ms, "
        "tpot_ms, e2e_ms of a turn, rollout_e2e_ms): goodput per mode is the share of turns "
        "and of rollouts that met every limit",
    )

    metrics_port: int | None = option(
        None,
        "--metrics-port",
        metavar="PORT",
        group=OBSERVE,
        type=port_number,
        help="serve the client's live metrics (TTFT, ITL, e2e histograms, in flight, errors by "
        "kind, per mode) in Prometheus text format at http://127.0.0.1:PORT/metrics while the "
        "run runs (0: a free port, printed)",
    )

    server_metrics: tuple[str, ...] = option(
        (),
        "--server-metrics",
        action="append",
        metavar="URL",
        group=OBSERVE,
        to_field=_metrics_urls,
        help="a Prometheus endpoint to scrape every --server-metrics-interval-s while the run "
        "runs (vLLM, SGLang, LiteLLM, wsmode serve: http://HOST:PORT/metrics; `embedded`: "
        "the embedded reference server's; repeatable), stored as time series in the results "
        "and drawn beside the client's latency",
    )
    server_metrics_interval_s: float = option(
        DEFAULT_INTERVAL_S,
        "--server-metrics-interval-s",
        metavar="S",
        group=OBSERVE,
        type=positive_float,
        help="how often each --server-metrics URL is scraped",
    )

    def to_json(self) -> dict[str, object]:
        """The run's config entries (results `config`)."""
        return {
            "slo": [str(t) for t in self.slo],
            "metrics_port": self.metrics_port,
            "server_metrics": list(self.server_metrics),
            "server_metrics_interval_s": self.server_metrics_interval_s
            if self.server_metrics
            else None,
        }

    def scraper(
        self, engine_metrics_url: str | None = None, embedded_http_url: str | None = None
    ) -> ServerMetricsScraper | None:
        """The scraper of --server-metrics (and of --engine-metrics's URL), or None;
        `embedded` is the embedded server's /metrics (`embedded_http_url`, its `.../v1`)."""
        named = list(self.server_metrics)
        if EMBEDDED in named:
            if embedded_http_url is None:
                raise ValueError("--server-metrics embedded: the run has no embedded server")
            metrics = embedded_http_url.removesuffix("/").removesuffix("/v1") + "/metrics"
            named = [metrics if url == EMBEDDED else url for url in named]
        urls = [*named, *([engine_metrics_url] if engine_metrics_url else [])]
        if not urls:
            return None
        option_of = {engine_metrics_url: "--engine-metrics"} if engine_metrics_url else {}
        return ServerMetricsScraper(urls, self.server_metrics_interval_s, option_of)

    @contextlib.contextmanager
    def live_metrics(self, unit: str, err: TextIO) -> Iterator[LiveMetrics | None]:
        """The live registry served on --metrics-port while the body runs (None without)."""
        if self.metrics_port is None:
            yield None
            return
        live = LiveMetrics(in_flight_unit=unit)
        with MetricsServer(live, self.metrics_port) as server:
            err.write(f"live metrics: {server.url}\n")
            err.flush()
            yield live
