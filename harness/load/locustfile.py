"""Distributed load with locust: rollout users in WS, HTTP and HTTP-chained mode.

    locust -f harness/load/locustfile.py --headless -u 8 -r 4 -t 60s \\
        --host http://127.0.0.1:8000/v1 --wsmode-traces traces/corpus --wsmode-out results

Each locust user replays whole rollouts, one after another, with the same rollout driver as
`wsmode bench` (`harness.load.core.rollout_driver`), run on an asyncio loop in a real thread of
the locust process (see `harness.load.locust_glue` for why and how). Per turn locust request
events are fired (`WS turn`, `WS ttft`, `WS ttfe`, ...) so locust's own table and charts work;
the exact latencies go into per-mode HdrHistograms that workers ship to the master, which merges
them losslessly and, on quit, writes one `bench` results file (`results/bench/<target>/...`,
built by the engine's one builder) that `wsmode board` can rank. Documentation:
`harness/load/LOCUST.md`.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gevent
from locust import User, events, task
from locust.runners import MasterRunner, WorkerRunner

from harness.load.core.measurements import RolloutResult, TurnResult
from harness.load.core.modes import Mode
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.load.core.session import HttpClientPool
from harness.load.live_metrics import LiveMetrics, MetricsServer
from harness.load.locust_glue import PAYLOAD_KEY, AsyncioBridge, Collector, build_locust_result
from harness.results.paths import portable_path
from harness.results.schema import utc_now_iso
from harness.results.store import slug, write_result
from harness.traces.format import Rollout, load_traces

DEFAULT_TRACES = "traces/corpus"

_state: dict[str, Any] = {}
_lock = threading.Lock()


def _options(parser: Any) -> None:
    group = parser.add_argument_group("wsmode")
    group.add_argument(
        "--wsmode-traces",
        default=os.environ.get("WSMODE_TRACES", DEFAULT_TRACES),
        help="trace file or directory replayed by the users",
    )
    group.add_argument(
        "--wsmode-ws-url",
        default=os.environ.get("WSMODE_WS_URL", ""),
        help="WebSocket URL (default: derived from --host, http->ws + /responses)",
    )
    group.add_argument(
        "--wsmode-time-scale",
        type=float,
        default=float(os.environ.get("WSMODE_TIME_SCALE", "1.0")),
        help="fraction of the recorded tool time each user waits (default 1: real pacing)",
    )
    group.add_argument(
        "--wsmode-script",
        action="store_true",
        default=os.environ.get("WSMODE_SCRIPT", "") == "1",
        help="send the recorded output as wsmode.script (reference server only)",
    )
    group.add_argument("--wsmode-max-turns", type=int, default=0, help="0: whole rollouts")
    group.add_argument("--wsmode-api-key", default=os.environ.get("WSMODE_API_KEY", ""))
    group.add_argument(
        "--wsmode-model",
        default=os.environ.get("WSMODE_MODEL", ""),
        help="the model every request names (default: each rollout's)",
    )
    group.add_argument("--wsmode-out", default="results", help="results root (master/local)")
    group.add_argument("--wsmode-label", default="locust")
    group.add_argument("--wsmode-name", default="", help="target name (default: from --host)")
    group.add_argument(
        "--wsmode-metrics-port",
        type=int,
        default=None,
        help="serve live metrics in Prometheus text format on 127.0.0.1:PORT/metrics (the "
        "master's view: every worker's turns as they report; harness.load.live_metrics)",
    )
    group.add_argument(
        "--wsmode-no-samples",
        action="store_true",
        help="ship histograms and rollouts only (no per-turn samples) from the workers",
    )


def _options_of(environment: Any) -> Any:
    return environment.parsed_options


def _ws_url(options: Any, host: str) -> str:
    if options.wsmode_ws_url:
        return str(options.wsmode_ws_url)
    base = re.sub(r"^http", "ws", host.rstrip("/"))
    return base + "/responses"


def _init(environment: Any, **_: Any) -> None:
    options = _options_of(environment)
    if options is None:
        return
    runner = environment.runner
    collector = Collector(keep_samples=not options.wsmode_no_samples)
    _state.update(collector=collector, environment=environment, workers=set())
    _state["started_at"] = utc_now_iso()
    port = getattr(options, "wsmode_metrics_port", None)
    if port is not None and not isinstance(runner, WorkerRunner):  # the master's, or local
        live = LiveMetrics(in_flight_unit="rollouts")
        server = MetricsServer(live, port).__enter__()
        sys.stderr.write(f"wsmode: live metrics: {server.url}\n")
        _state.update(live=live, live_server=server)
    if isinstance(runner, MasterRunner):

        def on_worker_report(client_id: str, data: dict[str, Any]) -> None:
            payload = data.get(PAYLOAD_KEY)
            if payload:
                collector.merge(payload)
                _state["workers"].add(client_id)
                if "live" in _state:
                    _state["live"].observe_payload(payload)

        _listen(events.worker_report, on_worker_report)
        return
    # local or worker: this process runs users
    _state["rollouts"] = load_traces(options.wsmode_traces)
    _state["bridge"] = AsyncioBridge()
    _state["pool"] = HttpClientPool()
    _state["counters"] = {}
    if isinstance(runner, WorkerRunner):

        def on_report(client_id: str, data: dict[str, Any]) -> None:
            data[PAYLOAD_KEY] = collector.drain()

        _listen(events.report_to_master, on_report)


def _test_start(environment: Any, **_: Any) -> None:
    _state["started_at"] = utc_now_iso()


def _write_results(environment: Any, **_: Any) -> None:
    if "live_server" in _state:
        _state.pop("live_server").__exit__(None, None, None)
    if isinstance(environment.runner, WorkerRunner) or "collector" not in _state:
        return
    collector: Collector = _state["collector"]
    if collector.empty:
        sys.stderr.write("wsmode: no rollout finished; no results written\n")
        return
    options = _options_of(environment)
    host = environment.host or ""
    name = options.wsmode_name or slug(re.sub(r"^\w+://", "", host))
    result = build_locust_result(
        collector,
        label=options.wsmode_label,
        target_url=_ws_url(options, host),
        target_name=name,
        time_scale=options.wsmode_time_scale,
        started_at=_state.get("started_at"),
        config={
            "driver": "locust",
            "host": host,
            "traces": portable_path(options.wsmode_traces),
            "script": options.wsmode_script,
            "max_turns": options.wsmode_max_turns or None,
            "model": options.wsmode_model or None,
            "users": getattr(options, "num_users", None),
            "run_time": getattr(options, "run_time", None),
            "distributed": isinstance(environment.runner, MasterRunner),
            "workers_reporting": len(_state.get("workers", ())),
            "notes": [
                "tool time waited x time_scale; e2e counts it at its recorded value",
                "histograms merged losslessly from every worker",
            ],
        },
    )
    path = write_result(Path(options.wsmode_out), result)
    sys.stderr.write(f"wsmode: results written to {path}\n")


def _next_rollout(mode: str) -> Rollout:
    """Rollouts in file order, per mode, so each mode replays the same sequence (pairable)."""
    rollouts: list[Rollout] = _state["rollouts"]
    with _lock:
        counter: Iterator[int] = _state["counters"].setdefault(mode, itertools.count())
        return rollouts[next(counter) % len(rollouts)]


def _listen(hook: Any, listener: Callable[..., Any]) -> None:
    hook.add_listener(listener)


_listen(events.init_command_line_parser, _options)
_listen(events.init, _init)
_listen(events.test_start, _test_start)
_listen(events.quitting, _write_results)


class _RolloutUser(User):
    abstract = True
    mode: Mode = "ws"

    def on_start(self) -> None:
        options = _options_of(self.environment)
        host = self.host or self.environment.host or ""
        self.endpoint = Endpoint(
            _ws_url(options, host), host.rstrip("/"), options.wsmode_api_key or None
        )
        self.options = ReplayOptions(
            mode=self.mode,
            time_scale=options.wsmode_time_scale,
            send_script=options.wsmode_script,
            max_turns=options.wsmode_max_turns or None,
            model=options.wsmode_model or None,
        )

    @task
    def rollout(self) -> None:
        rollout = _next_rollout(self.mode)
        bridge: AsyncioBridge = _state["bridge"]
        hub_loop = gevent.get_hub().loop

        live: LiveMetrics | None = _state.get("live")  # a local run's own (no master)

        def on_turn(turn: TurnResult) -> None:
            # called on the asyncio thread: locust's events belong to this greenlet's hub
            hub_loop.run_callback_threadsafe(self._fire_turn, turn)
            if live is not None:
                live.turn_ended(turn)

        if live is not None:
            live.started(self.mode)
        try:
            result = bridge.call(
                replay_rollout(
                    rollout, self.endpoint, self.options, http_pool=_state["pool"], on_turn=on_turn
                )
            )
        finally:
            if live is not None:
                live.finished(self.mode)
        self._fire_rollout(result)
        _state["collector"].add(result)

    def _fire_turn(self, turn: TurnResult) -> None:
        """locust's live table gets each turn as it ends, not when its rollout does."""
        fire = self.environment.events.request.fire
        kind = self.mode.upper()
        error = None if turn.ok else RuntimeError(turn.error or "failed")
        fire(
            request_type=kind,
            name="turn",
            response_time=turn.turn_e2e_ms or 0.0,
            response_length=turn.bytes_received,
            exception=error,
            context={"rollout": turn.rollout_id, "turn": turn.turn_index},
        )
        # ttft: to the first content token; ttfe: to the first output event (timing_marks)
        for name, value_ms in (("ttft", turn.ttft_ms), ("ttfe", turn.ttfe_ms)):
            if turn.ok and value_ms is not None:
                fire(
                    request_type=kind,
                    name=name,
                    response_time=value_ms,
                    response_length=0,
                    exception=None,
                    context={},
                )

    def _fire_rollout(self, result: RolloutResult) -> None:
        fire = self.environment.events.request.fire
        kind = self.mode.upper()
        if result.ok:
            fire(
                request_type=kind,
                name="rollout (model-side)",
                response_time=result.model_ms,
                response_length=0,
                exception=None,
                context={},
            )


class WsRolloutUser(_RolloutUser):
    """One WebSocket per rollout: previous_response_id + new items."""

    mode = "ws"
    weight = 1


class HttpRolloutUser(_RolloutUser):
    """Stateless HTTP + SSE: the whole history every turn."""

    mode = "http"
    weight = 1


class HttpChainedRolloutUser(_RolloutUser):
    """HTTP + SSE with previous_response_id and store=true."""

    mode = "http-chained"
    weight = 1
