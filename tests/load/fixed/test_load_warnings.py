"""`wsmode load` says when its figures are not what was asked: a rate not reached, an
overloaded target (the queue wait apart from TTFT and TPOT), a saturated client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cli import main as cli_main
from harness.load.core.replay_options import Endpoint
from harness.load.fixed.load_result import load_warnings
from harness.load.fixed.load_spec import LoadSpec
from harness.results.schema import load_result
from tests.load.standard_server import Behaviour, StandardServer


def test_an_unreachable_rate_and_an_overloaded_target_are_said(tmp_path: Path, capsys: Any) -> None:
    with StandardServer(Behaviour(announce_delay_s=0.02, tokens=4)) as server:
        argv = ["load", "--target", server.ws_url, "--rate", "200", "--requests", "20"]
        argv += ["--concurrency", "1", "--processes", "1", "--out", str(tmp_path)]
        assert cli_main([*argv, "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "warning: ws: achieved" in out and "of the 200 requested" in out
    assert "warning: ws: overloaded: requests waited" in out
    (path,) = tmp_path.rglob("*.json")
    load = load_result(path)["load"]
    entry = load["throughput"]["ws"]
    assert entry["requested_rate_per_s"] == 200 and entry["sent_rate_per_s"] < 180
    summary = load["modes"]["ws"]["summary"]
    # the wait for a slot is its own figure: TTFT and e2e count it, TPOT does not
    assert summary["queue_ms"]["p50"] > summary["tpot_ms"]["p50"]
    assert summary["turn_e2e_ms"]["p50"] >= summary["queue_ms"]["p50"]


def test_a_saturated_client_is_said() -> None:
    spec = LoadSpec(mode="ws", endpoint=Endpoint("ws://127.0.0.1:9/v1/responses"), requests=1)
    entry = {"requests_per_s": 9.0, "requests_ok": 9, "client_cpu_share": 0.97, "processes": 2}
    (warning,) = load_warnings({**entry, "sent_rate_per_s": None}, spec)
    assert warning.startswith("the client used 97% of its 2 process(es)' CPU")
