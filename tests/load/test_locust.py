"""Distributed load: per-worker metric sets merge losslessly into a results file the board ranks;
a headless locust master + worker run against the reference server on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.load.core.replay_options import ReplayOptions
from harness.load.core.results_document import metric_sets
from harness.load.core.rollout_driver import replay_rollout
from harness.load.embedded_server import EmbeddedServer
from harness.load.locust_glue import Collector, build_locust_result
from harness.report.board import build_rows, collect_inputs, load_runs
from harness.results.histograms import MetricSet
from harness.results.schema import load_result, validate_result
from harness.results.store import list_results

from .replay_support import SMOKE, endpoint, reference_server, run, smoke_rollouts

LOCUSTFILE = Path(__file__).resolve().parents[2] / "harness" / "load" / "locustfile.py"


def test_worker_payloads_merge_losslessly(tmp_path: Path) -> None:
    """Two "workers" drain into a "master": the merged histograms equal one process's."""
    rollouts = smoke_rollouts()
    with reference_server(tmp_path / "d") as srv:
        results = [
            run(replay_rollout(r, endpoint(srv), ReplayOptions(mode=mode)))
            for mode in ("ws", "http")
            for r in rollouts
        ]
    workers = [Collector(), Collector()]
    for i, result in enumerate(results):
        workers[i % 2].add(result)
    master = Collector()
    payloads = [w.drain() for w in workers]
    assert all(w.empty for w in workers)  # drained: the next report carries only new data
    for payload in payloads:
        master.merge(payload)
    single, failures = metric_sets(results)
    assert set(master.sets) == {"ws", "http"}
    for mode, ms in single.items():
        assert master.sets[mode] == ms  # every bucket of every histogram
        assert master.failures[mode] == failures[mode]
    assert len(master.rollouts) == len(results)
    result = build_locust_result(
        master,
        label="merge",
        target_url=srv.ws_url,
        target_name="merged",
        time_scale=0.0,
        config={"driver": "locust"},
    )
    validate_result(result)
    assert [c["mode"] for c in result["bench"]["comparisons"]] == ["ws"]
    assert MetricSet.from_dict(result["bench"]["modes"]["ws"]) == single["ws"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(300)
def test_headless_master_and_worker_write_one_merged_result(tmp_path: Path) -> None:
    out = tmp_path / "results"
    port = _free_port()
    with EmbeddedServer(profile="zero") as server:
        common = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
            "--wsmode-traces",
            str(SMOKE),
            "--wsmode-time-scale",
            "0.002",
            "--wsmode-script",
            "--wsmode-out",
            str(out),
            "--wsmode-name",
            "reference-locust",
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        master = subprocess.Popen(
            [
                *common,
                "--master",
                "--master-bind-host",
                "127.0.0.1",
                "--master-bind-port",
                str(port),
                "--headless",
                "--expect-workers",
                "1",
                "-u",
                "3",
                "-r",
                "3",
                "-t",
                # long enough for a rollout to finish on a busy machine (one takes ~0.1 s idle)
                "15s",
                "--host",
                server.http_url,
                "--only-summary",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        worker = subprocess.Popen(
            [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tmp_path,
        )
        try:
            log, _ = master.communicate(timeout=180)  # bounds a hang of the master
            worker.wait(timeout=60)
        finally:
            for proc in (master, worker):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert "results written" in log, log[-3000:]
    (info,) = list_results(out)
    result = load_result(info.path)
    assert result["config"]["distributed"] is True
    assert result["config"]["workers_reporting"] == 1
    modes = result["bench"]["modes"]
    assert {"ws", "http", "http-chained"} <= set(modes)
    assert all(MetricSet.from_dict(m)["ttft_ms"].count > 0 for m in modes.values())
    assert all(m["failures"] == 0 for m in modes.values())
    # the board ranks it
    rows = build_rows(load_runs(collect_inputs([out])))
    assert rows and rows[0].target == "reference-locust" and rows[0].rank == 1
