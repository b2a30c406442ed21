"""`wsmode gate`: noise passes, a known slowdown fails naming the metric, bad input exits 2."""

from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.report.gate import (
    GateConfig,
    GateInputError,
    config_from_dict,
    gate_bench,
    load_config,
    paired_speedups,
    run_gate,
)
from harness.report.gate_text import render_markdown
from harness.results import stats
from harness.results.schema import dumps_result, load_result
from harness.results.workload import workload_of


def _write(tmp_path: Path, name: str, result: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(dumps_result(result))
    return str(path)


def _gate(tmp_path: Path, base: dict[str, Any], cur: dict[str, Any], *extra: str) -> int:
    return cli_main(
        [
            "gate",
            "--baseline",
            _write(tmp_path, "base.json", base),
            "--current",
            _write(tmp_path, "cur.json", cur),
            *extra,
        ]
    )


def _statuses(report: Any) -> dict[str, str]:
    return {f"{m.mode} {m.label}": m.status for m in report.metrics}


# -- bench ---------------------------------------------------------------------------------------
def test_same_distribution_passes(synth: Any, tmp_path: Path, capsys: Any) -> None:
    base = synth.bench(seed=1)
    cur = synth.bench(seed=2, started_at="2025-03-02T10:00:00Z", ended_at="2025-03-02T10:05:00Z")
    assert _gate(tmp_path, base, cur) == 0
    out = capsys.readouterr().out
    assert "PASS: no regression" in out
    report = run_gate(base, cur)
    statuses = _statuses(report)
    assert "regression" not in statuses.values()
    # every default metric was compared, for both modes, at p50 and p90
    for mode in ("ws", "http"):
        for metric in ("ttft_ms", "itl_ms", "turn_e2e_ms", "rollout_e2e_ms"):
            for p in ("p50", "p90"):
                assert statuses[f"{mode} {metric} {p}"] in ("ok", "improvement", "noisy")
        assert statuses[f"{mode} error_rate"] == "ok"
    assert statuses["ws speedup_vs_http p50"] == "ok"


def test_thirty_percent_slower_ttft_fails_naming_the_metric(
    synth: Any, tmp_path: Path, capsys: Any
) -> None:
    base = synth.bench(seed=1)
    cur = synth.bench(seed=2, scale={"ws": {"ttft_ms": 1.3}})
    md = tmp_path / "summary.md"
    md.write_text("previous step\n")
    assert _gate(tmp_path, base, cur, "--markdown", str(md)) == 1
    out = capsys.readouterr().out
    assert "FAIL: " in out and "ws ttft_ms p50" in out.splitlines()[-1]

    report = run_gate(base, cur)
    assert "ws ttft_ms p50" in report.regressions
    assert all(r.startswith("ws ttft_ms") for r in report.regressions)  # nothing else flagged
    ttft = next(m for m in report.metrics if (m.mode, m.label) == ("ws", "ttft_ms p50"))
    assert ttft.status == "regression"
    assert ttft.ci_pct is not None and ttft.change_pct is not None
    assert 10.0 < ttft.ci_pct[0] <= 30.0 <= ttft.ci_pct[1]  # the interval covers the true +30 %
    assert ttft.p_value is not None and ttft.p_value < 1e-6
    # http was not touched
    assert _statuses(report)["http ttft_ms p50"] == "ok"

    text = md.read_text()
    assert text.startswith("previous step\n")  # appended, as $GITHUB_STEP_SUMMARY expects
    assert "## wsmode gate: ❌ FAIL" in text
    assert "| ws | ttft_ms p50 |" in text and "**REGRESSION**" in text


def test_gate_is_deterministic(synth: Any) -> None:
    base, cur = synth.bench(seed=1), synth.bench(seed=2, scale={"ws": {"ttft_ms": 1.1}})
    assert render_markdown(run_gate(base, cur)) == render_markdown(run_gate(base, cur))


def test_speedup_drop_is_a_regression(synth: Any) -> None:
    base = synth.bench(seed=1)
    # http got much faster: the WS speedup shrinks even though ws itself did not change
    cur = synth.bench(seed=2, scale={"http": {"ttft_ms": 0.3, "itl_ms": 0.7}})
    report = run_gate(base, cur)
    statuses = _statuses(report)
    assert statuses["ws speedup_vs_http p50"] == "regression"
    assert statuses["http ttft_ms p50"] == "improvement"
    assert "ws speedup_vs_http p50" in report.regressions


def test_error_rate_increase_is_a_regression(synth: Any) -> None:
    report = run_gate(synth.bench(seed=1), synth.bench(seed=2, failures=20))  # 20/400 = 5 pp
    err = next(m for m in report.metrics if (m.mode, m.metric) == ("ws", "error_rate"))
    assert err.status == "regression" and err.change_pct == pytest.approx(5.0)
    assert report.exit_code == 1


def test_insufficient_data_is_reported_and_fails_only_when_required(
    synth: Any, tmp_path: Path, capsys: Any
) -> None:
    base, cur = synth.bench(seed=1, rollouts=10), synth.bench(seed=2, rollouts=10)
    assert _gate(tmp_path, base, cur) == 0
    out = capsys.readouterr().out
    assert "insufficient-data" in out and "PASS: no regression (" in out
    statuses = _statuses(run_gate(base, cur))
    assert statuses["ws rollout_e2e_ms p50"] == "insufficient-data"  # 10 rollouts < 30
    assert statuses["ws ttft_ms p50"] == "ok"  # 100 turns
    assert _gate(tmp_path, base, cur, "--require-samples") == 1
    assert "rollout_e2e_ms p50 (insufficient data)" in capsys.readouterr().out
    assert _gate(tmp_path, base, cur, "--min-samples", "5") == 0


def test_a_run_of_other_modes_is_another_workload(synth: Any) -> None:
    base = synth.bench(seed=1)
    cur = synth.bench(seed=2, ttft_ms={"ws": 20.0})
    with pytest.raises(GateInputError, match=r"different workloads: modes http,ws vs ws$"):
        run_gate(base, cur)


def test_a_mode_without_data_in_current_is_insufficient_data(synth: Any) -> None:
    base = synth.bench(seed=1)
    cur = synth.bench(seed=2)
    cur["bench"]["samples"] = [s for s in cur["bench"]["samples"] if s["mode"] != "http"]
    cur["bench"]["rollouts"] = [r for r in cur["bench"]["rollouts"] if r["mode"] != "http"]
    statuses = _statuses(run_gate(base, cur))
    assert statuses["http ttft_ms p50"] == "insufficient-data"
    assert statuses["ws speedup_vs_http p50"] == "insufficient-data"


def test_thresholds_file_tightens_and_disables(synth: Any, tmp_path: Path, capsys: Any) -> None:
    base = synth.bench(seed=1)
    cur = synth.bench(seed=2, scale={"ws": {"ttft_ms": 1.12}})
    assert _gate(tmp_path, base, cur) == 0  # +12 % with noise: not provably beyond +10 %
    toml = tmp_path / "gate.toml"
    toml.write_text(
        "percentiles = ['p50', 'p90']\n"
        "[thresholds]\np50 = 10\np90 = 20\n"
        "[metric.ttft_ms]\np50 = 2\np90 = false\np99 = 50\n"
        "[metric.tpot_ms]\np50 = 10\n"
    )
    assert _gate(tmp_path, base, cur, "--thresholds", str(toml)) == 1
    report = run_gate(base, cur, config_from_dict(_toml(toml)))
    labels = {m.label for m in report.metrics if m.mode == "ws"}
    assert "ttft_ms p90" not in labels and "ttft_ms p99" in labels
    assert "tpot_ms p50" in labels  # a section of its own enables tpot_ms
    assert "FAIL: 1 regression(s): ws ttft_ms p50" in capsys.readouterr().out


def _toml(path: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(path.read_text())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"percentile": ["p50"]}, "unknown key 'percentile'"),
        ({"metric": {"ttft": {"p50": 5}}}, "unknown metric"),
        ({"metric": {"ttft_ms": {"median": 5}}}, "unknown key 'median'"),
        ({"metric": {"ttft_ms": {"p50": "5%"}}}, "expected a number"),
        ({"percentiles": ["p75"]}, "no threshold for p75"),
        ({"min_samples": -1}, "non-negative integer"),
        ({"thresholds": {"p50": -5}}, "allowed worsening, >= 0"),
    ],
)
def test_bad_thresholds_are_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(GateInputError, match=message):
        config_from_dict(data)


def test_default_config_checks() -> None:
    c = GateConfig()
    assert c.checks_for("ttft_ms") == [(50.0, 10.0), (90.0, 20.0)]
    assert c.checks_for("speedup_vs_http") == [(50.0, 10.0), (90.0, 20.0)]
    assert c.min_samples == 30


# -- certify -------------------------------------------------------------------------------------
def test_certify_must_regression_fails(synth: Any, tmp_path: Path, capsys: Any) -> None:
    base = synth.certify(synth.cases)
    cases = dict(synth.cases)
    cases["3.3.order.seq-from-zero"] = ("MUST", "FAIL")
    cases["4.2.cache.evict"] = ("SHOULD", "PASS")  # fixed
    assert _gate(tmp_path, base, synth.certify(cases)) == 1
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    assert ["3.3.order.seq-from-zero", "MUST", "PASS", "FAIL", "REGRESSION"] in rows
    assert ["4.2.cache.evict", "SHOULD", "FAIL", "PASS", "fixed"] in rows
    assert "FAIL: 1 regression(s): MUST 3.3.order.seq-from-zero" in out


def test_certify_unchanged_passes_and_should_gates_only_when_strict(
    synth: Any, tmp_path: Path, capsys: Any
) -> None:
    base = synth.certify(synth.cases)
    assert _gate(tmp_path, base, synth.certify(synth.cases)) == 0
    assert "no case changed verdict" in capsys.readouterr().out
    cases = dict(synth.cases)
    cases["4.1.cache.hit"] = ("SHOULD", "NON-STRICT")
    assert _gate(tmp_path, base, synth.certify(cases)) == 0
    assert _gate(tmp_path, base, synth.certify(cases), "--strict") == 1


def test_certify_missing_must_case_is_a_regression(synth: Any) -> None:
    cases = {k: v for k, v in synth.cases.items() if k != "3.1.connect.accept"}
    cases["6.1.new.case"] = ("MUST", "PASS")
    report = run_gate(synth.certify(synth.cases), synth.certify(cases))
    by_id = {c.id: c for c in report.cases}
    assert by_id["3.1.connect.accept"].current == "MISSING"
    assert by_id["3.1.connect.accept"].status == "regression"
    assert by_id["6.1.new.case"].status == "new"


# -- bad input -----------------------------------------------------------------------------------
def test_bad_input_exits_2(synth: Any, tmp_path: Path, capsys: Any) -> None:
    bench, cert = synth.bench(seed=1, rollouts=3, turns=2), synth.certify(synth.cases)
    assert _gate(tmp_path, cert, bench) == 2
    assert "cannot compare a certify baseline with a bench result" in capsys.readouterr().err

    future = json.loads(dumps_result(cert))
    future["schema_version"] = 3
    (tmp_path / "future.json").write_text(json.dumps(future))
    good = _write(tmp_path, "good.json", cert)
    assert cli_main(["gate", "--baseline", str(tmp_path / "future.json"), "--current", good]) == 2
    assert "newer wsmode" in capsys.readouterr().err

    assert cli_main(["gate", "--baseline", "/nonexistent.json", "--current", good]) == 2
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("p50 = [")
    assert cli_main(["gate", "--baseline", good, "--current", good, "--thresholds", str(bad_toml)])
    assert "cannot read thresholds" in capsys.readouterr().err


# -- helpers and statistics ----------------------------------------------------------------------
def test_paired_speedups_pair_by_rollout_id_and_occurrence() -> None:
    bench = {
        "rollouts": [
            {"rollout_id": "a", "mode": "http", "e2e_ms": 300.0, "ok": True},
            {"rollout_id": "a", "mode": "ws", "e2e_ms": 100.0, "ok": True},
            {"rollout_id": "a", "mode": "http", "e2e_ms": 400.0, "ok": True},
            {"rollout_id": "a", "mode": "ws", "e2e_ms": 200.0, "ok": True},
            {"rollout_id": "b", "mode": "ws", "e2e_ms": 100.0, "ok": True},  # unpaired
            {"rollout_id": "c", "mode": "http", "e2e_ms": 100.0, "ok": True},
            {"rollout_id": "c", "mode": "ws", "e2e_ms": 50.0, "ok": False},  # failed
        ]
    }
    assert paired_speedups(bench, "http", "ws") == [3.0, 2.0]


def test_nearest_rank_percentile() -> None:
    xs = [float(i) for i in range(1, 101)]
    assert stats.percentile(xs, 50) == 50.0
    assert stats.percentile(xs, 90) == 90.0
    assert stats.percentile(xs, 0) == 1.0 and stats.percentile(xs, 100) == 100.0
    assert stats.percentile([5.0], 99) == 5.0
    with pytest.raises(ValueError):
        stats.percentile([], 50)


def test_fast_bootstrap_matches_the_exact_bootstrap_distribution() -> None:
    rng = random.Random(3)
    xs = sorted(rng.lognormvariate(3, 0.5) for _ in range(150))
    n, p = len(xs), 90.0
    k = stats.rank_for(p, n)

    def exact_cdf(j: int) -> float:
        """P(k-th smallest of a resample <= xs[j]) = P(Binomial(n, (j+1)/n) >= k)."""
        q = (j + 1) / n
        return sum(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(k, n + 1))

    point, lo, hi = stats.bootstrap_percentile_ci(xs, p, resamples=4000, seed=1)
    assert point == stats.percentile(xs, p)
    for value, level in ((lo, 0.025), (hi, 0.975)):
        j = xs.index(value)
        # Monte Carlo quantile of 4000 draws: within one order statistic of the exact one
        assert exact_cdf(j) >= level - 0.01
        assert j == 0 or exact_cdf(j - 1) <= level + 0.01


def test_mann_whitney_u() -> None:
    u, p = stats.mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert u == 0.0 and p == pytest.approx(0.0809, abs=1e-3)  # scipy, asymptotic, corrected
    u, p = stats.mann_whitney_u([1.0, 1.0, 2.0], [1.0, 1.0, 2.0])
    assert u == 4.5 and p == 1.0


def test_gate_output_fits_a_terminal(synth: Any) -> None:
    from harness.report.gate_text import render_text

    text = render_text(run_gate(synth.bench(seed=1), synth.bench(seed=2)))
    assert all(len(line) <= 100 for line in text.splitlines())
    assert io.StringIO(text).readline().startswith("wsmode gate (bench)")


def test_the_documented_thresholds_file_is_accepted() -> None:
    import re
    import tomllib

    readme = (Path(__file__).parents[2] / "results" / "README.md").read_text()
    block = re.search(r"```toml\n(.*?)```", readme, re.S)
    assert block is not None
    config = config_from_dict(tomllib.loads(block.group(1)), "README")
    assert config.checks_for("ttft_ms") == [(50.0, 5.0), (90.0, 20.0), (99.0, 30.0)]
    assert config.checks_for("itl_ms") == [(50.0, 10.0)]
    assert config.checks_for("speedup_vs_http") == [(50.0, 10.0)]
    assert "tpot_ms" in config.enabled and "error_rate" in config.enabled


def test_a_ttft_measured_with_another_definition_is_not_a_regression(
    synth: Any, tmp_path: Path
) -> None:
    old = json.loads(dumps_result(synth.bench(seed=1, rollouts=30, turns=4)))
    old["schema_version"] = 1  # TTFT to the first output event
    del old["bench"]["ttft_definition"]
    slower = synth.bench(seed=1, rollouts=30, turns=4, scale={"ws": {"ttft_ms": 3.0}})
    config = load_config(None)

    def ttft_findings(base: dict[str, Any]) -> list[Any]:
        baseline = load_result(_write(tmp_path, "base.json", base))
        findings = gate_bench(baseline, slower, config)
        return [f for f in findings if f.metric == "ttft_ms" and f.mode == "ws"]

    apart = ttft_findings(old)
    assert apart and {f.status for f in apart} == {"insufficient-data"}
    assert "TTFT definitions differ: first-output-event vs first-content-token" in apart[0].note
    same = ttft_findings(json.loads(dumps_result(synth.bench(seed=1, rollouts=30, turns=4))))
    assert "regression" in {f.status for f in same}  # the same definition: a real regression


def test_gate_refuses_unlike_kinds_in_one_line(synth: Any, tmp_path: Path, capsys: Any) -> None:
    from tests.report.test_board_groups import as_load

    bench = synth.bench(seed=1)
    load = as_load(synth.bench(seed=2))
    old_load = synth.bench(seed=3)
    old_load["config"] = {"command": "load"}  # written as kind bench before load had a kind
    for current in (load, old_load):
        assert _gate(tmp_path, bench, current) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert err.startswith("wsmode gate: cannot compare a bench baseline with a load result")
    with pytest.raises(GateInputError, match="different workloads: concurrency 8 vs 32"):
        other = as_load(synth.bench(seed=4))
        other["config"]["modes"]["ws"]["concurrency"] = 32
        run_gate(load, other)


def _with_cap(result: dict[str, Any], scale: float | None) -> dict[str, Any]:
    """The result as a --no-script bench run with that output cap wrote it (config only)."""
    config = {**result["config"], "send_script": False, "output_cap_scale": scale}
    config["output_cap_call_headroom"] = 2.0
    return {**result, "config": config}


def test_a_capped_run_is_another_workload_than_an_uncapped_one(synth: Any) -> None:
    base = _with_cap(synth.bench(seed=1), None)
    cur = _with_cap(synth.bench(seed=2), 1.0)
    with pytest.raises(GateInputError, match=r"different workloads: output cap — vs x1 "):
        run_gate(base, cur)
    # the same cap compares; so does a recorded identity that predates the field
    run_gate(_with_cap(synth.bench(seed=1), 1.0), cur)
    recorded = {**cur, "workload": {k: v for k, v in workload_of(cur).items() if k != "output_cap"}}
    assert workload_of(recorded)["output_cap"] == {"scale": 1.0, "call_headroom": 2.0}
    run_gate(recorded, cur)
