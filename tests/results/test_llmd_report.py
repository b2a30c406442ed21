"""The llm-d-benchmark Benchmark Report export (harness.results.llmd_report): the stored schema
is the file read upstream, unedited; bench and load results export one valid report per mode
with what they measured; `wsmode results llmd-report` writes them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.results.histograms import MetricSet
from harness.results.json_schema_subset import Validator
from harness.results.llmd_report import SCHEMA_PATH, llmd_report, llmd_reports, report_schema
from harness.results.schema import finish_result, load_result
from harness.results.slo import parse_slo, slo_section
from harness.results.store import write_result


def test_the_stored_schema_is_the_file_its_provenance_names() -> None:
    provenance = (SCHEMA_PATH.parent / "PROVENANCE.md").read_text()
    (digest,) = re.findall(r"sha256 of the stored file: `([0-9a-f]{64})`", provenance)
    assert hashlib.sha256(SCHEMA_PATH.read_bytes()).hexdigest() == digest
    assert "331a0f7c2eca9282d0631a67f98831d05c683b53" in provenance
    assert "Apache License 2.0" in provenance
    assert report_schema()["title"] == "Benchmark Report v0.2.1"


def _bench_with_extras(synth: Any) -> dict[str, Any]:
    result = synth.bench(rollouts=6, turns=3)
    bench = result["bench"]
    bench["slo"] = slo_section(
        parse_slo("ttft_ms:p99<=1000"), bench["samples"], bench["rollouts"], list(bench["modes"])
    )
    bench["server_metrics"] = {
        "interval_s": 1.0,
        "started_at_s": 1740823200.0,  # 2025-03-01T10:00:00Z
        "sources": [
            {
                "url": "http://127.0.0.1:9/metrics",
                "scrapes": 2,
                "failed_scrapes": 0,
                "errors": [],
                "series_dropped": 0,
                "series": [
                    {
                        "name": "vllm:num_requests_running",
                        "labels": {"engine": str(e)},
                        "type": "gauge",
                        "points": [[0.0, 1.0], [1.0, 2.0 + e]],
                    }
                    for e in (0, 1)
                ]
                + [
                    {
                        "name": "vllm:cache_config_info",
                        "labels": {},
                        "type": "gauge",
                        "points": [[0.0, 1.0]],
                    }
                ],
            }
        ],
    }
    return finish_result(result, ended_at=result["ended_at"])


def test_a_bench_mode_exports_what_it_measured(synth: Any) -> None:
    result = _bench_with_extras(synth)
    report = llmd_report(result, "ws")
    Validator(report_schema()).validate(report)  # llmd_report validated it too: once more here
    assert report["version"] == "0.2.1"
    aggregate = report["results"]["request_performance"]["aggregate"]
    assert aggregate["requests"]["total"] == 18 and aggregate["requests"]["failures"] == 0
    ttft = aggregate["latency"]["time_to_first_token"]
    hist = MetricSet.from_dict(result["bench"]["modes"]["ws"])["ttft_ms"]
    assert ttft["units"] == "ms" and ttft["p50"] == hist.percentile_ms(50)
    assert ttft["min"] <= ttft["p50"] <= ttft["p99"] <= ttft["max"]
    sessions = report["results"]["session_performance"]["sessions"]
    assert (sessions["total"], sessions["succeeded"], sessions["total_events"]) == (6, 6, 18)
    assert sessions["session_duration"]["units"] == "s"
    load = report["scenario"]["load"]
    assert load["standardized"]["tool"] == "wsmode" and load["standardized"]["source"] == "sampled"
    assert load["native"]["config"]["slo"]["goodput"]["turns"] == 18
    (component,) = report["results"]["observability"]["components"]
    running = component["time_series"]["num_requests_running"]
    assert running["series"] == [  # summed over the two engines, stamped in UTC
        {"ts": "2025-03-01T10:00:00.000Z", "value": 2.0},
        {"ts": "2025-03-01T10:00:01.000Z", "value": 5.0},
    ]
    assert set(component["time_series"]) == {"num_requests_running"}  # no guessed mappings
    reports = llmd_reports(result)
    assert list(reports) == ["ws", "http"]
    assert reports["ws"]["run"]["eid"] == reports["http"]["run"]["eid"]
    assert reports["ws"]["run"]["uid"] != reports["http"]["run"]["uid"]


def test_wsmode_results_llmd_report_on_a_load_run(tmp_path: Path, capsys: Any) -> None:
    argv = ["load", "--requests", "6", "--concurrency", "2", "--processes", "1", "--turns", "2"]
    argv += ["--input-tokens", "32", "--output-tokens", "16", "--out", str(tmp_path / "r")]
    assert cli_main([*argv, "--modes", "ws,http"]) == 0
    (path,) = (tmp_path / "r").rglob("*.json")
    capsys.readouterr()
    assert cli_main(["results", "llmd-report", str(path), "--out", str(tmp_path / "br")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["ws", "http"]
    throughput = load_result(path)["load"]["throughput"]
    for mode in ("ws", "http"):
        report = json.loads(
            (tmp_path / "br" / f"{path.stem}.{mode}.llmd-br-v0.2.1.json").read_text()
        )
        Validator(report_schema()).validate(report)
        aggregate = report["results"]["request_performance"]["aggregate"]
        assert aggregate["requests"]["total"] == 6
        rate = aggregate["throughput"]["request_rate"]
        assert rate == {"units": "queries/s", "mean": throughput[mode]["requests_per_s"]}
        standardized = report["scenario"]["load"]["standardized"]
        assert standardized["input_seq_len"] == {"distribution": "fixed", "value": 32}
        assert standardized["output_seq_len"] == {"distribution": "fixed", "value": 16}
        assert standardized["multi_turn"]["max_turns"]["value"] == 2
        assert standardized["source"] == "random"
        assert "session_performance" not in report["results"]  # load has no rollouts


def test_a_certify_result_is_refused_in_one_line(synth: Any, tmp_path: Path, capsys: Any) -> None:
    path = write_result(tmp_path, synth.certify({"1.1.x": ("MUST", "PASS")}))
    assert cli_main(["results", "llmd-report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wsmode results llmd-report: a certify result has no latencies")
    with pytest.raises(ValueError, match="mode 'nope' is not in this run"):
        llmd_report(synth.bench(), "nope")
