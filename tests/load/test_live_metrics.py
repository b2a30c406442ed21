"""--metrics-port (harness.load.live_metrics): the registry's exposition text, its feeds (in
process, across processes, a locust worker's report), and a scrape over loopback in the middle
of a real `wsmode bench` and `wsmode load --processes 2`."""

from __future__ import annotations

import importlib.util
import os
import queue
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.load.core.measurements import RolloutResult, TurnResult
from harness.load.live_metrics import (
    CONTENT_TYPE,
    LiveMetrics,
    MetricsServer,
    QueueFeed,
    drain_queue,
)
from harness.load.locust_glue import Collector
from harness.load.prometheus_text import Page, parse

from .replay_support import SMOKE

SCRAPE_WAIT_S = 120.0  # bounds a run that never shows a turn (a failure, not a timing)


def _turn(mode: str, ok: bool = True, error: str | None = None, **kw: float) -> TurnResult:
    return TurnResult(
        "r1",
        mode,
        0,
        ok,
        error,
        ttft_ms=kw.get("ttft", 3.0),
        turn_e2e_ms=kw.get("e2e", 40.0),
        itl_gaps_ms=[2.0, 2.0, 30.0],
    )


def _value(page: Page, name: str, **labels: str) -> float:
    (value,) = [
        s.value
        for s in page.samples
        if s.name == name and all(s.label(k) == v for k, v in labels.items())
    ]
    return value


def test_histograms_counters_and_gauge_in_the_text_format() -> None:
    live = LiveMetrics(in_flight_unit="rollouts")
    live.started("ws", 2)
    live.finished("ws")
    live.turn_ended(_turn("ws", ttft=3.0, e2e=40.0))
    live.turn_ended(_turn("ws", ttft=700.0, e2e=90_000.0))
    live.turn_ended(_turn("http", ok=False, error="transport: connection reset by peer"))
    live.turn_ended(_turn("http", ok=False, error='request error 429: {"x": 1}'))
    page = parse(live.render())
    assert page.types["wsmode_client_ttft_seconds"] == "histogram"
    ttft = "wsmode_client_ttft_seconds_bucket"
    assert _value(page, ttft, mode="ws", le="0.005") == 1
    assert _value(page, ttft, mode="ws", le="0.5") == 1
    assert _value(page, ttft, mode="ws", le="1") == 2
    assert _value(page, ttft, mode="ws", le="+Inf") == 2
    assert _value(page, "wsmode_client_ttft_seconds_sum", mode="ws") == pytest.approx(0.703)
    assert _value(page, "wsmode_client_e2e_seconds_bucket", mode="ws", le="60") == 1
    assert _value(page, "wsmode_client_e2e_seconds_bucket", mode="ws", le="+Inf") == 2
    assert _value(page, "wsmode_client_itl_seconds_count", mode="ws") == 6  # every gap
    assert _value(page, "wsmode_client_turns_total", mode="ws", outcome="ok") == 2
    assert _value(page, "wsmode_client_turns_total", mode="http", outcome="failed") == 2
    assert _value(page, "wsmode_client_errors_total", mode="http", kind="transport") == 1
    assert _value(page, "wsmode_client_errors_total", mode="http", kind="request error 429") == 1
    assert _value(page, "wsmode_client_rollouts_in_flight", mode="ws") == 1
    assert not any(s.label("mode") == "http" for s in page.samples if "_seconds" in s.name)


def test_a_locust_workers_report_feeds_the_masters_view_losslessly() -> None:
    # lossless up to the HdrHistogram's 3 significant digits: no value sits on a bucket bound
    collector = Collector()
    result = RolloutResult("r1", "ws", "ws")
    result.turns = [_turn("ws", ttft=4.0), _turn("ws", ttft=40.0), _turn("ws", ok=False, error="x")]
    collector.add(result)
    master, direct = LiveMetrics(), LiveMetrics()
    master.observe_payload(collector.drain())
    for turn in result.turns:
        direct.turn_ended(turn)
    got, want = parse(master.render()), parse(direct.render())
    for name in ("wsmode_client_ttft_seconds_bucket", "wsmode_client_itl_seconds_bucket"):
        for le in ("0.005", "0.01", "0.05", "+Inf"):
            assert _value(got, name, mode="ws", le=le) == _value(want, name, mode="ws", le=le)
    assert _value(got, "wsmode_client_turns_total", mode="ws", outcome="failed") == 1
    assert _value(got, "wsmode_client_errors_total", mode="ws", kind="x") == 1


def test_a_client_process_feed_arrives_through_the_queue() -> None:
    live, channel = LiveMetrics(), queue.Queue[object]()
    feed = QueueFeed(channel, "http-chained")
    with drain_queue(live, channel):
        feed.started()
        feed.started()
        feed.ended(_turn("http-chained"))
        feed.flush()
    page = parse(live.render())
    assert _value(page, "wsmode_client_turns_total", mode="http-chained", outcome="ok") == 1
    assert _value(page, "wsmode_client_requests_in_flight", mode="http-chained") == 1


def test_the_server_serves_metrics_only_and_on_loopback() -> None:
    live = LiveMetrics()
    with MetricsServer(live, 0) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(server.url, timeout=10) as reply:
            assert reply.headers["Content-Type"] == CONTENT_TYPE
            assert "# TYPE wsmode_client_ttft_seconds histogram" in reply.read().decode()
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/other", timeout=10)
        assert caught.value.code == 404


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape_mid_run(argv: list[str], seen: Callable[[Page], bool], tmp_path: Path) -> Page:
    """Start `wsmode ...` with --metrics-port, scrape until `seen(page)`; the process must still
    be running at that scrape (the endpoint lives as long as the run)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "harness.cli", *argv, "--metrics-port", str(port)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + SCRAPE_WAIT_S
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"the run ended before a scrape saw it: {proc.stderr}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    page = parse(r.read().decode())
            except OSError:  # not listening yet
                time.sleep(0.1)
                continue
            if seen(page):
                assert proc.poll() is None  # mid-run
                return page
            time.sleep(0.1)
        raise AssertionError("no scrape saw the run's turns")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _turns_ok(page: Page, mode: str) -> float:
    return sum(
        s.value
        for s in page.samples
        if s.name == "wsmode_client_turns_total" and s.label("mode") == mode
    )


def test_a_scrape_mid_bench_sees_turns_and_rollouts_in_flight(tmp_path: Path) -> None:
    # tool time waited at its recorded value: each rollout takes seconds, so the run is
    # in the middle when its first turns have ended
    argv = ["bench", "--traces", str(SMOKE), "--profile", "zero", "--modes", "ws,http"]
    argv += ["--time-scale", "1", "--no-cache-split", "--out", str(tmp_path), "--no-html"]
    page = _scrape_mid_run(
        argv,
        lambda p: (
            _turns_ok(p, "ws") > 0
            and any(s.name == "wsmode_client_rollouts_in_flight" and s.value > 0 for s in p.samples)
        ),
        tmp_path,
    )
    assert _value(page, "wsmode_client_ttft_seconds_count", mode="ws") >= 1


def test_a_scrape_mid_load_sees_every_client_processs_requests(tmp_path: Path) -> None:
    argv = ["load", "--duration-s", "30", "--processes", "2", "--concurrency", "2"]
    argv += ["--input-tokens", "16", "--output-tokens", "16", "--out", str(tmp_path)]
    page = _scrape_mid_run(argv, lambda p: _turns_ok(p, "ws") >= 4, tmp_path)
    assert _value(page, "wsmode_client_e2e_seconds_count", mode="ws") >= 4
    assert page.types["wsmode_client_requests_in_flight"] == "gauge"


def test_a_scrape_of_the_locust_master_sees_its_workers_turns(tmp_path: Path) -> None:
    """The master's view: a worker's turns reach the master's endpoint with its reports."""
    if importlib.util.find_spec("locust") is None:  # never imported here: it patches gevent in
        pytest.skip("locust is not installed (pip install -e '.[load]')")
    from harness.load.embedded_server import EmbeddedServer

    locustfile = Path(__file__).resolve().parents[2] / "harness" / "load" / "locustfile.py"
    master_port, metrics_port = _free_port(), _free_port()
    common = [sys.executable, "-m", "locust", "-f", str(locustfile)]
    common += ["--wsmode-traces", str(SMOKE), "--wsmode-time-scale", "0.002", "--wsmode-script"]
    common += ["--wsmode-out", str(tmp_path / "results")]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with EmbeddedServer(profile="zero") as server:
        argv = [*common, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port"]
        argv += [str(master_port), "--headless", "--expect-workers", "1", "-u", "2", "-r", "2"]
        argv += ["-t", "60s", "--host", server.http_url, "--only-summary"]
        master = subprocess.Popen(
            [*argv, "--wsmode-metrics-port", str(metrics_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tmp_path,
        )
        worker = subprocess.Popen(
            [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(master_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tmp_path,
        )
        try:
            deadline, page = time.monotonic() + SCRAPE_WAIT_S, None
            while time.monotonic() < deadline:
                assert master.poll() is None
                try:
                    url = f"http://127.0.0.1:{metrics_port}/metrics"
                    with urllib.request.urlopen(url, timeout=5) as reply:
                        page = parse(reply.read().decode())
                except OSError:
                    page = None
                if page is not None and _turns_ok(page, "ws") + _turns_ok(page, "http") > 0:
                    break
                time.sleep(0.2)
            assert page is not None and master.poll() is None  # mid-run: the master still runs
            ttft = [s for s in page.samples if s.name == "wsmode_client_ttft_seconds_count"]
            assert sum(s.value for s in ttft) > 0
        finally:
            for proc in (master, worker):
                proc.terminate()
                proc.wait(timeout=60)
