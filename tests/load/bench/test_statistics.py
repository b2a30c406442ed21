"""Statistics a reader can trust: no interval from too few pairs, a sweep level that cannot be
reached says so (on a reference server in this process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cli import main as cli_main
from harness.results.compare import interval_note, median_ci
from harness.results.schema import load_result

from ..replay_support import SMOKE, reference_server


def test_no_interval_from_fewer_than_five_pairs() -> None:
    assert median_ci([1.02, 1.03]) == (1.02, None)  # the nearest-rank median, no interval
    assert interval_note(2) == "2 pairs: too few for an interval (needs 5)"
    point, interval = median_ci([1.0, 1.1, 1.2, 1.3, 1.4])
    assert point == 1.2 and interval is not None and interval[0] <= 1.2 <= interval[1]
    assert interval_note(5) is None


def test_a_sweep_says_which_level_it_could_not_reach(tmp_path: Path, capsys: Any) -> None:
    with reference_server(tmp_path / "data") as server:
        argv = ["bench", "--target", server.ws_url, "--traces", str(SMOKE), "--per-kind", "0"]
        argv += ["--schedule", "sweep", "--sweep", "1,8", "--max-rollouts", "2", "--max-turns"]
        argv += ["1", "--modes", "ws,http", "--no-html", "--out", str(tmp_path / "results")]
        assert cli_main(argv) == 0
    captured = capsys.readouterr()
    shortfall = "sweep level 8: only 4 replays to run, so at most 4 were in flight, not 8"
    assert shortfall in captured.out and shortfall in captured.err
    assert "sweep level 1" not in captured.out
    (path,) = (tmp_path / "results").rglob("*.json")
    result = load_result(path)
    assert any(shortfall in w for w in result["config"]["warnings"])
    comparisons = {c["mode"]: c for c in result["bench"]["comparisons"]}
    assert comparisons["ws-c1"]["ci95"] is None and comparisons["ws-c1"]["pairs"] == 2
    assert "2 pairs: too few for an interval" in captured.out
    assert "[1." not in captured.out.split("speedup e2e")[1].split("(latencies")[0]
